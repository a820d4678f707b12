package tui

import (
	"testing"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestRankRolesFollowTheThresholds: the rank rows judge a rank by the
// session's thresholds, as the verdict does: a rank waiting 30 % is
// input-bound at the default 20 %, and not with wait_share_starved 0.5;
// a step 1.5× the straggler's waits in the all-reduce at the default
// ratio 1.3, and not at 2.
func TestRankRolesFollowTheThresholds(t *testing.T) {
	w0, w1, s0, s1 := 0.3, 0.6, 0.030, 0.020
	f := &sample.Frame{Ranks: []sample.Rank{
		{Rank: 0, Connected: true, WaitShare: &w0, StepSec: &s0},
		{Rank: 1, Connected: true, WaitShare: &w1, StepSec: &s1},
	}}
	one := 1
	role := func(th diagnose.Thresholds, r sample.Rank) string {
		pv := &view{frame: f, straggler: &one, th: &th, st: &Styles{}}
		return pv.rankRole(r)
	}
	def := diagnose.DefaultThresholds()
	if got := role(def, f.Ranks[0]); got != "input-bound" {
		t.Errorf("default thresholds: %q", got)
	}
	th := def
	th.WaitShareStarved = 0.5
	if got := role(th, f.Ranks[0]); got != "waits in all-reduce" {
		t.Errorf("wait_share_starved 0.5: %q", got)
	}
	th.AllReduceStepRatio = 2
	if got := role(th, f.Ranks[0]); got != "ok" {
		t.Errorf("all_reduce_step_ratio 2: %q", got)
	}
}
