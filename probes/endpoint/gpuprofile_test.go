package endpoint

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/internal/expo"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestGPUProfileFromTheHooksPage: a page the hook served (Debian's CPU
// torch, python/tests/test_gpuprofile.py's Net: conv, batchnorm, relu,
// linear; 5 steps recorded from the 7th batch) reads into a done profile
// of the CPU with fp32 matmul and conv, most time first, within the step.
func TestGPUProfileFromTheHooksPage(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("testdata", "attach", "hook-gpuprofile-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := CountersFromMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	g := c.GPUProfile
	if g == nil || g.State != sample.GPUProfileDone || g.Device != "cpu" || g.Steps != 5 || len(c.Dropped) != 0 {
		t.Fatalf("profile %+v, dropped %q", g, c.Dropped)
	}
	if g.StepSeconds == nil || g.CostSeconds == nil || g.CostCPUSeconds == nil || g.BusySecondsPerStep == nil || g.BeforeStepSeconds == nil || g.IdleSecondsPerStep != nil {
		t.Fatalf("figures %+v", g)
	}
	for _, want := range []string{"matmul fp32", "conv fp32", "normalization ", "elementwise "} {
		if !slices.ContainsFunc(g.Parts, func(p sample.GPUTimePart) bool { return p.Category+" "+p.Precision == want }) {
			t.Errorf("no %q in %+v", want, g.Parts)
		}
	}
	if !slices.IsSortedFunc(g.Parts, func(a, b sample.GPUTimePart) int { return -cmpFloat(a.SecondsPerStep, b.SecondsPerStep) }) {
		t.Errorf("parts not most first: %+v", g.Parts)
	}
	sum := 0.0
	for _, k := range sample.GPUTimeCategories {
		s, ok := g.Share(k, "")
		if ok {
			sum += s
		}
	}
	if sum <= 0.5 || sum > 1 {
		t.Errorf("shares sum to %g", sum)
	}
	if s := g.Summary(); !strings.HasPrefix(s, "CPU time per step (no GPU) (5 steps, profiled): ") || !strings.Contains(s, "conv fp32") || !strings.Contains(s, "matmul fp32") || !strings.Contains(s, " of CPU)") || !strings.Contains(s, "the DataLoader's next()") || !strings.Contains(s, "recording cost") {
		t.Errorf("summary %q", s)
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestGPUProfileDropsWhatTheHookDoesNotSay: an unknown state drops the
// profile; an unknown category, precision or device, a value out of range
// is dropped and said; a hostile idle site is made printable and cut.
func TestGPUProfileDropsWhatTheHookDoesNotSay(t *testing.T) {
	page := func(lines ...string) LoaderCounters {
		t.Helper()
		c, _, err := CountersFromMetrics([]byte("gpuwatch_loader_batches_total 1\n" + strings.Join(lines, "\n") + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := page(`gpuwatch_job_gpu_profile_info{state="exploded",device="cuda",reason=""} 1`)
	if c.GPUProfile != nil || len(c.Dropped) != 1 || !strings.Contains(c.Dropped[0], "not a state") {
		t.Fatalf("%+v %q", c.GPUProfile, c.Dropped)
	}
	long := strings.Repeat("é", 300)
	c = page(
		"gpuwatch_job_gpu_profile_info{state=\"done\",device=\"tpu\",reason=\"a\u0007b\"} 1",
		`gpuwatch_job_gpu_profile_steps 5`,
		`gpuwatch_job_gpu_profile_step_seconds -1`,
		`gpuwatch_job_gpu_profile_busy_seconds_per_step 0.08`,
		`gpuwatch_job_gpu_profile_idle_seconds_per_step 0.02`,
		`gpuwatch_job_gpu_profile_sync_seconds_per_step 0.03`,
		`gpuwatch_job_gpu_time_seconds_per_step{category="matmul",precision="bf16"} 0.06`,
		`gpuwatch_job_gpu_time_seconds_per_step{category="matmul",precision="fp4"} 0.01`,
		`gpuwatch_job_gpu_time_seconds_per_step{category="magic",precision=""} 0.01`,
		`gpuwatch_job_gpu_time_seconds_per_step{category="copy",precision=""} NaN`,
		`gpuwatch_job_gpu_time_seconds_per_step{category="conv",precision=""} 0.01`,
		"gpuwatch_job_gpu_idle_seconds_per_step{after=\"aten::item \u001b[31mtrain.py:87"+long+"\"} 0.015",
		`gpuwatch_job_gpu_idle_seconds_per_step{after=""} 0.005`,
	)
	g := c.GPUProfile
	if g == nil || g.Device != "" || g.StepSeconds != nil || len(g.Parts) != 2 || len(g.Idle) != 2 {
		t.Fatalf("%+v", g)
	}
	if len(c.Dropped) != 6 || g.SyncSecondsPerStep != nil {
		t.Errorf("dropped %q, sync %v (more than the idle time)", c.Dropped, g.SyncSecondsPerStep)
	}
	if a := g.Idle[0].After; len(a) > sample.MaxGPUIdleAfter || !utf8.ValidString(a) || strings.ContainsRune(a, 0x1b) || g.Idle[1].After != "(unknown)" {
		t.Errorf("idle %+v", g.Idle)
	}
	if s, ok := g.Share("matmul", "bf16"); !ok || s != 0.6 {
		t.Errorf("matmul bf16 share %g %v", s, ok)
	}
	if b, ok := g.SpeedupBound("idle", "", 1e9); !ok || b < 1.24 || b > 1.26 {
		t.Errorf("idle bound %g %v", b, ok)
	}
	c = page(`gpuwatch_job_gpu_profile_info{state="done",device="cuda",reason=""} 1`,
		`gpuwatch_job_gpu_profile_busy_seconds_per_step 0.08`,
		`gpuwatch_job_gpu_profile_idle_seconds_per_step 0.02`,
		`gpuwatch_job_gpu_profile_sync_seconds_per_step 0.015`,
		`gpuwatch_job_gpu_time_seconds_per_step{category="matmul",precision="bf16"} 0.08`)
	if s, ok := c.GPUProfile.Share("sync", ""); !ok || math.Abs(s-0.15) > 1e-9 || len(c.Dropped) != 0 {
		t.Errorf("sync share %g %v, dropped %q", s, ok, c.Dropped)
	}
}

// FuzzGPUProfileFromPage: whatever the page, the profile is bounded,
// printable, of the categories, precisions and states the hook names,
// within its ranges, and passes the frame's Check unchanged.
func FuzzGPUProfileFromPage(f *testing.F) {
	real, _ := os.ReadFile(filepath.Join("testdata", "attach", "hook-gpuprofile-metrics.txt"))
	f.Add(real)
	f.Add([]byte(`gpuwatch_job_gpu_profile_info{state="done",device="cuda",reason=""} 1` + "\n" +
		`gpuwatch_job_gpu_time_seconds_per_step{category="matmul",precision="bf16"} 0.06` + "\n" +
		`gpuwatch_job_gpu_idle_seconds_per_step{after="aten::item train.py:87"} 0.015` + "\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		page, err := expo.Parse(text, "gpuwatch_")
		if err != nil {
			return
		}
		m := &metricsPage{page: page}
		m.gpuProfile()
		g := m.c.GPUProfile
		if g == nil {
			return
		}
		if !slices.Contains([]string{"waiting", "recording", "done", "refused"}, g.State) || !slices.Contains([]string{"", "cuda", "cpu"}, g.Device) {
			t.Fatalf("state %q device %q", g.State, g.Device)
		}
		if len(g.Reason) > maxGPUProfileReason || !printable(g.Reason) || len(g.Idle) > sample.MaxGPUIdleSites || len(g.Parts) > 64 {
			t.Fatalf("bounds %+v", g)
		}
		for _, p := range g.Parts {
			if !slices.Contains(sample.GPUTimeCategories, p.Category) || p.Precision != "" && !slices.Contains(sample.GPUPrecisions, p.Precision) || !finiteIn(p.SecondsPerStep, maxGPUProfileStep) {
				t.Fatalf("part %+v", p)
			}
		}
		for _, x := range g.Idle {
			if x.After == "" || len(x.After) > sample.MaxGPUIdleAfter || !printable(x.After) || !finiteIn(x.SecondsPerStep, maxGPUProfileStep) {
				t.Fatalf("idle %+v", x)
			}
		}
		if g.SyncSecondsPerStep != nil && (g.IdleSecondsPerStep == nil || *g.SyncSecondsPerStep > *g.IdleSecondsPerStep*(1+1e-9)+1e-12) {
			t.Fatalf("sync %g beyond idle %v", *g.SyncSecondsPerStep, g.IdleSecondsPerStep)
		}
		for _, k := range append(slices.Clip(sample.GPUTimeCategories), "idle", "sync", "host") {
			if s, ok := g.Share(k, ""); ok && !(s >= 0 && s <= 1) {
				t.Fatalf("share %s %g", k, s)
			}
		}
		_ = g.Summary()
		fr := sample.Frame{Loader: &sample.Loader{GPUProfile: g}}
		if notes := fr.Check(); len(notes) != 0 {
			t.Fatalf("a probe's profile fails Check: %q", notes)
		}
	})
}

func printable(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// TestAskGPUProfile: the request carries the steps and the token; a
// loader without the route, or one recording, is an error saying so.
func TestAskGPUProfile(t *testing.T) {
	var got string
	code := http.StatusAccepted
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Method + " " + r.URL.String() + " " + r.Header.Get("Authorization")
		w.WriteHeader(code)
		w.Write([]byte("recording the GPU's time over 3 steps from the next batch\n"))
	}))
	defer srv.Close()
	a, err := NewAttach(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	a.SetToken("tok")
	line, err := a.AskGPUProfile(context.Background(), 3)
	if err != nil || line != "recording the GPU's time over 3 steps from the next batch" || got != "POST /gpu-profile?steps=3 Bearer tok" {
		t.Fatalf("%q %v %q", line, err, got)
	}
	if _, err := a.AskGPUProfile(context.Background(), 51); err == nil {
		t.Error("51 steps asked")
	}
	code = http.StatusConflict
	if _, err := a.AskGPUProfile(context.Background(), 3); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("409: %v", err)
	}
	code = http.StatusNotFound
	if _, err := a.AskGPUProfile(context.Background(), 3); err == nil || !strings.Contains(err.Error(), "cannot profile its steps") {
		t.Errorf("404: %v", err)
	}
}
