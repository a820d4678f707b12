package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSweepPageEscapesAndRefuses: a sweep's page escapes every string (a
// command line is outside input) and drops control bytes, draws a bar per
// configuration, and never replaces a file.
func TestSweepPageEscapesAndRefuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sweep.html")
	rows := []SweepRow{
		{Configuration: "num_workers=1", Command: "python x.py '<script>alert(1)</script>'", SamplesPerSec: 460, WaitShare: 0.69, Verdict: "gpu_starved"},
		{Configuration: "num_workers=4\x1b]0;PWN\x07", Command: "python x.py", SamplesPerSec: 1340, WaitShare: 0.1, Verdict: "healthy", Best: true, Cheapest: true},
	}
	if err := WriteSweepHTML(path, "sweep of <b>bold</b>", rows); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, bad := range []string{"<script>", "<b>bold", "\x1b", "\x07"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q raw", bad)
		}
	}
	if n := strings.Count(page, `<rect class="bar`); n != 2 {
		t.Errorf("%d bars, want 2", n)
	}
	if !strings.Contains(page, "★ best") || !strings.Contains(page, "~ cheapest") {
		t.Error("the best and the cheapest are not marked")
	}
	if err := WriteSweepHTML(path, "again", rows); err == nil {
		t.Error("an existing page was replaced")
	}
}
