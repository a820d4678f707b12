package report

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/internal/fixture"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/sample"
)

// pipesFrames are four frames of a job on GPU 0 (an H200 listing the
// loader's process, 7) beside GPU 1 (a model without GPM or a peak).
// GPU 0's GPM is read in the first two frames only: SM occupancy 20 and
// 40, HMMA 40 and 60, IMMA 0 and 0, FP32 10 and 30, FP64 2 and 4, no
// DFMA nor FP16 (the driver returned none); the hook read fp16 autocast
// in frame 1 and bf16 autocast with batch 64 in frame 3 (the newest);
// frame 2 carries a finished GPU profile (matmul bf16 60 %, elementwise
// 10 %, copies 10 %, idle 20 % of the profiled step), frame 3 a new one
// still recording.
func pipesFrames() []recording.Recorded {
	on := true
	pid := 7
	peak := &sample.GPUPeak{Model: "H200 SXM", Source: "NVIDIA H200 datasheet", DenseTFLOPS: map[string]float64{"bf16": 989.5, "fp16": 989.5, "tf32": 494.5}}
	gpm := []*sample.GPM{
		{SMActivityPct: f64(70), SMOccupancyPct: f64(20), TensorActivityPct: f64(45), DRAMBWUtilPct: f64(10),
			TensorHMMAActivityPct: f64(40), TensorIMMAActivityPct: f64(0), FP32ActivityPct: f64(10), FP64ActivityPct: f64(2)},
		{SMActivityPct: f64(90), SMOccupancyPct: f64(40), TensorActivityPct: f64(65), DRAMBWUtilPct: f64(20),
			TensorHMMAActivityPct: f64(60), TensorIMMAActivityPct: f64(0), FP32ActivityPct: f64(30), FP64ActivityPct: f64(4)},
		nil, nil,
	}
	read3 := generated.Add(3 * time.Second)
	batch := 64
	settings := []*sample.JobSettings{nil, {Autocast: &on, AutocastDtype: "float16"}, nil,
		{Autocast: &on, AutocastDtype: "bfloat16", BatchSize: &batch, ReadAt: &read3}}
	profiles := []*sample.GPUProfile{nil, nil,
		{State: sample.GPUProfileDone, Device: "cuda", Steps: 5, StepSeconds: f64(0.1), BusySecondsPerStep: f64(0.08), IdleSecondsPerStep: f64(0.02),
			Parts: []sample.GPUTimePart{{Category: "matmul", Precision: "bf16", SecondsPerStep: 0.06}, {Category: "elementwise", SecondsPerStep: 0.01}, {Category: "copy", SecondsPerStep: 0.01}}},
		{State: sample.GPUProfileRecording, Steps: 5},
	}
	var frames []recording.Recorded
	for i := range 4 {
		util := 90.0
		g0 := sample.GPU{Index: 0, Name: "NVIDIA H200", Vendor: "nvidia", UtilPct: &util, GPM: gpm[i], Peak: peak,
			Processes: []sample.GPUProcess{{PID: pid}}}
		if gpm[i] == nil {
			g0.Unavailable = map[string]string{"gpm": "GPM sample: not supported"}
		}
		g1 := sample.GPU{Index: 1, Name: "NVIDIA Quadro P1000", Vendor: "nvidia", UtilPct: &util,
			Unavailable: map[string]string{"gpm": "GPM needs Hopper or later", "peak": "no dense peak known for NVIDIA Quadro P1000"}}
		f := sample.Frame{Time: generated.Add(time.Duration(i) * time.Second), IntervalSec: 1, GPUs: []sample.GPU{g0, g1},
			Loader: &sample.Loader{Source: "http://127.0.0.1:6061", PID: &pid, Settings: settings[i], GPUProfile: profiles[i]}}
		frames = append(frames, recording.Recorded{Frame: f})
	}
	return frames
}

