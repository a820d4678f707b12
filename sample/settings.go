package sample

import (
	"fmt"
	"strings"
	"time"
)

// JobSettings is what the training job already does, as the hook read it
// in one step's window (python/gpuwatch_hook/_settings.py): whether its
// forward runs under autocast, the float32 matmul precision and TF32
// switches, cudnn.benchmark, the conv weights' memory format, compile,
// CUDA graphs, the batch size, the GPU memory left and the model's FLOPs
// per step. Advice reads it so as never to advise what is already on. A
// nil field (or an empty string) was not read: never a guess.
type JobSettings struct {
	// Autocast is whether the step's forward ran under autocast (on the
	// device of its input); AutocastDtype its dtype then: "bfloat16",
	// "float16", or "" (off, not read, or another dtype).
	Autocast      *bool  `json:"autocast,omitempty"`
	AutocastDtype string `json:"autocast_dtype,omitempty"`
	// Device is the device type the forward's input was on ("cuda",
	// "cpu", "xpu", "mps"), "" when not read. On the CPU there is no TF32
	// and no cuDNN: their switches say nothing of the job.
	Device string `json:"device,omitempty"`
	// Float32MatmulPrecision is torch.get_float32_matmul_precision():
	// "highest", "high", "medium", or "" when not read.
	Float32MatmulPrecision string `json:"float32_matmul_precision,omitempty"`
	// MatmulAllowTF32 and CudnnAllowTF32 are torch.backends.cuda.matmul's
	// and torch.backends.cudnn's allow_tf32 (fp32_precision "tf32" on
	// torch ≥ 2.9); CudnnBenchmark is torch.backends.cudnn.benchmark.
	MatmulAllowTF32 *bool `json:"matmul_allow_tf32,omitempty"`
	CudnnAllowTF32  *bool `json:"cudnn_allow_tf32,omitempty"`
	CudnnBenchmark  *bool `json:"cudnn_benchmark,omitempty"`
	// ConvChannelsLast is whether the model's 2-D convs hold their weights
	// channels_last (false: some or all are contiguous, NCHW); nil with no
	// conv, or where every weight reads the same in both formats (1×1).
	ConvChannelsLast *bool `json:"conv_channels_last,omitempty"`
	// HasConv and HasLinear say whether the model has convs (1-, 2- or
	// 3-D, transposed too) and linear layers.
	HasConv   *bool `json:"has_conv,omitempty"`
	HasLinear *bool `json:"has_linear,omitempty"`
	// WeightsDtype is the dtype of at least 90 % of the linears' and
	// convs' weight elements: "float32", "bfloat16", "float16",
	// "float64", or "mixed" where none holds that much; "" where not read.
	// A model cast with .half() or .to(torch.bfloat16) runs its matmuls in
	// that dtype with autocast off (CastDtype).
	WeightsDtype string `json:"weights_dtype,omitempty"`
	// IntraOpThreads is torch's intra-op pool in the training process
	// (torch.get_num_threads()).
	IntraOpThreads *int `json:"intra_op_threads,omitempty"`
	// Compiled is whether the model or one of its modules is
	// torch.compile'd (an OptimizedModule, or module.compile()).
	Compiled *bool `json:"compiled,omitempty"`
	// CUDAGraphs is whether a CUDA graph replayed in the step's window;
	// nil where CUDA was not set up (nothing to know).
	CUDAGraphs *bool `json:"cuda_graphs,omitempty"`
	// BatchSize is the first dimension of the first tensor the model's
	// forward got (per rank).
	BatchSize *int `json:"batch_size,omitempty"`
	// GPUMemFreeBytes and GPUMemTotalBytes are torch.cuda.mem_get_info()
	// of the model's GPU when read; nil without CUDA.
	GPUMemFreeBytes  *uint64 `json:"gpu_mem_free_bytes,omitempty"`
	GPUMemTotalBytes *uint64 `json:"gpu_mem_total_bytes,omitempty"`
	// FLOPsPerStep is the model's FLOPs per step: its forward's, counted
	// once (torch.utils.flop_counter, torch ≥ 2.1; else by the shapes of
	// its linears, convs, matmuls and attention, torch ≥ 1.13), ×3 for a training step
	// (the backward is about twice the forward). Nil where not counted.
	FLOPsPerStep *float64 `json:"flops_per_step,omitempty" check:"0,1e30"`
	// FLOPsVoid is why the hook gave no count where it chose not to (""
	// otherwise): FLOPsVoidFrozen, FLOPsVoidRNN.
	FLOPsVoid string `json:"flops_void,omitempty"`
	// FLOPsShapesVary: the batches the hook looked at differ in their
	// elements per sample (sequences padded per batch, images of several
	// sizes; python/gpuwatch_hook/_timing.py Stats.shapes_vary), and
	// FLOPsPerStep was counted on one step's: the count is not every
	// step's, and no MFU is derived from it.
	FLOPsShapesVary bool `json:"flops_shapes_vary,omitempty"`
	// ReadAt is when the hook last read them; nil when it did not say.
	ReadAt *time.Time `json:"read_at,omitempty"`
	// DeviceTF32 is whether the model's GPU has TF32 and bf16 tensor
	// cores (compute capability ≥ 8.0, torch.cuda.get_device_capability);
	// nil where not read (no CUDA, ROCm). Where it is nil the GPU's peak
	// row says (GPUPeak.NoTF32).
	DeviceTF32 *bool `json:"device_tf32,omitempty"`
	// noTF32: the loop's GPU has none (DeviceTF32 false, else its peak
	// row, GPUPeak.NoTF32), so the TF32 switches change nothing; set by
	// AssignRoles (markTF32).
	noTF32 bool
}

