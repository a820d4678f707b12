package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/sample"
)

var generated = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// tourRecording is a real recording (testdata/tour.jsonl): `gpuwatch demo
// --tour-every 6s --duration 38s --record` on the 2-core VM, every scenario.
func tourRecording(t testing.TB) *recording.Recording {
	t.Helper()
	rec, err := recording.Open(tourPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return rec
}

// tourPath is the real tour recording, kept with the reader's tests.
var tourPath = filepath.Join("..", "recording", "testdata", "tour.jsonl")

// heldTour is the tour recording with its frames held, for tests that
// change them.
func heldTour(t testing.TB) (*recording.Recording, []recording.Recorded) {
	t.Helper()
	rec := tourRecording(t)
	var frames []recording.Recorded
	if err := rec.Each(func(_ int, r *recording.Recorded) error { frames = append(frames, *r); return nil }); err != nil {
		t.Fatal(err)
	}
	held := recording.New(rec.Header, frames, rec.Scenarios)
	held.Events, held.Warnings = rec.Events, rec.Warnings
	return held, frames
}

// tour is the report of the real tour recording.
func tour(t testing.TB) *Summary {
	return Build(tourRecording(t), "testdata/tour.jsonl", diagnose.DefaultThresholds(), generated)
}

func TestReportOfARealTour(t *testing.T) {
	s := tour(t)
	seen := map[string]bool{}
	for _, v := range s.Verdicts {
		seen[v.Kind] = true
	}
	for _, k := range []string{"healthy", "gpu_starved", "single_core_maxed", "cpu_saturated", "io_bound"} {
		if !seen[k] {
			t.Errorf("the tour's report lacks %s: %+v", k, s.Verdicts)
		}
	}
	sum := 0.0
	for _, v := range s.Verdicts {
		sum += v.Share
	}
	if sum < 0.999 || sum > 1.001 || len(s.Timeline) < 5 || len(s.Findings) < 5 || s.Loader == nil || len(s.Recording.Scenarios) < 6 {
		t.Fatalf("summary: shares %v, %d segments, %d findings, loader %v, scenarios %v", sum, len(s.Timeline), len(s.Findings), s.Loader, s.Recording.Scenarios)
	}
	for _, f := range s.Findings {
		if len(f.Evidence) == 0 || (f.Kind != "healthy" && f.Kind != "idle" && len(f.Advice) == 0) {
			t.Errorf("finding %s without evidence or advice", f.Kind)
		}
	}
	// The embedded loader lists each batch's wait: they are binned.
	n := 0
	for _, b := range s.Loader.WaitHistMs {
		n += b.Count
	}
	if n == 0 || s.Loader.WaitHistWhy != "" {
		t.Errorf("the tour's waits: %d binned, why none %q", n, s.Loader.WaitHistWhy)
	}
}

// TestGoldenMarkdownAndJSON compares the reports of the fixed recording
// with testdata/tour.{md,json} (-update rewrites them).
func TestGoldenMarkdownAndJSON(t *testing.T) {
	s := tour(t)
	var md, js bytes.Buffer
	if err := WriteMarkdown(&md, s, "tour.html"); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, s); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{"tour.md": md.Bytes(), "tour.json": js.Bytes()} {
		path := filepath.Join("testdata", name)
		if updateFlag() {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./report -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file (go test ./report -run Golden -update rewrites it)", name)
		}
	}
}

func TestHTMLIsSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, tour(t)); err != nil {
		t.Fatal(err)
	}
	h := b.String()
	for _, id := range []string{"chart-verdicts", "chart-accel", "chart-cores", "chart-disk", "chart-psi", "chart-train", "chart-wait-hist"} {
		if !strings.Contains(h, `id="`+id+`"`) {
			t.Errorf("no %s", id)
		}
	}
	for _, bad := range []string{"<script", "http://", "https://", "src="} {
		if strings.Contains(h, bad) {
			t.Errorf("the report is not self-contained: it has %q", bad)
		}
	}
}

