package sample

import (
	"math"
	"strings"
	"testing"
)

// gpuStep is a GPU step of 100 ms as the issue tells it: fp32 matmuls
// 61 %, conv 12 %, elementwise 9 %, copies 3 %, idle 15 % after
// loss.item().
func gpuStep() *GPUProfile {
	return &GPUProfile{
		State: GPUProfileDone, Device: "cuda", Steps: 5,
		StepSeconds: f64(0.1), CostSeconds: f64(0.4),
		BusySecondsPerStep: f64(0.085), IdleSecondsPerStep: f64(0.015),
		Parts: []GPUTimePart{
			{"matmul", "fp32", 0.061}, {"conv", "bf16", 0.008}, {"conv", "fp32", 0.004},
			{"elementwise", "", 0.009}, {"copy", "", 0.003},
		},
		Idle: []GPUIdleGap{{"aten::item train.py:87", 0.015}},
	}
}

func TestGPUProfileShareIsOfTheStepTheGPUSaw(t *testing.T) {
	g := gpuStep()
	for _, c := range []struct {
		cat, prec string
		want      float64
		ok        bool
	}{
		{"matmul", "fp32", 0.61, true},
		{"matmul", "", 0.61, true},
		{"conv", "", 0.12, true},
		{"conv", "bf16", 0.08, true},
		{"idle", "", 0.15, true},
		{"sync", "", 0, false}, // a hook that does not split the waits
		{"host", "", 0, false},
		{"communication", "", 0, false},
	} {
		got, ok := g.Share(c.cat, c.prec)
		if ok != c.ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Share(%s, %s) = %g %v, want %g %v", c.cat, c.prec, got, ok, c.want, c.ok)
		}
	}
	// Amdahl: fp32 matmuls 61 % of the step, 16× faster at bf16's rate
	// (an H100's dense bf16 over its fp32): the step at most 2.33× faster.
	if b, ok := g.SpeedupBound("matmul", "fp32", 16); !ok || math.Abs(b-1/(0.39+0.61/16)) > 1e-9 {
		t.Errorf("bound %g %v", b, ok)
	}
	if _, ok := (&GPUProfile{State: GPUProfileRecording}).Share("matmul", ""); ok {
		t.Error("a recording under way has shares")
	}
	var none *GPUProfile
	if _, ok := none.Share("matmul", ""); ok || none.Summary() != "" {
		t.Error("nil has a share or a summary")
	}
}

// The waits split: 11 ms of the 15 began in a sync, the other 4 while
// the host was busy; a sync figure above the idle one (a hook's rounding)
// is the idle time, never more.
func TestGPUProfileWaitsSplitBySync(t *testing.T) {
	g := gpuStep()
	g.SyncSecondsPerStep = f64(0.011)
	for cat, want := range map[string]float64{"idle": 0.15, "sync": 0.11, "host": 0.04} {
		if got, ok := g.Share(cat, ""); !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("Share(%s) = %g %v, want %g", cat, got, ok, want)
		}
	}
	g.SyncSecondsPerStep = f64(0.0150000001)
	if s, _ := g.Share("sync", ""); s != 0.15 {
		t.Errorf("sync above idle: share %g, want the idle's 0.15", s)
	}
	if h, _ := g.Share("host", ""); h != 0 {
		t.Errorf("sync above idle: host share %g, want 0", h)
	}
	g.SyncSecondsPerStep = f64(0.011)
	want := "idle 15 % (11 % after syncs; most after aten::item train.py:87)"
	if got := g.Summary(); !strings.Contains(got, want) {
		t.Errorf("summary %q: want %q", got, want)
	}
}