// Matmuls says whether the model has work for the tensor cores: a linear
// or a conv among its modules, or FLOPs counted (torch's counter and the
// hook's shapes count matmuls, convs and attention only: a GPT-2 Conv1D's
// addmm is no nn.Linear). known is false where the modules were not
// read. A count of none is never published (the hook says FLOPs only
// where it counted some): modules with no linear and no conv, and no
// FLOPs, are a model with none.
func (s *JobSettings) Matmuls() (has bool, known bool) {
	if s == nil {
		return false, false
	}
	if s.HasLinear != nil && *s.HasLinear || s.HasConv != nil && *s.HasConv || s.FLOPsPerStep != nil && *s.FLOPsPerStep > 0 {
		return true, true
	}
	return false, s.HasLinear != nil && s.HasConv != nil
}

// TF32 says whether float32 matmuls may run on TF32 tensor cores: the
// float32 matmul precision "high" or "medium", or matmul allow_tf32 on;
// never on a GPU that has no TF32 (a V100, a T4). known is false when
// neither was read.
func (s *JobSettings) TF32() (on bool, known bool) {
	if s == nil {
		return false, false
	}
	if s.noTF32 {
		return false, true
	}
	switch s.Float32MatmulPrecision {
	case "high", "medium":
		return true, true
	}
	if s.MatmulAllowTF32 != nil {
		return *s.MatmulAllowTF32, true
	}
	if s.Float32MatmulPrecision == "highest" {
		return false, true
	}
	return false, false
}

// ConvTF32 says whether cuDNN's fp32 convs may run on TF32 (its own
// switch, cudnn.allow_tf32, on by torch's default); never on a GPU that
// has no TF32. known is false where the switch was not read.
func (s *JobSettings) ConvTF32() (on bool, known bool) {
	switch {
	case s == nil:
		return false, false
	case s.noTF32:
		return false, true
	case s.CudnnAllowTF32 == nil:
		return false, false
	}
	return *s.CudnnAllowTF32, true
}

// NoTF32 says the loop's GPU has no TF32: the switches change nothing.
func (s *JobSettings) NoTF32() bool { return s != nil && s.noTF32 }

// markTF32 notes on the loader's settings whether the loop's GPU has
// TF32 (its peak row): a V100's "fp32 convs on TF32" (cuDNN's switch on
// by default) ran them on the CUDA cores, and hid tensor_idle.
func (f *Frame) markTF32() {
	if f.Loader == nil || f.Loader.Settings == nil {
		return
	}
	s := f.Loader.Settings
	if s.DeviceTF32 != nil {
		s.noTF32 = !*s.DeviceTF32
		return
	}
	g := f.LoopGPU()
	s.noTF32 = g != nil && g.Peak != nil && g.Peak.NoTF32
}

// Summary is the settings as one line, in the job's terms ("bf16
// autocast · fp32 matmuls in full fp32 · convs channels_last · not
// compiled · batch 128"); what was not read is left out; "" for nothing
// read.
// CastDtype is the 16-bit dtype ("bfloat16", "float16") the model's
// weights were cast to where autocast is not on: its matmuls and convs
// run in it, on the tensor cores, as under autocast; "" otherwise (a
// review: a model cast with .to(torch.bfloat16) was read as fp32 and told
// to autocast to bf16).
func (s *JobSettings) CastDtype() string {
	if s == nil || s.Autocast != nil && *s.Autocast {
		return ""
	}
	switch s.WeightsDtype {
	case "bfloat16", "float16":
		return s.WeightsDtype
	}
	return ""
}

// Half says the step's matmuls and convs run in 16 bits, by autocast or
// by weights cast to bf16 or fp16 (CastDtype): advice to autocast is
// advice it already follows.
func (s *JobSettings) Half() bool {
	return s != nil && (s.Autocast != nil && *s.Autocast || s.CastDtype() != "")
}

