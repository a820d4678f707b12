package report

import (
	"testing"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/sample"
)

// docs/report.md: gpu_profile_shares' "sync" is the waits, of "idle",
// that began in a sync, as a share of the profiled step. The H200
// ResNet's recording (its 22.1 ms of idle all after syncs, 27.5 ms steps
// before against 27.9 ms of kernels) reports idle 0 % and sync 44 %: a
// part bigger than its whole, over another denominator (host_sync's
// bound share, syncBoundShare).
// The report's sync share is a part of its idle share, as the summary
// line has it.
func TestReportSyncShareIsPartOfIdle(t *testing.T) {
	frames := pipesFrames()
	p := frames[2].Frame.Loader.GPUProfile
	p.StepSeconds, p.BeforeStepSeconds = f64(0.0507), f64(0.0275)
	p.BusySecondsPerStep, p.IdleSecondsPerStep, p.SyncSecondsPerStep = f64(0.0279), f64(0.0221), f64(0.0221)
	p.Parts = []sample.GPUTimePart{{Category: "matmul", Precision: "bf16", SecondsPerStep: 0.02}, {Category: "elementwise", SecondsPerStep: 0.0049}, {Category: "copy", SecondsPerStep: 0.003}}
	s := Build(recording.New(recording.Header{Host: "h", Cores: 2}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	shares := map[string]float64{}
	for _, sh := range s.GPUs[0].GPUProfileShares {
		shares[sh.Category] = sh.Share
	}
	t.Logf("shares %v; line %s", shares, s.GPUs[0].GPUProfileLine)
	if shares["sync"] > shares["idle"]+1e-9 {
		t.Errorf("sync share %.3f > idle share %.3f: the syncs' waits are part of the idle", shares["sync"], shares["idle"])
	}
}
