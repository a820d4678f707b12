package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestRankRowsNameJobsOfTheirOwnByProcess (a review: two unrelated
// scripts read "rank 0" twice in the loader panel): two discovered
// loaders of world size 1 are named by pid and command — the target's
// command line, else the process's name —, never "rank 0", and neither is
// marked the straggler even when the verdict names rank 0; two ranks of
// one job of two are "rank 0" and "rank 1", the straggler marked, as
// before.
func TestRankRowsNameJobsOfTheirOwnByProcess(t *testing.T) {
	th := diagnose.DefaultThresholds()
	w0, w1, s0, s1 := 0.01, 0.98, 0.132, 0.020
	rows := func(world int, straggler *int) []string {
		ranks := []sample.Rank{
			{Rank: 0, PID: 5816, URL: "http://127.0.0.1:6061", Connected: true, WaitShare: &w1, StepSec: &s1, WorldSize: &world, Pacing: true},
			{Rank: 0, PID: 5817, URL: "http://127.0.0.1:6062", Connected: true, WaitShare: &w0, StepSec: &s0, WorldSize: &world},
		}
		if world > 1 {
			ranks[1].Rank = 1
		}
		f := &sample.Frame{Ranks: ranks, Target: &sample.Target{PID: 5816, Command: "python3 slowin.py"},
			Procs: &sample.Procs{List: []sample.Proc{{PID: 5817, Name: "python3"}}}}
		pv := &view{frame: f, st: &Styles{}, th: &th, straggler: straggler, kind: "input_bound"}
		var out []string
		for _, l := range pv.rankRows(160) {
			out = append(out, ansi.Strip(l))
		}
		pv.scroll = 1
		return append(out, ansi.Strip(strings.Join(pv.rankDetails(160), " ")))
	}
	zero := 0
	own := rows(1, &zero)
	for i, want := range []string{"› pid 5816 (python3 slowin.py) ", "  pid 5817 (python3) ", "pid 5817 (python3) · a job of its own"} {
		if !strings.HasPrefix(own[i], want) {
			t.Errorf("job of its own, row %d: %q, want it to start %q", i, own[i], want)
		}
	}
	for _, l := range own {
		if strings.Contains(l, "rank 0") || strings.Contains(l, "◀") || strings.Contains(l, "straggler") || strings.Contains(l, "world size") {
			t.Errorf("job of its own: %q", l)
		}
	}
	one := 1
	ranks := rows(2, &one)
	if !strings.HasPrefix(ranks[0], "› rank 0   ") || !strings.HasPrefix(ranks[1], "  rank 1   ") || !strings.Contains(ranks[1], "◀") ||
		!strings.HasPrefix(ranks[2], "rank 1 · http://127.0.0.1:6062 · pid 5817 · world size 2") {
		t.Errorf("two ranks of one job:\n%s", strings.Join(ranks, "\n"))
	}
}
