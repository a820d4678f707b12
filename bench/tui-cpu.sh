#!/usr/bin/env bash
# CPU cost of the dashboard next to btop's: same terminal size (120×40 tmux
# panes), same 1 s refresh (btop: update_ms = 1000), both running at once so
# that both see the same machine. CPU time is read from
# /proc/PID/task/*/schedstat (nanoseconds on the CPU, every thread), over
# 30 s, in 3 rounds. (utime+stime in /proc/PID/stat counts whole 10 ms
# ticks: over a 20 s window of about 10 ticks that is ±20 % of noise.)
# EXTRA=N starts N sleeping processes first (both read every process each
# refresh: issue 53 asks for 2,000); ROUNDS=N rounds (default 3); WARM=S
# seconds of start-up skipped before the 30 s are read (default 4).
# Usage: [EXTRA=2000] [ROUNDS=3] [WARM=4] bash bench/tui-cpu.sh [gpuwatch flags]
set -euo pipefail
cd "$(dirname "$0")/.."
for p in tmux btop; do
	command -v $p >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $p >/dev/null; }
done
[ -r /proc/self/schedstat ] || { echo "this kernel has no /proc/PID/schedstat (CONFIG_SCHED_INFO)"; exit 1; }
bin=$(mktemp -d)/gpuwatch
go build -o "$bin" .
cfg=$(mktemp -d)
mkdir -p "$cfg/btop"
printf 'update_ms = 1000\n' > "$cfg/btop/btop.conf"
sock=gpuwatch-bench-$$
extra=${EXTRA:-0} rounds=${ROUNDS:-3} warm=${WARM:-4}
sleepers=()
trap 'tmux -L $sock kill-server 2>/dev/null || true; ((${#sleepers[@]})) && kill "${sleepers[@]}" 2>/dev/null; true' EXIT
for ((i = 0; i < extra; i++)); do
	sleep 3600 &
	sleepers+=($!)
done

# cpu PID: milliseconds on the CPU so far, all threads.
cpu() { cat /proc/"$1"/task/*/schedstat | awk '{ns += $1} END {printf "%d", ns / 1e6}'; }

# round: start both in panes of their own, skip WARM s, then read both
# over the same 30 s.
round() {
	tmux -L $sock new-session -d -s g -x 120 -y 40 "env TERM=tmux-256color $bin --interval 1s $*"
	tmux -L $sock new-session -d -s b -x 120 -y 40 "env XDG_CONFIG_HOME=$cfg TERM=tmux-256color btop"
	sleep "$warm"
	local gp bp ga ba
	gp=$(tmux -L $sock list-panes -t g -F '#{pane_pid}')
	bp=$(tmux -L $sock list-panes -t b -F '#{pane_pid}')
	[ -r /proc/$gp/stat ] && [ -r /proc/$bp/stat ] || { echo "gpuwatch or btop did not start"; exit 1; }
	ga=$(cpu $gp) ba=$(cpu $bp)
	sleep 30
	echo "$(($(cpu $gp) - ga)) $(($(cpu $bp) - ba))"
	tmux -L $sock kill-session -t g 2>/dev/null || true
	tmux -L $sock kill-session -t b 2>/dev/null || true
	sleep 1
}
g=0 b=0
for r in $(seq "$rounds"); do
	out=$(round "$@")
	read -r a c <<<"$out"
	echo "round $r: gpuwatch $a ms, btop $c ms of CPU in 30 s"
	g=$((g + a)) b=$((b + c))
done
awk -v g=$g -v b=$b -v r="$rounds" -v x="$extra" -v n="$(ls /proc | grep -c '^[0-9]')" 'BEGIN {
	printf "gpuwatch %5.2f %% of one core, btop %5.2f %%: %.2f× (%d × 30 s; %d processes, %d of them extra sleepers)\n", g / (r * 300), b / (r * 300), g / b, r, n, x }'
