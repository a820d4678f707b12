#!/usr/bin/env bash
# Records a fixture: a real PyTorch loop (python/examples/train_cpu.py) on
# the CPU, watched by `gpuwatch attach` for 20 s, trimmed by trim.py.
# Usage (from the repository root, with gpuwatch built as ./gpuwatch):
#   bash diagnose/testdata/pytorch/record.sh NAME [train_cpu.py args…]
set -euo pipefail
name=$1; shift
here=diagnose/testdata/pytorch
err=$(mktemp)
/usr/bin/python3 python/examples/train_cpu.py --port 0 --seconds 40 "$@" 2>"$err" >/dev/null &
train=$!
trap 'kill $train 2>/dev/null || true; rm -f "$err"' EXIT
url=
for _ in $(seq 100); do
	url=$(grep -o 'http://127.0.0.1:[0-9]*' "$err" | head -1 || true)
	[ -n "$url" ] && break
	sleep 0.1
done
./gpuwatch attach "$url" --headless --json --duration 20s --profile-every 8s --profile-seconds 3 |
	python3 "$here/trim.py" "$*" >"$here/$name.jsonl"
