package endpoint

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
	"github.com/gpuwatch/gpuwatch/sample"
)

// The hook's page (a real one, python/gpuwatch_hook/_cost.py's series):
// its own CPU seconds read, and by part.
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
	want := map[string]float64{"loop": 0.000875088, "payload": 2.3685e-05, "settings": 6.232e-06, "syncs": 2.975e-06, "stages": 0, "profiler": 0, "server": 0.004295592}
	if !maps.Equal(c.HookCPUParts, want) {
		t.Fatalf("parts %v, want %v", c.HookCPUParts, want)
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
	src.c = at(1.010, 3000) // no samples, no batches: a share, no figure per sample or batch
	src.c.Batches = 10
	l = collectLoader(t, p, probetest.T0.Add(3*time.Second)).Loader
	if l.HookCPUSecPerSec == nil || l.HookCPUPerSampleUs != nil || l.HookCPUPerBatchUs != nil {
		t.Errorf("without samples: %v, %v, %v", l.HookCPUSecPerSec, l.HookCPUPerSampleUs, l.HookCPUPerBatchUs)
	}
	src.c = at(0.5, 4000) // the total went back
	if l = collectLoader(t, p, probetest.T0.Add(4*time.Second)).Loader; l.HookCPUSecPerSec != nil {
		t.Errorf("a rate across a restart: %v", *l.HookCPUSecPerSec)
	}
	// A restart whose CPU has already passed the old total, its samples
	// counted again from 0: no figure (the probe counts from 0 where any
	// count went back, as Prometheus's rate() does, and the hook's CPU
	// has no reading at 0; the samples' difference never wraps).
	src.c = at(0.7, 9000)
	collectLoader(t, p, probetest.T0.Add(5*time.Second))
	src.c = at(0.8, 100)
	if l = collectLoader(t, p, probetest.T0.Add(6*time.Second)).Loader; l.HookCPUSecPerSec != nil || l.HookCPUPerSampleUs != nil {
		t.Errorf("a figure across a restart: %v, %v", l.HookCPUSecPerSec, l.HookCPUPerSampleUs)
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

// Outside input: the parts' names are printed by the dashboard and
// become label values, their values rates. Only [a-z_]{1,32} names with
// the one label part, finite counts of seconds, the first of a name, at
// most 16; what is dropped is said once (the first reason), and never
// with the hostile name in it.
func TestHookCPUPartsHostileAreDropped(t *testing.T) {
	many := ""
	for i := range 40 {
		many += fmt.Sprintf("gpuwatch_hook_part_cpu_seconds_total{part=\"p_%c\"} 1\n", 'a'+i%26) + fmt.Sprintf("gpuwatch_hook_part_cpu_seconds_total{part=\"q_%c\"} 1\n", 'a'+i%26)
	}
	for _, c := range []struct {
		name    string
		page    string
		want    map[string]float64
		dropped string // in the one note, "" for none
	}{
		{"an upper-case name", `{part="Loop"} 1`, nil, "a part not named [a-z_]{1,32}, dropped"},
		{"a terminal's escape, raw", "{part=\"lo\x1b[31mop\"} 1", nil, "a part not named"},
		{"a newline, escaped", `{part="lo\nop"} 1`, nil, "a part not named"},
		{"a name of 33", `{part="` + strings.Repeat("a", 33) + `"} 1`, nil, "a part not named"},
		{"a name of 32", `{part="` + strings.Repeat("a", 32) + `"} 1`, map[string]float64{strings.Repeat("a", 32): 1}, ""},
		{"an empty name", `{part=""} 1`, nil, "a part not named"},
		{"a digit", `{part="gpu2"} 1`, nil, "a part not named"},
		{"NaN", `{part="loop"} NaN`, nil, "part loop NaN: not a count of seconds, dropped"},
		{"negative", `{part="loop"} -1`, nil, "part loop -1: not a count"},
		{"+Inf", `{part="loop"} +Inf`, nil, "part loop +Inf: not a count"},
		{"past maxLoaderSeconds", `{part="loop"} 1e300`, nil, "part loop 1e+300: not a count"},
		{"a second label: a split not read", `{part="loop",thread="1"} 1`, nil, ""},
		{"no part label", `{stage="loop"} 1`, nil, ""},
		{"no label", ` 1`, nil, ""},
		{"a name twice: the first", "{part=\"loop\"} 1\ngpuwatch_hook_part_cpu_seconds_total{part=\"loop\"} 2", map[string]float64{"loop": 1}, ""},
		{"the bad one dropped, the good kept", "{part=\"Server\"} 1\ngpuwatch_hook_part_cpu_seconds_total{part=\"server\"} 2", map[string]float64{"server": 2}, "a part not named"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := CountersFromMetrics([]byte("gpuwatch_loader_batches_total 1\ngpuwatch_hook_part_cpu_seconds_total" + c.page + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got.HookCPUParts, c.want) {
				t.Errorf("parts %v, want %v", got.HookCPUParts, c.want)
			}
			checkHookDropped(t, got.Dropped, c.dropped)
		})
	}
	got, _, err := CountersFromMetrics([]byte("gpuwatch_loader_batches_total 1\n" + many))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.HookCPUParts) != maxHookParts {
		t.Errorf("%d parts, want %d", len(got.HookCPUParts), maxHookParts)
	}
	checkHookDropped(t, got.Dropped, "more than 16 parts, the rest dropped")
}

// checkHookDropped: one note on the parts' series saying want, or none.
func checkHookDropped(t *testing.T, dropped []string, want string) {
	t.Helper()
	if want == "" {
		if len(dropped) != 0 {
			t.Errorf("dropped %q", dropped)
		}
		return
	}
	if len(dropped) != 1 || !strings.HasPrefix(dropped[0], hookPartSeries+" ") || !strings.Contains(dropped[0], want) {
		t.Errorf("dropped %q, want one note saying %q", dropped, want)
	}
	for _, d := range dropped {
		if strings.ContainsAny(d, "\x1b\n") || strings.Contains(d, "Loop") || strings.Contains(d, "Server") {
			t.Errorf("a hostile name in the note: %q", d)
		}
	}
}

// The hook's pages over loopback (real ones, captured: a job with
// --gpu-profile whose batches have a size, and one whose batches have
// none), the second reading its counters an interval on: each part's
// share of a core and µs per sample, the costliest first; where the
// samples are not counted, µs per batch stands in, for the total and the
// parts, and the JSON says which.
func TestHookCPUPartsOverALoopbackHook(t *testing.T) {
	for _, c := range []struct {
		name, file string
		next       []string // old, new: the page 2 s on (1 s for the second)
		sec        float64
		perBatch   bool
		want       []sample.HookCPUPart // PerSampleUs or PerBatchUs as the case says
		footer     string
	}{
		{"samples counted", "hook-gpuprofile-metrics.txt", []string{
			"gpuwatch_loader_batches_total 30", "gpuwatch_loader_batches_total 130",
			"gpuwatch_loader_samples_total 240", "gpuwatch_loader_samples_total 1040",
			"gpuwatch_hook_cpu_seconds_total 0.044339565", "gpuwatch_hook_cpu_seconds_total 0.049139565",
			`{part="loop"} 0.000474`, `{part="loop"} 0.001274`,
			`{part="payload"} 0.000167938`, `{part="payload"} 0.000247938`,
			`{part="syncs"} 0.00196975`, `{part="syncs"} 0.00356975`,
			`{part="server"} 0.002526824`, `{part="server"} 0.004926824`,
		}, 2, false, []sample.HookCPUPart{
			{Part: "server", PerSampleUs: f64(3), Cores: 0.0012}, {Part: "syncs", PerSampleUs: f64(2), Cores: 0.0008},
			{Part: "loop", PerSampleUs: f64(1), Cores: 0.0004}, {Part: "payload", PerSampleUs: f64(0.1), Cores: 0.00004},
			{Part: "gpu_profile", PerSampleUs: f64(0)}, {Part: "profiler", PerSampleUs: f64(0)}, {Part: "settings", PerSampleUs: f64(0)}, {Part: "stages", PerSampleUs: f64(0)},
		}, "hook 0.2 % CPU, 6.0 µs/sample (server 3.0, syncs 2.0)"},
		{"samples not counted: per batch", "hook-cost-metrics.txt", []string{
			"gpuwatch_loader_batches_total 100", "gpuwatch_loader_batches_total 200",
			"gpuwatch_hook_cpu_seconds_total 0.005203572", "gpuwatch_hook_cpu_seconds_total 0.006203572",
			`{part="loop"} 0.000875088`, `{part="loop"} 0.001075088`,
			`{part="server"} 0.004295592`, `{part="server"} 0.005095592`,
		}, 1, true, []sample.HookCPUPart{
			{Part: "server", PerBatchUs: f64(8), Cores: 0.0008}, {Part: "loop", PerBatchUs: f64(2), Cores: 0.0002},
			{Part: "payload", PerBatchUs: f64(0)}, {Part: "profiler", PerBatchUs: f64(0)}, {Part: "settings", PerBatchUs: f64(0)}, {Part: "stages", PerBatchUs: f64(0)}, {Part: "syncs", PerBatchUs: f64(0)},
		}, "hook 0.1 % CPU, 10 µs/batch (server 8.0, loop 2.0)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			first, err := os.ReadFile(filepath.Join("testdata", "attach", c.file))
			if err != nil {
				t.Fatal(err)
			}
			second := string(first)
			for i := 0; i < len(c.next); i += 2 {
				if !strings.Contains(second, c.next[i]+"\n") {
					t.Fatalf("%s: no line %q", c.file, c.next[i])
				}
				second = strings.Replace(second, c.next[i]+"\n", c.next[i+1]+"\n", 1)
			}
			var reads atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain; version=0.0.4")
				if reads.Add(1) == 1 {
					w.Write(first)
					return
				}
				w.Write([]byte(second))
			}))
			defer srv.Close()
			a, err := NewAttach(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			p := NewLoader(a)
			if l := collectLoader(t, p, probetest.T0).Loader; l.HookCPUParts != nil || l.HookCPUSecPerSec != nil {
				t.Fatalf("figures from one reading: %+v", l.HookCPUParts)
			}
			f := collectLoader(t, p, probetest.T0.Add(time.Duration(c.sec*float64(time.Second))))
			l := f.Loader
			if len(l.HookCPUParts) != len(c.want) {
				t.Fatalf("parts %+v, want %+v", l.HookCPUParts, c.want)
			}
			for i, w := range c.want {
				g := l.HookCPUParts[i]
				got, want := g.PerSampleUs, w.PerSampleUs
				if c.perBatch {
					got, want = g.PerBatchUs, w.PerBatchUs
				}
				other := g.PerBatchUs
				if c.perBatch {
					other = g.PerSampleUs
				}
				if g.Part != w.Part || math.Abs(g.Cores-w.Cores) > 1e-9 || got == nil || math.Abs(*got-*want) > 1e-6 || other != nil {
					t.Errorf("part %d: %s %v cores, %v µs (other unit %v), want %+v", i, g.Part, g.Cores, got, other, w)
				}
			}
			if c.perBatch != (l.HookCPUPerSampleUs == nil) || c.perBatch != (l.HookCPUPerBatchUs != nil) {
				t.Errorf("per sample %v, per batch %v", l.HookCPUPerSampleUs, l.HookCPUPerBatchUs)
			}
			if got := l.HookCostTop(2); got != c.footer {
				t.Errorf("footer %q, want %q", got, c.footer)
			}
			if notes := f.Check(); len(notes) != 0 {
				t.Errorf("the frame's check: %q", notes)
			}
			b, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			unit := `"us_per_sample"`
			if c.perBatch {
				unit = `"us_per_batch"`
			}
			if js := string(b); !strings.Contains(js, `"hook_cpu_parts":[{"part":"`+c.want[0].Part+`",`+unit) || c.perBatch != strings.Contains(js, `"hook_cpu_us_per_batch"`) {
				t.Errorf("JSON %s", js)
			}
		})
	}
}