func TestGPUProfileSummary(t *testing.T) {
	for _, c := range []struct {
		name string
		g    *GPUProfile
		want string
	}{
		{"gpu", gpuStep(), "GPU time per step (5 steps, profiled): matmul fp32 61 %, elementwise 9 %, conv bf16 8 %, conv fp32 4 %, copies 3 %, idle 15 % (after aten::item train.py:87); recording cost 400ms"},
		{"cpu", &GPUProfile{State: GPUProfileDone, Device: "cpu", Steps: 3, StepSeconds: f64(0.01), Parts: []GPUTimePart{{"conv", "fp32", 0.004}, {"other", "", 0.00001}}},
			"CPU time per step (no GPU) (3 steps, profiled): conv fp32 40 %"},
		{"cpu-cost", &GPUProfile{State: GPUProfileDone, Device: "cpu", Steps: 3, StepSeconds: f64(0.01), CostSeconds: f64(0.125), CostCPUSeconds: f64(0.31), Parts: []GPUTimePart{{"conv", "fp32", 0.004}}},
			"CPU time per step (no GPU) (3 steps, profiled): conv fp32 40 %; recording cost 125ms (310ms of CPU)"},
		// A step of a millisecond of ops and a second's sleep: no op
		// reached 1 %, and the line was empty.
		{"cpu, the step outside its ops", &GPUProfile{State: GPUProfileDone, Device: "cpu", Steps: 5, StepSeconds: f64(1.0036), BusySecondsPerStep: f64(0.001), Parts: []GPUTimePart{{"matmul", "fp32", 0.0006}, {"elementwise", "", 0.0004}}},
			"CPU time per step (no GPU) (5 steps, profiled): outside torch's ops 100 % (Python, I/O, sleeps: no op to break down)"},
		// Refused before the hook said the device: neither GPU nor CPU
		// (a review: "GPU time per step" on a CPU job).
		{"refused", &GPUProfile{State: GPUProfileRefused, Reason: "RuntimeError: \x1b[2Jno"}, "time per step (--gpu-profile): not recorded: RuntimeError: \ufffd[2Jno"},
		{"fewer steps than asked", &GPUProfile{State: GPUProfileDone, Device: "cpu", Steps: 3, StepSeconds: f64(0.01), Reason: "the epoch ended after 3 of the 5 steps asked", Parts: []GPUTimePart{{"conv", "fp32", 0.004}}},
			"CPU time per step (no GPU) (3 steps, profiled): conv fp32 40 %; the epoch ended after 3 of the 5 steps asked"},
		{"refused on a GPU", &GPUProfile{State: GPUProfileRefused, Device: "cuda", Reason: "busy"}, "GPU time per step: not recorded: busy"},
		{"recording", &GPUProfile{State: GPUProfileRecording, Device: "cuda", Steps: 5}, "GPU time per step: recording (5 steps)"},
	} {
		if got := c.g.Summary(); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	// A job that ended mid-recording: nothing of it measured.
	g := &GPUProfile{State: GPUProfileRecording, Device: "cpu", Steps: 5}
	if got, want := g.Unfinished(g.State), "CPU time per step (no GPU): not recorded: the job ended while recording (5 steps asked)"; got != want {
		t.Errorf("unfinished:\n got %q\nwant %q", got, want)
	}
}

// The recording's own idle is left out: a ResNet-50 in bf16 on an H200
// (channels_last, batch 128) idled 22.1 ms a step in the steps recorded,
// 50.7 ms each, against 27.5 ms steps just before them, 27.9 ms of which
// were kernels; an MLP with a loss.item() a step idled 4.38 ms (0.31 ms
// after the sync) of 5.08 ms recorded against 2.12 ms before, of which
// 0.68 ms were kernels. Without the steps before, the recording's idle
// stands.
func TestGPUProfileLeavesTheRecordingsIdleOut(t *testing.T) {
	resnet := &GPUProfile{
		State: GPUProfileDone, Device: "cuda", Steps: 5,
		StepSeconds: f64(0.0507), BeforeStepSeconds: f64(0.0275),
		BusySecondsPerStep: f64(0.0279), IdleSecondsPerStep: f64(0.0221), SyncSecondsPerStep: f64(0.0000014),
		Parts: []GPUTimePart{{"normalization", "", 0.0125}, {"conv", "bf16", 0.005}},
	}
	if s, ok := resnet.Share("idle", ""); !ok || s > 0.001 { // the sync's 1.4 µs stay
		t.Errorf("idle share %g %v: the recording's 22 ms are not the job's", s, ok)
	}
	if s, _ := resnet.Share("normalization", ""); math.Abs(s-0.0125/0.0279) > 1e-4 {
		t.Errorf("normalization share %g, want of the 27.9 ms of kernels", s)
	}
	if sum := resnet.Summary(); !strings.Contains(sum, "left out: the GPU's 22ms more idle a step while recording") || strings.Contains(sum, "idle 0") {
		t.Errorf("summary: %s", sum)
	}
	mlp := &GPUProfile{
		State: GPUProfileDone, Device: "cuda", Steps: 5,
		StepSeconds: f64(0.00508), BeforeStepSeconds: f64(0.00212),
		BusySecondsPerStep: f64(0.00068), IdleSecondsPerStep: f64(0.00438), SyncSecondsPerStep: f64(0.00031),
		Parts: []GPUTimePart{{"matmul", "fp32", 0.0005}},
	}
	for cat, want := range map[string]float64{"idle": 0.00144 / 0.00212, "sync": 0.00031 / 0.00212, "host": 0.00113 / 0.00212} {
		if got, ok := mlp.Share(cat, ""); !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("Share(%s) = %g %v, want %g", cat, got, ok, want)
		}
	}
	// A sync's wait stays as recorded: 20 ms of kernels and a .item() a
	// step whose drain idles the GPU 0.8 ms, 0.1 ms more idle beside it.
	// Steps before of 19.8 ms (shorter than the kernels: their noise) or
	// 20.3 ms leave the host's 0.1 ms out, none of the sync's.
	for _, before := range []float64{0.0198, 0.0203} {
		g := &GPUProfile{
			State: GPUProfileDone, Device: "cuda", Steps: 5,
			StepSeconds: f64(0.0209), BeforeStepSeconds: f64(before),
			BusySecondsPerStep: f64(0.020), IdleSecondsPerStep: f64(0.0009), SyncSecondsPerStep: f64(0.0008),
			Parts: []GPUTimePart{{"matmul", "bf16", 0.020}},
		}
		whole := 0.0208
		if got, ok := g.BoundShare("sync", ""); !ok || math.Abs(got-0.0008/whole) > 1e-9 {
			t.Errorf("before %gs: sync share %g %v, want %g", before, got, ok, 0.0008/whole)
		}
	}
	// The recording's idle after a sync is left out of the step too: the
	// ResNet's 22.1 ms recorded after syncs leave normalization the same
	// share of the step as after host work, while host_sync's own share
	// keeps them as recorded.
	resnet.SyncSecondsPerStep = resnet.IdleSecondsPerStep
	if s, _ := resnet.Share("normalization", ""); math.Abs(s-0.0125/0.0279) > 1e-4 {
		t.Errorf("normalization share %g with the idle after syncs", s)
	}
	if s, _ := resnet.BoundShare("sync", ""); math.Abs(s-0.0221/0.05) > 1e-3 {
		t.Errorf("host_sync's share %g, want the syncs' 22.1 ms as recorded", s)
	}
	mlp.BeforeStepSeconds = nil
	if got, _ := mlp.Share("idle", ""); math.Abs(got-0.00438/0.00506) > 1e-9 {
		t.Errorf("without the steps before: idle share %g", got)
	}
}
