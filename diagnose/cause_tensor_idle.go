package diagnose

import (
	"fmt"

	"github.com/gpuwatch/gpuwatch/sample"
)

// tensor_idle: the GPU is the limit and its SMs are busy, but its tensor
// cores idle: the step's matmuls and convs run in fp32 on the CUDA cores.
// Never named where the hook read autocast or TF32 on, or the model's
// weights cast to bf16 or fp16: that advice is already taken. Without GPM (before Hopper, or GPM not read) it is named
// from the settings alone: the GPU busy, and the hook read autocast off,
// TF32 off and a Linear or conv in the model.
func init() {
	registerCause(causeRule{id: "tensor_idle", stages: []string{"step"}, gpu: true, find: tensorIdleCause})
}

func tensorIdleCause(in *causeIn) (Cause, bool) {
	g, ok := in.kernelBound()
	w, th := in.w, in.w.th
	if !ok {
		return Cause{}, false
	}
	if !w.gpu.tensor.ok {
		return tensorIdleFromSettings(in, g)
	}
	if w.smActivity.v < th.SMActivityLowPct || !in.below("tensor_idle", w.gpu.tensor.v, th.TensorIdlePct) {
		return Cause{}, false
	}
	if s := g.settings; s != nil {
		if s.Half() { // autocast on, or the weights cast to bf16 or fp16
			return Cause{}, false
		}
		if tf, known := s.TF32(); known && tf {
			return Cause{}, false
		}
		if has, known := s.Matmuls(); known && !has {
			return Cause{}, false // no matmul or conv for the tensor cores to take
		}
	}
	ev := fmt.Sprintf("the GPU's tensor cores are active %.1f %% of cycles while its SMs are %.0f %% active (GPM)", w.gpu.tensor.v, w.smActivity.v)
	if w.gpu.fp32.ok {
		ev += fmt.Sprintf(", its FP32 pipes %.0f %%", w.gpu.fp32.v)
	}
	ev += "; " + precisionWords(g.settings)
	c := Cause{Evidence: ev,
		Fix: tensorIdleFixFor(g)}
	c.Bound, c.BoundWhy = tensorIdleBound(g)
	return fp64Weights(c, g), true
}

// fp64Weights is a tensor_idle cause for a model whose weights are
// float64: autocast casts float32 only, so the model goes to float32
// first; and no bound, for the table's ratios are over fp32, not fp64 (a
// move from fp64 may beat them). Unchanged for other weights.
func fp64Weights(c Cause, g gpuIn) Cause {
	if s := g.settings; s == nil || s.WeightsDtype != "float64" {
		return c
	}
	c.Fix = "the model's weights are float64, which no tensor core takes and autocast does not cast: model.float() (and float32 batches) first, then " + c.Fix
	c.Bound, c.BoundWhy = nil, "no bound: the step runs fp64, and the dense peaks' ratios are over fp32"
	return c
}

// tensorIdleFromSettings names the cause without GPM's tensor activity:
// only where the GPU is busy and the hook read every setting that decides
// it (autocast off, TF32 off, a Linear or a conv to run): fp32 matmuls
// then cannot use the tensor cores, whatever the counters could say.
func tensorIdleFromSettings(in *causeIn, g gpuIn) (Cause, bool) {
	busy, ok := in.gpuBusy()
	s := g.settings
	if has, _ := s.Matmuls(); !ok || !has || s.Autocast == nil || s.Half() {
		return Cause{}, false
	}
	if tf, known := s.TF32(); !known || tf {
		return Cause{}, false
	}
	// A conv model's convs take TF32 by cudnn's own switch (on by
	// default): they are on the tensor cores already, whatever the
	// matmuls do; named only where that switch was read off too.
	if on, known := s.ConvTF32(); s.HasConv != nil && *s.HasConv && (!known || on) {
		return Cause{}, false
	}
	c := Cause{Evidence: fmt.Sprintf("the GPU runs a kernel %.0f %% of the time and %s: the tensor cores take no fp32 matmul (tensor activity not read: %s)", busy.v, precisionWords(s), g.noGPMWords()),
		Fix: tensorIdleFixFor(g)}
	c.Bound, c.BoundWhy = tensorIdleBound(g)
	return fp64Weights(c, g), true
}

