package sample

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSelfWordsSayTheTickAndTheTotal: gpuwatch's CPU a tick is its share
// of a core over the frame's interval; it and the total are said where
// asked and read, and what was not read is left out, never a 0.
func TestSelfWordsSayTheTickAndTheTotal(t *testing.T) {
	s := &SelfCost{CPUPct: ptr(0.4), CPUSecTotal: 3.2, RSSBytes: ptr(uint64(14 << 20))}
	if v := s.CPUSecPerTick(2); v == nil || *v != 0.008 {
		t.Errorf("per tick of 2 s: %v, want 0.008", v)
	}
	for _, c := range []struct {
		name             string
		s                *SelfCost
		interval         float64
		tick, total, rss bool
		want             string
	}{
		{"all of it", s, 1, true, true, true, "gpuwatch 0.4 % CPU (4.0ms/tick), 3.2s total · 14MiB"},
		{"Summary's words", s, 1, false, false, true, "gpuwatch 0.4 % CPU · 14MiB"},
		{"no interval yet: no tick", s, 0, true, true, false, "gpuwatch 0.4 % CPU, 3.2s total"},
		{"a tick under a millisecond: µs, where the share reads 0.0", &SelfCost{CPUPct: ptr(0.035)}, 1, true, true, true, "gpuwatch 0.0 % CPU (350µs/tick)"},
		{"the first frame: no share, the total", &SelfCost{CPUSecTotal: 0.05}, 1, true, true, true, "gpuwatch 50ms total"},
		{"nothing read", &SelfCost{}, 1, true, true, true, ""},
		{"no cost", nil, 1, true, true, true, ""},
	} {
		if got := c.s.Words(c.interval, c.tick, c.total, c.rss); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := s.Summary(); got != "gpuwatch 0.4 % CPU · 14MiB" {
		t.Errorf("Summary %q", got)
	}
}

// TestHookCostTopSaysTheCostliestParts: the parts by their cost whatever
// the frame's order, in the unit of the total (per batch where the
// samples are not counted), those under 0.05 µs left out, a hostile name
// made printable.
func TestHookCostTopSaysTheCostliestParts(t *testing.T) {
	l := &Loader{HookCPUSecPerSec: ptr(0.0031), HookCPUPerSampleUs: ptr(2.14), HookCPUParts: []HookCPUPart{
		{Part: "loop", PerSampleUs: ptr(0.4), Cores: 0.0006}, {Part: "stages", PerSampleUs: ptr(0.0), Cores: 0},
		{Part: "server", PerSampleUs: ptr(1.6), Cores: 0.0023}, {Part: "payload", PerSampleUs: ptr(0.01), Cores: 0.00001},
	}}
	for n, want := range []string{"hook 0.3 % CPU, 2.1 µs/sample", "hook 0.3 % CPU, 2.1 µs/sample (server 1.6)",
		"hook 0.3 % CPU, 2.1 µs/sample (server 1.6, loop 0.4)", "hook 0.3 % CPU, 2.1 µs/sample (server 1.6, loop 0.4)"} {
		if got := l.HookCostTop(n); got != want {
			t.Errorf("top %d: %q, want %q", n, got, want)
		}
	}
	if got := l.HookCost(); got != "hook 0.3 % CPU, 2.1 µs/sample" {
		t.Errorf("HookCost %q", got)
	}
	b := &Loader{HookCPUSecPerSec: ptr(0.0031), HookCPUPerBatchUs: ptr(93.0), HookCPUParts: []HookCPUPart{{Part: "lo\x1bop", PerBatchUs: ptr(70.0), Cores: 0.002}}}
	if got := b.HookCostTop(2); got != "hook 0.3 % CPU, 93 µs/batch (lo\uFFFDop 70)" {
		t.Errorf("per batch: %q", got)
	}
}

// TestHookCPUPartsInTheFrame: the JSON names of the parts and the figure
// per batch, absent where not read; a recorded frame's list is cut at 16
// and its figures brought within range by Check.
func TestHookCPUPartsInTheFrame(t *testing.T) {
	l := &Loader{HookCPUSecPerSec: ptr(0.003), HookCPUPerBatchUs: ptr(30.0), HookCPUParts: []HookCPUPart{{Part: "server", PerBatchUs: ptr(20.0), Cores: 0.002}}}
	js, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"hook_cpu_us_per_batch":30,"hook_cpu_parts":[{"part":"server","us_per_batch":20,"cores":0.002}]`) || strings.Contains(string(js), "hook_cpu_us_per_sample") {
		t.Errorf("JSON %s", js)
	}
	if js, _ = json.Marshal(&Loader{}); strings.Contains(string(js), "hook_cpu") {
		t.Errorf("a loader without the hook's cost: %s", js)
	}
	f := &Frame{Loader: &Loader{}}
	for range 20 {
		f.Loader.HookCPUParts = append(f.Loader.HookCPUParts, HookCPUPart{Part: "loop", PerSampleUs: ptr(-1.0), Cores: 1e9})
	}
	f.Check()
	if p := f.Loader.HookCPUParts; len(p) != 16 || p[0].PerSampleUs != nil || p[0].Cores != 1e4 {
		t.Errorf("after Check: %d parts, the first %+v", len(p), p[0])
	}
}
