package gpu

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestPeakForDriverNames: the names NVML and AMD's sysfs give resolve to
// their row, the variants (NVL, PCIe, V100S, RTX 4090 D) to theirs or to
// none, never to a neighbour's figures.
func TestPeakForDriverNames(t *testing.T) {
	for _, c := range []struct{ name, model string }{
		{"NVIDIA H200", "H200 SXM"},
		{"NVIDIA H200 NVL", "H200 NVL"},
		{"NVIDIA GH200 480GB", "GH200"},
		{"NVIDIA H100 80GB HBM3", "H100 SXM"},
		{"NVIDIA H100 PCIe", "H100 PCIe"},
		{"NVIDIA H100 NVL", "H100 NVL"},
		{"NVIDIA A100-SXM4-80GB", "A100"},
		{"NVIDIA A100-SXM4-40GB", "A100"},
		{"NVIDIA A100-PCIE-40GB", "A100"},
		{"NVIDIA A100 80GB PCIe", "A100"},
		{"NVIDIA L40S", "L40S"},
		{"NVIDIA L4", "L4"},
		{"NVIDIA A10", "A10"},
		{"Tesla V100-SXM2-16GB", "V100 SXM2"},
		{"Tesla V100-SXM2-32GB", "V100 SXM2"},
		{"Tesla V100-PCIE-32GB", "V100 PCIe"},
		{"Tesla V100S-PCIE-32GB", "V100S PCIe"},
		{"NVIDIA GeForce RTX 4090", "RTX 4090"},
		{"NVIDIA GeForce RTX 5090", "RTX 5090"},
		{"AMD Instinct MI300X", "MI300X"},
		{"AMD Instinct MI250X", "MI250X"},
		{"AMD Instinct MI210", "MI210"},
		{"Tesla T4", "T4"},
		// Not known: a neighbour's figures would be wrong.
		{"NVIDIA L40", ""},
		{"NVIDIA A10G", ""},
		{"NVIDIA GeForce RTX 4090 D", ""},
		{"AMD Instinct MI250", ""},
		{"NVIDIA H100", ""},
		{"AMD GPU", ""},
		// A laptop's part under the desktop's name: its peak is far lower.
		{"NVIDIA GeForce RTX 4090 Laptop GPU", "laptop"},
		{"NVIDIA GeForce RTX 5090 Laptop GPU", "laptop"},
		{"NVIDIA RTX A5000 Laptop GPU", "laptop"},
		{"NVIDIA GeForce RTX 2080 with Max-Q Design", "laptop"},
	} {
		p, why := PeakFor(c.name)
		switch {
		case c.model == "laptop" && (p != nil || !strings.Contains(why, "a laptop GPU's depends on its maker's power limit")):
			t.Errorf("%q: %+v, why %q: want none, said to be a laptop's", c.name, p, why)
		case c.model == "laptop":
		case c.model == "" && (p != nil || why != `no dense peak known for GPU model "`+c.name+`"`):
			t.Errorf("%q: %+v, why %q: want none, with the reason", c.name, p, why)
		case c.model != "" && (p == nil || p.Model != c.model || why != ""):
			t.Errorf("%q: %+v (%s): want %s", c.name, p, why, c.model)
		}
	}
}

// TestTF32IsOnlyWhereTheModelHasIt: a row says the model has no TF32
// exactly where its figures have none and the chip lacks it (Volta,
// Turing, CDNA 2); the RTX 5090 has TF32 though its row gives no
// tensor figure, and says no such thing.
func TestTF32IsOnlyWhereTheModelHasIt(t *testing.T) {
	none := []string{"V100S PCIe", "V100 SXM2", "V100 PCIe", "T4", "MI250X", "MI210"}
	for _, r := range peakTable {
		p, _ := PeakFor(strings.Join(r.all, " "))
		if p == nil {
			continue
		}
		if want := slices.Contains(none, r.model); p.NoTF32 != want || want && p.DenseTFLOPS[sample.DtypeTF32] > 0 {
			t.Errorf("%s: no_tf32 %v, tf32 %v", r.model, p.NoTF32, p.DenseTFLOPS[sample.DtypeTF32])
		}
	}
}

// TestEveryPeakRowIsReachableAndSourced: no row is shadowed by one above
// it (its own tokens resolve to it), each names its source, and its keys
// are sample.Dtypes with positive figures.
func TestEveryPeakRowIsReachableAndSourced(t *testing.T) {
	for _, r := range peakTable {
		if p, _ := PeakFor(strings.Join(r.all, " ")); p == nil || p.Model != r.model {
			t.Errorf("row %s (%v) shadowed: resolves to %+v", r.model, r.all, p)
		}
		if r.source == "" || len(r.dense) == 0 {
			t.Errorf("row %s: no source or no figures", r.model)
		}
		for k, v := range r.dense {
			if !slices.Contains(sample.Dtypes, k) || !(v > 0) {
				t.Errorf("row %s: %s = %v", r.model, k, v)
			}
		}
	}
}

