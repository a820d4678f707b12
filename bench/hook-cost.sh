#!/usr/bin/env bash
# What gpuwatch run's instrumentation costs a real DataLoader job, by CPU
# accounting (issue 52 item 4): rounds of a job (python/examples/
# dataloader_bench.py, or SCRIPT.py) alone and under `gpuwatch run
# --headless` (the hook timing every batch, looking inside batches, its
# windows, its server read every interval, a CPU profile every 60 s), one
# after the other (or at once: TOGETHER=1), each round's job the same. Each
# round's figure is the job's CPU seconds per sample over a window that
# leaves its start-up out (from 3 s into its loop to its end): its
# process's user and system time with its workers' (/proc/PID/stat of the
# live ones, cutime and cstime of those gone: bench/hook_cost_job.py) over
# the samples its loop took meanwhile — far steadier than samples/s, and
# blind to gpuwatch's own process, whose cost is the footer's "gpuwatch …
# % CPU". Under run, the hook's own count over the same window
# (gpuwatch_hook_cpu_seconds_total) is printed beside it, and so is the
# training process's own CPU per sample (the hook runs there; the workers'
# share, which varies the most, is left out), alone and under run.
#
#   bash bench/hook-cost.sh [ROUNDS [SECONDS [-- [SCRIPT.py] ARGS…]]]
#   (SCRIPT.py: another job that keeps the same two globals, `start` and
#   `samples`: python/examples/causes_battery.py --loop images --step-ms 25
#   is a JPEG + torchvision loop beside a ResNet-sized step)
#   (GPUWATCH=path uses a built binary instead of building one;
#   PYTHON=path an interpreter with torch;
#   RUN_FLAGS="--profile-every 0" measures without the profiler;
#   WATCHED=1 has gpuwatch watch the job alone from outside (--pid: /proc
#   only, no hook), so that the paired difference is the hook's, not that
#   of gpuwatch's own process beside the job;
#   TOGETHER=1 runs each round's two jobs at the same time: on a VM whose
#   CPU's speed drifts between runs, both see the same drift, and the same
#   contention, each other's; a job that writes its data on its first run,
#   as the image loop does, needs one run without TOGETHER first)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-8}
seconds=${2:-20}
[[ "$rounds" =~ ^[1-9][0-9]*$ && "$seconds" =~ ^[1-9][0-9]*$ ]] ||
	{ echo "usage: bash bench/hook-cost.sh [ROUNDS [SECONDS [-- [SCRIPT.py] ARGS…]]] (whole numbers)" >&2; exit 2; }
