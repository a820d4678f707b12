#!/usr/bin/env bash
# Flat over a day (issue 53): gpuwatch left running, and a day's recording.
#
# For DURATION seconds (default 3600) it runs, side by side:
#   * the dashboard at 1 s and at 100 ms, each in a 120×40 tmux terminal;
#   * serve, scraped every 15 s as Prometheus would;
#   * record at 1 s, into a file;
# and every EVERY seconds (default 60) prints each one's RSS (and how much
# of it is anonymous memory: the binary's own pages are the rest) and its
# CPU over that interval, from /proc/PID/schedstat (nanoseconds, all
# threads), and the recording's size. At the end: the recording's bytes
# per hour, then a 24-hour recording at 1 s (the tour's frames, re-timed)
# is made and `gpuwatch report` turned into HTML, with its time and peak
# memory.
#
# Needs tmux and python3. HOURS (default 24) sizes the generated recording. Usage: [DURATION=3600] [EVERY=60] bash bench/day.sh
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${DURATION:-3600} every=${EVERY:-60} hours=${HOURS:-24}
for tool in tmux python3; do
	command -v $tool >/dev/null || { echo "bench/day.sh needs $tool" >&2; exit 1; }
done
dir=$(mktemp -d)
bin=$dir/gpuwatch
go build -o "$bin" .
sock=$dir/tmux.sock
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pids=()
cleanup() {
	tmux -S "$sock" kill-server 2>/dev/null || true
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap 'cleanup; rm -rf "$dir"' EXIT

# The dashboards run in tmux under their own names so that each is one
# process to read: dash1s and dash100ms (symlinks to the binary).
ln -s "$bin" "$dir/dash1s"
ln -s "$bin" "$dir/dash100ms"
tmux -S "$sock" new-session -d -s d1 -x 120 -y 40 "$dir/dash1s --interval 1s"
tmux -S "$sock" new-session -d -s d100 -x 120 -y 40 "$dir/dash100ms --interval 100ms"
"$bin" serve --listen "127.0.0.1:$port" >"$dir/serve.log" 2>&1 &
pids+=($!) serve=$!
"$bin" record --interval 1s -o "$dir/rec.jsonl" >"$dir/record.log" 2>&1 &
pids+=($!) record=$!
(while sleep 15; do python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5).read()' "http://127.0.0.1:$port/metrics" 2>/dev/null || true; done) &
pids+=($!)
sleep 2
d1=$(pgrep -f "^$dir/dash1s ") d100=$(pgrep -f "^$dir/dash100ms ")
names=(dash@1s dash@100ms serve record)
procs=("$d1" "$d100" "$serve" "$record")

cpu_ns() { { cat /proc/"$1"/task/*/schedstat 2>/dev/null || true; } | awk '{ s += $1 } END { printf "%d", s }'; }
# alive PID: running, not ended (a child of this script stays a zombie until waited for)
alive() { [[ -r /proc/$1/stat ]] && [[ $(awk '{ print $3 }' /proc/"$1"/stat 2>/dev/null) != Z ]]; }
kb() { awk -v k="$2:" '$1 == k { print $2 }' /proc/"$1"/status; }
declare -A last
for i in "${!procs[@]}"; do last[$i]=$(cpu_ns "${procs[$i]}"); done
printf '%6s' min
for n in "${names[@]}"; do printf '  %-28s' "$n RSS(anon) MB, CPU %"; done
printf '  %s\n' "recording MB"
start=$(date +%s)
elapsed=0
while ((elapsed < duration)); do
	sleep "$every"
	elapsed=$(($(date +%s) - start))
	printf '%6.1f' "$(awk -v e="$elapsed" 'BEGIN { print e / 60 }')"
	for i in "${!procs[@]}"; do
		p=${procs[$i]}
		if ! alive "$p"; then
			printf '  %-28s' "(${names[$i]} ended)"
			continue
		fi
		now=$(cpu_ns "$p")
		printf '  %-28s' "$(awk -v r="$(kb "$p" VmRSS)" -v a="$(kb "$p" RssAnon)" -v c=$((now - ${last[$i]})) -v s="$every" \
			'BEGIN { printf "%.1f (%.1f), %.2f %%", r / 1024, a / 1024, 100 * c / (s * 1e9) }')"
		last[$i]=$now
	done
	printf '  %.2f\n' "$(awk -v b="$(stat -c %s "$dir/rec.jsonl")" 'BEGIN { print b / 1048576 }')"
done
bytes=$(stat -c %s "$dir/rec.jsonl")
echo "recording at 1 s: $bytes bytes in ${elapsed} s, $(awk -v b="$bytes" -v e="$elapsed" 'BEGIN { printf "%.1f", b * 3600 / e / 1048576 }') MB an hour"
cleanup

python3 - "$dir/day.jsonl" "$hours" <<'PY'
import json, sys, datetime
lines = [json.loads(l) for l in open("recording/testdata/tour.jsonl")]
frames = [l for l in lines if l["type"] == "frame"]
t0 = datetime.datetime.fromisoformat(frames[0]["time"].replace("Z", "+00:00")[:26] + "+00:00")
with open(sys.argv[1], "w") as out:
    out.write(json.dumps(lines[0]) + "\n")
    for i in range(int(sys.argv[2]) * 3600):
        f = dict(frames[i % len(frames)])
        f["time"] = (t0 + datetime.timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        out.write(json.dumps(f, separators=(",", ":")) + "\n")
PY
python3 - "$bin" "$dir/day.jsonl" "$dir/day.html" "$hours" <<'PY'
import os, resource, subprocess, sys, time
bin, rec, html, hours = sys.argv[1:]
t = time.monotonic()
subprocess.run([bin, "report", rec, "-o", html], check=True, stdout=subprocess.DEVNULL)
took = time.monotonic() - t
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"a {hours}-hour recording at 1 s ({os.path.getsize(rec) / 2**20:.0f} MB): report took {took:.1f} s, "
      f"peak RSS {peak:.0f} MB, HTML {os.path.getsize(html) / 1024:.0f} KiB")
PY