// TestReportGivesThePipesThePeakTheSettingsAndTheProfile (issue 51 items
// 1 and 2): per GPU, the means of GPM's SM occupancy, tensor activity by
// instruction and non-tensor pipes over the frames that read each (not
// over every frame: 30, not 15), the peak's row and its source, the job's
// settings line (the newest read) and its GPU profile (the newest
// finished one) on the loop's GPU, in the JSON and both writers; each
// figure not read is absent and not_read says why.
func TestReportGivesThePipesThePeakTheSettingsAndTheProfile(t *testing.T) {
	s := Build(recording.New(recording.Header{Host: "h", Cores: 2}, pipesFrames(), nil), "x", diagnose.DefaultThresholds(), generated)
	if len(s.GPUs) != 2 {
		t.Fatalf("gpus %+v", s.GPUs)
	}
	g := s.GPUs[0]
	for _, c := range []struct {
		name string
		got  *float64
		want float64
	}{
		{"SM occupancy", g.MeanSMOccupancyPct, 30}, {"HMMA", g.MeanTensorHMMAActivityPct, 50}, {"IMMA", g.MeanTensorIMMAActivityPct, 0},
		{"FP32", g.MeanFP32ActivityPct, 20}, {"FP64", g.MeanFP64ActivityPct, 3}, {"SM activity", g.MeanSMActivityPct, 80},
	} {
		if c.got == nil || math.Abs(*c.got-c.want) > 1e-9 {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if g.MeanTensorDFMAActivityPct != nil || g.MeanFP16ActivityPct != nil {
		t.Errorf("DFMA %v, FP16 %v: the driver returned none, so absent", g.MeanTensorDFMAActivityPct, g.MeanFP16ActivityPct)
	}
	if g.PeakModel != "H200 SXM" || g.PeakSource != "NVIDIA H200 datasheet" {
		t.Errorf("peak %q from %q", g.PeakModel, g.PeakSource)
	}
	if g.SettingsLine != "bf16 autocast · batch 64" || g.Settings == nil || g.Settings.AutocastDtype != "bfloat16" {
		t.Errorf("settings %q %+v, want the newest read (frame 3's)", g.SettingsLine, g.Settings)
	}
	wantShares := []GPUTimeShare{{"matmul", 0.6}, {"elementwise", 0.1}, {"copy", 0.1}, {"idle", 0.2}}
	if g.GPUProfile == nil || g.GPUProfile.State != sample.GPUProfileDone || len(g.GPUProfileShares) != len(wantShares) ||
		!strings.HasPrefix(g.GPUProfileLine, "GPU time per step (5 steps, profiled): matmul bf16 60 %") {
		t.Fatalf("profile %+v, line %q, shares %+v", g.GPUProfile, g.GPUProfileLine, g.GPUProfileShares)
	}
	for i, w := range wantShares {
		if got := g.GPUProfileShares[i]; got.Category != w.Category || math.Abs(got.Share-w.Share) > 1e-9 {
			t.Errorf("share %d: %+v, want %+v", i, got, w)
		}
	}
	if want := []string{"DFMA, FP16 pipe: none in the 2 frames with GPM (the driver returned none, or the recording's gpuwatch did not read them)"}; !slices.Equal(g.NotRead, want) {
		t.Errorf("GPU 0 not read %q, want %q", g.NotRead, want)
	}

	// GPU 1: no GPM, no peak, not the loop's: nothing of the step.
	o := s.GPUs[1]
	if o.MeanSMOccupancyPct != nil || o.MeanTensorHMMAActivityPct != nil || o.MeanFP32ActivityPct != nil || o.PeakModel != "" ||
		o.SettingsLine != "" || o.Settings != nil || o.GPUProfile != nil || o.GPUProfileShares != nil {
		t.Errorf("GPU 1 has figures no frame read: %+v", o)
	}
	if want := []string{"SM and tensor activity: GPM needs Hopper or later", "dense peak: no dense peak known for NVIDIA Quadro P1000"}; !slices.Equal(o.NotRead, want) {
		t.Errorf("GPU 1 not read %q, want %q", o.NotRead, want)
	}

	var m, h, j bytes.Buffer
	if err := WriteMarkdown(&m, s, ""); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&h, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&j, s); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"markdown": m.String(), "html": h.String()} {
		for _, want := range []string{"SM occupancy 30 %", "HMMA (fp16, bf16, tf32) 50.0 %", "FP32 20.0 %", "NVIDIA H200 datasheet",
			"bf16 autocast · batch 64", "newest read, 12:00:03 UTC)", "matmul bf16 60 %", "dense peak: no dense peak known"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
	}
	for _, want := range []string{`"mean_sm_occupancy_pct": 30`, `"mean_tensor_hmma_activity_pct": 50`, `"mean_fp64_activity_pct": 3`,
		`"peak_source": "NVIDIA H200 datasheet"`, `"settings_line": "bf16 autocast · batch 64"`, `"category": "idle"`} {
		if !strings.Contains(j.String(), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
	if strings.Contains(j.String(), "mean_tensor_dfma_activity_pct") || strings.Contains(j.String(), "mean_fp16_activity_pct") {
		t.Error("JSON gives a figure no frame read")
	}
}

// TestASampledLoopSaysWhyNoSettings: a loop nobody instrumented (sampled)
// carries no settings and no GPU profile: the loop's GPU says why, and
// how to get them; a hooked loop that never profiled says the profile
// was not recorded, and one the hook refused says why.
func TestASampledLoopSaysWhyNoSettings(t *testing.T) {
	frames := pipesFrames()
	for i := range frames {
		l := frames[i].Frame.Loader
		l.Settings, l.GPUProfile, l.Sampled = nil, nil, &sample.SampledLoop{Samples: 50, Hz: 50}
	}
	g := Build(recording.New(recording.Header{Host: "h"}, frames, nil), "x", diagnose.DefaultThresholds(), generated).GPUs[0]
	notRead := strings.Join(g.NotRead, "; ")
	if g.Settings != nil || g.SettingsLine != "" || !strings.Contains(notRead, "settings: the loop was sampled, not instrumented") ||
		!strings.Contains(notRead, "GPU profile: the loop was sampled, not instrumented") {
		t.Errorf("sampled: %q", g.NotRead)
	}
	for i := range frames {
		frames[i].Frame.Loader.Sampled = nil
	}
	g = Build(recording.New(recording.Header{Host: "h"}, frames, nil), "x", diagnose.DefaultThresholds(), generated).GPUs[0]
	if notRead = strings.Join(g.NotRead, "; "); !strings.Contains(notRead, "settings: the loader's frames carry none") ||
		!strings.Contains(notRead, "GPU profile: not recorded (gpuwatch run --gpu-profile") {
		t.Errorf("hooked, nothing read: %q", g.NotRead)
	}
	frames[3].Frame.Loader.GPUProfile = &sample.GPUProfile{State: sample.GPUProfileRefused, Reason: "torch.profiler is in use"}
	g = Build(recording.New(recording.Header{Host: "h"}, frames, nil), "x", diagnose.DefaultThresholds(), generated).GPUs[0]
	if notRead = strings.Join(g.NotRead, "; "); g.GPUProfile != nil || !strings.Contains(notRead, "GPU profile: refused: torch.profiler is in use") {
		t.Errorf("refused: %q", g.NotRead)
	}
}

// TestTheCeilingsReplayIsNotTheGPUsUse: the real H200 run
// (diagnose/testdata/gpu/h200-starved-then-ceiling.jsonl: an input-starved
// job, then gpuwatch run --ceiling replaying kept batches, the input
// free) is reported at what the job used, its GPU 9–10 % busy, not at a
// mean with the replay's 97 % in it (25 %, which read as 2.7× busier); the
// replay's frames are counted and said.
func TestTheCeilingsReplayIsNotTheGPUsUse(t *testing.T) {
	var frames []recording.Recorded
	replaying := 0
	for _, fr := range fixture.H200CeilingFrames(t) {
		if c := fr.Loader.CeilingOf(); c != nil && c.State == sample.CeilingReplaying {
			replaying++
		}
		frames = append(frames, recording.Recorded{Frame: fr})
	}
	if replaying == 0 {
		t.Fatal("the fixture has no replay")
	}
	s := Build(recording.New(recording.Header{Host: "h", Cores: 16}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	g := s.GPUs[0]
	if g.CeilingFrames != replaying || g.MeanUtilPct == nil || *g.MeanUtilPct > 12 || g.MeanSMActivityPct == nil || *g.MeanSMActivityPct > 12 {
		t.Fatalf("ceiling frames %d (want %d), utilization %v, SMs %v", g.CeilingFrames, replaying, g.MeanUtilPct, g.MeanSMActivityPct)
	}
	if !strings.Contains(g.Used(), fmt.Sprintf("the %d frames of the ceiling's replay", replaying)) {
		t.Errorf("not said: %s", g.Used())
	}
	// The charts shade the replay's points: as many as hold its frames,
	// one run of them (the replay is one stretch of the recording).
	marked := 0
	for _, on := range s.Series.CeilingReplay {
		if on {
			marked++
		}
	}
	if marked == 0 || marked > replaying {
		t.Fatalf("%d points marked as the replay, of its %d frames", marked, replaying)
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, s); err != nil {
		t.Fatal(err)
	}
	for _, chart := range []string{"chart-accel", "chart-train", "chart-throughput"} {
		svg := html.String()[strings.Index(html.String(), `<svg id="`+chart+`"`):]
		svg = svg[:strings.Index(svg, "</div>")]
		if n := strings.Count(svg, `class="replay"`); n != 1 || !strings.Contains(svg, replayName) {
			t.Errorf("%s: %d shaded runs, legend %v", chart, n, strings.Contains(svg, replayName))
		}
	}
	// A report without a replay shades nothing.
	var plain []recording.Recorded
	for _, fr := range fixture.H200CeilingFrames(t) {
		if c := fr.Loader.CeilingOf(); c == nil || c.State != sample.CeilingReplaying {
			plain = append(plain, recording.Recorded{Frame: fr})
		}
	}
	p := Build(recording.New(recording.Header{Host: "h", Cores: 16}, plain, nil), "x", diagnose.DefaultThresholds(), generated)
	html.Reset()
	if err := WriteHTML(&html, p); err != nil {
		t.Fatal(err)
	}
	if p.Series.CeilingReplay != nil || strings.Contains(html.String(), `class="replay"`) {
		t.Errorf("a report without the replay marks %v", p.Series.CeilingReplay)
	}
}

// TestAnAxisTopIsNeverARounded0: a chart whose line peaks under 1 (PSI at
// 0.4 %) is topped by its figure, not by "0".
func TestAnAxisTopIsNeverARounded0(t *testing.T) {
	for v, want := range map[float64]string{0.4: "0.4", 0.042: "0.042", 5: "5", 12.6: "13", 100: "100", 2500: "2.5k"} {
		if got := axis(v); got != want {
			t.Errorf("axis(%g) = %q, want %q", v, got, want)
		}
	}
}

// TestAJSONCaptureReportsTheBoxItRanOn: a --json capture has no header,
// and its report said "0 cores, no GPU" of the real H200 box (a review);
// the frames carry both. The replay's frames are not the job's wait: the
// mean left them out of its rate, and not of its wait (85 % for 88 %).
func TestAJSONCaptureReportsTheBoxItRanOn(t *testing.T) {
	var frames []recording.Recorded
	for _, fr := range fixture.H200CeilingFrames(t) {
		frames = append(frames, recording.Recorded{Frame: fr})
	}
	// The mean of the 28 frames' wait shares that are neither the
	// replay's nor the one its end is in, read from the file by hand.
	const want = 0.8842347389795517
	s := Build(recording.New(recording.Header{}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	if r := s.Recording; r.Cores != 16 || !slices.Equal(r.GPUs, []string{"NVIDIA H200"}) {
		t.Errorf("cores %d, GPUs %q", r.Cores, r.GPUs)
	}
	if math.Abs(s.Loader.MeanWaitShare-want) > 1e-9 || len(s.Ranks) != 1 || math.Abs(s.Ranks[0].MeanWaitShare-want) > 1e-9 {
		t.Errorf("mean wait %v, ranks %+v; want %v", s.Loader.MeanWaitShare, s.Ranks, want)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, s, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "(16 cores, 1 GPU: NVIDIA H200)") {
		t.Errorf("the box: %s", md.String()[:200])
	}
	// Frames without CPU or GPU readings: unread, not 0.
	bare := Build(recording.New(recording.Header{}, []recording.Recorded{{Frame: sample.Frame{Time: frames[0].Frame.Time}}}, nil), "x", diagnose.DefaultThresholds(), generated)
	md.Reset()
	if err := WriteMarkdown(&md, bare, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "(cores not recorded, no GPU)") {
		t.Errorf("no cores read: %s", md.String()[:200])
	}
}