// TestPeaksAreDense: the datasheets print 2:4 sparse tensor figures (2×)
// beside or instead of the dense ones; the table holds the dense ones.
func TestPeaksAreDense(t *testing.T) {
	for _, c := range []struct {
		name, dtype string
		want        float64
	}{
		{"NVIDIA H100 80GB HBM3", "bf16", 989.5}, // datasheet 1,979* sparse
		{"NVIDIA H100 80GB HBM3", "fp8", 1979},   // 3,958*
		{"NVIDIA H100 80GB HBM3", "tf32", 494.5}, // 989*
		{"NVIDIA H100 PCIe", "fp16", 756.5},      // 1,513*
		{"NVIDIA A100-SXM4-80GB", "bf16", 312},   // 624* sparse
		{"NVIDIA A100-PCIE-40GB", "tf32", 156},   // 312*
		{"NVIDIA L4", "bf16", 121},               // 242*
		{"AMD Instinct MI300X", "bf16", 1307.4},  // 2,614.9 sparse
	} {
		p, _ := PeakFor(c.name)
		if p == nil || p.DenseTFLOPS[c.dtype] != c.want {
			t.Errorf("%s %s: %+v, want %v", c.name, c.dtype, p, c.want)
		}
	}
	// Each copy is the caller's own: the table cannot be changed through it.
	p, _ := PeakFor("NVIDIA H200")
	p.DenseTFLOPS["bf16"] = 1
	if q, _ := PeakFor("NVIDIA H200"); q.DenseTFLOPS["bf16"] != 989.5 {
		t.Fatal("the table changed through a GPU's copy")
	}
}

// TestH200FixtureResolves: a real H200's reading (testdata/h200-gpu-bound.json:
// GPU 0 of /work/shared/fixtures/gpu's h200-starved-then-ceiling.jsonl at
// 10:03:30, ResNet-50 in bf16, GPM tensor activity 12.15 %) resolves to
// the H200's row, and its achieved bf16 rate is activity × the dense peak,
// about 120 TFLOPS of 989.5.
func TestH200FixtureResolves(t *testing.T) {
	b, err := os.ReadFile("testdata/h200-gpu-bound.json")
	if err != nil {
		t.Fatal(err)
	}
	var g sample.GPU
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if g.Name != "NVIDIA H200" {
		t.Fatalf("fixture name %q", g.Name)
	}
	gs := []sample.GPU{g}
	setPeaks(gs)
	if p := gs[0].Peak; p == nil || p.Model != "H200 SXM" || gs[0].Unavailable["peak"] != "" {
		t.Fatalf("peak %+v, why %q", p, gs[0].Unavailable["peak"])
	}
	got, ok := gs[0].TensorTFLOPS("bf16")
	if want := 12.149983869072193 / 100 * 989.5; !ok || math.Abs(got-want) > 1e-9 {
		t.Fatalf("bf16 %v %v, want %v", got, ok, want)
	}
}

// fakeGPUs is a GPU source that lists the GPUs it is given.
type fakeGPUs []sample.GPU

func (fakeGPUs) Vendor() string                               { return "fake" }
func (f fakeGPUs) GPUs(context.Context) ([]sample.GPU, error) { return slices.Clone(f), nil }

// TestGPUProbeFillsPeaks: the probe gives each GPU it knows its peak, an
// unknown model none with the reason, and a lost GPU neither.
func TestGPUProbeFillsPeaks(t *testing.T) {
	p := NewGPU(fakeGPUs{
		{Index: 0, Name: "NVIDIA H100 80GB HBM3"},
		{Index: 1, Name: "NVIDIA Quadro P1000"},
		{Index: 2, Name: "NVIDIA H100 80GB HBM3", Lost: true},
	})
	p.Select = &GPUSelect{Proc: t.TempDir()}
	f := probetest.FrameAt(probetest.T0)
	if err := p.Collect(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if g := f.GPUs[0]; g.Peak == nil || g.Peak.Model != "H100 SXM" || g.Peak.Source == "" || g.Unavailable["peak"] != "" {
		t.Errorf("H100: %+v %v", g.Peak, g.Unavailable)
	}
	if g := f.GPUs[1]; g.Peak != nil || g.Unavailable["peak"] != `no dense peak known for GPU model "NVIDIA Quadro P1000"` {
		t.Errorf("unknown model: %+v, why %q", g.Peak, g.Unavailable["peak"])
	}
	if g := f.GPUs[2]; g.Peak != nil || g.Unavailable["peak"] != "" {
		t.Errorf("lost GPU: %+v %v", g.Peak, g.Unavailable)
	}
}
