#!/usr/bin/env bash
# Issue 39, items 4-6 (docs/diagnosis.md, "Causes and their bounds"): the
# causes beneath a verdict and their bounds, the model's knob promises
# where workers wait for a CPU or are idle, and the battery of real loops
# (python/examples/causes_battery.py: float64 arrays, padded tokens,
# time-series windows built in Python, JPEG images handed over as float32),
# each run under `gpuwatch run --once` and again with its fix.
# Idempotent; needs root for apt-get (as CI runs it). About 200 s on a
# 2-core VM once the build is cached (the battery is 16 runs of ~12 s).
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_CFLAGS=-Wno-deprecated-declarations
py=/usr/bin/python3
if ! "$py" -c 'import torch, numpy, PIL, torchvision' 2>/dev/null; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch python3-numpy python3-pil python3-torchvision >/dev/null
fi
go test -count=1 -run 'TestEachLoopNamesItsCause|TestNoCauseWithoutStagesOrPayload|TestBoundIsAnUpperBound|TestNoKnobGain|TestLoopTakeOnlyWhereTheLoopIsTheLimit|TestBusyWorkersAreNotTheLoopsOwnTime|TestRandomReadsJoinTheMmapCase|TestGetitemWaitingOnStorageIsNoCause|TestVerdictsOnEveryFixtureAreUnchanged' ./diagnose/
GPUWATCH_REQUIRE_PYTHON=1 go test -count=1 -tags integration -run 'TestCausesBattery' -v . | grep -E '^(---|ok|FAIL|PASS)|own:'
