#!/usr/bin/env bash
# CPU of an attach session while it waits between profiles, next to plain
# gpuwatch: both as dashboards in a 120×40 tmux pane at 1 s, with the same
# embedded loader (healthy scenario) running in its own process beside
# them, 3 interleaved rounds of 20 s from /proc/PID/stat.
# Usage: bash bench/attach-cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v tmux >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null; }
bin=$(mktemp -d)/gpuwatch
go build -o "$bin" .
sock=gpuwatch-attach-$$
"$bin" loader --scenario healthy --listen 127.0.0.1:6093 >/dev/null &
loader=$!
trap 'kill $loader 2>/dev/null; tmux -L $sock kill-server 2>/dev/null || true' EXIT
sleep 2
measure() { # NAME SKIP COMMAND
	tmux -L $sock new-session -d -s "$1" -x 120 -y 40 "$3"
	sleep "$2"
	local pid a b
	pid=$(pgrep -n -f "^$3")
	a=$(awk '{print $14+$15}' /proc/$pid/stat)
	sleep 20
	b=$(awk '{print $14+$15}' /proc/$pid/stat)
	tmux -L $sock kill-session -t "$1"
	sleep 1
	echo $((b - a))
}
g=0 at=0
for round in 1 2 3; do
	a=$(measure plain 3 "$bin --interval 1s")
	# The first profile is taken at once (5 s); measure after it, with the
	# next one 2 minutes away.
	b=$(measure attach 9 "$bin attach http://127.0.0.1:6093 --interval 1s --profile-every 2m")
	echo "round $round: gpuwatch $a ticks, gpuwatch attach $b ticks (in 20 s)"
	g=$((g + a)) at=$((at + b))
done
hz=$(getconf CLK_TCK)
awk -v g=$g -v a=$at -v hz="$hz" 'BEGIN {
	printf "gpuwatch %5.2f %% of one core, attach between profiles %5.2f %% (mean of 3 × 20 s)\n", 100 * g / hz / 60, 100 * a / hz / 60 }'