func TestWriteFileIsAtomicAndKeepsExistingFiles(t *testing.T) {
	dir := t.TempDir()
	s := tour(t)
	path := filepath.Join(dir, "r.html")
	if err := WriteFile(path, s, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, s, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("replaced a report: %v", err)
	}
	if err := WriteFile(path, s, true); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dir, "r.pdf"), s, false); err == nil {
		t.Fatal("accepted .pdf")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left temporary files: %v", ents)
	}
	// A folder that is not there, or not a folder, is said by the path
	// typed, before a report is built: not by the temporary file's name.
	missing := filepath.Join(dir, "no-such", "r.html")
	if err := CheckOutput(missing, false); err == nil || !strings.Contains(err.Error(), "the folder "+filepath.Dir(missing)+" does not exist") {
		t.Errorf("a missing folder: %v", err)
	}
	if err := CheckOutput(filepath.Join(path, "r.html"), false); err == nil || !strings.Contains(err.Error(), "is not a folder") {
		t.Errorf("a file for a folder: %v", err)
	}
	if err := WriteFile(missing, s, false); err == nil || strings.Contains(err.Error(), ".gpuwatch-report-") {
		t.Errorf("WriteFile to a missing folder: %v", err)
	}
}

// BenchmarkReportOneHour builds and writes the HTML report of a one-hour
// recording at 1 s (the tour's frames repeated), read from its file one
// frame at a time. Targets: ≤ 2 s, HTML ≤ 3 MB.
func BenchmarkReportOneHour(b *testing.B) {
	tour, base := heldTour(b)
	path := filepath.Join(b.TempDir(), "hour.jsonl")
	w, err := recording.NewRecorder(path, tour.Header, 0)
	if err != nil {
		b.Fatal(err)
	}
	start := base[0].Frame.Time
	for i := 0; i < 3600; i++ {
		fr := base[i%len(base)]
		fr.Frame.Time = start.Add(time.Duration(i) * time.Second)
		if err := w.Frame(&fr.Frame, fr.Verdict); err != nil {
			b.Fatal(err)
		}
	}
	w.Close()
	rec, err := recording.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Close()
	var size int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var out bytes.Buffer
		s := Build(rec, "hour.jsonl", diagnose.DefaultThresholds(), generated)
		if err := WriteHTML(&out, s); err != nil {
			b.Fatal(err)
		}
		size = out.Len()
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB-html")
}

// TestACPURunsReportHasItsSettingsAndStepProfile: a job on no GPU whose
// hook read its settings and recorded its CPU step profile (run
// --gpu-profile) has both in its report, as --once shows them (a review:
// the report had neither); the tour, whose loader read none, has none.
func TestACPURunsReportHasItsSettingsAndStepProfile(t *testing.T) {
	held, frames := heldTour(t)
	on, batch := true, 64
	for i := range frames {
		if l := frames[i].Frame.Loader; l != nil && len(frames[i].Frame.GPUs) == 0 {
			l.Settings = &sample.JobSettings{Device: "cpu", Autocast: &on, AutocastDtype: "bfloat16", BatchSize: &batch}
			l.GPUProfile = &sample.GPUProfile{State: sample.GPUProfileDone, Device: "cpu", Steps: 5, StepSeconds: probesPtr(0.01),
				Parts: []sample.GPUTimePart{{Category: "matmul", Precision: "bf16", SecondsPerStep: 0.006}}}
		}
	}
	s := Build(recording.New(held.Header, frames, held.Scenarios), "cpu.jsonl", diagnose.DefaultThresholds(), generated)
	if s.Loader == nil || s.Loader.SettingsLine != "on the CPU · bf16 autocast · batch 64" || !strings.Contains(s.Loader.StepProfileLine, "CPU time per step (no GPU) (5 steps, profiled): matmul bf16 60 %") {
		t.Fatalf("loader %+v", s.Loader)
	}
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, s, ""); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, s); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"markdown": md.String(), "html": html.String()} {
		if !strings.Contains(out, "The job: on the CPU · bf16 autocast · batch 64.") || !strings.Contains(out, "matmul bf16 60 %") {
			t.Errorf("%s lacks the settings or the step profile", name)
		}
	}
	if tour := Build(tourRecording(t), "tour.jsonl", diagnose.DefaultThresholds(), generated); tour.Loader.SettingsLine != "" || tour.Loader.StepProfileLine != "" {
		t.Errorf("the tour: %q %q", tour.Loader.SettingsLine, tour.Loader.StepProfileLine)
	}
}

func probesPtr(v float64) *float64 { return &v }