// A part that goes back (its process restarted, or a hook that reset
// it) gives nothing for that interval, the others still do; a part new
// to the reading waits for its second; without parts, none.
func TestHookCPUPartThatWentBackGivesNothing(t *testing.T) {
	at := func(samples uint64, parts map[string]float64) LoaderCounters {
		c := counters(10, time.Millisecond, time.Millisecond)
		c.Samples, c.HookCPUParts = samples, parts
		return c
	}
	src := &fakeLoader{c: at(1000, map[string]float64{"loop": 1, "server": 2})}
	p := NewLoader(src)
	collectLoader(t, p, probetest.T0)
	src.c = at(2000, map[string]float64{"loop": 1.001, "server": 0.5, "payload": 3})
	l := collectLoader(t, p, probetest.T0.Add(time.Second)).Loader
	if len(l.HookCPUParts) != 1 || l.HookCPUParts[0].Part != "loop" || math.Abs(*l.HookCPUParts[0].PerSampleUs-1) > 1e-9 {
		t.Errorf("parts %+v, want loop alone at 1 µs/sample", l.HookCPUParts)
	}
	src.c = at(3000, nil)
	if l = collectLoader(t, p, probetest.T0.Add(2*time.Second)).Loader; l.HookCPUParts != nil {
		t.Errorf("parts without a reading: %+v", l.HookCPUParts)
	}
}

func f64(v float64) *float64 { return &v }
