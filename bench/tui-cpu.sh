#!/usr/bin/env bash
# CPU cost of the dashboard next to btop's, same terminal size (120×40 tmux
# pane), same 1 s refresh (btop: update_ms = 1000), measured from
# /proc/PID/stat (utime+stime in USER_HZ ticks) over 20 s, in 3 interleaved
# rounds (one 20 s window has ±1 tick of noise). Usage: bash bench/tui-cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
for p in tmux btop; do
	command -v $p >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $p >/dev/null; }
done
bin=$(mktemp -d)/gpuwatch
go build -o "$bin" .
cfg=$(mktemp -d)
mkdir -p "$cfg/btop"
printf 'update_ms = 1000\n' > "$cfg/btop/btop.conf"
sock=gpuwatch-bench-$$
trap 'tmux -L $sock kill-server 2>/dev/null || true' EXIT
hz=$(getconf CLK_TCK)

# measure NAME COMMAND: run in a fresh pane, skip 3 s of start-up, then
# count CPU ticks over 20 s.
measure() {
	tmux -L $sock new-session -d -s "$1" -x 120 -y 40 "env XDG_CONFIG_HOME=$cfg TERM=tmux-256color $2"
	sleep 3
	local pid
	pid=$(pgrep -n -f "^$2") || { echo "$1 did not start"; exit 1; }
	local a b
	a=$(awk '{print $14+$15}' /proc/$pid/stat)
	sleep 20
	b=$(awk '{print $14+$15}' /proc/$pid/stat)
	tmux -L $sock kill-session -t "$1"
	sleep 1
	echo $((b - a))
}
g=0 t=0
for round in 1 2 3; do
	a=$(measure gpuwatch "$bin --interval 1s")
	b=$(measure btop "btop")
	echo "round $round: gpuwatch $a ticks, btop $b ticks (in 20 s)"
	g=$((g + a)) t=$((t + b))
done
awk -v g=$g -v b=$t -v hz="$hz" 'BEGIN {
	printf "gpuwatch %5.2f %% of one core, btop %5.2f %% (mean of 3 × 20 s)\n", 100 * g / hz / 60, 100 * b / hz / 60 }'
