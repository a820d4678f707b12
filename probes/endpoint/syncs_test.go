package endpoint

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/internal/expo"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestSyncsFromTheHooksPage: a page the hook served (CPU torch with
// GPUWATCH_SYNCS_CPU's counting on: loss.item() at train.py:19 every step,
// f"{loss:.4f}" at train.py:21 every 4th) reads into both sites, most
// calls first, with the host's seconds.
func TestSyncsFromTheHooksPage(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("testdata", "attach", "hook-syncs-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := CountersFromMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Syncs
	if len(s) != 2 || s[0].Site != "train.py:19" || s[0].Call != "item" || s[0].PerStep != 1 ||
		s[1].Site != "train.py:21" || s[1].Call != "format" || s[1].PerStep != 0.25 {
		t.Fatalf("syncs %+v", s)
	}
	for _, x := range s {
		if x.SecondsPerStep == nil || *x.SecondsPerStep <= 0 || *x.SecondsPerStep > 0.01 {
			t.Errorf("seconds %+v", x)
		}
	}
}

func TestSyncsLabels(t *testing.T) {
	long := strings.Repeat("x", sample.MaxHostSyncSite) + ".py:1"
	var many strings.Builder
	for i := range 100 {
		many.WriteString(`gpuwatch_job_host_syncs_per_step{site="f.py:` + strings.Repeat("1", i%5+1) + string(rune('a'+i%26)) + `",call="item"} ` + []string{"1", "2", "3"}[i%3] + "\n")
	}
	for _, tc := range []struct {
		name, page string
		want       []sample.HostSync
	}{
		{"no series: none", "gpuwatch_loader_batches_total 1\n", nil},
		{"steps alone: none", "gpuwatch_job_host_sync_steps_total 8\n", nil},
		{"a hostile site or call is left out", `gpuwatch_job_host_syncs_per_step{site="a\nb.py:1",call="item"} 1` + "\n" +
			`gpuwatch_job_host_syncs_per_step{site="` + long + `",call="item"} 1` + "\n" +
			"gpuwatch_job_host_syncs_per_step{site=\"\u202e.py:1\",call=\"item\"} 1\n" +
			`gpuwatch_job_host_syncs_per_step{site="train.py:1",call="rm -rf"} 1` + "\n" +
			`gpuwatch_job_host_syncs_per_step{site="",call="item"} 1` + "\n" +
			`gpuwatch_job_host_syncs_per_step{call="item"} 1` + "\n" +
			`gpuwatch_job_host_syncs_per_step{site="ok.py:2",call="cpu"} 2` + "\n",
			[]sample.HostSync{{Site: "ok.py:2", Call: "cpu", PerStep: 2}}},
		{"values out of range are left out", `gpuwatch_job_host_syncs_per_step{site="a.py:1",call="item"} NaN` + "\n" +
			`gpuwatch_job_host_syncs_per_step{site="b.py:1",call="item"} -1` + "\n" +
			`gpuwatch_job_host_syncs_per_step{site="c.py:1",call="item"} +Inf` + "\n" +
			`gpuwatch_job_host_syncs_per_step{site="d.py:1",call="item"} 0.5` + "\n" +
			`gpuwatch_job_host_sync_seconds_per_step{site="d.py:1",call="item"} -3` + "\n",
			[]sample.HostSync{{Site: "d.py:1", Call: "item", PerStep: 0.5}}},
		{"seconds only for a site counted", `gpuwatch_job_host_sync_seconds_per_step{site="e.py:1",call="item"} 0.1` + "\n", nil},
		{"a duplicate keeps the first", `gpuwatch_job_host_syncs_per_step{site="a.py:1",call="item"} 1` + "\n" +
			`gpuwatch_job_host_syncs_per_step{site="a.py:1",call="item"} 9` + "\n",
			[]sample.HostSync{{Site: "a.py:1", Call: "item", PerStep: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, err := expo.Parse([]byte(tc.page), "gpuwatch_")
			if err != nil {
				t.Fatal(err)
			}
			got := syncsFromPage(page)
			if !slices.EqualFunc(got, tc.want, func(a, b sample.HostSync) bool {
				return a.Site == b.Site && a.Call == b.Call && a.PerStep == b.PerStep && (b.SecondsPerStep == nil) == (a.SecondsPerStep == nil)
			}) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("bounded, most first", func(t *testing.T) {
		page, err := expo.Parse([]byte(many.String()), "gpuwatch_")
		if err != nil {
			t.Fatal(err)
		}
		got := syncsFromPage(page)
		if len(got) != sample.MaxHostSyncs || got[0].PerStep != 3 {
			t.Errorf("%d syncs, first %+v", len(got), got[0])
		}
	})
}

// TestTheLoaderProbeCarriesTheSyncs: the frame's loader has the counters'
// syncs.
func TestTheLoaderProbeCarriesTheSyncs(t *testing.T) {
	src := &fakeLoader{c: LoaderCounters{Syncs: []sample.HostSync{{Site: "train.py:87", Call: "item", PerStep: 1}}}}
	l := collectLoader(t, NewLoader(src), probetest.T0).Loader
	if len(l.Syncs) != 1 || l.Syncs[0].Site != "train.py:87" {
		t.Errorf("syncs %+v", l.Syncs)
	}
}

// FuzzSyncsFromPage: whatever the page, the syncs are bounded, printable,
// of the calls the hook names, within their ranges.
func FuzzSyncsFromPage(f *testing.F) {
	real, _ := os.ReadFile(filepath.Join("testdata", "attach", "hook-syncs-metrics.txt"))
	f.Add(real)
	f.Add([]byte(`gpuwatch_job_host_syncs_per_step{site="train.py:87",call="item"} 1` + "\n" + `gpuwatch_job_host_sync_seconds_per_step{site="train.py:87",call="item"} 0.004` + "\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		page, err := expo.Parse(text, "gpuwatch_")
		if err != nil {
			return
		}
		s := syncsFromPage(page)
		if len(s) > sample.MaxHostSyncs {
			t.Fatalf("%d syncs", len(s))
		}
		for _, x := range s {
			if x.Site == "" || len(x.Site) > sample.MaxHostSyncSite || !utf8.ValidString(x.Site) || strings.IndexFunc(x.Site, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
				t.Fatalf("site %q", x.Site)
			}
			if !slices.Contains(sample.HostSyncCalls, x.Call) {
				t.Fatalf("call %q", x.Call)
			}
			if !(x.PerStep >= 0 && x.PerStep <= maxSyncsPerStep) || x.SecondsPerStep != nil && !(*x.SecondsPerStep >= 0 && *x.SecondsPerStep <= maxSyncsPerStep) {
				t.Fatalf("values %+v", x)
			}
		}
		f := sample.Frame{Loader: &sample.Loader{Syncs: s}}
		if notes := f.Check(); len(notes) != 0 {
			t.Fatalf("a probe's syncs fail Check: %q", notes)
		}
	})
}

// TestSyncStepsSayACountOfNone: the steps the hook counted syncs in are
// read as a whole count, so that counted steps with no sites read as a
// count of none (no "sync less" advice), and the probe carries them; a
// figure that is no count, or a labelled one, is not read.
func TestSyncStepsSayACountOfNone(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("testdata", "attach", "hook-syncs-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := CountersFromMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	if c.SyncSteps == nil || *c.SyncSteps == 0 {
		t.Fatalf("the hook's page: sync steps %v", c.SyncSteps)
	}
	for page, want := range map[string]int64{
		"gpuwatch_job_host_sync_steps_total 16\n":               16,
		"gpuwatch_job_host_sync_steps_total 0\n":                0,
		"gpuwatch_loader_batches_total 1\n":                     -1,
		"gpuwatch_job_host_sync_steps_total 2.5\n":              -1,
		"gpuwatch_job_host_sync_steps_total -1\n":               -1,
		"gpuwatch_job_host_sync_steps_total NaN\n":              -1,
		"gpuwatch_job_host_sync_steps_total 1e300\n":            -1,
		`gpuwatch_job_host_sync_steps_total{rank="1"} 8` + "\n": -1,
	} {
		p, err := expo.Parse([]byte(page), "gpuwatch_")
		if err != nil {
			t.Fatal(err)
		}
		got := syncStepsFromPage(p)
		if (got == nil) != (want < 0) || got != nil && int64(*got) != want {
			t.Errorf("%q: %v, want %d (-1: none)", page, got, want)
		}
	}
	src := &fakeLoader{c: LoaderCounters{SyncSteps: probes.Ptr(uint64(24))}}
	if l := collectLoader(t, NewLoader(src), probetest.T0).Loader; l.SyncSteps == nil || *l.SyncSteps != 24 || l.Syncs != nil {
		t.Errorf("the probe: sync steps %v, syncs %v", l.SyncSteps, l.Syncs)
	}
}
