package diagnose

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/verdicts.golden")

// TestVerdictsOnEveryFixtureAreUnchanged replays every recorded fixture and
// compares each frame's verdict — kind, severity, evidence, secondary
// findings and advice — with testdata/verdicts.golden. A refactoring of
// the rules must leave it byte for byte the same; a deliberate change of a
// rule rewrites it with -update, and the diff shows what changed.
func TestVerdictsOnEveryFixtureAreUnchanged(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, dir := range []string{"pytorch", "inline", "contended"} {
		more, _ := filepath.Glob(filepath.Join("testdata", dir, "*.jsonl"))
		files = append(files, more...)
	}
	var b bytes.Buffer
	for _, path := range files {
		fmt.Fprintf(&b, "== %s\n", filepath.ToSlash(path))
		for _, s := range replay(readRecording(t, path), DefaultThresholds()) {
			for i, v := range s.verdicts {
				fmt.Fprintf(&b, "%s %d %s %s %.2f\n", s.name, i, v.Kind, v.Severity, v.Confidence)
				for _, e := range v.Evidence {
					fmt.Fprintf(&b, "  e %s %s\n", e.Metric, e.Text)
				}
				for _, f := range v.Secondary {
					fmt.Fprintf(&b, "  s %s %s\n", f.Kind, f.Text)
				}
				for _, a := range v.Advice {
					fmt.Fprintf(&b, "  a %s\n", a)
				}
			}
		}
	}
	golden := filepath.Join("testdata", "verdicts.golden")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./diagnose -run Unchanged -update writes it)", err)
	}
	if got := b.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < min(len(gl), len(wl)); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("verdicts differ from %s at line %d:\n got  %s\n want %s", golden, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("verdicts differ from %s in length: %d lines, want %d", golden, len(gl), len(wl))
	}
}
