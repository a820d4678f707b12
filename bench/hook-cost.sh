#!/usr/bin/env bash
# What gpuwatch run's instrumentation costs a real DataLoader loop: rounds
# of python/examples/dataloader_bench.py alone and under `gpuwatch run
# --headless` (the hook timing every batch, a 5 s CPU profile every 15 s),
# interleaved, each printing its own samples/s. Figures, not pass/fail.
#
#   bash bench/hook-cost.sh [ROUNDS] [SECONDS] [-- BENCH ARGS…]
#   (GPUWATCH=path uses a built binary instead of building one;
#   RUN_FLAGS="--profile-every 0" measures the timing alone)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
seconds=${2:-20}
shift $(( $# > 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--workers 2 --cost 0.0002 --step 0.002 --batch 8)
py=${PYTHON:-python3}
bin=${GPUWATCH:-}
if [ -z "$bin" ]; then
	bin=$(mktemp -d)/gpuwatch
	go build -o "$bin" .
	trap 'rm -rf "$(dirname "$bin")"' EXIT
fi
rate() { sed -n 's/^RESULT .*"samples_per_sec": \([0-9.]*\).*/\1/p'; }
plain=() run=()
for r in $(seq "$rounds"); do
	p=$("$py" python/examples/dataloader_bench.py "${args[@]}" --seconds "$seconds" 2>/dev/null | rate)
	w=$("$bin" run --headless ${RUN_FLAGS:-} -- "$py" python/examples/dataloader_bench.py "${args[@]}" --seconds "$seconds" 2>&1 >/dev/null | rate)
	plain+=("$p") run+=("$w")
	awk -v r="$r" -v p="$p" -v w="$w" 'BEGIN { printf "round %d: alone %8.1f samples/s   under gpuwatch run %8.1f   (%+.1f %%)\n", r, p, w, 100*(w/p-1) }'
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mp=$(median "${plain[@]}") mw=$(median "${run[@]}")
awk -v p="$mp" -v w="$mw" 'BEGIN { printf "median: alone %.1f, under gpuwatch run %.1f samples/s: %+.1f %%\n", p, w, 100*(w/p-1) }'