shift $(( $# > 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
script=python/examples/dataloader_bench.py
[[ "${1:-}" == *.py ]] && { script=$1; shift; }
args=("$@")
[ ${#args[@]} -gt 0 ] || [ "$script" != python/examples/dataloader_bench.py ] ||
	args=(--workers 2 --cost 0.0002 --step 0.002 --batch 8 --rate 0)
py=${PYTHON:-python3}
"$py" -c 'import torch, numpy' 2>/dev/null ||
	{ echo "hook-cost.sh: $py cannot import torch and numpy (PYTHON=path names an interpreter that can)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=${GPUWATCH:-}
if [ -z "$bin" ]; then
	bin=$tmp/gpuwatch
	CGO_CFLAGS=${CGO_CFLAGS:--Wno-deprecated-declarations} go build -o "$bin" .
fi
# The job: the example under bench/hook_cost_job.py, which prints its
# window's CPU (its process's and its workers'), samples and hook seconds
# when it ends. --warmup 0: the loop counts every sample.
job=("$py" bench/hook_cost_job.py "$script" "${args[@]}" --warmup 0 --seconds "$seconds")
# The rate of the example's work loop, calibrated once: every round does the
# same work per sample.
if [[ " ${args[*]} " == *" --rate 0 "* ]]; then
	rate=$("$py" "$script" --print-rate 2>/dev/null | tail -1)
	job=("${job[@]}" --rate "$rate")
fi
# field KEY…: the JOBCPU line's values; a dict (the hook's parts) as
# part=seconds,part=seconds.
field() { sed -n 's/^JOBCPU //p' | "$py" -c "import json,sys; t=sys.stdin.read(); t or sys.exit(1); d=json.loads(t); ('error' in d or 'cpu' not in d or 'samples' not in d) and sys.exit(d.get('error', 1)); print(*(','.join('%s=%s' % kv for kv in v.items()) if isinstance(v, dict) else v for v in (d.get(k, '') for k in sys.argv[1:])))" "$@"; }
declare -A part_pct=() # part -> its share of the job's CPU, summed over rounds
part_order=()          # the parts in the order the hook lists them
nojob() { echo "hook-cost.sh: the job $1 gave no figures; run it by hand to see why: $2" >&2; exit 1; }
# alone: the job's figures without the hook; with WATCHED=1 watched from
# outside by gpuwatch (--pid, sampling /proc, no hook), so that both sides
# of a round have gpuwatch's process beside them and the difference is the
# hook's alone.
alone() {
	if [ "${WATCHED:-0}" = 1 ]; then
		"${job[@]}" 2>/dev/null >"$tmp/alone.out" &
		local jp=$!
		"$bin" --headless --pid "$jp" --exit-with-job --discover=false >/dev/null 2>&1 &
		local gp=$!
		wait "$jp" || true
		kill "$gp" 2>/dev/null || true
		wait "$gp" 2>/dev/null || true
		field cpu samples main <"$tmp/alone.out"
	else
		"${job[@]}" 2>/dev/null | field cpu samples main
	fi
}
diffs=() hooks=() mains=() mainpcts=()
for r in $(seq "$rounds"); do
	# Headless, run passes the job's output to its stderr.
	if [ "${TOGETHER:-0}" = 1 ]; then
		alone >"$tmp/alone" &
		"$bin" run --headless ${RUN_FLAGS:-} -- "${job[@]}" 2>&1 >/dev/null | field cpu samples main hook parts >"$tmp/run" &
		wait
		read -r pc ps pm <"$tmp/alone" || nojob alone "${job[*]}"
		read -r wc ws wm wh parts <"$tmp/run" || nojob "under run" "$bin run --headless ${RUN_FLAGS:-} -- ${job[*]}"
	else
		read -r pc ps pm < <(alone) || nojob alone "${job[*]}"
		read -r wc ws wm wh parts < <("$bin" run --headless ${RUN_FLAGS:-} -- "${job[@]}" 2>&1 >/dev/null | field cpu samples main hook parts) ||
			nojob "under run" "$bin run --headless ${RUN_FLAGS:-} -- ${job[*]}"
	fi
	# Each part's share of the job's CPU under run, summed over rounds.
	for kv in ${parts//,/ }; do
		[ -n "${part_pct[${kv%%=*}]:-}" ] || part_order+=("${kv%%=*}")
		part_pct[${kv%%=*}]=$(awk -v a="${part_pct[${kv%%=*}]:-0}" -v s="${kv#*=}" -v c="$wc" 'BEGIN { print a + 100 * s / c }')
	done
	line=$(awk -v pc="$pc" -v ps="$ps" -v wc="$wc" -v ws="$ws" -v wh="$wh" 'BEGIN {
		p = 1e6 * pc / ps; w = 1e6 * wc / ws; h = 1e6 * wh / ws
		printf "%.4f %.4f|alone %7.2f µs CPU/sample (%d samples)   under run %7.2f (%d)   %+6.2f %%   the hook'"'"'s own count %.2f µs/sample (%.2f %%)", 100 * (w / p - 1), 100 * h / w, p, ps, w, ws, 100 * (w / p - 1), h, 100 * h / w }')
	diffs+=("${line%% *}") hooks+=("$(echo "${line%%|*}" | cut -d' ' -f2)")
	echo "round $r: ${line#*|}"
	# The training process alone (the hook runs there; the workers' share
	# is not in it): its CPU per sample beyond the round alone's, against
	# the hook's own count, both µs a sample.
	main=$(awk -v pm="$pm" -v ps="$ps" -v wm="$wm" -v ws="$ws" -v wh="$wh" -v pc="$pc" 'BEGIN { p = 1e6 * pm / ps; w = 1e6 * wm / ws; printf "%.4f %.4f|%.2f µs/sample alone, %.2f under run: %+.2f µs (%+.2f %% of the job'"'"'s CPU a sample alone), the hook'"'"'s own count %.2f µs", w - p, 100 * (w - p) / (1e6 * pc / ps), p, w, w - p, 100 * (w - p) / (1e6 * pc / ps), 1e6 * wh / ws }')
	mains+=("${main%% *}") mainpcts+=("$(echo "${main%%|*}" | cut -d' ' -f2)")
	echo "         the training process: ${main#*|}"
done
stats() { printf '%s\n' "$@" | sort -g | awk '{ x[NR] = $1; s += $1 } END { m = s / NR; for (i = 1; i <= NR; i++) v += (x[i] - m) ^ 2; sd = NR > 1 ? sqrt(v / (NR - 1)) : 0; med = NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2; printf "mean %+.2f %%, sd %.2f, standard error %.2f, median %+.2f %% over %d rounds", m, sd, sd / sqrt(NR), med, NR }'; }
echo "the job's CPU per sample under run vs alone: $(stats "${diffs[@]}")"
echo "the hook's own count, of the job's CPU under run: $(stats "${hooks[@]}")"
echo "the training process's CPU per sample under run beyond alone, µs: $(stats "${mains[@]}" | sed 's/ %//g')"
echo "the same, of the job's CPU a sample alone (what the hook costs where it runs, by paired accounting): $(stats "${mainpcts[@]}")"
by_part=""
for k in "${part_order[@]}"; do
	by_part+=$(awk -v k="$k" -v v="${part_pct[$k]}" -v r="$rounds" 'BEGIN { printf " %s %.3f %%", k, v / r }')
done
echo "by part, mean of the rounds:$by_part (the first CPU profile starts at the loop's first batch, then one every --profile-every, 60 s: a window shorter than that holds more than its share)"
echo "($(nproc) CPUs; $(uname -r); job: $script ${args[*]} --seconds $seconds${WATCHED:+; WATCHED=$WATCHED}${TOGETHER:+; TOGETHER=$TOGETHER})"
