package sample

import "math"

// TensorTFLOPS estimates the rate the GPU's tensor cores achieved over the
// interval for dtype (a tensor dtype of Dtypes: "tf32", "bf16", "fp16",
// "fp8", "int8", "fp64_tensor"), in TFLOPS (TOPS for int8): the tensor
// activity that dtype runs on, as a share, times the model's dense peak
// for it. It is an estimate, not a count of operations: GPM's activity is
// the share of cycles the pipe was busy, and a busy cycle is counted as if
// it ran at the peak (DESIGN.md, "The GPU-bound step": achieved rate ≈
// tensor activity × the dense peak). The activity is HMMA's for tf32,
// bf16 and fp16, IMMA's for int8, DFMA's for fp64_tensor, where the GPU
// reports it, else the any-tensor activity (fp8's always). ok is false
// when the activity or the peak is missing, or dtype is not a tensor
// dtype ("fp32", "fp64": their pipes are not the tensor cores).
func (g *GPU) TensorTFLOPS(dtype string) (tflops float64, ok bool) {
	if g.GPM == nil || g.Peak == nil {
		return 0, false
	}
	act := g.GPM.TensorActivityPct
	var by *float64
	switch dtype {
	case DtypeTF32, DtypeBF16, DtypeFP16:
		by = g.GPM.TensorHMMAActivityPct
	case DtypeINT8:
		by = g.GPM.TensorIMMAActivityPct
	case DtypeFP64Tensor:
		by = g.GPM.TensorDFMAActivityPct
	case DtypeFP8:
	default:
		return 0, false
	}
	if by != nil {
		act = by
	}
	peak, have := g.Peak.DenseTFLOPS[dtype]
	if act == nil || !have || !(peak > 0) || math.IsInf(peak, 0) {
		return 0, false
	}
	return *act / 100 * peak, true
}
