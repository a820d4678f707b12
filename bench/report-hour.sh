#!/usr/bin/env bash
# A one-hour recording at 1 s (the report fixture's frames, re-timed), its
# size on disk, and how long `gpuwatch report` takes on it (HTML and size).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/gpuwatch
go build -o "$bin" .
dir=$(mktemp -d)
python3 - "$dir/hour.jsonl" <<'PY'
import json, sys, datetime
lines = [json.loads(l) for l in open("recording/testdata/tour.jsonl")]
frames = [l for l in lines if l["type"] == "frame"]
t0 = datetime.datetime.fromisoformat(frames[0]["time"].replace("Z", "+00:00")[:26] + "+00:00")
with open(sys.argv[1], "w") as out:
    out.write(json.dumps(lines[0]) + "\n")
    for i in range(3600):
        f = dict(frames[i % len(frames)])
        f["time"] = (t0 + datetime.timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        out.write(json.dumps(f, separators=(",", ":")) + "\n")
PY
echo "one hour recorded at 1 s: $(du -m "$dir/hour.jsonl" | cut -f1) MB"
start=$(date +%s.%N)
"$bin" report "$dir/hour.jsonl" -o "$dir/hour.html" >/dev/null
end=$(date +%s.%N)
echo "report took $(echo "$end - $start" | bc) s, HTML $(du -k "$dir/hour.html" | cut -f1) KiB"
