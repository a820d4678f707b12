package report

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestReportSaysGpuwatchsOwnCost: gpuwatch's CPU over a recording is the
// sum of its totals' steps (a total that goes back, a second run appended,
// starts again rather than subtracting), its mean share of a core that
// over the span of the readings, its CPU a tick that over the steps
// summed, its memory the largest reading; a recording without the
// readings has no such line.
func TestReportSaysGpuwatchsOwnCost(t *testing.T) {
	rss := func(mib uint64) *uint64 { b := mib << 20; return &b }
	// 0.004 s of CPU a second (0.4 % of a core), then a restart at 0.1 s.
	totals := []float64{1.000, 1.004, 1.008, 1.012, 0.100, 0.104}
	var frames []recording.Recorded
	for i, tot := range totals {
		f := sample.Frame{Time: generated.Add(time.Duration(i) * time.Second), IntervalSec: 1,
			Self: &sample.SelfCost{CPUSecTotal: tot, RSSBytes: rss(uint64(12 + i%3))}}
		frames = append(frames, recording.Recorded{Frame: f})
	}
	s := Build(recording.New(recording.Header{Host: "h", Cores: 2}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	got := s.Recording.Self
	// Four ticks summed (the restart's step is not): 4 ms of CPU a tick.
	if got == nil || abs(got.CPUSec-0.016) > 1e-9 || got.SpanSec != 5 || abs(got.MeanCPUPct-0.32) > 1e-9 || got.PeakRSSBytes == nil || *got.PeakRSSBytes != 14<<20 ||
		got.CPUPerTickMs == nil || abs(*got.CPUPerTickMs-4) > 1e-9 {
		t.Fatalf("self %+v", got)
	}
	const line = "gpuwatch itself: 0.3 % of a core on average, 4.0ms of CPU a tick (16ms of CPU in 5.0s), at most 14MiB resident."
	var m, h bytes.Buffer
	if err := WriteMarkdown(&m, s, ""); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&h, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.String(), line) || !strings.Contains(h.String(), "<p>"+line+"</p>") {
		t.Errorf("want %q in both reports; Markdown:\n%s", line, m.String())
	}

	for i := range frames {
		frames[i].Frame.Self = nil
	}
	s = Build(recording.New(recording.Header{Host: "h", Cores: 2}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	if s.Recording.Self != nil {
		t.Errorf("a recording without readings: self %+v", s.Recording.Self)
	}
}

func abs(x float64) float64 { return max(x, -x) }

// TestReportSaysTheHooksCost: the hook's CPU over a recording is each
// frame's rate times its time since the frame before (a gap past a minute
// left out), its mean share of a core that over those seconds, its µs per
// sample weighted by the samples; each part the same, the costliest
// first, with its share of the hook's CPU, and the parts that cost
// nothing named once; where the samples were not counted, µs per batch
// weighted by the batches; a recording without it has no such line.
func TestReportSaysTheHooksCost(t *testing.T) {
	at := []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second, 10 * time.Minute, 10*time.Minute + time.Second}
	build := func(perBatch bool) (*Summary, []recording.Recorded) {
		var frames []recording.Recorded
		for i, d := range at {
			f := sample.Frame{Time: generated.Add(d), IntervalSec: 1}
			if i > 0 { // the first reading has no rate yet
				rate, us := 0.003, 3.0
				if i%2 == 0 {
					rate, us = 0.001, 1.0
				}
				l := &sample.Loader{Source: "hook", SamplesPerSec: 1000, BatchesPerSec: 100, HookCPUSecPerSec: &rate, HookCPUPerSampleUs: &us}
				// server two thirds, loop one, stages nothing; in any order.
				parts := []sample.HookCPUPart{{Part: "loop", PerSampleUs: f64(us / 3), Cores: rate / 3}, {Part: "stages", PerSampleUs: f64(0)},
					{Part: "server", PerSampleUs: f64(us * 2 / 3), Cores: rate * 2 / 3}}
				if perBatch { // a batch made on the GPU: 100 a second, µs per batch 10× µs per sample above
					l.SamplesPerSec, l.HookCPUPerSampleUs, l.HookCPUPerBatchUs = 0, nil, f64(10*us)
					for j := range parts {
						parts[j].PerBatchUs, parts[j].PerSampleUs = f64(10**parts[j].PerSampleUs), nil
					}
				}
				l.HookCPUParts = parts
				f.Loader = l
			}
			frames = append(frames, recording.Recorded{Frame: f})
		}
		return Build(recording.New(recording.Header{Host: "h", Cores: 2}, frames, nil), "x", diagnose.DefaultThresholds(), generated), frames
	}
	s, frames := build(false)
	got := s.Recording.Hook
	// Frames 1–3 (3 s: 0.003+0.001+0.003 s) and 5 (1 s: 0.003): frame 4
	// follows a gap.
	if got == nil || abs(got.CPUSec-0.010) > 1e-12 || got.SpanSec != 4 || abs(got.MeanCPUPct-0.25) > 1e-9 || got.PerSampleUs == nil || abs(*got.PerSampleUs-2.5) > 1e-9 || got.PerBatchUs != nil {
		t.Fatalf("hook %+v", got)
	}
	if len(got.Parts) != 3 || got.Parts[0].Part != "server" || got.Parts[1].Part != "loop" || got.Parts[2].Part != "stages" {
		t.Fatalf("parts %+v", got.Parts)
	}
	if p := got.Parts[0]; abs(p.CPUSec-0.010*2/3) > 1e-12 || abs(p.Share-2.0/3) > 1e-9 || abs(p.MeanCPUPct-0.25*2/3) > 1e-9 || p.PerSampleUs == nil || abs(*p.PerSampleUs-2.5*2/3) > 1e-9 {
		t.Errorf("server %+v", p)
	}
	const line = "The hook inside the job: 0.2 % of a core on average, 2.5 µs per sample (10ms of CPU in 4.0s); " +
		"by part: server 1.7 µs per sample (67 %, 0.17 % of a core), loop 0.8 µs per sample (33 %, 0.08 % of a core); no CPU counted in stages."
	checkBothReports(t, s, line)
	// Batches without a known size: per batch stands in, said as such.
	s, _ = build(true)
	if got = s.Recording.Hook; got == nil || got.PerSampleUs != nil || got.PerBatchUs == nil || abs(*got.PerBatchUs-25) > 1e-9 || got.Parts[0].PerBatchUs == nil || got.Parts[0].PerSampleUs != nil {
		t.Fatalf("per batch: hook %+v", got)
	}
	checkBothReports(t, s, "The hook inside the job: 0.2 % of a core on average, 25.0 µs per batch (samples not counted) (10ms of CPU in 4.0s); "+
		"by part: server 16.7 µs per batch (67 %, 0.17 % of a core), loop 8.3 µs per batch (33 %, 0.08 % of a core); no CPU counted in stages.")
	// A recording of the step's time that ended before the parts' first
	// reading: the gpu_profile part reads nothing, and the line gives the
	// recording's own count instead of "no CPU counted in gpu_profile".
	for i := range frames {
		if l := frames[i].Frame.Loader; l != nil {
			l.HookCPUParts = append(l.HookCPUParts, sample.HookCPUPart{Part: "gpu_profile", PerSampleUs: f64(0)})
			l.GPUProfile = &sample.GPUProfile{State: sample.GPUProfileDone, Device: "cpu", Steps: 5, CostCPUSeconds: f64(0.37)}
		}
	}
	s = Build(recording.New(recording.Header{Host: "h", Cores: 2}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	if g := s.Recording.Hook.GPUProfileCPUSec; g == nil || *g != 0.37 {
		t.Errorf("the profile's own count: %v", g)
	}
	checkBothReports(t, s, "The hook inside the job: 0.2 % of a core on average, 2.5 µs per sample (10ms of CPU in 4.0s); "+
		"by part: server 1.7 µs per sample (67 %, 0.17 % of a core), loop 0.8 µs per sample (33 %, 0.08 % of a core); "+
		"the --gpu-profile recording took 370ms of CPU by its own count, before the first reading of the parts; no CPU counted in stages.")
	// The ceiling's replay (frame 2): the loop takes no batch of its own,
	// so its hook CPU is left out of every figure, shares and µs alike,
	// and the line says so (a review: 46 % at 9.3 µs beside 44 % at 16.1).
	replayed := slices.Clone(frames)
	l := *replayed[2].Frame.Loader
	l.SamplesPerSec, l.BatchesPerSec, l.Ceiling = 0, 0, &sample.Ceiling{State: sample.CeilingReplaying}
	l.HookCPUParts = []sample.HookCPUPart{{Part: "loop", Cores: 0.5}}
	replayed[2].Frame.Loader = &l
	s = Build(recording.New(recording.Header{Host: "h", Cores: 2}, replayed, nil), "x", diagnose.DefaultThresholds(), generated)
	if got = s.Recording.Hook; got == nil || got.ReplaySec != 1 || got.SpanSec != 3 || abs(got.CPUSec-0.009) > 1e-12 || got.Parts[0].Part != "server" {
		t.Fatalf("replayed: hook %+v", got)
	}
	if !strings.Contains(got.Line(), "; the ceiling's replay (1.0s) left out: its batches are not the job's") {
		t.Errorf("replayed: %q", got.Line())
	}
	for i := range frames {
		frames[i].Frame.Loader = nil
	}
	if s = Build(recording.New(recording.Header{Host: "h", Cores: 2}, frames, nil), "x", diagnose.DefaultThresholds(), generated); s.Recording.Hook != nil {
		t.Errorf("a recording without it: hook %+v", s.Recording.Hook)
	}
}

// checkBothReports: line is in the Markdown report, and in the HTML one
// as a paragraph.
func checkBothReports(t *testing.T, s *Summary, line string) {
	t.Helper()
	var m, h bytes.Buffer
	if err := WriteMarkdown(&m, s, ""); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&h, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.String(), line) || !strings.Contains(h.String(), "<p>"+line+"</p>") {
		t.Errorf("want %q in both reports; Markdown:\n%s", line, m.String())
	}
}

func f64(v float64) *float64 { return &v }

// TestReportSaysHowMuchOfTheGPUTheStepUsed: the report of the real H200
// bf16 MLP's recording (diagnose/testdata/gpu, issue 51) gives, per GPU,
// the means of utilization, SM and tensor activity, the TFLOPS at the
// dtype the hook read (bf16, over the frames it read it in, as MFU's: the
// steady frames' tensor activity × peak read 60 %) against its dense
// peak, and MFU, in the JSON and in both writers; the H100
// recording's GPU has no GPM and the report says so, with its reason,
// instead of a figure.
func TestReportSaysHowMuchOfTheGPUTheStepUsed(t *testing.T) {
	rec, err := recording.Open("../diagnose/testdata/gpu/h200-mlp-bf16.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := Build(rec, "x", diagnose.DefaultThresholds(), generated)
	if len(s.GPUs) != 1 {
		t.Fatalf("gpus %+v", s.GPUs)
	}
	g := s.GPUs[0]
	if g.MeanSMActivityPct == nil || *g.MeanSMActivityPct < 30 || g.MeanTensorActivityPct == nil || *g.MeanTensorActivityPct < 20 ||
		g.MeanTFLOPSHigh == nil || g.MeanTFLOPSLow == nil || *g.MeanTFLOPSLow != *g.MeanTFLOPSHigh || g.TFLOPSDtype != "bf16" ||
		g.DenseTFLOPS == nil || g.DenseDtype != "bf16" || *g.DenseTFLOPS < 989 || *g.DenseTFLOPS > 990 ||
		g.TFLOPSFrames != g.MFUFrames || *g.MeanTFLOPSHigh < 0.4**g.DenseTFLOPS || *g.MeanTFLOPSHigh > 0.7**g.DenseTFLOPS ||
		!slices.Equal(g.NotRead, []string{"GPU profile: not recorded (gpuwatch run --gpu-profile, attach --gpu-profile, or POST /gpu-profile?steps=N)"}) {
		t.Fatalf("H200 bf16 MLP: %s; not read %q", g.Used(), g.NotRead)
	}
	// Its MLP's matmuls are HMMA's (bf16): all its tensor activity, none
	// on IMMA or DFMA; the peak's row from the H200's datasheet; the
	// hook's newest read of the job's settings.
	if g.MeanTensorHMMAActivityPct == nil || math.Abs(*g.MeanTensorHMMAActivityPct-*g.MeanTensorActivityPct) > 0.05 || g.MeanTensorIMMAActivityPct == nil ||
		*g.MeanTensorIMMAActivityPct != 0 || g.MeanSMOccupancyPct == nil || g.MeanFP32ActivityPct == nil ||
		g.PeakModel != "H200 SXM" || !strings.HasPrefix(g.PeakSource, "NVIDIA H200 Tensor Core GPU datasheet") ||
		!strings.HasPrefix(g.SettingsLine, "bf16 autocast · fp32 matmuls in full fp32 · not compiled · batch 4096") {
		t.Errorf("H200 bf16 MLP: %s; settings %q; peak %q from %q", g.Pipes(), g.SettingsLine, g.PeakModel, g.PeakSource)
	}
	// MFU from the FLOPs the hook counted, over the frames the loop ran in
	// (55 %; GPM's estimate in the steady frames, tensor activity × peak,
	// read 60 %: diagnose's TestH200BF16MLPRecorded).
	// It is held against the tensor activity of the same frames, not the
	// mean over all 22 with the start-up's (a review: "above what the
	// tensor cores ran (active 32 %)").
	if g.MeanMFUPct == nil || g.MFUDtype != "bf16" || *g.MeanMFUPct < 40 || *g.MeanMFUPct > 70 || g.MFUFrames == 0 || !strings.Contains(g.Used(), "MFU") ||
		strings.Contains(g.Used(), "does not hold") {
		t.Errorf("H200 bf16 MLP's MFU: %s", g.Used())
	}
	t.Logf("%s", g.Used())
	// Its batches are made on the GPU: the hook counts them, not their
	// samples, which are absent (they read 0), not a mean of 0.
	if l := s.Loader; l == nil || l.MeanSamplesPerSec != nil || l.MeanBatchesPerSec == nil || *l.MeanBatchesPerSec < 100 || !strings.Contains(l.rateWords(), "batches/s (samples not counted") {
		t.Errorf("H200 bf16 MLP's loader: %+v", l)
	}
	var m, h bytes.Buffer
	if err := WriteMarkdown(&m, s, ""); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&h, s); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{m.String(), h.String()} {
		if !strings.Contains(out, "GPUs") || !strings.Contains(out, "TFLOPS of the H200") || !strings.Contains(out, "tensor cores") || !strings.Contains(out, "MFU") {
			t.Errorf("no GPU section in\n%s", out)
		}
	}

	// An A100: no GPM, said once by the probe on its first reading.
	var frames []recording.Recorded
	for i := range 5 {
		util := 97.0
		g := sample.GPU{Index: 0, Name: "NVIDIA A100-SXM4-80GB", Vendor: "nvidia", UtilPct: &util}
		if i == 0 {
			g.Unavailable = map[string]string{"gpm": "GPM needs Hopper or later (compute capability 8.0)"}
		}
		frames = append(frames, recording.Recorded{Frame: sample.Frame{Time: generated.Add(time.Duration(i) * time.Second), IntervalSec: 1, GPUs: []sample.GPU{g}}})
	}
	s = Build(recording.New(recording.Header{Host: "h", Cores: 2}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	if len(s.GPUs) != 1 {
		t.Fatalf("A100: gpus %+v", s.GPUs)
	}
	if g := s.GPUs[0]; g.MeanSMActivityPct != nil || g.MeanUtilPct == nil || *g.MeanUtilPct != 97 || g.Frames != 5 ||
		!slices.Equal(g.NotRead, []string{"SM and tensor activity: GPM needs Hopper or later (compute capability 8.0)"}) ||
		!strings.Contains(g.Used(), "SMs active not read") || strings.Contains(g.Used(), "TFLOPS") {
		t.Errorf("A100 without GPM: %s; not read %q", g.Used(), g.NotRead)
	}
}

// TestAnFP32StepSaysWhyNoRate: the real H200 MLP's recording with the
// settings of a plain fp32 job (autocast off, TF32 off): the report gives
// no TFLOPS and says why — its matmuls are not on the tensor cores —
// not that the frames carry no dense peak (they do).
func TestAnFP32StepSaysWhyNoRate(t *testing.T) {
	rec, err := recording.Open("../diagnose/testdata/gpu/h200-mlp-bf16.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var frames []recording.Recorded
	off := false
	err = rec.Each(func(_ int, r *recording.Recorded) error {
		f := *r
		if l := f.Frame.Loader; l != nil && l.Settings != nil {
			ll, s := *l, *l.Settings
			s.Autocast, s.AutocastDtype, s.Float32MatmulPrecision, s.MatmulAllowTF32 = &off, "", "highest", &off
			ll.Settings = &s
			f.Frame.Loader = &ll
			f.Frame.AssignRoles() // MFU derived again, against fp32's peak
		}
		frames = append(frames, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := Build(recording.New(rec.Header, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	if len(s.GPUs) != 1 {
		t.Fatalf("gpus %+v", s.GPUs)
	}
	g := s.GPUs[0]
	notRead := strings.Join(g.NotRead, "; ")
	t.Logf("%s; not read %q", g.Used(), notRead)
	// Its start's frames (no settings read yet) give the range; none of
	// its fp32 frames gives a rate at a dtype.
	if g.TFLOPSDtype != "" || strings.Contains(notRead, "no dense peak") || strings.Contains(g.Used(), "≈ 0–0") || !strings.Contains(g.Used(), "under 1 TFLOPS") {
		t.Fatalf("%s; not read %q", g.Used(), notRead)
	}
	// Without the start's frames: no rate at all, and why.
	var fp32 []recording.Recorded
	for _, f := range frames {
		if f.Frame.Loader != nil && f.Frame.Loader.Settings != nil {
			fp32 = append(fp32, f)
		}
	}
	g = Build(recording.New(rec.Header, fp32, nil), "x", diagnose.DefaultThresholds(), generated).GPUs[0]
	if notRead = strings.Join(g.NotRead, "; "); g.MeanTFLOPSHigh != nil || !strings.Contains(notRead, "TFLOPS: the step runs in plain fp32") {
		t.Fatalf("the fp32 frames alone: %s; not read %q", g.Used(), notRead)
	}
}
