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

// noChangeTrials is a CPU-bound loop: its verdict names a cause first,
// and the model's line why no change is advised after it.
type noChangeTrials struct{ stepTrials }

func (s *noChangeTrials) Settle(context.Context, Setting, time.Duration) (TuneStep, error) {
	s.runs++
	why := "more workers cannot help: the 1.9 CPUs the workers have are the limit (54ms of CPU per batch, at most 35 batches/s)"
	return TuneStep{Measured: diagnose.Prediction{SamplesPerSec: 384, WaitShare: 0.71}, Verdict: diagnose.CPUSaturated, Settled: true,
		Advice: []string{"the dataset's __getitem__ takes 99 % of a worker's 54ms per batch", why}, NoChange: why}, nil
}

// TestTuneStopsWithTheModelsReason (a review): tune stopped with "the
// model has no change to offer: " and the advice's first line, a cause's,
// not why no knob helps.
func TestTuneStopsWithTheModelsReason(t *testing.T) {
	tr := &noChangeTrials{}
	res, err := Tune(context.Background(), TuneOptions{RunFor: time.Second, Runs: 4}, tr, Setting{"num_workers": "2"}, func(TuneStep) error { return nil })
	if err != nil || tr.runs != 1 || res.Why != "the model has no change to offer: more workers cannot help: the 1.9 CPUs the workers have are the limit (54ms of CPU per batch, at most 35 batches/s)" {
		t.Fatalf("%v, %d runs, why %q", err, tr.runs, res.Why)
	}
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
