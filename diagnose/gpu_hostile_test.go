package diagnose

// Defects found by hostile reviews of the GPU causes (issue 51), each
// test failing without its fix.

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// nn.DataParallel on an 8-GPU box: one process, autograd's device
// threads pt_autograd_0..7 each launch their own GPU's backward at the
// same time (not in turns with each other). The loop's thread at 40 % and
// eight autograd threads at 12 % each: no thread is near a core, yet
// hostPath sums them to 136 %, capped to 100 %, and launch_bound says
// the host's one launch path runs a full core.
// One process driving eight GPUs runs eight pt_autograd_N threads side by
// side: the launch path is the loop's thread and the busiest of them, not
// their sum.
func TestParallelAutogradThreadsAreNotOneLaunchPath(t *testing.T) {
	frames := gpuBoundFrames(1, 0, 1, 1, 40, fp32Settings())
	for i := range frames {
		p := frames[i].Procs
		p.List[0].CPUPct = 40 + 8*12
		for d := range 8 {
			p.Threads = append(p.Threads, sample.Thread{PID: 100, TID: 101 + d, Name: fmt.Sprintf("pt_autograd_%d", d), CPUPct: 12})
		}
	}
	v := Classify(frames, DefaultThresholds())
	if c := causeOf(v, "launch_bound"); c != nil {
		t.Errorf("launch_bound from threads that run side by side: %s", c.Evidence)
	}
}

// gpu_underused/host-idle on a GPU without GPM (an A100, or GPM not
// read): the GPU runs a kernel 12 % of the time, the input keeps up, a
// bf16 conv model in NCHW. The GPU is not the limit, yet gpuBound() lets
// the GPU-bound causes run, and channels_last — "the GPU is the limit"
// — is named with "practice: 22–30 % faster" and no bound; naming a
// cause drops the situation's own practice (larger batch, CUDA graphs,
// fewer syncs). A fix that only speeds kernels can gain at most
// 1/(1 − 0.12) = 1.14× here.
// A GPU 12 % busy while the input keeps up: no kernel fix gains more than
// 1.14×, so none is named, and the host side's practice stays.
func TestHostIdleDoesNotAdviseKernelFixes(t *testing.T) {
	st := bf16Settings()
	st.HasConv, st.ConvChannelsLast = ptr(true), ptr(false)
	frames := gpuBoundFrames(1, 0, 1, 1, 60, st)
	for i := range frames {
		frames[i].GPUs[0].UtilPct = ptr(12.0)
		frames[i].GPUs[0].UtilSamples = &sample.UtilSamples{N: 6, Min: 11, Mean: 12, Max: 13, P5: 11, P95: 13}
		frames[i].GPUs[0].GPM = nil // GPM missing
	}
	v := Classify(frames, DefaultThresholds())
	if v.Kind != GPUUnderused {
		t.Fatalf("kind %s", v.Kind)
	}
	if c := causeOf(v, "channels_last"); c != nil && (c.Bound == nil || c.Bound.Gain > 1/(1-0.12)+1e-9) {
		t.Errorf("host-idle names channels_last, bound %+v: %s", c.Bound, c.BoundWhy)
	}
	if all := strings.Join(v.Advice, "\n"); !strings.Contains(all, "CUDA graphs") && !strings.Contains(all, "larger batch") {
		t.Errorf("the host-side practice is gone: %q", v.Advice)
	}
}

// host-idle is held on utilization once shown (50 % → 62.5 %), but not on
// GPM's SM activity: a job at 40 % busy whose SMs read 29 % then 31 %
// (SMActivityLowPct 30) flips gpu_underused → healthy → gpu_underused.
// host-idle, once shown, holds on SM activity as it does on utilization.
func TestHostIdleHeldOnSMActivityToo(t *testing.T) {
	th := DefaultThresholds()
	if v := classify(busyAt(40, 29), busyAt(40, 29), th, Healthy, nil); v.Kind != GPUUnderused {
		t.Fatalf("40 %% busy, SMs 29 %%: %s", v.Kind)
	}
	if v := classify(busyAt(40, 31), busyAt(40, 31), th, GPUUnderused, nil); v.Kind != GPUUnderused {
		t.Errorf("shown, 40 %% busy, SMs 31 %%: %s (flips on a 2-point move of SM activity)", v.Kind)
	}
}

