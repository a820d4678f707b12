package sample

import (
	"fmt"
	"math"
)

// MFU is the model FLOPs utilization of the loader's training step: the
// model's FLOPs a step as the hook counted them (Loader.Settings'
// FLOPsPerStep: its forward, ×3 for a training step) times the steps a
// second (each batch a step) over the dense peak of the GPU the loop runs
// on, for the dtype the step computes in. Derived in AssignRoles; absent
// where any part was not read (docs/json.md, loader.mfu).
type MFU struct {
	Ratio float64 `json:"ratio" check:"0,1.05"`
	// Dtype is the peak's dtype: the autocast dtype where autocast is
	// on, tf32 where float32 matmuls may use TF32, else fp32.
	Dtype      string  `json:"dtype"`
	PeakTFLOPS float64 `json:"peak_tflops" check:"0,1e6"`
	// GPU is the model whose peak it is (GPUPeak.Model), GPUIndex that
	// GPU's index in the frame's GPUs (NVML's).
	GPU      string `json:"gpu"`
	GPUIndex int    `json:"gpu_index"`
	// Method says how it was read, for people.
	Method string `json:"method"`
}

// maxMFU is the most a derived MFU may read: a little over the peak (the
// FLOP count and the peak are both approximate); past it the figure is
// not given.
const maxMFU = 1.05

// ComputeDtype is the dtype a step's matmuls and convs run in, as the
// hook read its settings: the autocast dtype (bf16, fp16) where autocast
// is on, tf32 where float32 matmuls (and, in a model with convs, cuDNN's
// convs) may use TF32, else fp32; "" where what decides it was not read,
// or where a model's convs and matmuls run in different ones.
func (s *JobSettings) ComputeDtype() string {
	if s == nil || s.Autocast == nil {
		return ""
	}
	if *s.Autocast {
		switch s.AutocastDtype {
		case "bfloat16":
			return DtypeBF16
		case "float16":
			return DtypeFP16
		}
		return ""
	}
	tf, known := s.TF32()
	if !known {
		return ""
	}
	if s.HasConv != nil && *s.HasConv {
		// The convs take TF32 by cudnn's own switch: a model of convs and
		// matmuls whose switches differ has no one dtype to set it against.
		if s.CudnnAllowTF32 == nil {
			return ""
		}
		conv := *s.CudnnAllowTF32
		if s.HasLinear != nil && *s.HasLinear && conv != tf {
			return ""
		}
		tf = conv
	}
	if tf {
		return DtypeTF32
	}
	return DtypeFP32
}

// loopGPU is the GPU the loader's process runs on: the GPU that lists its
// process, else the only judged GPU; nil where neither is known.
func (f *Frame) loopGPU() *GPU {
	l := f.Loader
	if l != nil && l.PID != nil {
		for i := range f.GPUs {
			for _, p := range f.GPUs[i].Processes {
				if p.PID == *l.PID {
					return &f.GPUs[i]
				}
			}
		}
	}
	var g *GPU
	for i := range f.GPUs {
		if f.JudgedGPU(i) {
			if g != nil {
				return nil
			}
			g = &f.GPUs[i]
		}
	}
	return g
}

// deriveMFU sets Loader.MFU from the settings the hook read, the loader's
// batch rate and the dense peak of the loop's GPU; it clears it where any
// is missing.
func (f *Frame) deriveMFU() {
	l := f.Loader
	if l == nil {
		return
	}
	l.MFU = nil
	s := l.Settings
	if s == nil || s.FLOPsPerStep == nil || !(*s.FLOPsPerStep > 0) || !(l.BatchesPerSec > 0) {
		return
	}
	dtype := s.ComputeDtype()
	g := f.loopGPU()
	if dtype == "" || g == nil || g.Peak == nil {
		return
	}
	peak := g.Peak.DenseTFLOPS[dtype]
	if !(peak > 0) || math.IsInf(peak, 0) {
		return
	}
	r := *s.FLOPsPerStep * l.BatchesPerSec / (peak * 1e12)
	if math.IsNaN(r) || math.IsInf(r, 0) || r > maxMFU {
		// Past the peak: the FLOPs, the rate or the peak do not belong
		// together (one process driving several GPUs, a dtype misread).
		return
	}
	l.MFU = &MFU{Ratio: r, Dtype: dtype, PeakTFLOPS: peak, GPU: g.Peak.Model, GPUIndex: g.Index,
		Method: fmt.Sprintf("the model's %.3g FLOPs a step (the hook's count) × %.3g steps/s over the %s's dense %s peak (%.4g TFLOPS)", *s.FLOPsPerStep, l.BatchesPerSec, g.Peak.Model, dtype, peak)}
}
