package sample

import (
	"strings"
	"testing"
)

// TestMFUIsDerivedFromWhatWasRead (issue 51 item 1): the model's FLOPs a
// step the hook counted (4e12) × 50 steps/s over the H200's dense bf16
// peak (989.5 TFLOPS) is 20 % in bf16 autocast; the same job in fp32 is
// set against the fp32 peak (67 TFLOPS), with TF32 against tf32's. Absent where the
// FLOPs, the rate, the precision's settings, the GPU or its peak were not
// read — never a guess; the FLOPs' absence says whether the model was
// compiled (the hook skips the count) or no counter gave one.
func TestMFUIsDerivedFromWhatWasRead(t *testing.T) {
	peak := &GPUPeak{Model: "H200 SXM", DenseTFLOPS: map[string]float64{"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5}}
	yes, no := true, false
	flops := 4e12
	frame := func(s *JobSettings, bps float64, p *GPUPeak) *Frame {
		pid := 100
		return &Frame{GPUs: []GPU{{Index: 0, Name: "NVIDIA H200", Peak: p, Processes: []GPUProcess{{PID: 100}}}},
			Loader: &Loader{PID: &pid, BatchesPerSec: bps, Settings: s}}
	}
	bf16 := &JobSettings{Autocast: &yes, AutocastDtype: "bfloat16", FLOPsPerStep: &flops}
	f := frame(bf16, 50, peak)
	f.AssignRoles()
	m := f.Loader.MFU
	if m == nil || m.Dtype != DtypeBF16 || m.Ratio < 0.2021 || m.Ratio > 0.2022 || m.GPU != "H200 SXM" || !strings.Contains(m.Method, "hook's count") {
		t.Fatalf("bf16: %+v", m)
	}
	tf32 := &JobSettings{Autocast: &no, Float32MatmulPrecision: "high", FLOPsPerStep: &flops}
	f = frame(tf32, 50, peak)
	f.AssignRoles()
	if f.Loader.MFU == nil || f.Loader.MFU.Dtype != DtypeTF32 {
		t.Errorf("tf32: %+v", f.Loader.MFU)
	}
	fp32 := &JobSettings{Autocast: &no, Float32MatmulPrecision: "highest", MatmulAllowTF32: &no, FLOPsPerStep: &flops}
	f = frame(fp32, 0.5, peak)
	f.AssignRoles()
	if f.Loader.MFU == nil || f.Loader.MFU.Dtype != DtypeFP32 || f.Loader.MFU.PeakTFLOPS != 67 {
		t.Errorf("fp32: %+v", f.Loader.MFU)
	}
	conv := &JobSettings{Autocast: &no, Float32MatmulPrecision: "highest", MatmulAllowTF32: &no, CudnnAllowTF32: &yes, HasConv: &yes, HasLinear: &no, FLOPsPerStep: &flops}
	f = frame(conv, 5, peak)
	f.AssignRoles()
	if f.Loader.MFU == nil || f.Loader.MFU.Dtype != DtypeTF32 {
		t.Errorf("a conv model, cuDNN's TF32 on: %+v", f.Loader.MFU)
	}
	mixed := *conv
	mixed.HasLinear = &yes
	// Each absence says why (Loader.MFUWhy), in its own words.
	for name, c := range map[string]struct {
		f   *Frame
		why string
	}{
		"convs in tf32, matmuls in fp32": {frame(&mixed, 5, peak), "its convs take TF32 (cudnn.allow_tf32 on) and its matmuls run in full fp32"},
		"past the peak":                  {frame(bf16, 500, peak), "do not belong together"},
		"no FLOPs":                       {frame(&JobSettings{Autocast: &yes, AutocastDtype: "bfloat16", Compiled: &no}, 50, peak), "neither torch.utils.flop_counter (torch ≥ 2.1) nor its count by the shapes"},
		"no FLOPs, compiled not read":    {frame(&JobSettings{Autocast: &yes, AutocastDtype: "bfloat16"}, 50, peak), "did not count the model's FLOPs: neither"},
		"no FLOPs, compiled":             {frame(&JobSettings{Autocast: &yes, AutocastDtype: "bfloat16", Compiled: &yes}, 50, peak), "does not count a compiled model's FLOPs"},
		"no FLOPs, frozen weights":       {frame(&JobSettings{Autocast: &yes, AutocastDtype: "bfloat16", Compiled: &no, FLOPsVoid: FLOPsVoidFrozen}, 50, peak), "no FLOPs count for a training step with frozen weights"},
		"no FLOPs, an RNN":               {frame(&JobSettings{Autocast: &yes, AutocastDtype: "bfloat16", Compiled: &no, FLOPsVoid: FLOPsVoidRNN}, 50, peak), "no FLOPs count for a model with an RNN, LSTM or GRU"},
		"no FLOPs, an einsum of three":   {frame(&JobSettings{Autocast: &yes, AutocastDtype: "bfloat16", Compiled: &no, FLOPsVoid: FLOPsVoidEinsum}, 50, peak), "no FLOPs count for a model with an einsum of three or more operands"},
		"shapes vary":                    {frame(&JobSettings{Autocast: &yes, AutocastDtype: "bfloat16", Compiled: &no, FLOPsPerStep: &flops, FLOPsShapesVary: true}, 50, peak), "the batches' shapes vary"},
		"no rate":                        {frame(bf16, 0, peak), "no step in the interval"},
		"precision unread":               {frame(&JobSettings{FLOPsPerStep: &flops}, 50, peak), "dtype is not read"},
		"no peak":                        {frame(bf16, 50, nil), "no dense peak for the NVIDIA H200"},
		"no settings":                    {frame(nil, 50, peak), "the loader's frames carry no settings"},
		"sampled":                        {sampled(frame(nil, 50, peak)), "did not read the job's settings"},
		"two GPUs, no pid":               {&Frame{GPUs: []GPU{{Index: 0, Peak: peak}, {Index: 1, Peak: peak}}, Loader: &Loader{BatchesPerSec: 50, Settings: bf16}}, "the loop's GPU is not known"},
	} {
		c.f.AssignRoles()
		if c.f.Loader.MFU != nil || !strings.Contains(c.f.Loader.MFUWhy, c.why) {
			t.Errorf("%s: MFU %+v, why %q (want %q)", name, c.f.Loader.MFU, c.f.Loader.MFUWhy, c.why)
		}
	}
	// A job with no GPU has no MFU to miss: nothing said, unless the hook
	// counted its FLOPs, which then say why they have no MFU (a review:
	// silent), never a peak made up for a CPU.
	cpu := &Frame{Loader: &Loader{BatchesPerSec: 50}}
	if cpu.AssignRoles(); cpu.Loader.MFU != nil || cpu.Loader.MFUWhy != "" {
		t.Errorf("a CPU job: %+v %q", cpu.Loader.MFU, cpu.Loader.MFUWhy)
	}
	counted := &Frame{Loader: &Loader{BatchesPerSec: 50, Settings: &JobSettings{Device: "cpu", Autocast: &no, FLOPsPerStep: &flops}}}
	if counted.AssignRoles(); counted.Loader.MFU != nil || !strings.Contains(counted.Loader.MFUWhy, "runs on the CPU") {
		t.Errorf("a CPU job, its FLOPs counted: %+v %q", counted.Loader.MFU, counted.Loader.MFUWhy)
	}
	// The model on the CPU beside a GPU that lists none of its
	// processes: that GPU is not its, and no MFU is held against its
	// peak (a review: 0.12 % of the H200's fp32 peak for a CPU job).
	beside := frame(&JobSettings{Device: "cpu", Autocast: &no, Float32MatmulPrecision: "highest", MatmulAllowTF32: &no, FLOPsPerStep: &flops}, 20, peak)
	beside.GPUs[0].Processes = nil
	if beside.AssignRoles(); beside.Loader.MFU != nil || !strings.Contains(beside.Loader.MFUWhy, "runs on the CPU") || beside.LoopGPU() != nil {
		t.Errorf("a CPU job beside a GPU: %+v %q, loop GPU %v", beside.Loader.MFU, beside.Loader.MFUWhy, beside.LoopGPU())
	}
	// Its device not the CPU (a GPU box whose NVML did not load): the GPU
	// is not read, which is not "a CPU job".
	counted.Loader.Settings.Device = "cuda"
	if counted.AssignRoles(); counted.Loader.MFU != nil || !strings.Contains(counted.Loader.MFUWhy, "no GPU is read here") {
		t.Errorf("a GPU job, no GPU read: %+v %q", counted.Loader.MFU, counted.Loader.MFUWhy)
	}
}

// TestPercentWordsIsNeverAMeasured0: a figure measured small reads with
// the digits that tell it from 0 (a 2e-6 MFU read "0 %").
// sampled is f with its loop sampled, not instrumented: no hook read its
// settings.
func sampled(f *Frame) *Frame {
	f.Loader.Sampled = &SampledLoop{}
	return f
}

func TestPercentWordsIsNeverAMeasured0(t *testing.T) {
	for ratio, want := range map[float64]string{0.31: "31", 0.0996: "10", 0.042: "4.2", 0.004: "0.4", 2e-6: "0.0002", 0: "0", 1: "100"} {
		if got := PercentWords(ratio); got != want {
			t.Errorf("PercentWords(%g) = %q, want %q", ratio, got, want)
		}
	}
}

// TestAnMFUAboveTheTensorCoresIsQuestioned: the tensor pipes run a
// tensor dtype's FLOPs at most at their activity × the peak, so MFU 56 %
// beside tensor cores 5 % active is questioned, 56 % beside 60 % is not,
// and fp32 (the FP32 pipes) never is.
func TestAnMFUAboveTheTensorCoresIsQuestioned(t *testing.T) {
	for _, c := range []struct {
		dtype  string
		tensor float64
		odd    bool
	}{{DtypeBF16, 5, true}, {DtypeBF16, 60, false}, {DtypeTF32, 40, true}, {DtypeFP32, 0, false}} {
		m := &MFU{Ratio: 0.56, Dtype: c.dtype}
		if got := m.AboveTensor(c.tensor); (got != "") != c.odd {
			t.Errorf("%s, tensor %.0f %%: %q", c.dtype, c.tensor, got)
		}
	}
	var none *MFU
	if none.AboveTensor(1) != "" {
		t.Error("no MFU questioned")
	}
}

// TestTheLoopsGPUIsWhereItHoldsMost (a review): a rank with a stray CUDA
// context on GPU 0 beside its own GPU 1 was judged by GPU 0; a lost GPU
// is no loop's.
func TestTheLoopsGPUIsWhereItHoldsMost(t *testing.T) {
	pid := 100
	mem := func(v uint64) *uint64 { return &v }
	f := Frame{Loader: &Loader{PID: &pid}, GPUs: []GPU{
		{Index: 0, Processes: []GPUProcess{{PID: 100, UsedMemBytes: mem(500 << 20)}}},
		{Index: 1, Processes: []GPUProcess{{PID: 100, UsedMemBytes: mem(60 << 30)}}},
	}}
	if g := f.LoopGPU(); g == nil || g.Index != 1 {
		t.Fatalf("loop GPU %+v, want 1", g)
	}
	f.GPUs[1].Lost = true
	if g := f.LoopGPU(); g == nil || g.Index != 0 {
		t.Fatalf("GPU 1 lost: loop GPU %+v, want 0", g)
	}
	// Listed on a lost GPU alone: none, not the only other judged GPU,
	// another job's.
	f.GPUs = []GPU{{Index: 0, Processes: []GPUProcess{{PID: 555}}}, {Index: 1, Lost: true, Processes: []GPUProcess{{PID: 100}}}}
	if g := f.LoopGPU(); g != nil {
		t.Fatalf("the loop's GPU lost: loop GPU %+v, want none", g)
	}
}

// TestTheLoopsMIGInstanceIsItsPlace (a review): on a partitioned GPU the
// loop's process is listed by its MIG instance, not by the GPU. The
// instance is found, on a box whose other GPU is judged too, and no MFU
// is derived from the whole GPU's dense peak: a 1g slice has a seventh of
// its SMs, and MFU read 56 % of the H200 beside a slice of it.
func TestTheLoopsMIGInstanceIsItsPlace(t *testing.T) {
	pid, yes, flops := 100, true, 3.3e12
	peak := &GPUPeak{Model: "H200 SXM", DenseTFLOPS: map[string]float64{"bf16": 989.5}}
	f := Frame{
		Loader: &Loader{PID: &pid, BatchesPerSec: 168, Settings: &JobSettings{Autocast: &yes, AutocastDtype: "bfloat16", FLOPsPerStep: &flops}},
		GPUs: []GPU{
			{Index: 0, Name: "NVIDIA H200", Peak: peak, Processes: []GPUProcess{{PID: 555}}},
			{Index: 1, Name: "NVIDIA H200", Peak: peak, Processes: []GPUProcess{}, MIG: []MIGDevice{
				{UUID: "MIG-a", Profile: "3g.71gb", Processes: []GPUProcess{{PID: 777}}},
				{UUID: "MIG-b", Profile: "1g.18gb", Processes: []GPUProcess{{PID: 100}}},
			}},
		}}
	g, mig := f.LoopPlace()
	if g == nil || g.Index != 1 || mig == nil || mig.UUID != "MIG-b" || f.LoopGPU() != g || f.LoopMIG() != mig {
		t.Fatalf("place %+v %+v: want GPU 1's instance MIG-b", g, mig)
	}
	// NVML lists every instance's processes on the whole GPU too, to a
	// privileged caller (a review): the instance is still its place.
	f.GPUs[1].Processes = []GPUProcess{{PID: 777}, {PID: 100}}
	if g, mig := f.LoopPlace(); g == nil || g.Index != 1 || mig == nil || mig.UUID != "MIG-b" {
		t.Fatalf("listed by the GPU and its instance: place %+v %+v, want GPU 1's instance MIG-b", g, mig)
	}
	f.GPUs[1].Processes = []GPUProcess{}
	f.AssignRoles()
	if f.Loader.MFU != nil || !strings.Contains(f.Loader.MFUWhy, "a MIG instance (1g.18gb) of the NVIDIA H200: the dense peak is the whole GPU's") {
		t.Errorf("MFU %+v, why %q: want none, the instance named", f.Loader.MFU, f.Loader.MFUWhy)
	}
	// Partitioned, the loop's process listed by no instance (only GPU 1
	// judged): its share of the GPU is unknown too.
	f.GPUs = f.GPUs[1:]
	f.GPUs[0].MIG[1].Processes = nil
	f.Loader.MFU, f.Loader.MFUWhy = nil, ""
	f.AssignRoles()
	if f.LoopMIG() != nil || f.Loader.MFU != nil || !strings.Contains(f.Loader.MFUWhy, "partitioned (MIG), and no instance lists the loop's process") {
		t.Errorf("no instance lists it: MFU %+v, why %q", f.Loader.MFU, f.Loader.MFUWhy)
	}
}
