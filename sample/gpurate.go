package sample

import (
	"fmt"
	"math"
)

// TensorTFLOPS estimates the rate the GPU's tensor cores achieved over the
// interval for dtype (a tensor dtype of Dtypes: "tf32", "bf16", "fp16",
// "fp8", "int8", "fp64_tensor"), in TFLOPS (TOPS for int8): the tensor
// activity that dtype runs on, as a share, times the model's dense peak
// for it. It is an estimate, not a count of operations: GPM's activity is
// the share of cycles the pipe was busy, and a busy cycle is counted as if
// it ran at the peak (docs/diagnosis.md, "The GPU-bound step's causes": achieved rate ≈
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

// StepRate is a GPU-bound step's achieved matmul rate (TensorTFLOPS) at
// the dtype it runs its matmuls in.
type StepRate struct {
	// Dtype is the dtype the hook read (JobSettings.TensorDtype: autocast's
	// bf16 or fp16, tf32 by the TF32 switches); "" where it was not
	// read: HMMA's activity is then TF32's or bf16's and fp16's, and the
	// rate is the range Low (at TF32's peak) to High (at bf16's, fp16's on
	// a GPU without bf16).
	Dtype     string
	Low, High float64 // TFLOPS; equal where Dtype is read
	// Peak is the dense peak the rate is set against: Dtype's, or High's.
	Peak float64
	// PeakDtype names Peak's dtype (Dtype's, or High's where Dtype is "").
	PeakDtype string
}

// Words is the rate as the views say it: "at tf32 ≈ 297 TFLOPS of the
// H200 SXM's 495 dense", or "≈ 297–595 TFLOPS (tf32 to bf16: the step's
// dtype is not read) of the H200 SXM's 990 dense bf16". model is the
// peak's model.
func (r StepRate) Words(model string) string {
	if r.Dtype != "" {
		return fmt.Sprintf("at %s ≈ %.0f TFLOPS of the %s's %.0f dense", r.Dtype, r.High, model, r.Peak)
	}
	if r.Low == r.High { // no TF32 on this GPU: HMMA is the one dtype's
		return fmt.Sprintf("≈ %.0f TFLOPS of the %s's %.0f dense %s (the step's dtype is not read)", r.High, model, r.Peak, r.PeakDtype)
	}
	return fmt.Sprintf("≈ %.0f–%.0f TFLOPS (tf32 to %s: the step's dtype is not read) of the %s's %.0f dense %s", r.Low, r.High, r.PeakDtype, model, r.Peak, r.PeakDtype)
}

// StepTFLOPS is the achieved matmul rate of a step with settings s on g
// (nil s: not read). ok is false where there is no figure: no GPM or peak,
// or a step the hook read in plain fp32 (its matmuls are not on the
// tensor cores; tensor_idle says so).
func (g *GPU) StepTFLOPS(s *JobSettings) (r StepRate, ok bool) {
	if g.GPM == nil || g.Peak == nil {
		return StepRate{}, false
	}
	switch d := s.TensorDtype(); d {
	case DtypeTF32, DtypeBF16, DtypeFP16:
		tf, ok := g.TensorTFLOPS(d)
		if !ok {
			return StepRate{}, false
		}
		return StepRate{Dtype: d, Low: tf, High: tf, Peak: g.Peak.DenseTFLOPS[d], PeakDtype: d}, true
	case "":
	default: // fp32: not the tensor cores
		return StepRate{}, false
	}
	hi := DtypeBF16
	high, ok := g.TensorTFLOPS(hi)
	if !ok {
		hi = DtypeFP16
		if high, ok = g.TensorTFLOPS(hi); !ok {
			return StepRate{}, false
		}
	}
	low, ok := g.TensorTFLOPS(DtypeTF32)
	if !ok { // a GPU without TF32 (V100, T4): HMMA is fp16's or bf16's
		low = high
	}
	return StepRate{Low: min(low, high), High: high, Peak: g.Peak.DenseTFLOPS[hi], PeakDtype: hi}, true
}
