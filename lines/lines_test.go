package lines

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/internal/fixture"
	"github.com/gpuwatch/gpuwatch/sample"
)

func TestWriteLine(t *testing.T) {
	var b bytes.Buffer
	if err := WriteLine(&b, fixture.Frame(), nil, diagnose.DefaultThresholds()); err != nil {
		t.Fatal(err)
	}
	want := "09:30:05 cpu 52% max cpu0 95% 1/2≥90% iow 5% load 1.50 run 2 | mem 8.0GiB used 8.0GiB avail swap 0B" +
		" | vda r 1.0MiB/s w 0B/s 25% 2.0ms | psi cpu 20.0 | pid 100 tree 1 procs python(100) 95%" +
		" hottest thread python(100) 90% | gpu: libnvidia-ml.so.1 not found\n"
	if b.String() != want {
		t.Fatalf("line\n%q\nwant\n%q", b.String(), want)
	}
}

// A wait under way of a second and more is said; a shorter one (the wait
// between two batches) is not.
func TestWriteLineSaysAWaitUnderWay(t *testing.T) {
	for _, c := range []struct {
		ms   float64
		want string
	}{{12500, " waiting 12s for a batch"}, {400, ""}} {
		f := fixture.Frame()
		f.Loader = &sample.Loader{Source: "x", BatchesPerSec: 0, WaitShare: ptr(1.0), WaitingMs: ptr(c.ms)}
		var b bytes.Buffer
		if err := WriteLine(&b, f, nil, diagnose.DefaultThresholds()); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), " waiting "); got != (c.want != "") || c.want != "" && !strings.Contains(b.String(), c.want) {
			t.Errorf("waiting %g ms: %q, want %q", c.ms, b.String(), c.want)
		}
	}
}

func ptr(v float64) *float64 { return &v }

func TestWriteFrameJSONAlwaysHasArraysAndObject(t *testing.T) {
	var b bytes.Buffer
	if err := NewJSONWriter(&b).WriteFrame(&sample.Frame{Time: time.Unix(0, 0)}, nil); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{`"type":"frame"`, `"disks":[]`, `"net":[]`, `"gpus":[]`, `"unavailable":{}`} {
		if !strings.Contains(s, want) {
			t.Fatalf("%s lacks %s", s, want)
		}
	}
	if strings.Count(s, "\n") != 1 {
		t.Fatalf("not one line: %q", s)
	}
}

