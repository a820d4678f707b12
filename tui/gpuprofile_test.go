package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestTheGPUProfileLine (issue 51 item 4): the step's time by category,
// once the hook recorded it, is one line of the loader panel; none asked,
// no line.
func TestTheGPUProfileLine(t *testing.T) {
	render := func(g *sample.GPUProfile) string {
		m := synthetic(4, func(i int, f *sample.Frame) {
			hostParts(f, 4, func(c int) float64 { return 50 }, 1)
			f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", Batches: 100, BatchesPerSec: 40, SamplesPerSec: 1272,
				WaitShare: f64(0.02), StepMeanMs: f64(25), Workers: iptr(8), GPUProfile: g}
		})
		m.w, m.h = 200, 50
		return ansi.Strip(m.Render())
	}
	g := &sample.GPUProfile{State: sample.GPUProfileDone, Device: "cuda", Steps: 5, StepSeconds: f64(0.1), CostSeconds: f64(0.4),
		BusySecondsPerStep: f64(0.085), IdleSecondsPerStep: f64(0.015),
		Parts: []sample.GPUTimePart{{Category: "matmul", Precision: "fp32", SecondsPerStep: 0.061}, {Category: "copy", SecondsPerStep: 0.003}}}
	if out := render(g); !strings.Contains(out, "GPU time per step (5 steps, profiled): matmul fp32 61 %, copies 3" /* the panel wraps the rest */) {
		t.Errorf("no profile line in\n%s", out)
	}
	if out := render(nil); strings.Contains(out, "time per step") {
		t.Errorf("a profile said without one:\n%s", out)
	}
}
