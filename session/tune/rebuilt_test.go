package tune

import (
	"cmp"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
)

// rebuiltTrials is a script that builds a new DataLoader every epoch:
// its verdict asks for persistent workers with the DataLoader built once.
type rebuiltTrials struct {
	stepTrials
	from string // persistent_workers as the script sets it ("": false)
}

func (s *rebuiltTrials) Settle(context.Context, Setting, time.Duration) (TuneStep, error) {
	s.runs++
	return TuneStep{Measured: diagnose.Prediction{SamplesPerSec: 500, WaitShare: 0.2}, Verdict: diagnose.GPUStarved, Settled: true,
		Changes: []diagnose.Change{{Knob: "persistent_workers", Flag: "persistent_workers", From: cmp.Or(s.from, "false"), To: "true", With: "the DataLoader built once, before the epoch loop"}}}, nil
}

// TestTuneDoesNotMeasureAChangeItCannotMake (a hostile user's review):
// persistent_workers on a new DataLoader every epoch keeps nothing, and
// tune measured the flag alone against a promise made for the loader
// built once (−79 %). It stops there and says the change is the script's.
func TestTuneDoesNotMeasureAChangeItCannotMake(t *testing.T) {
	tr := &rebuiltTrials{}
	res, err := Tune(context.Background(), TuneOptions{RunFor: time.Second, Runs: 4}, tr, Setting{"persistent_workers": "false"}, func(TuneStep) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if tr.runs != 1 || !strings.Contains(res.Why, "the next change, persistent_workers false → true (with the DataLoader built once, before the epoch loop), is a change to the script's code") {
		t.Fatalf("%d runs, why %q", tr.runs, res.Why)
	}
	// The knob set already (a review: "persistent_workers → true, needs …").
	tr.from = "true"
	res, err = Tune(context.Background(), TuneOptions{RunFor: time.Second, Runs: 4}, tr, Setting{"persistent_workers": "true"}, func(TuneStep) error { return nil })
	if err != nil || !strings.Contains(res.Why, "the next change, the DataLoader built once, before the epoch loop, keeping persistent_workers true, is a change to the script's code") {
		t.Fatalf("%v, why %q", err, res.Why)
	}
}
