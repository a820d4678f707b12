#!/usr/bin/env bash
# Smoke test of the dashboard in a real terminal: `gpuwatch demo --scenario
# single-core` in a detached 120×40 tmux pane must show the verdict and the
# panels; q, SIGTERM and SIGHUP must each stop it with status 0 and leave the
# terminal usable (echo and canonical mode back on).
set -euo pipefail
cd "$(dirname "$0")/.."
# A UTF-8 locale: the panels' box glyphs are checked below (in a locale
# that is not UTF-8 the dashboard draws ASCII, as under TERM=dumb).
export LANG=C.UTF-8
unset LC_ALL LC_CTYPE
command -v tmux >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null; }
bin=$(mktemp -d)/gpuwatch
go build -o "$bin" .
sock=gpuwatch-smoke-$$
t() { tmux -L "$sock" "$@"; }
# Whatever happens, leave nothing running (a hung process would load the
# machine for every later test).
trap 't kill-server 2>/dev/null || true; pkill -KILL -f "$bin" 2>/dev/null || true' EXIT

# wait_for PATTERN SECONDS: poll the pane until PATTERN shows (bounded).
wait_for() {
	local end=$((SECONDS + $2))
	while ((SECONDS < end)); do
		if t capture-pane -p -t smoke | grep -q -- "$1"; then return 0; fi
		sleep 0.5
	done
	echo "not on screen after $2 s: $1"; t capture-pane -p -t smoke; return 1
}

t new-session -d -s smoke -x 120 -y 40 bash --norc
t send-keys -t smoke "export PS1='$ '; $bin demo --scenario single-core; echo EXIT=\$?; stty -a | tr ' ' '\n' | grep -E '^-?(echo|icanon)$'" Enter
wait_for "SINGLE_CORE_MAXED" 40
for title in "─ GPU" "─ CPU" "─ Loader" "─ Processes" "─ Memory & pressure" "─ Disks" "q quit"; do
	wait_for "$title" 5
done
wait_for "[0-9] % of a core" 10 # the pegged thread, by either single-core rule
t capture-pane -p -t smoke | head -6
# state: the pane's modes as tmux sees them (the dashboard draws its own
# screen, session/screen.go, and must set up and restore each).
state() { t display -p -t smoke 'alt=#{alternate_on} cursor=#{cursor_flag} wrap=#{wrap_flag} mouse=#{mouse_any_flag} title=#{pane_title}'; }
running=$(state)
case "$running" in
"alt=1 cursor=0 wrap=0 mouse=1 title=gpuwatch: "*) ;;
*) echo "while it runs: $running (want the alternate screen, no cursor, no autowrap, the mouse, its title)"; exit 1 ;;
esac
# A paste is a paste, not keys: a pasted q does not quit.
t set-buffer "quit"
t paste-buffer -p -t smoke
sleep 1
pgrep -f "$bin demo --scenario single-core" >/dev/null || { echo "a pasted q quit the dashboard"; exit 1; }
t send-keys -t smoke q
wait_for "EXIT=0" 10
wait_for "^echo$" 5
wait_for "^icanon$" 5
after=$(state)
case "$after" in
"alt=0 cursor=1 wrap=1 mouse=0 title="*gpuwatch*) echo "after q: $after (the title kept)"; exit 1 ;;
"alt=0 cursor=1 wrap=1 mouse=0 title="*) ;;
*) echo "after q: $after (want the main screen, the cursor, autowrap, no mouse)"; exit 1 ;;
esac
echo "q: exit 0, terminal restored ($after)"

# TERM=dumb (or unset, as in many kubectl exec shells): no colour and ASCII
# glyphs, but still a screen drawn in place, not a scroll of frames.
for term in dumb ""; do
	t send-keys -t smoke "clear; TERM=$term $bin demo --scenario healthy; echo EXIT=\$?" Enter
	wait_for "HEALTHY\|WARMING_UP" 30
	case "$(state)" in alt=1*) ;; *) echo "TERM=$term: not in the alternate screen: $(state)"; exit 1 ;; esac
	t send-keys -t smoke q
	wait_for "EXIT=0" 10
	echo "TERM=$term: drawn in place, exit 0"
done

# Colour follows the terminal: NO_COLOR drops it (capture-pane -e keeps the
# escape sequences the program drew).
t send-keys -t smoke "clear; NO_COLOR=1 $bin demo --scenario healthy; echo EXIT=\$?" Enter
wait_for "HEALTHY\|WARMING_UP" 30
# A colour is SGR 30–37, 90–97 or 38;…; 39 and 49 reset to the defaults.
colour=$'\e\\[([0-9]+;)*(3[0-7]|9[0-7]|38)[;m]'
if t capture-pane -e -p -t smoke | grep -Eq "$colour"; then
	echo "NO_COLOR=1, yet colours on screen"; t capture-pane -e -p -t smoke | head -3 | cat -v; exit 1
fi
t send-keys -t smoke q
wait_for "EXIT=0" 10
t send-keys -t smoke "clear; $bin demo --scenario healthy; echo EXIT=\$?" Enter
wait_for "HEALTHY\|WARMING_UP" 30
t capture-pane -e -p -t smoke | grep -Eq "$colour" || { echo "no colours in a colour terminal"; exit 1; }
t send-keys -t smoke q
wait_for "EXIT=0" 10
echo "NO_COLOR: no colour; colour terminal: colour"

for sig in TERM HUP; do
	t send-keys -t smoke "clear; $bin demo --scenario healthy; echo EXIT=\$?; stty -a | tr ' ' '\n' | grep -E '^-?(echo|icanon)$'" Enter
	wait_for "HEALTHY\|WARMING_UP" 30
	pkill -"$sig" -f "$bin demo --scenario healthy"
	wait_for "EXIT=0" 10
	wait_for "^echo$" 5
	echo "SIG$sig: exit 0, terminal restored"
done
# A signal during start-up must stop it too (it once hung there).
for attempt in 1 2 3 4; do
	t send-keys -t smoke "clear; $bin demo --scenario healthy; echo EXIT=\$?-$attempt" Enter
	for _ in $(seq 40); do pgrep -f "$bin demo --scenario healthy" >/dev/null && break; sleep 0.05; done
	sleep "0.$((3 + attempt))"
	pkill -TERM -f "$bin demo --scenario healthy"
	wait_for "EXIT=0-$attempt" 10
done
echo "SIGTERM during start-up (4 timings): exit 0"
echo "tmux smoke test passed"
