#!/usr/bin/env python3
"""Issue 51's closed loop on a real GPU: each case of
python/examples/gpu_bound.py is run alone (its own samples/s), then under
`gpuwatch run --once --json` as a user types it; every cause the verdict
names that this script knows how to apply is applied, and the job is run
alone again. It prints, per case, the verdict, the causes with their
bounds, the measured gain of each applied fix against its bound, and any
advice that repeats what the job already does (a defect).

    python3 bench/gpu-closed-loop.py [--gpuwatch PATH] [--seconds S] [CASE ...]

CASE is one of CASES below (default: all). Each case costs about
2 × S seconds alone plus the --once settle (up to a minute and a half
with the GPU profile --once asks for when the GPU is the limit). The
results go to stdout as a table and, with --out FILE, as JSON. Without a
GPU it still runs end to end (--smoke shrinks the models for a CPU):
the plumbing is checked, and no GPU cause is expected.

Exit status: 0 when every applied fix stayed within its bound (5 % over
allowed for run-to-run noise) and no advice repeated a setting; 1 else;
2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "..", "python", "examples", "gpu_bound.py")

# name: (the job's flags, the causes that must not be named because the
# job already does what they advise)
CASES = {
    "mlp-fp32": (["--model", "mlp", "--precision", "fp32"], []),
    "mlp-bf16": (["--model", "mlp", "--precision", "bf16"], ["tensor_idle"]),
    "mlp-tf32": (["--model", "mlp", "--precision", "tf32"], ["tensor_idle"]),
    "resnet-bf16-cl": (["--model", "resnet", "--precision", "bf16", "--channels-last"], ["tensor_idle", "channels_last"]),
    "resnet-bf16-nchw": (["--model", "resnet", "--precision", "bf16"], ["tensor_idle"]),
    "mlp-sync": (["--model", "mlp", "--hidden", "1024", "--batch", "256", "--sync-every-step"], []),
    "mlp-small": (["--model", "mlp", "--hidden", "256", "--batch", "64"], []),
    # A job that profiles one step in 7 itself: gpuwatch's own recording
    # (asked by --once) must give way, never raise in the job.
    "mlp-own-profiler": (["--model", "mlp", "--hidden", "1024", "--batch", "256", "--own-profiler-every", "7"], []),
}

# `gpuwatch run --once`'s own statuses: a verdict (healthy, a bottleneck)
# or none settled. Any other is the job's failure passed on (one that died
# of gpuwatch's profiler, say), or gpuwatch's.
ONCE_STATUSES = (0, 3, 4)

# The generic line the issue saw recited to a job already in bf16.
GENERIC = "try mixed precision"


def apply_fix(flags: list, cause: str) -> list | None:
    """flags with cause's fix applied, as gpu_bound.py takes it; None
    where this script cannot apply it (or the job already has it)."""
    out = list(flags)
    if cause == "tensor_idle":  # autocast to bf16
        if "--precision" not in out:
            return out + ["--precision", "bf16"]
        i = out.index("--precision")
        if out[i + 1] == "bf16":
            return None
        out[i + 1] = "bf16"
    elif cause == "channels_last":
        if "--channels-last" in out:
            return None
        out.append("--channels-last")
    elif cause == "host_sync":  # the per-step loss.item() taken out
        if "--sync-every-step" not in out:
            return None
        out.remove("--sync-every-step")
    elif cause == "batch_headroom":  # 8× the batch (the cause's bound caps by memory)
        if "--batch" not in out:
            return None
        i = out.index("--batch")
        out[i + 1] = str(8 * int(out[i + 1]))
    elif cause == "launch_bound":  # CUDA graphs by torch.compile
        if "--compile" in out:
            return None
        out.append("--compile")
    else:
        return None
    return out


def alone(py: str, flags: list, seconds: float, smoke: list) -> float | None:
    """The job's own samples/s over a run of `seconds`, None if it wrote none."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    try:
        r = subprocess.run([py, JOB, *flags, *smoke, "--seconds", str(seconds), "--out", out],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=seconds + 120)
        if r.returncode != 0:
            print("    the job failed (%d): %s" % (r.returncode, r.stderr.strip().splitlines()[-1:]), file=sys.stderr)
            return None
        with open(out) as fh:
            return json.load(fh)["samples_per_sec"]
    except (OSError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
        print("    no rate: %s" % e, file=sys.stderr)
        return None
    finally:
        os.unlink(out)


def verdict(gw: str, py: str, flags: list, smoke: list, limit: float, record: str = "") -> dict:
    """`gpuwatch run --once --json` on the job: its summary object, or
    {"error": why}. gpuwatch runs in a process group of its own, which
    a timeout kills whole: the job must not go on holding the GPU."""
    rec = ["--record", record] if record else []
    p = subprocess.Popen([gw, "run", "--once", "--json", *rec, "--", py, JOB, *flags, *smoke, "--seconds", "600"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return {"error": "gpuwatch run --once took over %g s" % limit}
    if p.returncode not in ONCE_STATUSES:  # the job failed (its status passed on), or gpuwatch did
        return {"error": "gpuwatch run --once exited %d: %s" % (p.returncode, err.strip()[-400:])}
    for line in reversed(out.splitlines()):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if d.get("type") == "summary":
            return d
    return {"error": "no summary (exit %d): %s" % (p.returncode, err.strip()[-400:])}


def merged(flags: list, smoke: list) -> list:
    """flags with smoke's options ("--hidden", "128", …) in place of their
    own: a fix applied after (8× the batch) changes what runs."""
    out = list(flags)
    for i in range(0, len(smoke), 2):
        if smoke[i] in out:
            out[out.index(smoke[i]) + 1] = smoke[i + 1]
        else:
            out += smoke[i : i + 2]
    return out


def run_case(name: str, a, smoke: list) -> dict:
    flags, forbidden = CASES[name]
    flags, smoke = merged(flags, smoke), []
    res = {"case": name, "flags": flags, "fixes": [], "repeated": []}
    res["alone"] = alone(a.python, flags, a.seconds, smoke)
    record = os.path.join(a.record_dir, name + ".jsonl") if a.record_dir else ""
    s = verdict(a.gpuwatch, a.python, flags, smoke, a.once_timeout, record)
    if "error" in s:
        res["error"] = s["error"]
        return res
    res["summary"] = s  # the whole --once --json summary, for reading later
    v = s.get("verdict", {})
    res["kind"], res["settled"] = v.get("kind"), s.get("settled")
    res["job"] = (s.get("job") or {}).get("settings_line")
    res["gpu_profile"] = (s.get("job") or {}).get("gpu_profile_line")
    res["advice"] = v.get("advice", [])
    res["causes"] = [{"id": c["id"], "gain_bound": (c.get("bound") or {}).get("gain"), "bound_why": c.get("bound_why", ""),
                      "evidence": c.get("evidence", "")} for c in v.get("causes", [])]
    for c in res["causes"]:
        if c["id"] in forbidden:
            res["repeated"].append({"said": c["id"], "line": c["evidence"]})
    for line in res["advice"]:
        if GENERIC in line and forbidden:
            res["repeated"].append({"said": GENERIC, "line": line})
    for c in res["causes"]:
        fixed = apply_fix(flags, c["id"])
        if fixed is None:
            continue
        rate = alone(a.python, fixed, a.seconds, smoke)
        fx = {"cause": c["id"], "flags": fixed, "samples_per_sec": rate, "bound": c["gain_bound"]}
        if rate and res["alone"]:
            fx["gain"] = rate / res["alone"]
            fx["within"] = c["gain_bound"] is None or fx["gain"] <= 1.05 * c["gain_bound"]
        res["fixes"].append(fx)
    return res


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="*", help="of: " + ", ".join(CASES))
    p.add_argument("--gpuwatch", default=os.environ.get("GPUWATCH", "gpuwatch"))
    p.add_argument("--python", default=os.environ.get("PYTHON", sys.executable))
    p.add_argument("--seconds", type=float, default=20, help="each run alone (its first 5 s are warm-up)")
    p.add_argument("--smoke", action="store_true", help="small models, for a CPU: checks the plumbing")
    p.add_argument("--out", default="", help="write the results as JSON here too (after each case)")
    p.add_argument("--once-timeout", type=float, default=300, help="seconds one `run --once` may take")
    p.add_argument("--record-dir", default="", help="record each case's `run --once` to DIR/CASE.jsonl (gpuwatch replay reads it)")
    a = p.parse_args()
    bad = [c for c in a.cases if c not in CASES]
    if bad:
        p.error("unknown case %s; the cases: %s" % (", ".join(bad), ", ".join(CASES)))
    if a.seconds < 8:
        p.error("--seconds must be at least 8 (the job measures from 5 s in)")
    smoke = ["--hidden", "128", "--batch", "32", "--layers", "2"] if a.smoke else []
    if a.record_dir:
        os.makedirs(a.record_dir, exist_ok=True)
    results, ok = [], True
    for name in a.cases or list(CASES):
        print("== %s: %s" % (name, " ".join(CASES[name][0])), flush=True)
        r = run_case(name, a, smoke)
        results.append(r)
        if a.out:  # after each case: a run stopped at its time limit keeps what it did
            with open(a.out, "w") as f:
                json.dump(results, f, indent=1)
        if "error" in r:
            print("  NO VERDICT: %s" % r["error"], flush=True)
            ok = False
            continue
        print("  alone %s samples/s; verdict %s (settled %s)" % (fmt(r["alone"]), r["kind"], r["settled"]))
        print("  job: %s" % r["job"])
        if r["gpu_profile"]:
            print("  gpu profile: %s" % r["gpu_profile"])
        for c in r["causes"]:
            print("  cause %s, bound %s: %s" % (c["id"], fmt(c["gain_bound"], "×"), c["bound_why"] or c["evidence"][:160]))
        for fx in r["fixes"]:
            print("  applied %s: %s samples/s, %s against a bound of %s: %s" % (
                fx["cause"], fmt(fx["samples_per_sec"]), fmt(fx.get("gain"), "×"), fmt(fx["bound"], "×"),
                "within" if fx.get("within") else "OVER THE BOUND" if "within" in fx else "not measured"))
            ok = ok and fx.get("within", True)
        for rep in r["repeated"]:
            print("  REPEATED ADVICE (%s already on): %s" % (rep["said"], rep["line"]))
            ok = False
        print("  advice: %s" % (" | ".join(r["advice"]) or "none"), flush=True)
    return 0 if ok else 1


def fmt(x, unit: str = "") -> str:
    if x is None:
        return "none"
    return ("%.2f" % x if unit else "%.0f" % x) + unit


if __name__ == "__main__":
    sys.exit(main())
