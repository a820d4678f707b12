package tune

import (
	"slices"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
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
