#!/usr/bin/env bash
# CPU cost of recording: gpuwatch --headless --json at 1 s with and without
# --record, 3 interleaved rounds of 30 s, CPU time from /proc/PID/schedstat
# (nanoseconds, summed over the process's threads; /proc/PID/stat's 10 ms
# ticks cannot resolve this).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/gpuwatch
go build -o "$bin" .
dir=$(mktemp -d)
cpu_ns() { cat /proc/$1/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d", s }'; }
run() { # ARGS… → CPU ns over 30 s after 3 s of start-up
	"$bin" --headless --json --interval 1s "$@" >/dev/null &
	local pid=$!
	sleep 3
	local a b
	a=$(cpu_ns $pid)
	sleep 30
	b=$(cpu_ns $pid)
	kill $pid; wait $pid 2>/dev/null || true
	echo $((b - a))
}
plain=0 rec=0
for round in 1 2 3; do
	p=$(run)
	r=$(run --record "$dir/r$round.jsonl" 2>/dev/null)
	echo "round $round: without $((p / 1000000)) ms, with --record $((r / 1000000)) ms of CPU in 30 s"
	plain=$((plain + p)) rec=$((rec + r))
done
awk -v p=$plain -v r=$rec 'BEGIN { printf "recording costs %+.1f %% CPU (%.1f vs %.1f ms per 30 s)\n", 100 * (r - p) / p, r / 3e6, p / 3e6 }'
