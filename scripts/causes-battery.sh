#!/usr/bin/env bash
# The causes battery proves itself before CI trusts it (issue 58): each
# loop of TestCausesBattery (causes_integration_test.go) run N times
# alone, one after another, and each loop's pass count printed. A loop
# joins CI's list when it passes N of N on a quiet machine; its counts go
# in docs/diagnosis.md's battery table. Run from the repository root, as
# root (the mmap loop's memory cgroup, the files loop's sshd):
#
#	bash scripts/causes-battery.sh                # every loop, 10 runs each
#	N=3 bash scripts/causes-battery.sh images text
#
# The logs of failed runs are kept (their folder is printed).
set -euo pipefail
export CGO_CFLAGS=-Wno-deprecated-declarations GPUWATCH_REQUIRE_PYTHON=1
n=${N:-10}
loops=("$@")
[ ${#loops[@]} -gt 0 ] || loops=(float64 padding timeseries images text mmap files)
logs=$(mktemp -d /tmp/causes-battery.XXXXXX)
export GPUWATCH_BATTERY_KEEP="$logs" # each run's recordings, to replay a failed one (gpuwatch replay --once)
go test -tags integration -c -o "$logs/battery.test" .
summary=()
for loop in "${loops[@]}"; do
	pass=0
	for i in $(seq 1 "$n"); do
		log="$logs/$loop-$i.log"
		if "$logs/battery.test" -test.run "^TestCausesBattery\$/^$loop\$" -test.count=1 -test.v -test.timeout 20m >"$log" 2>&1 &&
			grep -q -- "--- PASS: TestCausesBattery/$loop " "$log"; then
			pass=$((pass + 1))
			rm -f "$log" "$logs/$loop"-*fixed-*.jsonl
		else
			mkdir -p "$logs/$loop-$i" && mv "$logs/$loop"-*fixed-*.jsonl "$logs/$loop-$i/" 2>/dev/null || true
			grep -E -- '--- (FAIL|SKIP)|causes_integration_test.go:[0-9]+: (the cause|gpuwatch|the fix|a knob|num_workers|the CPUs|evidence|the recording)' "$log" | head -10 | sed "s/^/  $loop run $i: /" || true
		fi
	done
	summary+=("$loop: $pass of $n passed")
	echo "${summary[-1]}"
done
echo "--- the causes battery, $n runs a loop, one at a time (failed runs' logs: $logs)"
printf '%s\n' "${summary[@]}"
