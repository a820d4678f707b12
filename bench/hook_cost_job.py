"""bench/hook-cost.sh's job: a script (python/examples/dataloader_bench.py)
run in this interpreter (runpy) and measured over a window that leaves its
start-up out: from SKIP seconds after its loop began (its global `start`
set) to its end. At both ends it reads the job's CPU — this process's user
and system time (/proc/PID/stat's utime, stime, and cutime, cstime of its
children gone) and that of its live descendants (the DataLoader's workers),
in clock ticks — and the samples its loop counted (its global `samples`,
with --warmup 0); under gpuwatch run, the hook's own count
(gpuwatch_hook/_cost.py) too. Then one line "JOBCPU {json}": the window's
CPU seconds (the job's, and the training process's alone as "main"),
samples and hook seconds.

    GPUWATCH_BENCH_SKIP=3 python3 bench/hook_cost_job.py SCRIPT ARGS…"""

import json
import os
import runpy
import sys
import threading
import time

SKIP = float(os.environ.get("GPUWATCH_BENCH_SKIP", "3"))
TICK = os.sysconf("SC_CLK_TCK")


def stat(pid):
    """(ppid, [utime, stime, cutime, cstime]) of a process, in ticks."""
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    v = s[s.rindex(")") + 2 :].split()
    return int(v[1]), [int(x) for x in v[11:15]]


def tree_cpu(me):
    """CPU seconds of me, its children gone, and its live descendants; and
    of me alone (the training process: its threads, the hook's among them)."""
    procs = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                procs[int(d)] = stat(int(d))
            except (OSError, ValueError, IndexError):
                pass
    tree = {me}
    for _ in range(4):  # workers, and what they started
        tree |= {p for p, (pp, _) in procs.items() if pp in tree}
    ticks = sum(stat(me)[1]) + sum(sum(procs[p][1][:2]) for p in tree - {me} if p in procs)
    return ticks / TICK, sum(stat(me)[1][:2]) / TICK


def hook_cpu():
    cost = sys.modules.get("gpuwatch_hook._cost")
    if cost is None:
        return None
    parts = cost.cost.seconds() or {}
    return parts


def reading(g):
    cpu, main = tree_cpu(os.getpid())
    return {"cpu": cpu, "main": main, "samples": g.get("samples", 0), "hook": hook_cpu(), "at": time.monotonic()}


def main():
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    first = {}

    def window():
        # The script's globals, while it runs as __main__ (runpy's module).
        while "start" not in vars(sys.modules["__main__"]):
            time.sleep(0.02)
        time.sleep(SKIP)
        first.update(reading(vars(sys.modules["__main__"])))

    threading.Thread(target=window, daemon=True).start()
    g = runpy.run_path(script, run_name="__main__")
    last = reading(g)
    if not first:
        print("JOBCPU " + json.dumps({"error": "the run ended before its window began"}), flush=True)
        return
    out = {"cpu": last["cpu"] - first["cpu"], "main": last["main"] - first["main"], "samples": last["samples"] - first["samples"], "seconds": last["at"] - first["at"]}
    if last["hook"] is not None:
        out["hook"] = sum(last["hook"].values()) - sum(first["hook"].values())
        out["parts"] = {k: round(last["hook"][k] - first["hook"][k], 4) for k in last["hook"]}
    print("JOBCPU " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