const tensorIdleFix = "run the forward and the loss under torch.autocast(\"cuda\", dtype=torch.bfloat16) (the optimizer step stays fp32), or keep fp32 and let matmuls use TF32: torch.set_float32_matmul_precision(\"high\")"

// tensorIdleFixFor is the fix the GPU can take: before Ampere (a peak
// table without bf16, V100, T4; or the hook read its compute capability
// under 8.0) neither bf16 nor TF32 exists, and fp16 autocast with a
// gradient scaler is the way onto the tensor cores.
func tensorIdleFixFor(g gpuIn) string {
	if tensorDtype(g) == sample.DtypeFP16 {
		return "run the forward and the loss under torch.autocast(\"cuda\", dtype=torch.float16) with a torch.amp.GradScaler (this GPU has no bf16 or TF32; the optimizer step stays fp32)"
	}
	return tensorIdleFix
}

// tensorDtype is the dtype a fix moves the matmuls to on the step's GPU:
// bf16, or fp16 before Ampere (the hook read its compute capability under
// 8.0, or its peak table has no bf16).
func tensorDtype(g gpuIn) string {
	if s := g.settings; s != nil && s.DeviceTF32 != nil {
		if *s.DeviceTF32 {
			return sample.DtypeBF16
		}
		return sample.DtypeFP16
	}
	if p := g.gpu; p != nil && p.Peak != nil && p.Peak.DenseTFLOPS[sample.DtypeBF16] <= 0 && p.Peak.DenseTFLOPS[sample.DtypeFP16] > 0 {
		return sample.DtypeFP16
	}
	return sample.DtypeBF16
}

// tensorIdleBound: with the hook's profile of the step, Amdahl's law over
// the fp32 matmuls' and convs' share of the GPU's time at the ratio of
// the dense peaks; without it, the ratio itself (as if every op of the
// step were a matmul).
func tensorIdleBound(g gpuIn) (*Bound, string) {
	dt := tensorDtype(g)
	r, why, ok := peakRatio(g.gpu, dt)
	if !ok {
		return nil, "no bound: no dense " + dt + " and fp32 peaks are known for this GPU"
	}
	if p := g.profile; p != nil {
		mm, _ := p.Share("matmul", sample.DtypeFP32)
		cv, _ := p.Share("conv", sample.DtypeFP32)
		s := min(1, mm+cv)
		if s <= 0 {
			return nil, fmt.Sprintf("no bound: the step's profile (%d steps) found no fp32 matmul or conv time for the fix to speed up", p.Steps)
		}
		// Autocast also runs the elementwise ops between them, and batch
		// norm (not on its fp32 list), on half the bytes: at most twice as
		// fast (an fp32 MLP on an H200 gained 10.32× in bf16, above the
		// 10.07× its matmuls alone allowed). Layer norm stays fp32; the
		// profile does not tell the two norms apart, so both count.
		ew := 0.0
		if dt == sample.DtypeBF16 || dt == sample.DtypeFP16 {
			e, _ := p.Share("elementwise", "")
			n, _ := p.Share("normalization", "")
			ew = min(e+n, 1-s)
		}
		gain := 1 / ((1 - s - ew) + s/r + ew/2)
		also := ""
		if ew >= 0.005 {
			also = fmt.Sprintf(", and its elementwise and normalization kernels (%.0f %%) twice as fast on half the bytes", 100*ew)
		}
		return stepBound(g, gain), fmt.Sprintf("fp32 matmuls and convs are %.0f %% of the GPU's time a step (its profile over %d steps): at %s's rate%s, the step runs at most %.2f× faster (%s)", 100*s, p.Steps, dt, also, gain, why)
	}
	return stepBound(g, r), "if every op of the step were a matmul: " + why
}
