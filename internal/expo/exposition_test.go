package expo

import (
	"math"
	"strings"
	"testing"
)

// TestParseKeepsThePrefixedSamples: comments, blank lines and other
// families are skipped; labels (escapes included), values and timestamps
// are read as the text format (docs: Prometheus exposition format 0.0.4)
// defines them.
func TestParseKeepsThePrefixedSamples(t *testing.T) {
	page := "# HELP go_goroutines x\n# TYPE go_goroutines gauge\ngo_goroutines 12\n\n" +
		"gpuwatch_loader_batches_total 42\n" +
		"gpuwatch_loader_info{kind=\"go\",path=\"a\\\"b\\\\c\\n\"} 1 1700000000000\n" +
		"  gpuwatch_loader_queue_depth\t+Inf\n" +
		"gpuwatch_loader_worker_info{pid=\"7\"} 1\ngpuwatch_loader_worker_info{pid=\"8\",} 1\n"
	got, err := Parse([]byte(page), "gpuwatch_loader_")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["go_goroutines"]; ok || len(got) != 4 {
		t.Fatalf("families %v, want the 4 gpuwatch_loader_ ones", got)
	}
	if s := got["gpuwatch_loader_batches_total"]; len(s) != 1 || s[0].Value != 42 {
		t.Errorf("batches: %+v", s)
	}
	info := got["gpuwatch_loader_info"]
	if len(info) != 1 {
		t.Fatalf("info: %+v", info)
	}
	if v, _ := info[0].Label("path"); v != "a\"b\\c\n" {
		t.Errorf("escaped label read as %q", v)
	}
	if v, ok := info[0].Label("kind"); v != "go" || !ok {
		t.Errorf("kind %q %v", v, ok)
	}
	if _, ok := info[0].Label("rank"); ok {
		t.Error("a label that is not there was found")
	}
	if s := got["gpuwatch_loader_queue_depth"]; len(s) != 1 || !math.IsInf(s[0].Value, 1) {
		t.Errorf("queue depth: %+v", s)
	}
	if w := got["gpuwatch_loader_worker_info"]; len(w) != 2 {
		t.Errorf("two worker samples, got %+v", w)
	}
}

// TestParseRefusesWhatIsNotMetrics: each malformed page fails with the
// line it failed on, whatever the prefix.
func TestParseRefusesWhatIsNotMetrics(t *testing.T) {
	for page, want := range map[string]string{
		"<html>\n":                       "line 1: no metric name",
		"a 1\nb\n":                       "line 2: want a value after b",
		"a 1":                            "line 1: the page ends mid-line",
		"a{x=\"1} 2\n":                   "closing quote",
		"a 0x1p3\n":                      "not a sample value",
		"a 1_000\n":                      "not a sample value",
		"a 1 yesterday\n":                "want a timestamp",
		"a{x=\"1\"} 1\nb{y=\"2\"} two\n": "line 2:",
	} {
		if _, err := Parse([]byte(page), "zzz_"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", page, err, want)
		}
	}
}

// TestParseKeepsABoundedNumberOfSamples: a hostile page cannot grow the
// result past maxKeptSamples.
func TestParseKeepsABoundedNumberOfSamples(t *testing.T) {
	page := strings.Repeat("p_x 1\n", maxKeptSamples+10)
	got, err := Parse([]byte(page), "p_")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got["p_x"]); n != maxKeptSamples {
		t.Fatalf("kept %d samples, want %d", n, maxKeptSamples)
	}
}

// FuzzParse: no page panics the parser, and what it keeps has the prefix
// and stays within the bound. (The cross-check against expfmt's own reader
// is FuzzExpositionAgainstExpfmt in probes/endpoint.)
func FuzzParse(f *testing.F) {
	f.Add([]byte("gpuwatch_loader_info{kind=\"go\"} 1\n"), "gpuwatch_loader_")
	f.Add([]byte("# c\na{b=\"\\\"\"} NaN 12\n"), "a")
	f.Fuzz(func(t *testing.T, page []byte, prefix string) {
		got, err := Parse(page, prefix)
		if err != nil {
			return
		}
		n := 0
		for name, ss := range got {
			if !strings.HasPrefix(name, prefix) {
				t.Fatalf("kept %q without the prefix %q", name, prefix)
			}
			n += len(ss)
		}
		if n > maxKeptSamples {
			t.Fatalf("kept %d samples", n)
		}
	})
}
