package endpoint

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
)

// The hook's page (a real one, python/gpuwatch_hook/_cost.py's series):
// its own CPU seconds read, the split by part left to the page.
func TestHookCPUIsReadFromTheHooksPage(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("testdata", "attach", "hook-cost-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := CountersFromMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	if c.HookCPUSeconds == nil || math.Abs(*c.HookCPUSeconds-0.005203572) > 1e-12 {
		t.Fatalf("hook CPU %v, want 0.005203572", c.HookCPUSeconds)
	}
	if len(c.Dropped) != 0 {
		t.Fatalf("dropped %q", c.Dropped)
	}
}

// Outside input: a value that is no count of seconds is dropped and said;
// a labelled sample is not the total; the series alone is no loader.
func TestHookCPUOutOfRangeIsDropped(t *testing.T) {
	for _, v := range []string{"NaN", "-1", "+Inf", "1e300"} {
		c, _, err := CountersFromMetrics([]byte("gpuwatch_loader_batches_total 1\ngpuwatch_hook_cpu_seconds_total " + v + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		if c.HookCPUSeconds != nil || len(c.Dropped) != 1 || !strings.Contains(c.Dropped[0], hookCPUSeries) {
			t.Errorf("%s: hook CPU %v, dropped %q", v, c.HookCPUSeconds, c.Dropped)
		}
	}
	c, _, err := CountersFromMetrics([]byte("gpuwatch_loader_batches_total 1\ngpuwatch_hook_cpu_seconds_total{part=\"loop\"} 3\n"))
	if err != nil || c.HookCPUSeconds != nil {
		t.Errorf("a labelled sample read as the total: %v, %v", c.HookCPUSeconds, err)
	}
	if _, _, err := CountersFromMetrics([]byte("gpuwatch_hook_cpu_seconds_total 3\n")); err == nil {
		t.Error("the hook's CPU alone was taken for a loader")
	}
}

// The frame's figures: the total's rate (a share of a core) and per
// sample; none on the first reading, none when the total went back (a
// restarted process), none per sample without samples.
func TestHookCPURateAndPerSample(t *testing.T) {
	at := func(sec float64, samples uint64) LoaderCounters {
		c := counters(10, time.Millisecond, time.Millisecond)
		c.HookCPUSeconds, c.Samples = &sec, samples
		return c
	}
	src := &fakeLoader{c: at(1.0, 1000)}
	p := NewLoader(src)
	if l := collectLoader(t, p, probetest.T0).Loader; l.HookCPUSecPerSec != nil || l.HookCPUPerSampleUs != nil {
		t.Fatal("a rate from one reading")
	}
	src.c = at(1.006, 3000) // 6 ms of CPU over 2 s and 2000 samples
	l := collectLoader(t, p, probetest.T0.Add(2*time.Second)).Loader
	if l.HookCPUSecPerSec == nil || math.Abs(*l.HookCPUSecPerSec-0.003) > 1e-9 {
		t.Fatalf("share of a core %v, want 0.003", l.HookCPUSecPerSec)
	}
	if l.HookCPUPerSampleUs == nil || math.Abs(*l.HookCPUPerSampleUs-3) > 1e-6 {
		t.Fatalf("µs per sample %v, want 3", l.HookCPUPerSampleUs)
	}
	if got := l.HookCost(); got != "hook 0.3 % CPU, 3.0 µs/sample" {
		t.Errorf("footer %q", got)
	}
	src.c = at(1.010, 3000) // no samples: a share, no figure per sample
	l = collectLoader(t, p, probetest.T0.Add(3*time.Second)).Loader
	if l.HookCPUSecPerSec == nil || l.HookCPUPerSampleUs != nil {
		t.Errorf("without samples: %v, %v", l.HookCPUSecPerSec, l.HookCPUPerSampleUs)
	}
	src.c = at(0.5, 4000) // the total went back
	if l = collectLoader(t, p, probetest.T0.Add(4*time.Second)).Loader; l.HookCPUSecPerSec != nil {
		t.Errorf("a rate across a restart: %v", *l.HookCPUSecPerSec)
	}
}

// TestBytesNotCountedAreUnknown: the hook's page (a real one, captured)
// has no gpuwatch_loader_bytes_read_total; its bytes per second is
// unknown — null in JSON, BytesUnknown — not the 0 B/s the frame said
// beside a job reading 125 MB/s; a loader page that counts them has a
// rate.
func TestBytesNotCountedAreUnknown(t *testing.T) {
	for _, c := range []struct {
		file    string
		counted bool
	}{{"hook-cost-metrics.txt", false}, {"loader-metrics.txt", true}} {
		text, err := os.ReadFile(filepath.Join("testdata", "attach", c.file))
		if err != nil {
			t.Fatal(err)
		}
		counters, _, err := CountersFromMetrics(text)
		if err != nil {
			t.Fatal(err)
		}
		if counters.NoBytesRead == c.counted {
			t.Errorf("%s: NoBytesRead %v", c.file, counters.NoBytesRead)
		}
		src := &fakeLoader{c: counters}
		p := NewLoader(src)
		collectLoader(t, p, probetest.T0)
		next := counters
		next.Batches, next.Samples, next.BytesRead = counters.Batches+10, counters.Samples+320, counters.BytesRead+1<<20
		src.c = next
		l := collectLoader(t, p, probetest.T0.Add(time.Second)).Loader
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		null := strings.Contains(string(b), `"bytes_per_sec":null`)
		if l.BytesUnknown() == c.counted || null == c.counted || c.counted && l.BytesPerSec != 1<<20 {
			t.Errorf("%s: unknown %v, %v B/s, JSON null %v", c.file, l.BytesUnknown(), l.BytesPerSec, null)
		}
	}
}
