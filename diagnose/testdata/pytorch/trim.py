#!/usr/bin/env python3
"""Trims an `attach --json` recording of a PyTorch loop to what diagnosis
reads: the four busiest processes and threads (the training process, its
compute threads and its workers), the loader without its timeline, no
network, numbers to 4 significant places. The first line is a note saying
how it was recorded (argv[1]: the train_cpu.py arguments), and which BLAS.
Usage: python3 trim.py "ARGS" < raw.jsonl > fixture.jsonl"""
import json, os, sys

def rnd(v):
    if isinstance(v, float):
        return float("%.4g" % v)
    if isinstance(v, dict):
        return {k: rnd(x) for k, x in v.items()}
    if isinstance(v, list):
        return [rnd(x) for x in v]
    return v

blas = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
print(json.dumps({"type": "note", "train_cpu_args": sys.argv[1] if len(sys.argv) > 1 else "", "blas": blas}))
for line in sys.stdin:
    o = json.loads(line)
    if o.get("type") != "frame":
        continue
    o.pop("net", None)
    o.pop("verdict", None)
    o.pop("profile", None)
    if "procs" in o:
        p = o["procs"]
        p["list"] = [{k: x[k] for k in ("pid", "ppid", "name", "cpu_pct", "threads") if k in x} for x in p.get("list", [])[:4]]
        p["threads"] = p.get("threads", [])[:4]
    if "loader" in o:
        o["loader"].pop("timeline", None)
    if "cpu" in o:
        c = o["cpu"]
        c["cores"] = [{"id": k["id"], "busy_pct": k["busy_pct"]} for k in c.get("cores", [])]
        o["cpu"] = {k: c[k] for k in ("cores", "busy_pct", "iowait_pct", "procs_running") if k in c}
    o["disks"] = [{k: d[k] for k in ("name", "busy_pct", "read_bytes_per_sec") if k in d} for d in o.get("disks", [])]
    if "mem" in o:
        o["mem"] = {k: v for k, v in o["mem"].items() if k in ("total_bytes", "available_bytes", "swap_in_pages_per_sec", "swap_out_pages_per_sec", "major_faults_per_sec")}
    sys.stdout.write(json.dumps(rnd(o), separators=(",", ":"), ensure_ascii=False) + "\n")
