package report

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestCeilingInTheReport: the last ceiling measured, the input's cost
// against the rate outside the measurement (the replay's frames left
// out, of the loader's mean rate too), the sentence, and the ceiling's line on the throughput chart; a
// hook's loader never measured says so.
func TestCeilingInTheReport(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	b := newLoaderBuilder()
	ws := f(0.5)
	b.add(&sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", SamplesPerSec: 1400, WaitShare: ws})
	b.add(&sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", SamplesPerSec: 0, WaitShare: ws,
		Ceiling: &sample.Ceiling{State: sample.CeilingReplaying}})
	b.add(&sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", SamplesPerSec: 1560, WaitShare: ws,
		Ceiling: &sample.Ceiling{State: sample.CeilingDone, SamplesPerSec: f(2960), StepMs: f(2.1), StarvingStepMs: f(2.9)}})
	li := b.info()
	if li.Ceiling == nil || li.InputCost == nil || *li.InputCost < 0.499 || *li.InputCost > 0.501 {
		t.Fatalf("ceiling %+v cost %v", li.Ceiling, li.InputCost)
	}
	// The loader's mean rate leaves the replay's 0 out too: (1400+1560)/2.
	if m := li.MeanSamplesPerSec; m == nil || *m != 1480 {
		t.Errorf("mean samples/s %s, want 1480 (the replay's frame left out)", optRate(m))
	}
	want := "With its input free the loop took 2,960 samples/s (step 2.1 ms; 2.9 ms while starving): over the rest of the run, input costs 50 % of it."
	if got := ceilingSentence(li); got != want {
		t.Fatalf("%q", got)
	}
	var h strings.Builder
	htmlThroughput(&h, li, Series{T: []float64{1, 2, 3}, SamplesPerSec: []*float64{f(1400), f(0), f(1560)}})
	if !strings.Contains(h.String(), "ceiling (input free)") || !strings.Contains(h.String(), "2,960 samples/s") {
		t.Fatalf("html %s", h.String())
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, &Summary{Loader: li}, ""); err != nil || !strings.Contains(md.String(), "input costs 50 %") {
		t.Fatalf("%v %s", err, md.String())
	}
	nb := newLoaderBuilder()
	nb.add(&sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", SamplesPerSec: 1400, WaitShare: ws})
	if got := ceilingSentence(nb.info()); !strings.Contains(got, "not measured (--ceiling)") {
		t.Fatalf("%q", got)
	}
}
