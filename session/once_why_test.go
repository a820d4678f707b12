package session

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestWarmingUpPastItsFramesSaysWhy: a recording whose loop took its
// first batch in its last frames read "still warming up: 11 frames came,
// the diagnosis needs 3 (a longer --last)" — more than it needs, and a
// flag never given. Past the frames it needs, the verdict's own evidence
// (or that the frames did not read what it needs) is the reason.
func TestWarmingUpPastItsFramesSaysWhy(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		frames int
		v      diagnose.Verdict
		want   string
	}{
		{2, diagnose.Verdict{Kind: diagnose.WarmingUp}, "still warming up: 2 frames came, the diagnosis needs 3"},
		{11, diagnose.Verdict{Kind: diagnose.WarmingUp}, "still warming up after 11 frames: the frames did not read what a verdict needs"},
		{11, diagnose.Verdict{Kind: diagnose.WarmingUp, Evidence: []diagnose.Evidence{{Text: "no batch yet"}}}, "still warming up after 11 frames: no batch yet"},
	} {
		s := NewSettle(func() {}, 3)
		s.replayed = true
		for i := range c.frames {
			if err := s.Frame(&sample.Frame{Time: t0.Add(time.Duration(i) * time.Second)}, c.v); err != nil {
				t.Fatal(err)
			}
		}
		if got := s.why(); !strings.Contains(got, c.want) || !strings.Contains(got, "a longer recording") {
			t.Errorf("%d frames: %q, want %q", c.frames, got, c.want)
		}
	}
}
