package diagnose

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestCeilingInTheVerdict: a measured ceiling is a line of evidence (the
// input's cost from the window's rate) and caps the model's prediction,
// whose advice line says the step is then the limit; an unmeasured one
// changes nothing.
func TestCeilingInTheVerdict(t *testing.T) {
	ceiling := func(state string, free float64) *sample.Ceiling {
		return &sample.Ceiling{State: state, SamplesPerSec: f64(free), StepMs: f64(2.1), StarvingStepMs: f64(2.9), BeforeSamplesPerSec: f64(450)}
	}
	storage := func(c *sample.Ceiling) []sample.Frame {
		return frames(10, func(_ int, f *sample.Frame) {
			host(f, 8, 0, 1)
			hookLoop(f, 58, 0.69, 5.3, 1, 4, map[string]string{"persistent": "false", "pin": "false"})
			f.Loader.Ceiling = c
		})
	}
	plain := Classify(storage(nil), DefaultThresholds())
	if plain.Predicted == nil || plain.Predicted.HighSamplesPerSec < 1400 || plain.Predicted.SamplesPerSec < 1000 {
		t.Fatalf("predicted %+v", plain.Predicted)
	}
	for _, e := range plain.Evidence {
		if strings.Contains(e.Text, "input free") {
			t.Fatalf("an unmeasured ceiling says %q", e.Text)
		}
	}
	// Measured at 1,000 samples/s, below the model's ≈ 1,219–1,510: capped.
	v := Classify(storage(ceiling(sample.CeilingDone, 1000)), DefaultThresholds())
	var line string
	for _, e := range v.Evidence {
		if e.Metric == "loader.input_cost_ratio" {
			line = e.Text
		}
	}
	// The window's rate is 58 × 8 = 464 samples/s: 1 − 464/1000 = 54 %.
	if line != "with its input free the loop took 1,000 samples/s (step 2.1 ms; 2.9 ms while starving): input costs 54 % over the window" {
		t.Fatalf("evidence %q (all %+v)", line, v.Evidence)
	}
	if v.Predicted == nil || v.Predicted.SamplesPerSec != 1000 {
		t.Fatalf("predicted %+v: want the ceiling, 1000", v.Predicted)
	}
	if len(v.Advice) == 0 || !strings.HasSuffix(v.Advice[0], "; then the step is the limit: 1,000 samples/s measured with input free") ||
		!strings.Contains(v.Advice[0], "≈ 1000 samples/s") {
		t.Fatalf("advice %q", v.Advice)
	}
	// Measured above the prediction: the prediction stands.
	v = Classify(storage(ceiling(sample.CeilingDone, 5000)), DefaultThresholds())
	if *v.Predicted != *plain.Predicted || strings.Contains(v.Advice[0], "then the step") {
		t.Fatalf("predicted %+v advice %q", v.Predicted, v.Advice)
	}
	// Being measured: no figure yet, nothing said, nothing capped. The
	// newest frame replays (its loader's rates unknown: the loop takes no
	// batch of its own); the ones before read the job.
	replay := storage(nil)
	replay[len(replay)-1].Loader.Ceiling = ceiling(sample.CeilingReplaying, 1000)
	v = Classify(replay, DefaultThresholds())
	if v.Predicted == nil || *v.Predicted != *plain.Predicted {
		t.Fatalf("a ceiling being measured capped %+v", v.Predicted)
	}
	// Measured between the range's sides (≈ 1,219–1,509): the high side is
	// capped, the point stands, and the line says the ceiling once.
	v = Classify(storage(ceiling(sample.CeilingDone, 1300)), DefaultThresholds())
	if p := v.Predicted; p == nil || p.HighSamplesPerSec != 1300 || p.SamplesPerSec != plain.Predicted.SamplesPerSec ||
		p.HighGain <= p.Gain || p.Limit != LimitStep.String() || p.ContendedLimit != "" {
		t.Fatalf("predicted %+v: want the high side capped at 1300, the point %.0f as it was", v.Predicted, plain.Predicted.SamplesPerSec)
	}
	if a := v.Advice[0]; !strings.Contains(a, "–1300 samples/s") || strings.Contains(a, "then limited by") ||
		!strings.HasSuffix(a, "; then the step is the limit: 1,300 samples/s measured with input free") {
		t.Fatalf("advice %q", a)
	}
}

func TestCapByCeiling(t *testing.T) {
	fs := []sample.Frame{{Loader: &sample.Loader{Ceiling: &sample.Ceiling{State: sample.CeilingDone, SamplesPerSec: f64(2960)}}}}
	if got, say := CapByCeiling(4000, fs); got != 2960 || say != "then the step is the limit: 2,960 samples/s measured with input free" {
		t.Fatalf("%v %q", got, say)
	}
	if got, say := CapByCeiling(2000, fs); got != 2000 || say != "" {
		t.Fatalf("%v %q", got, say)
	}
	if got, say := CapByCeiling(4000, nil); got != 4000 || say != "" {
		t.Fatalf("%v %q", got, say)
	}
	if c := InputCost(1272, 2960); c < 0.57 || c > 0.571 {
		t.Fatalf("cost %v", c)
	}
}

// A cause's bound goes no further than the measured ceiling either: its
// rates are capped and its gains follow.
func TestCauseBoundsCappedByTheCeiling(t *testing.T) {
	fs := []sample.Frame{{Loader: &sample.Loader{Ceiling: &sample.Ceiling{State: sample.CeilingDone, SamplesPerSec: f64(3000)}}}}
	b := &Bound{K: 2, SamplesPerSec: 2000, Gain: 2, FreeSamples: 6000, FreeGain: 6}
	capBound(fs, b)
	if b.SamplesPerSec != 2000 || b.Gain != 2 || b.FreeSamples != 3000 || b.FreeGain != 3 {
		t.Fatalf("bound %+v: want 2000 (2×) as it was, free capped at 3000 (3×)", *b)
	}
	b = &Bound{K: 2, Gain: 1.5, FreeGain: 4} // no rate known: nothing to compare
	capBound(fs, b)
	if b.Gain != 1.5 || b.FreeGain != 4 {
		t.Fatalf("bound %+v", *b)
	}
	capBound(fs, nil)
}
