#!/usr/bin/env bash
# Short fuzz runs of every parser of outside input, as CI runs them:
# `bash scripts/fuzz.sh [SCALE]` (SCALE multiplies every budget; 1 in CI).
#
# Each target's budget is a count of executions (-fuzztime Nx), sized so
# that it takes about 5 s on the project's 2-core VM (the counts measured
# there in 5 s). A count has no wall-clock deadline: a duration -fuzztime
# races Go's fuzzing coordinator at its deadline (golang/go#75804, fixed in
# Go 1.27) and can fail a target that found nothing. So a failure here is
# a failing input: Go writes it under the package's testdata/fuzz/ and this
# script names the file and prints it. There is no retry.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-1}

# package:target executions
targets=(
	probes/host:FuzzParseProcStat:50000
	probes/host:FuzzParseDiskstatsLine:50000
	probes/host:FuzzParseNetDevLine:40000
	probes/host:FuzzParsePressure:35000
	probes/host:FuzzParsePidStat:45000
	probes/host:FuzzParseMaps:25000
	probes/host:FuzzParseMountinfo:25000
	probes/host:FuzzParseFdinfo:25000
	probes/host:FuzzParseMeminfo:40000
	probes/job:FuzzParseProcCgroup:20000
	probes/endpoint:FuzzCountersFromMetrics:2500
	probes/endpoint:FuzzAnnouncement:15000
	probes/endpoint:FuzzExpandURLs:30000
	probes/endpoint:FuzzSettingsFromPage:20000
	probes/endpoint:FuzzSyncsFromPage:5000
	probes/endpoint:FuzzGPUProfileFromPage:5000
	probes/endpoint:FuzzParseListeners:25000
	probes/endpoint:FuzzPIDHolds:8000
	session/predlog:FuzzParse:150000
	session/job:FuzzPlainLine:100000
	internal/pprofsum:FuzzSummarizeProfile:12000
	internal/expo:FuzzParse:150000
	fleet:FuzzDecodeAnswer:70000
	sample:FuzzRedactURL:150000
	diagnose:FuzzThresholdSet:200000
	diagnose:FuzzClassifyRecordedFrames:200000
	recording:FuzzRecordingFrames:150000
	session:FuzzReplayRecordedFrames:10000
	report:FuzzReportWritersEmitNoForeignMarkup:120
)

start=$SECONDS
for t in "${targets[@]}"; do
	IFS=: read -r pkg name count <<<"$t"
	n=$(awk -v c="$count" -v s="$scale" 'BEGIN { n = int(c * s); print (n < 1 ? 1 : n) }')
	t0=$SECONDS
	if out=$(go test -run '^$' -fuzz "^${name}\$" -fuzztime "${n}x" "./$pkg/" 2>&1); then
		echo "$pkg:$name ok ($n executions, $((SECONDS - t0)) s)"
		continue
	fi
	echo "$out" | tail -40
	if input=$(grep -o "testdata/fuzz/$name/[0-9a-f]*" <<<"$out" | head -1) && [ -n "$input" ]; then
		echo "$pkg:$name FAILED on the input $pkg/$input:"
		cat "$pkg/$input"
		echo "(replay it: go test -run '$name/$(basename "$input")' ./$pkg/)"
	else
		echo "$pkg:$name FAILED with no failing input written: the fuzzing engine itself failed (see above)"
	fi
	exit 1
done
echo "fuzzing: ${#targets[@]} targets in $((SECONDS - start)) s"
