package tui

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestGPUComputeLine: the GPU panel's compute line gives the achieved
// rate against the dense peak where both are known, and says why where
// they are not (an unknown model, a GPU without GPM); a GPU with none of
// it takes no line.
func TestGPUComputeLine(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	th := diagnose.DefaultThresholds()
	for _, c := range []struct {
		name string
		g    sample.GPU
		want []string
	}{
		{"H200 in bf16", sample.GPU{Name: "NVIDIA H200", UtilPct: p(100),
			GPM:  &sample.GPM{SMActivityPct: p(82), TensorActivityPct: p(12), TensorHMMAActivityPct: p(12)},
			Peak: &sample.GPUPeak{Model: "H200 SXM", DenseTFLOPS: map[string]float64{"bf16": 989.5}}},
			[]string{"tensor 12%", "bf16 ≈119/990 TFLOPS dense", "SM 82%", "HMMA 12%", "H200 SXM"}},
		{"unknown model", sample.GPU{Name: "NVIDIA Quadro P1000", UtilPct: p(50),
			Unavailable: map[string]string{"peak": `no dense peak known for GPU model "NVIDIA Quadro P1000"`, "gpm": "GPM not supported by this GPU (Hopper and later have it)"}},
			[]string{`no dense peak known for GPU model "NVIDIA Quadro P1000"`, "GPM not supported"}},
		{"peak without GPM", sample.GPU{Name: "NVIDIA A100-SXM4-80GB", UtilPct: p(50),
			Peak: &sample.GPUPeak{Model: "A100", DenseTFLOPS: map[string]float64{"bf16": 312}}},
			[]string{"bf16 peak 312 TFLOPS dense", "A100"}},
	} {
		pv := &view{frame: &sample.Frame{GPUs: []sample.GPU{c.g}}, st: &Styles{}, th: &th}
		lines := gpuPanel{}.draw(pv, 200, 2)
		if len(lines) != 2 {
			t.Fatalf("%s: %d lines", c.name, len(lines))
		}
		for _, w := range c.want {
			if !strings.Contains(lines[1], w) {
				t.Errorf("%s: %q lacks %q", c.name, lines[1], w)
			}
		}
	}
	// The step's MFU leads the line of the loop's GPU (sample.MFU).
	g := sample.GPU{Index: 0, Name: "NVIDIA A100-SXM4-80GB", UtilPct: p(99), Peak: &sample.GPUPeak{Model: "A100", DenseTFLOPS: map[string]float64{"bf16": 312}}}
	pv := &view{frame: &sample.Frame{GPUs: []sample.GPU{g}, Loader: &sample.Loader{MFU: &sample.MFU{Ratio: 0.42, Dtype: "bf16", GPU: "A100"}}}, st: &Styles{}, th: &th}
	if lines := (gpuPanel{}).draw(pv, 200, 2); len(lines) != 2 || !strings.HasPrefix(strings.TrimSpace(lines[1]), "GPU 0: MFU 42% (bf16)") {
		t.Errorf("MFU: %q", lines)
	}
	// Nothing to say: the panel keeps its one line per GPU.
	pv = &view{frame: &sample.Frame{GPUs: []sample.GPU{{Name: "x", UtilPct: p(5)}}}, st: &Styles{}, th: &th}
	if _, most := (gpuPanel{}).want(pv, 80); most != 2 {
		t.Errorf("want %d lines at most for one GPU with no compute line", most)
	}
	// One row only: the GPU's line, not the compute line.
	pv.frame.GPUs[0].Unavailable = map[string]string{"peak": "no dense peak known"}
	if lines := (gpuPanel{}).draw(pv, 80, 1); !strings.HasPrefix(lines[0], "0 x") {
		t.Errorf("one row: %q", lines[0])
	}
}
