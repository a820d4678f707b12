package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestTheJobsSettingsLine (issue 51): what the job already does, as the
// hook read it, is one line of the loader panel; nothing read, no line.
func TestTheJobsSettingsLine(t *testing.T) {
	render := func(s *sample.JobSettings) string {
		m := synthetic(4, func(i int, f *sample.Frame) {
			hostParts(f, 4, func(c int) float64 { return 50 }, 1)
			f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", Batches: 100, BatchesPerSec: 40, SamplesPerSec: 1272,
				WaitShare: f64(0.02), StepMeanMs: f64(25), Workers: iptr(8), Settings: s}
		})
		m.w, m.h = 200, 50
		return ansi.Strip(m.Render())
	}
	on, off, n := true, false, 128
	out := render(&sample.JobSettings{Autocast: &on, AutocastDtype: "bfloat16", HasConv: &on, ConvChannelsLast: &on, Compiled: &off, BatchSize: &n})
	if !strings.Contains(out, "step bf16 autocast · convs channels_last · not compiled · batch" /* the panel wraps the rest */) {
		t.Errorf("no settings line in\n%s", out)
	}
	if got := syncsLine([]sample.HostSync{{Site: "train.py:87", Call: "item", PerStep: 1, SecondsPerStep: f64(0.0041)}, {Site: "train.py:90", Call: "repr", PerStep: 0.1}}); got != "host syncs a step: train.py:87 .item() 1 (4.1ms) · train.py:90 .repr() 0.1" {
		t.Errorf("syncs line %q", got)
	}
	if out := render(nil); strings.Contains(out, "autocast") {
		t.Errorf("settings said without a reading:\n%s", out)
	}
}