func (s *JobSettings) Summary() string {
	if s == nil {
		return ""
	}
	var parts []string
	yes := func(b *bool, on, off string) {
		if b != nil {
			if *b {
				parts = append(parts, on)
			} else {
				parts = append(parts, off)
			}
		}
	}
	short := strings.NewReplacer("bfloat16", "bf16", "float16", "fp16").Replace
	if s.Autocast != nil {
		if *s.Autocast {
			parts = append(parts, strings.TrimSpace(short(s.AutocastDtype)+" autocast"))
		} else {
			parts = append(parts, "no autocast")
		}
	}
	switch d := s.WeightsDtype; {
	case s.CastDtype() != "":
		parts = append(parts, "weights in "+short(d))
	case d == "float64":
		parts = append(parts, "weights in "+d)
	case d == "mixed":
		parts = append(parts, "weights in mixed dtypes") // no dtype holds 90 % of them
	}
	cpu := s.Device == "cpu"
	if cpu {
		parts = append([]string{"on the CPU"}, parts...)
	}
	// The precision switches are the process's: with no model's forward
	// seen they apply to nothing read (a review: a job with no model read
	// "fp32 matmuls in full fp32").
	forward := s.Device != "" || s.Autocast != nil || s.HasLinear != nil || s.HasConv != nil
	if _, known := s.TF32(); !forward && (known || s.CudnnBenchmark != nil) {
		parts = append(parts, "no model's forward seen")
	}
	if on, known := s.TF32(); known && !cpu && forward && s.CastDtype() == "" && s.WeightsDtype != "float64" {
		if on {
			parts = append(parts, "fp32 matmuls on TF32")
		} else {
			parts = append(parts, "fp32 matmuls in full fp32")
		}
	}
	if s.HasConv != nil && *s.HasConv {
		// cuDNN's own switch decides a conv's fp32 (on by torch's default).
		if on, known := s.ConvTF32(); known && !s.Half() && !cpu {
			yes(&on, "fp32 convs on TF32", "fp32 convs in full fp32")
		}
		yes(s.ConvChannelsLast, "convs channels_last", "convs NCHW")
	}
	if s.noTF32 && !cpu && forward && !s.Half() {
		parts = append(parts, "no TF32 on this GPU")
	}
	if !cpu && forward {
		yes(s.CudnnBenchmark, "cudnn.benchmark", "")
	}
	yes(s.Compiled, "compiled", "not compiled")
	yes(s.CUDAGraphs, "CUDA graphs", "")
	if s.BatchSize != nil {
		parts = append(parts, fmt.Sprintf("batch %d", *s.BatchSize))
	}
	if f, t := s.GPUMemFreeBytes, s.GPUMemTotalBytes; f != nil && t != nil && *t > 0 && *f <= *t {
		parts = append(parts, fmt.Sprintf("%s of %s GPU memory free", FormatBytes(float64(*f)), FormatBytes(float64(*t))))
	}
	parts = append(parts, s.flopsWords())
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " · ")
}

// flopsWords is the settings line's FLOPs: the count, or why there is
// none where the hook said, on a CPU job too, where no MFU line says it
// (a review: an LSTMCell's job said nothing); "" neither.
func (s *JobSettings) flopsWords() string {
	switch {
	case s.FLOPsPerStep != nil && s.FLOPsShapesVary:
		return fmt.Sprintf("%.3g FLOPs on one step's batch (the batches' shapes vary)", *s.FLOPsPerStep)
	case s.FLOPsPerStep != nil:
		return fmt.Sprintf("%.3g FLOPs a step", *s.FLOPsPerStep)
	case s.FLOPsVoid != "":
		return "FLOPs not counted (" + flopsVoidWords[s.FLOPsVoid] + ")"
	}
	return ""
}

// flopsVoidWords are the reasons for no FLOPs count in a few words, for
// the settings line (MFUWhy says them whole).
var flopsVoidWords = map[string]string{
	FLOPsVoidFrozen: "frozen weights under torch.utils.flop_counter",
	FLOPsVoidRNN:    "an RNN's fused kernels",
	FLOPsVoidEinsum: "an einsum of three or more operands",
}

// The reasons the hook gives for no FLOPs count (JobSettings.FLOPsVoid).
const (
	// FLOPsVoidFrozen: a training forward with frozen weights, under
	// torch.utils.flop_counter (torch ≥ 2.1), which counts below autograd
	// and cannot tell which backward runs.
	FLOPsVoidFrozen = "frozen"
	// FLOPsVoidRNN: an RNN, LSTM or GRU module, whose fused kernels
	// neither counter reads.
	FLOPsVoidRNN = "rnn"
	// FLOPsVoidEinsum: an einsum of three or more operands, which the
	// count by shapes (torch < 2.1) does not read.
	FLOPsVoidEinsum = "einsum"
)
