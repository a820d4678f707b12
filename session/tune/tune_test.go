package tune

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session/predlog"
)

// frames records the kinds of the frames it is told.
type frames struct{ events []string }

func (o *frames) Frame(_ *sample.Frame, v diagnose.Verdict) error {
	o.events = append(o.events, "frame "+v.Kind.String())
	return nil
}

func (o *frames) Note(sample.Note) error { return nil }

// TestTuneSettlesOnlyOnTheHooksBatches: a tune run's settle sees only the
// frames where the hook's loader hands out batches: not the job's start,
// and not the loop sampler's reading (no rates) before the hook is found.
func TestTuneSettlesOnlyOnTheHooksBatches(t *testing.T) {
	o := &frames{}
	w := whileLoading{o}
	sampled := &sample.Loader{Source: "sampled", Sampled: &sample.SampledLoop{Samples: 50, Hz: 50}}
	kinds := []diagnose.Kind{diagnose.WarmingUp, diagnose.Idle, diagnose.SingleCoreMaxed, diagnose.GPUStarved}
	for i, l := range []*sample.Loader{nil, {Source: "python"}, sampled, {Source: "python", Batches: 10, BatchesPerSec: 10}} {
		f := &sample.Frame{Time: time.Date(2026, 11, 24, 12, 0, i, 0, time.UTC)}
		f.Loader = l
		if err := w.Frame(f, diagnose.Verdict{Kind: kinds[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"frame " + diagnose.GPUStarved.String()}; !slices.Equal(o.events, want) {
		t.Fatalf("passed %q, want only the hook's frame with batches (%q)", o.events, want)
	}
}

// TestEachStepSaysItsRangeAndItsError: a step that had a prediction says
// the range it was predicted (point–high) and the measured rate's error
// against the point, in words and in JSON (error_pct); the first step,
// with none, has no error.
func TestEachStepSaysItsRangeAndItsError(t *testing.T) {
	sc := scripted{
		measured:  map[string]float64{"1": 400, "2": 900},
		predicted: map[string]float64{"2": 1000},
		next:      map[string]string{"1": "2"},
	}
	var steps []TuneStep
	o := TuneOptions{RunFor: time.Second, Runs: 2, Ledger: &Ledger{Path: filepath.Join(t.TempDir(), "p.jsonl"), Host: "box", Loader: predlog.LoaderJob, Now: time.Now}}
	ranged := rangedTrials{sc, 1200}
	if _, err := Tune(context.Background(), o, ranged, Setting{"num_workers": "1"}, func(s TuneStep) error { steps = append(steps, s); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0].ErrorPct != nil || steps[1].ErrorPct == nil || math.Abs(*steps[1].ErrorPct+10) > 1e-9 {
		t.Fatalf("steps %+v", steps)
	}
	for _, want := range []string{"the model predicts 1000–1200 samples/s", "predicted 1000–1200 samples/s, wait 0 %; measured 900 samples/s, wait 50 % (-10 % of the point)"} {
		if text := steps[0].String() + steps[1].String(); !strings.Contains(text, want) {
			t.Errorf("%q not in\n%s", want, text)
		}
	}
	b, err := json.Marshal(steps[1])
	if err != nil || !strings.Contains(string(b), `"error_pct":-10`) {
		t.Fatalf("JSON %s (%v)", b, err)
	}
}

// rangedTrials are scripted Trials whose predictions have a high side.
type rangedTrials struct {
	scripted
	high float64
}

func (r rangedTrials) Settle(ctx context.Context, s Setting, d time.Duration) (TuneStep, error) {
	st, err := r.scripted.Settle(ctx, s, d)
	if st.Next != nil {
		st.Next.HighSamplesPerSec = r.high
	}
	return st, err
}
