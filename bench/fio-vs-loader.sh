#!/usr/bin/env bash
# Page-cached sequential reads: fio against the embedded loader, same files,
# same block size (64 KiB), one reader each, pread (psync) for both.
# Usage: bash bench/fio-vs-loader.sh   (needs fio: apt-get install fio)
set -euo pipefail
cd "$(dirname "$0")/.."
size=256MiB
dir="${XDG_CACHE_HOME:-$HOME/.cache}/gpuwatch/dataset-$size"
go build -o /tmp/gpuwatch-bench .
# Generate the dataset if needed and warm the page cache with one pass.
/tmp/gpuwatch-bench sweep --workers 1 --prefetch 4 --access seq --sample-size 64KiB --batch-size 16 \
	--decode-cost 0 --step-time 0 --worker-start 0 --jitter 0 --dataset-size $size --epochs 1 --batches 0 >/dev/null 2>&1
files=$(ls "$dir"/shard-*.bin | paste -sd: -)
echo "fio, psync, bs=64k, 1 job, page cache kept (invalidate=0):"
fio --name=seq --filename="$files" --readonly --rw=read --bs=64k --ioengine=psync --invalidate=0 \
	--numjobs=1 --loops=5 --group_reporting | grep -E '^ *read:'
echo "gpuwatch loader, 1 worker, seq, 64 KiB samples, no decode, no step:"
/tmp/gpuwatch-bench sweep --workers 1 --prefetch 4 --access seq --sample-size 64KiB --batch-size 16 \
	--decode-cost 0 --step-time 0 --worker-start 0 --jitter 0 --dataset-size $size --epochs 5 --batches 0 2>/dev/null
