package sample

import (
	"math"
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
