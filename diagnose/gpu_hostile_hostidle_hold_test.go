package diagnose

import (
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// host-idle is held on utilization once shown (50 % → 62.5 %), but not on
// GPM's SM activity: a job at 40 % busy whose SMs read 29 % then 31 %
// (SMActivityLowPct 30) flips gpu_underused → healthy → gpu_underused.
// host-idle, once shown, holds on SM activity as it does on utilization.
func TestHostIdleHeldOnSMActivityToo(t *testing.T) {
	at := func(util, sm float64) []sample.Frame {
		frames := gpuBoundFrames(sm, 0, 1, 1, 60, fp32Settings())
		for i := range frames {
			frames[i].GPUs[0].UtilPct = ptr(util)
			frames[i].GPUs[0].UtilSamples = &sample.UtilSamples{N: 6, Min: util - 1, Mean: util, Max: util + 1, P5: util - 1, P95: util + 1}
		}
		return frames
	}
	th := DefaultThresholds()
	if v := classify(at(40, 29), at(40, 29), th, Healthy, nil); v.Kind != GPUUnderused {
		t.Fatalf("40 %% busy, SMs 29 %%: %s", v.Kind)
	}
	if v := classify(at(40, 31), at(40, 31), th, GPUUnderused, nil); v.Kind != GPUUnderused {
		t.Errorf("shown, 40 %% busy, SMs 31 %%: %s (flips on a 2-point move of SM activity)", v.Kind)
	}
}
