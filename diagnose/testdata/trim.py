#!/usr/bin/env python3
"""Trims a `gpuwatch demo --headless --json` recording to what diagnosis
reads, so fixtures stay small: drops network, loader timelines and knobs,
keeps the two busiest processes and threads, rounds to 3 significant places.
Usage: python3 trim.py < raw.jsonl > fixture.jsonl"""
import json, sys

def rnd(v):
    if isinstance(v, float):
        return float("%.4g" % v)
    if isinstance(v, dict):
        return {k: rnd(x) for k, x in v.items()}
    if isinstance(v, list):
        return [rnd(x) for x in v]
    return v

for line in sys.stdin:
    o = json.loads(line)
    if o.get("type") == "frame":
        o.pop("net", None)
        o.pop("verdict", None)
        if "procs" in o:
            p = o["procs"]
            p["list"] = [{k: x[k] for k in ("pid", "ppid", "name", "cpu_pct", "threads", "major_faults_per_sec", "read_bytes_per_sec", "disk_read_bytes_per_sec", "mapped_file_bytes", "mapped_file") if k in x} for x in p.get("list", [])[:2]]
            p["threads"] = p.get("threads", [])[:2]
        if "loader" in o:
            o["loader"].pop("timeline", None)
            k = o["loader"].pop("knobs", None) or {}
            if k.get("read") == "mmap":  # the mmap rule reads these
                o["loader"]["knobs"] = {x: k[x] for x in ("read", "access", "cache", "dataset_size") if x in k}
        if "cpu" in o:
            c = o["cpu"]
            c["cores"] = [{"id": k["id"], "busy_pct": k["busy_pct"]} for k in c.get("cores", [])]
            o["cpu"] = {k: c[k] for k in ("cores", "busy_pct", "iowait_pct", "procs_running") if k in c}
        o["disks"] = [{k: d[k] for k in ("name", "busy_pct", "read_bytes_per_sec") if k in d} for d in o.get("disks", [])]
        if "mem" in o:
            o["mem"] = {k: v for k, v in o["mem"].items() if k in ("total_bytes", "available_bytes", "swap_in_pages_per_sec", "swap_out_pages_per_sec", "major_faults_per_sec")}
    sys.stdout.write(json.dumps(rnd(o), separators=(",", ":"), ensure_ascii=False) + "\n")
