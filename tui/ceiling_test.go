package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestCeilingInTheDashboard: a measured ceiling is in the banner's head
// and the loader panel; the hook's loader that was never measured says
// so, with the flag, and no figure.
func TestCeilingInTheDashboard(t *testing.T) {
	render := func(c *sample.Ceiling) string {
		m := synthetic(4, func(i int, f *sample.Frame) {
			hostParts(f, 4, func(c int) float64 { return 50 }, 1)
			f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", Batches: 100, BatchesPerSec: 40, SamplesPerSec: 1272,
				WaitShare: f64(0.6), StepMeanMs: f64(2.9), Workers: iptr(2), Ceiling: c}
		})
		m.w, m.h = 200, 50
		return ansi.Strip(m.Render())
	}
	out := render(&sample.Ceiling{State: sample.CeilingDone, SamplesPerSec: f64(2960), StepMs: f64(2.1), StarvingStepMs: f64(2.9)})
	head := strings.SplitN(out, "\n", 2)[0]
	if !strings.Contains(head, "ceiling 2,960 samples/s, input costs 57 % now") {
		t.Errorf("head %q", head)
	}
	if !strings.Contains(out, "ceiling 2,960 samples/s (step 2.1 ms; 2.9 ms starving), input") { // the panel wraps its lines
		t.Errorf("no ceiling line in\n%s", out)
	}
	out = render(nil)
	if !strings.Contains(out, "ceiling not measured (--ceiling)") || strings.Contains(out, "input costs") {
		t.Errorf("unmeasured:\n%s", out)
	}
	out = render(&sample.Ceiling{State: sample.CeilingRefused, Reason: "a batch holds 900000000 bytes: not two within the limit"})
	if !strings.Contains(out, "ceiling refused: a batch holds 900000000 bytes") {
		t.Errorf("refused:\n%s", out)
	}
}
