package diagnose

import (
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// The same hostile profile (busy 0, idle 0, no step_seconds, no steps
// before: each allowed by the endpoint and by Frame.Check) through
// Classify: the healthy line's profileWords calls Summary, which panics.
// A hook's profile with no time in it (each figure in range) is no panic.
func TestClassifyWithAZeroStepProfileDoesNotPanic(t *testing.T) {
	frames := withProfile(gpuBoundFrames(95, 0.5, 20, 80, 60, fp32Settings()), "cuda", 0, 0,
		sample.GPUTimePart{Category: "matmul", Precision: "fp32", SecondsPerStep: 0.01})
	p := frames[len(frames)-1].Loader.GPUProfile
	p.StepSeconds = nil
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Classify panicked: %v", r)
		}
	}()
	Classify(frames, DefaultThresholds())
}
