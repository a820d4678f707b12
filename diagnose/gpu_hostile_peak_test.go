package diagnose

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// A replayed recording's peak table is not checked (sample.Frame.Check
// does not walk a map's floats); peakRatio now refuses an infinite ratio,
// but a finite huge one makes the bound's rate +Inf and the verdict
// cannot be written as JSON.
// A recording's peaks of 1e300 and 1e-7 TFLOPS give no bound, and the
// verdict encodes as JSON.
func TestHostilePeakRatioBoundsNothingInfinite(t *testing.T) {
	frames := gpuBoundFrames(95, 0.5, 20, 80, 60, fp32Settings())
	for i := range frames {
		frames[i].GPUs[0].Peak = &sample.GPUPeak{Model: "x", DenseTFLOPS: map[string]float64{"fp32": 1e-7, "bf16": 1e300}}
		if notes := frames[i].Check(); len(notes) > 0 {
			t.Logf("check: %v", notes)
		}
	}
	v := Classify(frames, DefaultThresholds())
	c := causeOf(v, "tensor_idle")
	if c != nil && c.Bound != nil {
		t.Errorf("a bound from a peak ratio of 1e307: %+v", c.Bound)
	}
	for _, c := range v.Causes {
		b := c.Bound
		if b == nil {
			continue
		}
		for name, x := range map[string]float64{"gain": b.Gain, "k": b.K, "samples_per_sec": b.SamplesPerSec, "free_samples_per_sec": b.FreeSamples} {
			if math.IsInf(x, 0) || math.IsNaN(x) {
				t.Errorf("%s's bound %s = %g", c.ID, name, x)
			}
		}
	}
	if _, err := json.Marshal(v); err != nil {
		t.Errorf("verdict not JSON: %v", err)
	}
}
