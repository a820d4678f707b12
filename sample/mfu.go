package sample

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
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
// is on, the weights' where the model was cast to bf16 or fp16 (with
// autocast off), tf32 where float32 matmuls (and, in a model with convs,
// cuDNN's convs) may use TF32, else fp32; "" where what decides it was
// not read, where a model's convs and matmuls run in different ones, or
// where its weights are fp64 or of several dtypes (autocast off).
func (s *JobSettings) ComputeDtype() string {
	if d := s.castDtype(); d != "" {
		return d
	}
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
	if s.WeightsDtype == "float64" || s.WeightsDtype == "mixed" {
		return "" // no float32 matmul to take TF32, or no one dtype
	}
	tf, known := s.TF32()
	if !known {
		return ""
	}
	if s.HasConv != nil && *s.HasConv {
		// The convs take TF32 by cudnn's own switch: a model of convs and
		// matmuls whose switches differ has no one dtype to set it against.
		conv, known := s.ConvTF32()
		if !known {
			return ""
		}
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

// castDtype is CastDtype as a peak table's dtype (bf16, fp16).
func (s *JobSettings) castDtype() string {
	switch s.CastDtype() {
	case "bfloat16":
		return DtypeBF16
	case "float16":
		return DtypeFP16
	}
	return ""
}

// PercentWords is a share as a percentage with the digits it needs to be
// told from 0: "31", "0.4", "0.004" — a measured 2e-6 read "MFU 0 %",
// which is what a figure not read must never look like.
func PercentWords(ratio float64) string {
	p := 100 * ratio
	switch {
	case p >= 9.95 || p == 0:
		return fmt.Sprintf("%.0f", p)
	case p >= 0.995:
		return fmt.Sprintf("%.1f", p)
	}
	return strconv.FormatFloat(p, 'g', 1, 64)
}

// mixedPrecisionWords says why a step read in full has no one dtype: its
// convs and matmuls run at different precisions by their own switches
// ("its convs take TF32 (cudnn.allow_tf32 on) and its matmuls run in full
// fp32: no one dense peak"); "" where that is not why.
func (s *JobSettings) mixedPrecisionWords() string {
	if s == nil || s.Autocast == nil || s.Half() || s.HasConv == nil || !*s.HasConv || s.HasLinear == nil || !*s.HasLinear {
		return ""
	}
	conv, convKnown := s.ConvTF32()
	tf, known := s.TF32()
	if !known || !convKnown || tf == conv {
		return ""
	}
	words := map[bool]string{true: "take TF32", false: "run in full fp32"}
	return fmt.Sprintf("its convs %s (cudnn.allow_tf32 %s) and its matmuls %s (float32 matmul precision %s): no one dense peak to set the step against",
		words[conv], onOff(conv), words[tf], cmp.Or(s.Float32MatmulPrecision, "not read"))
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// TensorDtype is the dtype the step's tensor-core work runs in, as the
// hook read it: autocast's bf16 or fp16, or the weights' where the model
// was cast to one of them; with autocast off, tf32 where
// its matmuls or (a model with convs) its convs may take TF32 — the other
// part runs in full fp32, off the tensor cores, so the tensor pipes'
// activity is TF32's —, fp32 where neither may; "" where not read.
func (s *JobSettings) TensorDtype() string {
	if d := s.castDtype(); d != "" {
		return d
	}
	if s == nil || s.Autocast == nil {
		return ""
	}
	if *s.Autocast {
		return s.ComputeDtype()
	}
	if s.WeightsDtype == "float64" || s.WeightsDtype == "mixed" {
		return "" // fp64 takes no tensor core; mixed weights have no one dtype
	}
	tf, known := s.TF32()
	conv, convKnown := false, true // no convs read: none (as ComputeDtype has it)
	if s.HasConv != nil && *s.HasConv {
		conv, convKnown = s.ConvTF32()
	}
	switch {
	case tf && known || conv:
		return DtypeTF32
	case known && convKnown:
		return DtypeFP32
	}
	return ""
}

// StepSettings is what the hook read of the job's step (Loader.Settings)
// where g is the GPU its loop runs on (LoopGPU), else nil: another GPU's
// work is not the loop's.
func (f *Frame) StepSettings(g *GPU) *JobSettings {
	if f.Loader == nil || f.Loader.Settings == nil || g == nil || f.LoopGPU() != g {
		return nil
	}
	return f.Loader.Settings
}

// LoopGPU is the GPU the loader's process runs on: the GPU that lists its
// process (where several do — a stray CUDA context on GPU 0 beside the
// rank's own —, the one where it holds the most memory; a lost GPU is
// none), else the only judged GPU — not where the hook read its model on
// the CPU (a CPU job beside an idle GPU is not that GPU's); nil where
// neither is known.
func (f *Frame) LoopGPU() *GPU {
	g, _ := f.LoopPlace()
	return g
}

// LoopMIG is the MIG instance the loader's process runs in, where its
// GPU is partitioned and an instance lists the process: on MIG a
// process is listed by its instance, not by the GPU, and what the
// instance reads (its GPM, its memory) is the step's, not the GPU's
// (docs/diagnosis.md, "MIG"). nil else.
func (f *Frame) LoopMIG() *MIGDevice {
	_, m := f.LoopPlace()
	return m
}

// LoopPlace is LoopGPU with the MIG instance, where the process is
// listed by one.
func (f *Frame) LoopPlace() (*GPU, *MIGDevice) {
	l := f.Loader
	if l != nil && l.PID != nil {
		var best *GPU
		var in *MIGDevice
		var most uint64
		onLost := false
		see := func(g *GPU, m *MIGDevice, p *GPUProcess) {
			if p.PID != *l.PID {
				return
			}
			if g.Lost {
				onLost = true
				return
			}
			mem := uint64(0)
			if p.UsedMemBytes != nil {
				mem = *p.UsedMemBytes
			}
			switch {
			case best == nil || mem > most:
				best, in, most = g, m, mem
			case g == best && m != nil && in == nil:
				// NVML lists an instance's processes on the whole GPU too
				// (aggregated, to a privileged caller): the instance that
				// lists it is where it runs (a review).
				in = m
			}
		}
		for i := range f.GPUs {
			g := &f.GPUs[i]
			for j := range g.Processes {
				see(g, nil, &g.Processes[j])
			}
			for k := range g.MIG {
				for j := range g.MIG[k].Processes {
					see(g, &g.MIG[k], &g.MIG[k].Processes[j])
				}
			}
		}
		if best != nil || onLost {
			return best, in // on a lost GPU alone: none, not another's
		}
	}
	if l != nil && l.Settings != nil && l.Settings.Device == "cpu" {
		return nil, nil
	}
	var g *GPU
	for i := range f.GPUs {
		if f.JudgedGPU(i) {
			if g != nil {
				return nil, nil
			}
			g = &f.GPUs[i]
		}
	}
	return g, nil
}

// deriveMFU sets Loader.MFU from the settings the hook read, the loader's
// batch rate and the dense peak of the loop's GPU; it clears it where any
// is missing, and says which in Loader.MFUWhy where the frame has a GPU,
// or has none while the FLOPs were counted.
func (f *Frame) deriveMFU() {
	l := f.Loader
	if l == nil {
		return
	}
	l.MFU, l.MFUWhy = nil, ""
	why := f.mfu()
	switch {
	case why == "":
	case len(f.GPUs) > 0 || why == onTheCPU:
		l.MFUWhy = why
	case l.Settings != nil && l.Settings.FLOPsPerStep != nil && *l.Settings.FLOPsPerStep > 0:
		// FLOPs counted, and no GPU to hold them against: said, not
		// silent (a review).
		l.MFUWhy = "no GPU is read here: MFU holds the FLOPs against its dense peak"
	}
}

// onTheCPU is why a job whose model runs on the CPU has no MFU, on a
// machine with a GPU too (a review: a CPU job beside an idle H200 read an
// MFU against the H200's peak): no peak is made up for a CPU.
const onTheCPU = "the model runs on the CPU: MFU holds the FLOPs against a GPU's dense peak, and a CPU has none in gpuwatch's table"

// mfu sets Loader.MFU, or says why it cannot.
func (f *Frame) mfu() (why string) {
	l := f.Loader
	s := l.Settings
	switch {
	case s == nil && l.Sampled == nil:
		return "the loader's frames carry no settings (a hook that does not read them, or none read yet)"
	case s == nil:
		return "the hook did not read the job's settings (gpuwatch run reads them)"
	case s.Device == "cpu":
		if s.FLOPsPerStep == nil || !(*s.FLOPsPerStep > 0) {
			return "" // nothing counted, nothing to say of a CPU job
		}
		return onTheCPU
	case (s.FLOPsPerStep == nil || !(*s.FLOPsPerStep > 0)) && s.Compiled != nil && *s.Compiled:
		// The hook counts only where it read the model as not compiled
		// (python/gpuwatch_hook/_settings.py read_forward).
		return "the hook does not count a compiled model's FLOPs (torch.compile's graph hides the calls its counters see)"
	case (s.FLOPsPerStep == nil || !(*s.FLOPsPerStep > 0)) && s.FLOPsVoid == FLOPsVoidFrozen:
		return "the hook gives no FLOPs count for a training step with frozen weights under torch.utils.flop_counter (torch ≥ 2.1): it counts below autograd, and a frozen layer's backward is not twice its forward"
	case (s.FLOPsPerStep == nil || !(*s.FLOPsPerStep > 0)) && s.FLOPsVoid == FLOPsVoidRNN:
		return "the hook gives no FLOPs count for a model with an RNN, LSTM or GRU: their fused kernels are not read by either counter, and a count of the rest would be short"
	case s.FLOPsShapesVary:
		return "the batches' shapes vary (sequences padded per batch, images of several sizes): the hook counted one step's FLOPs, not every step's, and a rate from it would say nothing of the others"
	case (s.FLOPsPerStep == nil || !(*s.FLOPsPerStep > 0)) && s.FLOPsVoid == FLOPsVoidEinsum:
		return "the hook gives no FLOPs count for a model with an einsum of three or more operands: the count by shapes, which torch < 2.1 has in place of torch.utils.flop_counter, reads two, and a count of the rest would be short"
	case s.FLOPsPerStep == nil || !(*s.FLOPsPerStep > 0):
		return "the hook did not count the model's FLOPs: neither torch.utils.flop_counter (torch ≥ 2.1) nor its count by the shapes of the linears, convs and matmuls (torch ≥ 1.13) gave one"
	case !(l.BatchesPerSec > 0):
		return "no step in the interval"
	}
	dtype := s.ComputeDtype()
	if dtype == "" {
		if why := s.mixedPrecisionWords(); why != "" {
			return why
		}
		return "the step's dtype is not read (autocast and the TF32 switches)"
	}
	g, mig := f.LoopPlace()
	switch {
	case g == nil:
		return "the loop's GPU is not known (several GPUs, none listing its process)"
	case mig != nil:
		// Its peak is the instance's share of the GPU's, by SMs, which
		// NVML gives per instance but not for the whole GPU under MIG.
		return fmt.Sprintf("the loop runs on a MIG instance (%s) of the %s: the dense peak is the whole GPU's, and the instance's share of it is not read", mig.Profile, g.Name)
	case len(g.MIG) > 0:
		return fmt.Sprintf("the %s is partitioned (MIG), and no instance lists the loop's process: the dense peak is the whole GPU's, and the loop's share of it is not read", g.Name)
	case g.Peak == nil:
		return "no dense peak for the " + g.Name
	}
	peak := g.Peak.DenseTFLOPS[dtype]
	if !(peak > 0) || math.IsInf(peak, 0) {
		return "no dense " + dtype + " peak for the " + g.Peak.Model
	}
	r := *s.FLOPsPerStep * l.BatchesPerSec / (peak * 1e12)
	if math.IsNaN(r) || math.IsInf(r, 0) || r > maxMFU {
		// Past the peak: the FLOPs, the rate or the peak do not belong
		// together (one process driving several GPUs, a dtype misread).
		return fmt.Sprintf("the FLOPs counted at the loop's rate come to %.3g of the %s's dense %s peak: they do not belong together (one process driving several GPUs?)", r, g.Peak.Model, dtype)
	}
	l.MFU = &MFU{Ratio: r, Dtype: dtype, PeakTFLOPS: peak, GPU: g.Peak.Model, GPUIndex: g.Index,
		Method: fmt.Sprintf("the model's %.3g FLOPs a step (the hook's count) × %.3g steps/s over the %s's dense %s peak (%.4g TFLOPS)", *s.FLOPsPerStep, l.BatchesPerSec, g.Peak.Model, dtype, peak)}
	return ""
}

// AboveTensor questions an MFU the tensor cores could not have run, as
// every view says it: the model's FLOPs at a tensor dtype run on the
// tensor pipes, whose achieved rate is at most their activity (tensorPct,
// GPM) × the same peak, so an MFU above that activity by a quarter and 2
// points (the two figures' noise) says the FLOP count, the dtype read or
// the peak is off (a review: MFU 56 % beside tensor cores 5 % active,
// said side by side). "" where it holds, or the dtype is fp32.
func (m *MFU) AboveTensor(tensorPct float64) string {
	if m == nil {
		return ""
	}
	switch m.Dtype {
	case DtypeBF16, DtypeFP16, DtypeTF32:
	default:
		return "" // fp32 runs on the FP32 pipes, not the tensor cores
	}
	if !(tensorPct >= 0) || 100*m.Ratio <= 1.25*tensorPct+2 {
		return ""
	}
	return fmt.Sprintf("above what the tensor cores ran (active %.0f %% of cycles, GPM): the FLOPs counted, the %s read or the peak does not hold", tensorPct, m.Dtype)
}