func TestWriteFrameRoundTrips(t *testing.T) {
	var b bytes.Buffer
	in := fixture.Frame()
	if err := NewJSONWriter(&b).WriteFrame(in, nil); err != nil {
		t.Fatal(err)
	}
	var out sample.Frame
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if !out.Time.Equal(in.Time) || out.CPU.Cores[0].BusyPct != 95 || *out.Disks[0].AwaitMs != 2 || out.Unavailable[sample.SourceGPU] == "" {
		t.Fatalf("round trip lost data: %+v", out)
	}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[float64]string{0: "0B", 1023: "1023B", 1024: "1.0KiB", 1536: "1.5KiB", 20 << 20: "20MiB", 3 << 40: "3.0TiB", -2048: "-2.0KiB"} {
		if got := sample.FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestWriteLineGPUs(t *testing.T) {
	var b bytes.Buffer
	if err := WriteLine(&b, fixture.GPUFrame(), nil, diagnose.DefaultThresholds()); err != nil {
		t.Fatal(err)
	}
	want := " | gpu0 util 50% p5-p95 0-100 mem 12GiB/40GiB 250W 61C | gpu1 LOST | mem "
	if !strings.Contains(b.String(), want) {
		t.Fatalf("line %q lacks %q", b.String(), want)
	}
}

func TestWriteLineLeadsWithTheVerdict(t *testing.T) {
	var b bytes.Buffer
	v := &diagnose.Verdict{Kind: diagnose.SingleCoreMaxed, Confidence: 0.91,
		Since:    time.Date(2026, 11, 21, 9, 29, 58, 0, time.UTC),
		Evidence: []diagnose.Evidence{{Text: "thread python (tid 100) runs at 98 % of a core (≥ 90 %)"}}}
	if err := WriteLine(&b, fixture.Frame(), v, diagnose.DefaultThresholds()); err != nil {
		t.Fatal(err)
	}
	want := "09:30:05 [single_core_maxed 91% since 09:29:58] thread python (tid 100) runs at 98 % of a core (≥ 90 %) | cpu 52%"
	if !strings.HasPrefix(b.String(), want) {
		t.Fatalf("line %q\nwant prefix %q", b.String(), want)
	}
}

func TestWriteFrameCarriesTheVerdict(t *testing.T) {
	var b bytes.Buffer
	v := &diagnose.Verdict{Kind: diagnose.IOBound, Severity: diagnose.Warning, Confidence: 0.8,
		Advice: []string{"read sequentially"}}
	if err := NewJSONWriter(&b).WriteFrame(fixture.Frame(), v); err != nil {
		t.Fatal(err)
	}
	var line struct {
		Verdict struct {
			Kind     string   `json:"kind"`
			Severity string   `json:"severity"`
			Advice   []string `json:"advice"`
		} `json:"verdict"`
	}
	if err := json.Unmarshal(b.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line.Verdict.Kind != "io_bound" || line.Verdict.Severity != "warning" || line.Verdict.Advice[0] != "read sequentially" {
		t.Fatalf("verdict = %+v", line.Verdict)
	}
}

// Headless, a GPU-bound job reads how much of the GPU it uses (GPM's SM
// and tensor activity, the step's MFU on the GPU the loop runs on) and
// what the job already does, as --once and the dashboard say it (issue
// 51); the MFU is not written beside another GPU.
func TestWriteLineSaysHowMuchOfTheGPUAndTheJobsSettings(t *testing.T) {
	f := fixture.GPUFrame()
	f.GPUs[0].GPM = &sample.GPM{SMActivityPct: ptr(82), TensorActivityPct: ptr(12)}
	on, off := true, false
	f.Loader = &sample.Loader{Source: "hook", BatchesPerSec: 10,
		Settings:   &sample.JobSettings{Autocast: &on, AutocastDtype: "bfloat16", CudnnBenchmark: &off},
		MFU:        &sample.MFU{Ratio: 0.31, Dtype: "bf16", GPU: "H200", GPUIndex: 0},
		GPUProfile: &sample.GPUProfile{State: sample.GPUProfileWaiting, Steps: 5}}
	var b bytes.Buffer
	if err := WriteLine(&b, f, nil, diagnose.DefaultThresholds()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{" | gpu0 util 50% sm 82% tensor 12% mfu 31% bf16 p5-p95 0-100 ",
		" | job: " + f.Loader.Settings.Summary() + " | " + f.Loader.GPUProfile.Summary() + " | mem "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("line %q lacks %q", b.String(), want)
		}
	}
	f.Loader.MFU.GPUIndex = 1
	b.Reset()
	if err := WriteLine(&b, f, nil, diagnose.DefaultThresholds()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "mfu") {
		t.Errorf("an MFU on gpu1 written beside gpu0: %q", b.String())
	}
}

// TestWriteLineSaysTheCeiling: while the ceiling replays kept batches the
// line read "loader 0 samples/s" and never named the ceiling (a review);
// it says the replay, and once measured, the ceiling beside the rates.
func TestWriteLineSaysTheCeiling(t *testing.T) {
	f := fixture.Frame()
	secs, ceil, step, starving := 10.0, 4077.0, 31.0, 71.0
	f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python",
		Ceiling: &sample.Ceiling{State: sample.CeilingReplaying, Seconds: &secs}}
	var b bytes.Buffer
	if err := WriteLine(&b, f, nil, diagnose.DefaultThresholds()); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, "| loader ceiling: replaying kept batches for 10 s") || strings.Contains(s, "samples/s") {
		t.Errorf("replaying: %q", s)
	}
	f.Loader.Ceiling = &sample.Ceiling{State: sample.CeilingDone, SamplesPerSec: &ceil, StepMs: &step, StarvingStepMs: &starving}
	f.Loader.SamplesPerSec, f.Loader.BatchesPerSec = 384, 3
	b.Reset()
	if err := WriteLine(&b, f, nil, diagnose.DefaultThresholds()); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, "| loader 384 samples/s") || !strings.Contains(s, "| ceiling 4,077 samples/s (step 31 ms; 71 ms starving)") {
		t.Errorf("measured: %q", s)
	}
}

// TestWriteLineNamesTheProfilesRank: with several ranks the line says
// whose CPU profile it shows, which may not be the rank the verdict
// judges (a review: rank 0's profile beside a verdict on rank 1).
func TestWriteLineNamesTheProfilesRank(t *testing.T) {
	f := fixture.GPUFrame()
	two := 2
	f.Profile = &sample.Profile{Source: "http://127.0.0.1:6061",
		Categories: []sample.ProfileCategory{{Name: "decoding", Share: 0.6}}}
	f.Ranks = []sample.Rank{
		{Rank: 0, URL: "http://127.0.0.1:6061", WorldSize: &two, Connected: true},
		{Rank: 1, URL: "http://127.0.0.1:6062", WorldSize: &two, Connected: true, Pacing: true},
	}
	var b bytes.Buffer
	if err := WriteLine(&b, f, nil, diagnose.DefaultThresholds()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), " | profile of rank 0 decoding 60%") {
		t.Errorf("line %q does not name rank 0's profile", b.String())
	}
	f.Ranks = f.Ranks[:1]
	b.Reset()
	if err := WriteLine(&b, f, nil, diagnose.DefaultThresholds()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), " | profile decoding 60%") {
		t.Errorf("one loader's line %q names a rank", b.String())
	}
}
