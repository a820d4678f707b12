#!/usr/bin/env bash
# The first hour of a new user, with the real binary: the README's recipes,
# record → report → replay, and the usual mistakes, each with the exit
# status the README promises. It fails on a wrong status, on a Go error
# string reaching the user (strconv, <nil>, a raw dial error, a panic), and
# on a flag a command offers but should not (record --once). Run by CI;
# by hand: bash scripts/newcomer.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
bin=$work/gpuwatch
go build -o "$bin" .
export XDG_CACHE_HOME=$work/cache XDG_RUNTIME_DIR=$work/run # no real cache, no announced loader
mkdir -p "$XDG_RUNTIME_DIR"
cd "$work"
fails=0

# expect STATUS WANT ARGS…: run gpuwatch ARGS (at most 90 s); its status must
# be STATUS and its output must hold WANT ("" for anything).
expect() {
	local want_status=$1 want=$2 out status
	shift 2
	set +e
	out=$(timeout 90 "$bin" "$@" 2>&1 </dev/null)
	status=$?
	set -e
	local bad=""
	if [ "$status" != "$want_status" ]; then
		bad="exit $status, want $want_status"
	elif [ -n "$want" ] && ! grep -qF -- "$want" <<<"$out"; then
		bad="no \"$want\" in the output"
	elif grep -qE 'strconv\.|<nil>|invalid syntax|dial tcp|panic:|goroutine [0-9]+ \[' <<<"$out"; then
		bad="a Go error string reached the user"
	fi
	if [ -n "$bad" ]; then
		echo "FAIL gpuwatch $*: $bad"
		sed 's/^/    │ /' <<<"$out" | head -20
		fails=$((fails + 1))
	else
		echo "ok   gpuwatch $* → $status"
	fi
}

# offers CMD FLAG: fails when CMD's --help offers FLAG (a flag it would ignore).
refuses_flag() {
	if "$bin" "$1" --help | grep -qE -- "^ +(-[a-zA-Z], )?$2 "; then
		echo "FAIL gpuwatch $1 offers $2, which it would ignore"
		fails=$((fails + 1))
	else
		echo "ok   gpuwatch $1 does not offer $2"
	fi
}

echo "== versions and help"
expect 0 "gpuwatch" --version
expect 0 "gpuwatch" -V
expect 0 "gpuwatch" version
for c in "" demo run attach record replay report serve fleet loader tune sweep; do
	expect 0 "Usage:" $c --help
done
expect 0 "Watch flags" record --help

echo "== the README's recipes"
expect 4 "NOT SETTLED" --once -d 3s
expect 0 "" --headless -d 2s
"$bin" --json -d 2s >lines.jsonl
python3 -c 'import json,sys; [json.loads(l) for l in open("lines.jsonl")]; print("ok   --json: every line is JSON")'
sleep 60 &
sleeper=$!
sh -c 'sleep 60 & wait' &
launcher=$!
expect 0 "the root of the tree" --pid "$(pgrep -f 'sleep 6[0]')
$launcher" --headless --interval 500ms -d 2s
sleep 2 &
expect 0 "exited at" --pid $! --exit-with-job --headless -d 30s
kill $sleeper $launcher 2>/dev/null || true

echo "== record → report → replay"
expect 0 "recorded" record -o run.jsonl -d 3s --interval 500ms
expect 0 "wrote run.md" report run.jsonl -o run.md
expect 0 "wrote run.html" report run.jsonl -o run.html
expect 1 "run.md exists (--force replaces it)" report run.jsonl -o run.md
expect 0 "" replay run.jsonl --headless
expect 2 "-o run.jsonl exists" record -o run.jsonl -d 1s
expect 0 "recorded" demo --scenario single-core --headless -d 4s --record demo.jsonl
expect 0 "freed" demo --clean
expect 0 "no demo dataset to remove" demo --clean

echo "== mistakes: one clear line, the right status"
expect 2 "unknown flag: --bogus" --bogus
expect 2 'empty: give a process ID' --pid ''
expect 2 '"abc" is not a process ID' --pid abc
expect 1 "no such process" --pid 2147483646
expect 2 "names: min_frames" --threshold foo=1 --once
expect 2 "must be between 50ms and 1h" --interval 1ms
expect 2 'unknown scenario "nope"' demo --scenario nope
expect 2 "the format comes from the extension" report run.jsonl -o run.txt
expect 2 "-o OUT is required" report run.jsonl
expect 2 "unknown flag: --once" record -o r2.jsonl --once
expect 2 "unknown flag: --json" record -o r2.jsonl --json
expect 2 "unknown flag: --once" serve --once
expect 2 "--exit-with-job needs --pid" --exit-with-job
expect 1 "cannot attach to http://127.0.0.1:1: connection refused" attach http://user:hunter2@127.0.0.1:1
expect 1 "connection refused (is Prometheus running" fleet http://127.0.0.1:1 --once
expect 1 "no such file" replay missing.jsonl --headless
refuses_flag record --once
refuses_flag record --json
refuses_flag serve --once
if "$bin" attach http://user:hunter2@127.0.0.1:1 2>&1 | grep -q hunter2; then
	echo "FAIL attach printed the URL's password"
	fails=$((fails + 1))
fi

if [ "$fails" -gt 0 ]; then
	echo "$fails newcomer checks failed"
	exit 1
fi
echo "every newcomer check passed"
