package diagnose

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// launch_bound's bound is the host's waits closed, from the profile. The
// recording added 10 ms of idle a step (steps of 30 ms against 20 ms
// before, 10 ms of kernels): the job's own idle is 10 ms, and 12 ms of the
// recorded idle began while the host worked, 8 ms after syncs. Which of
// them the profiler's slowdown landed in is not measured (waits' own
// comment: the gap after a sync lasts until the slowed host launches
// again), so the job's host waits may be up to min(12, 10) = 10 ms: the
// gaps closed may give 2×. waits takes the 10 ms out of the host's first,
// leaves 2 ms, and launch_bound's "bound" is 1.11× — below what the fix
// may gain, and below the 5× (100 % / 20 % SM activity) it replaces.
// launch_bound's bound takes the most of the step the host's waits may be
// (where the recording's own idle fell is not measured), not the least.
func TestLaunchBoundNotBelowTheHostWaitsTheProfileAllows(t *testing.T) {
	frames := gpuBoundFrames(20, 2, 10, 10, 98, bf16Settings())
	f := &frames[len(frames)-1]
	l := *f.Loader
	l.GPUProfile = &sample.GPUProfile{State: sample.GPUProfileDone, Device: "cuda", Steps: 5,
		StepSeconds: ptr(0.030), BeforeStepSeconds: ptr(0.020),
		BusySecondsPerStep: ptr(0.010), IdleSecondsPerStep: ptr(0.020), SyncSecondsPerStep: ptr(0.008),
		Parts: []sample.GPUTimePart{{Category: "matmul", Precision: "bf16", SecondsPerStep: 0.010}}}
	f.Loader = &l
	v := Classify(frames, DefaultThresholds())
	c := causeOf(v, "launch_bound")
	if c == nil || c.Bound == nil {
		t.Fatalf("launch_bound %+v (causes %v)", c, causeIDs(v.Causes))
	}
	if c.Bound.Gain < 2-1e-9 {
		t.Errorf("launch_bound's bound %.2f× < 2× (the host's 10 ms of the job's 20 ms step closed): %s", c.Bound.Gain, c.BoundWhy)
	}
	// It says the share measured, 2 of 20 ms, and the most it may be.
	if !strings.Contains(c.BoundWhy, "not in a sync) 10 % of the GPU's time") || !strings.Contains(c.BoundWhy, "at most 50 % as recorded") {
		t.Errorf("bound_why %q: want the 10 %% measured and the 50 %% it may be", c.BoundWhy)
	}

	// Where the shares shown put all of the job's idle after syncs (8 →
	// 10 ms of syncs recorded), the host's waits measure none: launch_bound
	// takes no bound from them, and host_sync's is not claimed twice.
	l.GPUProfile.SyncSecondsPerStep = ptr(0.010)
	v = Classify(frames, DefaultThresholds())
	if c := causeOf(v, "launch_bound"); c != nil && strings.Contains(c.BoundWhy, "while the host works (not in a sync)") {
		t.Errorf("launch_bound bounded by host waits measured as none: %s", c.BoundWhy)
	}
}