// An 8-GPU node whose job's GPUs were not told: the job's GPU runs a
// kernel 40 % of the time, seven others idle. host-idle judges the
// busiest (40 % < 50 %) but its evidence and threshold line carry the
// mean over all eight (5 %): "the GPU runs a kernel 5 % of the time".
// host-idle is judged on the busiest GPU, and says that one's figure.
func TestHostIdleSaysTheBusiestGPUItJudged(t *testing.T) {
	frames := gpuBoundFrames(1, 0, 1, 1, 60, fp32Settings())
	for i := range frames {
		frames[i].GPUs[0].UtilPct = ptr(40.0)
		frames[i].GPUs[0].UtilSamples = &sample.UtilSamples{N: 6, Min: 39, Mean: 40, Max: 41, P5: 39, P95: 41}
		for j := 1; j < 8; j++ {
			frames[i].GPUs = append(frames[i].GPUs, sample.GPU{Index: j, Name: "NVIDIA H200", Vendor: "nvidia", UtilPct: ptr(0.0), Peak: h200Peak,
				GPM: &sample.GPM{SMActivityPct: ptr(0.0), TensorActivityPct: ptr(0.0)}})
		}
	}
	v := Classify(frames, DefaultThresholds())
	if v.Kind != GPUUnderused || len(v.Evidence) == 0 {
		t.Fatalf("%s %+v", v.Kind, v.Evidence)
	}
	if e := v.Evidence[0]; !strings.Contains(e.Text, "40 %") {
		t.Errorf("evidence %q (value %v): the GPU it judged ran a kernel 40 %% of the time", e.Text, e.Value)
	}
}

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

// The same hostile profile (busy 0, idle 0, no step_seconds, no steps
// before: each allowed by the endpoint and by Frame.Check) through
// Classify: the healthy line's profileWords calls Summary, which panics.
// A hook's profile with no time in it (each figure in range) is no panic.
func TestClassifyWithAZeroStepProfileDoesNotPanic(t *testing.T) {
	frames := withProfile(gpuBoundFrames(95, 0.5, 20, 80, 60, fp32Settings()), "cuda", 0, 0,
		sample.GPUTimePart{Category: "matmul", Precision: "fp32", SecondsPerStep: 0.01})
	p := frames[len(frames)-1].Loader.GPUProfile
	p.StepSeconds = nil
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Classify panicked: %v", r)
		}
	}()
	Classify(frames, DefaultThresholds())
}

// A replayed recording's peak table is not checked (sample.Frame.Check
// does not walk a map's floats); peakRatio now refuses an infinite ratio,
// but a finite huge one makes the bound's rate +Inf and the verdict
// cannot be written as JSON.
// A recording's peaks of 1e300 and 1e-7 TFLOPS give no bound, and the
// verdict encodes as JSON.
func TestHostilePeakRatioBoundsNothingInfinite(t *testing.T) {
	frames := gpuBoundFrames(95, 0.5, 20, 80, 60, fp32Settings())
	for i := range frames {
		frames[i].GPUs[0].Peak = &sample.GPUPeak{Model: "x", DenseTFLOPS: map[string]float64{"fp32": 1e-7, "bf16": 1e300}}
		if notes := frames[i].Check(); len(notes) > 0 {
			t.Logf("check: %v", notes)
		}
	}
	v := Classify(frames, DefaultThresholds())
	c := causeOf(v, "tensor_idle")
	if c != nil && c.Bound != nil {
		t.Errorf("a bound from a peak ratio of 1e307: %+v", c.Bound)
	}
	for _, c := range v.Causes {
		b := c.Bound
		if b == nil {
			continue
		}
		for name, x := range map[string]float64{"gain": b.Gain, "k": b.K, "samples_per_sec": b.SamplesPerSec, "free_samples_per_sec": b.FreeSamples} {
			if math.IsInf(x, 0) || math.IsNaN(x) {
				t.Errorf("%s's bound %s = %g", c.ID, name, x)
			}
		}
	}
	if _, err := json.Marshal(v); err != nil {
		t.Errorf("verdict not JSON: %v", err)
	}
}
