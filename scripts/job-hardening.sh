#!/usr/bin/env bash
# Issue 41's items 5-12, 16, 17 (docs/security.md, "Shared box, round 3"):
# the job on a full disk, Ctrl-Z, hang-ups and signals after the job's end,
# gpuwatch SIGKILLed, the sweep's grid, failed rows and Ctrl-C, serve's
# limits, corrupt recordings, 126/127. The terminal cases run in tmux; the
# full-disk cases mount a 64 KiB tmpfs, so run this as root (as CI does).
# Idempotent; about 60 s on a 2-core VM once the build is cached.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_CFLAGS=-Wno-deprecated-declarations
if ! command -v tmux >/dev/null; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null
fi
go test -race -count=1 -run 'TestAFullDiskUnderTheLogDoesNotFreezeTheJob|TestTrialLogsRotate' ./session/job/
go test -race -count=1 -run 'TestSweepGoesOnPastAFailureAndKeepsRowsOnInterrupt' ./session/tune/
go test -race -count=1 -run 'TestRunCannotStartStatuses|TestSweepGridIsCountedBeforeItIsBuilt|TestSweepFailedConfigurationsAreRows' ./cli/
# The forwarding goroutine's start and stop, often enough to catch a rare race (issue 37).
go test -race -count=20 -run 'TestSignalsAfterTheJobStopGpuwatch' ./session/job/
go test -race -count=1 -run 'TestServe' ./exporter/
go test -count=1 -run 'TestRecordingReadsUpToTheLastGoodLine|FuzzRecordingFrames' ./recording/
go test -count=1 -run XXX -bench BenchmarkScrapeBesideIdleClients -benchtime 20x ./exporter/
go test -count=1 -tags integration -run 'TestCtrlZUnderHeadlessRunActsLikeAShell|TestAStoppedJobIsSaidInFrames|TestAHangUpEndsTheDashboardRun|TestSignalsStopTheDashboardOnceTheJobEnded|TestAKilledGpuwatchTakesItsJobWithIt|TestSweepInterruptedKeepsItsRows|TestAFullDiskUnderTheDashboardsJobLog' .
