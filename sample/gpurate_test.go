package sample

import (
	"math"
	"strings"
	"testing"
)

// TestTensorTFLOPS: the achieved rate is the dtype's own tensor activity
// (HMMA for bf16, IMMA for int8, DFMA for fp64_tensor) where the GPU gives
// it, else the any-tensor activity, times the dense peak; nothing when
// either is missing or the dtype is not a tensor one.
func TestTensorTFLOPS(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	peak := &GPUPeak{Model: "H100 SXM", DenseTFLOPS: map[string]float64{"bf16": 989.5, "fp8": 1979, "int8": 1979, "fp64_tensor": 67, "fp32": 67}}
	full := &GPM{TensorActivityPct: p(20), TensorHMMAActivityPct: p(12), TensorIMMAActivityPct: p(4), TensorDFMAActivityPct: p(1)}
	anyOnly := &GPM{TensorActivityPct: p(20)}
	for _, c := range []struct {
		name  string
		g     GPU
		dtype string
		want  float64
		ok    bool
	}{
		{"bf16 reads HMMA", GPU{GPM: full, Peak: peak}, "bf16", 0.12 * 989.5, true},
		{"int8 reads IMMA", GPU{GPM: full, Peak: peak}, "int8", 0.04 * 1979, true},
		{"fp64_tensor reads DFMA", GPU{GPM: full, Peak: peak}, "fp64_tensor", 0.01 * 67, true},
		{"fp8 reads any tensor", GPU{GPM: full, Peak: peak}, "fp8", 0.20 * 1979, true},
		{"without HMMA, any tensor", GPU{GPM: anyOnly, Peak: peak}, "bf16", 0.20 * 989.5, true},
		{"no peak for the dtype", GPU{GPM: full, Peak: peak}, "tf32", 0, false},
		{"fp32 is not a tensor dtype", GPU{GPM: full, Peak: peak}, "fp32", 0, false},
		{"no peak", GPU{GPM: full}, "bf16", 0, false},
		{"no GPM", GPU{Peak: peak}, "bf16", 0, false},
		{"no tensor activity", GPU{GPM: &GPM{SMActivityPct: p(80)}, Peak: peak}, "bf16", 0, false},
	} {
		got, ok := c.g.TensorTFLOPS(c.dtype)
		if ok != c.ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: %v %v, want %v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// TestStepTFLOPSIsAtTheDtypeTheJobRuns: the achieved rate is the tensor
// activity × the dense peak of the dtype the hook read — TF32's for a
// job in fp32 with float32_matmul_precision "high" (a TF32 job on an H200
// once read "at bf16 ≈ 595 TFLOPS" of 990, past TF32's own 495 peak);
// no figure for plain fp32 (not the tensor cores); and, the dtype not
// read, the range from TF32's rate to bf16's, never one of them guessed.
func TestStepTFLOPSIsAtTheDtypeTheJobRuns(t *testing.T) {
	act := 60.0
	g := &GPU{GPM: &GPM{TensorActivityPct: &act}, Peak: &GPUPeak{Model: "H200 SXM",
		DenseTFLOPS: map[string]float64{DtypeTF32: 494.5, DtypeBF16: 989.5, DtypeFP16: 989.5, DtypeFP32: 67}}}
	on, off := true, false
	cases := []struct {
		name string
		s    *JobSettings
		want StepRate
		ok   bool
		says string
	}{
		{"bf16 autocast", &JobSettings{Autocast: &on, AutocastDtype: "bfloat16"}, StepRate{Dtype: "bf16", Low: 593.7, High: 593.7, Peak: 989.5, PeakDtype: "bf16"}, true, "at bf16 ≈ 594 TFLOPS of the H200 SXM's 990 dense"},
		{"tf32 by the precision", &JobSettings{Autocast: &off, Float32MatmulPrecision: "high"}, StepRate{Dtype: "tf32", Low: 296.7, High: 296.7, Peak: 494.5, PeakDtype: "tf32"}, true, "at tf32 ≈ 297 TFLOPS of the H200 SXM's 494 dense"},
		{"plain fp32", &JobSettings{Autocast: &off, Float32MatmulPrecision: "highest"}, StepRate{}, false, ""},
		// PyTorch's defaults on a conv net: the matmuls in full fp32 (off
		// the tensor cores), the convs on TF32 (cudnn.allow_tf32): the
		// tensor pipes' activity is TF32's. It read "the step's dtype is
		// not read" beside a settings line that said all of it.
		{"convs on tf32, matmuls in fp32", &JobSettings{Autocast: &off, Float32MatmulPrecision: "highest", MatmulAllowTF32: &off, HasConv: &on, HasLinear: &on, CudnnAllowTF32: &on},
			StepRate{Dtype: "tf32", Low: 296.7, High: 296.7, Peak: 494.5, PeakDtype: "tf32"}, true, "at tf32 ≈ 297 TFLOPS of the H200 SXM's 494 dense"},
		{"not read", nil, StepRate{Low: 296.7, High: 593.7, Peak: 989.5, PeakDtype: "bf16"}, true, "≈ 297–594 TFLOPS (tf32 to bf16: the step's dtype is not read) of the H200 SXM's 990 dense bf16"},
	}
	for _, c := range cases {
		r, ok := g.StepTFLOPS(c.s)
		if ok != c.ok || r.Dtype != c.want.Dtype || math.Abs(r.Low-c.want.Low) > 0.1 || math.Abs(r.High-c.want.High) > 0.1 || r.Peak != c.want.Peak || r.PeakDtype != c.want.PeakDtype {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, r, ok, c.want, c.ok)
			continue
		}
		if ok && r.Words("H200 SXM") != c.says {
			t.Errorf("%s: says %q, want %q", c.name, r.Words("H200 SXM"), c.says)
		}
	}
	// A GPU without TF32 (V100): HMMA is fp16's, one figure, its dtype
	// still said as not read.
	v100 := &GPU{GPM: &GPM{TensorActivityPct: &act}, Peak: &GPUPeak{Model: "V100", DenseTFLOPS: map[string]float64{DtypeFP16: 125}}}
	if r, ok := v100.StepTFLOPS(nil); !ok || r.Low != 75 || r.High != 75 || r.PeakDtype != "fp16" || !strings.Contains(r.Words("V100"), "≈ 75 TFLOPS of the V100's 125 dense fp16 (the step's dtype is not read)") {
		t.Errorf("V100: %+v %v %q", r, ok, r.Words("V100"))
	}
}
