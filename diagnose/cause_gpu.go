package diagnose

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// gpuStep is what the GPU-bound causes read of a window: GPM's medians
// (the signals), and the newest frame's job settings (what the hook read
// the job already does) and the judged GPU's dense peaks.
type gpuStep struct {
	tensor, dram, fp32 level
	hmma               level               // HMMA's tensor activity (tf32, bf16, fp16), where GPM splits it
	settings           *sample.JobSettings // nil: the hook did not read them
	gpu                *sample.GPU         // the loop's own GPU (Frame.LoopGPU) where the frame places it, else the first judged GPU with GPM, else the first judged one (its dense peak needs no GPM)
	// mig is the MIG instance the loop's process runs in (Frame.LoopMIG):
	// its GPM and memory are the step's, and the GPU's dense peak is not
	// (the instance's share of it is not read); nil off MIG.
	mig   *sample.MIGDevice
	rate  float64 // samples per second, 0 when unknown
	noGPM string  // why a judged GPU has no GPM, as its probe said
	// profile is the hook's recording of the step's GPU time (run
	// --gpu-profile, attach --gpu-profile), done and on a GPU; nil else.
	// A cause's bound then comes from it, by Amdahl's law.
	profile *sample.GPUProfile
	mfu     *sample.MFU // the newest frame's loader's (derived by sample)
	mfuWhy  string      // why it is nil, as sample said
	// syncsCounted: the hook counted host syncs over some steps. Then
	// host_sync names them where there are enough to matter, and no
	// generic "sync less" is said.
	syncsCounted bool
	// procSM is the loop's process's share of the GPU's time running its
	// kernels (NVML's per-process SM utilization), the window's mean: where
	// GPM is absent, what of the GPU's busy time is the job's own. Set by
	// the window (read), not by gpuStep.read.
	procSM level
}

// read takes the newest frame's settings, GPU and rate.
func (g *gpuStep) read(f *sample.Frame) {
	g.settings, g.gpu, g.mig, g.rate, g.noGPM, g.profile, g.mfu, g.mfuWhy, g.syncsCounted, g.procSM = nil, nil, nil, 0, "", nil, nil, "", false, level{}
	if l := f.Loader; l != nil {
		g.settings, g.rate, g.mfu, g.mfuWhy = l.Settings, l.SamplesPerSec, l.MFU, l.MFUWhy
		g.syncsCounted = l.SyncSteps != nil && *l.SyncSteps > 0
		if p := l.GPUProfile; p.Done() && p.Device == "cuda" {
			g.profile = p
		}
	}
	if lg, mig := f.LoopPlace(); lg != nil && !lg.Lost { // the loop's own GPU, as the GPM signals (addFrameSignals)
		g.gpu, g.mig = lg, mig
		if g.gpm() == nil {
			g.noGPM = cmpOr(lg.Unavailable["gpm"], "not read")
			if mig != nil {
				g.noGPM = "not read for the loop's MIG instance (" + mig.Profile + ")"
			}
		}
		return
	}
	for i := range f.GPUs {
		if !f.JudgedGPU(i) {
			continue
		}
		if f.GPUs[i].GPM != nil {
			g.gpu, g.noGPM = &f.GPUs[i], ""
			return
		}
		if g.gpu == nil {
			g.gpu = &f.GPUs[i]
		}
		if g.noGPM == "" {
			g.noGPM = cmpOr(f.GPUs[i].Unavailable["gpm"], "not read")
		}
	}
}

// noGPMWords is why GPM was not read, said after "not read: ": the
// probe's reasons name GPM already ("GPM not supported by this GPU").
func (g *gpuStep) noGPMWords() string {
	if strings.HasPrefix(g.noGPM, "GPM") {
		return g.noGPM
	}
	return "GPM " + g.noGPM
}

// gpm is the GPM of what the step runs on: its MIG instance's, else its
// GPU's; nil where not read.
func (g *gpuStep) gpm() *sample.GPM {
	if g.mig != nil {
		return g.mig.GPM
	}
	if g.gpu != nil {
		return g.gpu.GPM
	}
	return nil
}

// stepRate is the step's achieved matmul rate (sample.GPU.StepTFLOPS)
// from the window's medians of tensor activity, the figures the verdict
// says beside it, on the judged GPU's dense peak; not ok where GPM or
// the peak is missing, or the step runs on a MIG instance, whose share
// of the GPU's peak is not read (a review: "tensor cores 12 %" beside a
// rate from the newest frame's 90 %).
func (g *gpuStep) stepRate() (sample.StepRate, bool) {
	if g.gpu == nil || g.gpu.GPM == nil || !g.tensor.ok || g.mig != nil {
		return sample.StepRate{}, false
	}
	gp, m := *g.gpu, *g.gpu.GPM
	m.TensorActivityPct, m.TensorHMMAActivityPct = &g.tensor.v, nil
	if g.hmma.ok {
		m.TensorHMMAActivityPct = &g.hmma.v
	}
	gp.GPM = &m
	return gp.StepTFLOPS(g.settings)
}

// processSM is the SM utilization NVML gives the process pid on the
// frame's GPUs (its kernels' share of each GPU's time), the largest where
// it runs on several; not ok where no GPU lists it with one.
func processSM(f *sample.Frame, pid *int) level {
	var out level
	if pid == nil {
		return out
	}
	for i := range f.GPUs {
		for _, p := range f.GPUs[i].Processes {
			if p.PID == *pid && p.SMUtilPct != nil && (!out.ok || *p.SMUtilPct > out.v) {
				out = level{v: *p.SMUtilPct, n: 1, ok: true}
			}
		}
	}
	return out
}

// gpuIn is a GPU-bound window's view for the GPU causes.
type gpuIn = *gpuStep

// gpuBound returns the GPU causes' view of a window where the GPU is the
// limit; false where it is not (the input pipeline is, or nothing runs,
// or no GPU's utilization was read). GPM is not needed: each cause reads
// what the window has — GPM's activities on Hopper and later, else the
// utilization counter and the settings the hook read — and says which.
func (in *causeIn) gpuBound() (gpuIn, bool) {
	if in.d.kind != Healthy && in.d.kind != GPUUnderused || !in.w.gpuUtil.ok && !in.w.smActivity.ok {
		return nil, false
	}
	return &in.w.gpu, true
}

// kernelBound returns gpuBound's view for the causes whose fix makes the
// GPU's kernels faster (tensor_idle, channels_last, memory_bound); false
// also where the verdict is that the host side leaves the GPU idle
// (gpu_underused/host-idle): with the GPU running a kernel 12 % of the
// time, no kernel fix gains more than 1/(1 − 0.12) = 1.14×, and naming one
// would drop the situation's own advice (the host's side) for it.
func (in *causeIn) kernelBound() (gpuIn, bool) {
	if in.d.kind == GPUUnderused && in.d.variant == underusedHostIdle {
		return nil, false
	}
	return in.gpuBound()
}

// gpuBusy says the GPU runs a kernel at least AccelBusyPct of the time
// (utilization, else GPM's SM activity on MIG): it is the busy part.
func (in *causeIn) gpuBusy() (level, bool) {
	acc, real := in.w.accel()
	return acc, real && acc.ok && acc.v >= in.w.th.AccelBusyPct
}

// unlessOn is a fix that turns a setting on, by what the hook read of it
// (on): the fix where it is off; none where it is on (advising what the
// job does is a defect); where it was not read, the fix for the case it
// is off, saying so — a setting not read is not taken as off —, and
// whether a hook read the job's other settings (hooked) or none did.
func unlessOn(on *bool, fix, setting string, hooked bool) (string, bool) {
	switch {
	case on == nil && hooked:
		return fix + " (unless " + setting + " already: the hook did not read it)", true
	case on == nil:
		return fix + " (unless " + setting + " already: not read; gpuwatch run reads it)", true
	case *on:
		return "", false
	}
	return fix, true
}

// precisionWords says what the settings show of the step's precision:
// "autocast is off and float32 matmuls run in full fp32 (…)"; "" where
// the hook read nothing.
func precisionWords(s *sample.JobSettings) string {
	if s == nil || s.Autocast == nil {
		return "the job's precision was not read (gpuwatch run reads its autocast and TF32 settings)"
	}
	var parts []string
	if *s.Autocast {
		parts = append(parts, "autocast is on ("+cmpOr(s.AutocastDtype, "its dtype not read")+")")
	} else {
		parts = append(parts, "autocast is off")
	}
	if d := s.CastDtype(); d != "" {
		// Cast with .half() or .to(torch.bfloat16): no float32 matmul to
		// take TF32 or not.
		return strings.Join(append(parts, "the model's weights are in "+d+" (its matmuls and convs run in it)"), " and ")
	}
	if s.NoTF32() {
		// Whatever the switches say: the GPU has none.
		return strings.Join(append(parts, "float32 matmuls and convs run in full fp32 (this GPU has no TF32, whatever torch's switches say)"), " and ")
	}
	if tf, known := s.TF32(); known {
		if tf {
			parts = append(parts, "float32 matmuls may use TF32 (float32_matmul_precision "+quote(s.Float32MatmulPrecision)+")")
		} else {
			parts = append(parts, "float32 matmuls run in full fp32 (float32_matmul_precision "+quote(s.Float32MatmulPrecision)+", allow_tf32 off)")
		}
	}
	if !*s.Autocast && s.HasConv != nil && *s.HasConv && s.CudnnAllowTF32 != nil {
		// The convs go by cuDNN's own switch, not the matmuls' (on by
		// default in torch).
		if *s.CudnnAllowTF32 {
			parts = append(parts, "its convs may use TF32 (cudnn.allow_tf32 on)")
		} else {
			parts = append(parts, "its convs run in full fp32 (cudnn.allow_tf32 off)")
		}
	}
	return strings.Join(parts, " and ")
}

func quote(s string) string {
	if s == "" {
		return "not read"
	}
	return "\"" + s + "\""
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// peakRatio is the judged GPU's dense peak for dtype over its fp32 one,
// with the words that say where it comes from; false where either is
// unknown.
func peakRatio(g *sample.GPU, dtype string) (float64, string, bool) {
	if g == nil || g.Peak == nil {
		return 0, "", false
	}
	hi, lo := g.Peak.DenseTFLOPS[dtype], g.Peak.DenseTFLOPS[sample.DtypeFP32]
	if !(hi > 0) || !(lo > 0) || !(hi/lo > 1) || !(hi/lo <= maxPeakRatio) {
		return 0, "", false // a recording's peaks may be anything
	}
	return hi / lo, fmt.Sprintf("the %s's dense %s peak (%.4g TFLOPS) over its fp32 one (%.4g TFLOPS)", g.Peak.Model, dtype, hi, lo), true
}

// maxPeakRatio is the most a dtype's dense peak may be over fp32's for
// peakRatio to take it: twice the table's largest (A100's int8, 32×).
// A recording's peaks are not checked against the table, and a ratio of
// 1e307 made a bound, and the rate after it, +Inf (a verdict JSON cannot
// encode).
const maxPeakRatio = 64

// stepBound is a GPU cause's bound: the step at most gain× faster, the
// rate after it where the loader's is known and the product is finite.
func stepBound(g gpuIn, gain float64) *Bound {
	b := &Bound{K: gain, Gain: gain, FreeGain: gain}
	if r := g.rate * gain; g.rate > 0 && !math.IsInf(r, 0) && !math.IsNaN(r) {
		b.SamplesPerSec, b.FreeSamples = r, r
	}
	return b
}

// stepProfiled is a GPU cause's bound from the hook's profile of the step:
// the share of the GPU's time (busy and idle) that the fix speeds up
// factor× (math.Inf(1): removes), by Amdahl's law; what a share is of
// and what the recording cost are said. false where no profile was
// recorded or it did not see the category.
func stepProfiled(g gpuIn, what, category, precision string, factor float64) (*Bound, string, bool) {
	p := g.profile
	if p == nil {
		return nil, "", false
	}
	// The share measured is said; the bound takes the most the share may
	// be (BoundShare: where the recording's own idle fell is not
	// measured). A share measured as none (under half a percent: "0 %")
	// bounds nothing.
	measured, ok := p.Share(category, precision)
	if !ok || !(measured >= 0.005) {
		return nil, "", false
	}
	s, _ := p.BoundShare(category, precision)
	s = max(s, measured)
	gain := 1 / (1 - s)
	if !math.IsInf(factor, 1) {
		gain, _ = p.SpeedupBound(category, precision, factor)
	}
	if !(gain > 1) || math.IsInf(gain, 1) {
		return nil, "", false
	}
	why := fmt.Sprintf("%s %.0f %% of the GPU's time a step (its profile over %d steps", what, 100*measured, p.Steps)
	if c := p.CostWords(); c != "" {
		why += ", which cost the job " + c
	}
	if math.Round(100*s) > math.Round(100*measured) {
		why += fmt.Sprintf("; at most %.0f %% as recorded, for where the recording's own idle fell is not measured", 100*s)
	}
	return stepBound(g, gain), why + ")", true
}

// waitsProfiled is stepProfiled on the GPU's waits of one kind: "sync"
// (those that began in a host sync) or "host" (those that began while
// the host was busy otherwise), said as what, where the hook split them;
// else on all of them, said as whatAll and so.
func waitsProfiled(g gpuIn, kind, what, whatAll string) (*Bound, string, bool) {
	if _, split := g.profile.Share(kind, ""); split {
		return stepProfiled(g, what, kind, "", math.Inf(1))
	}
	b, why, ok := stepProfiled(g, whatAll, "idle", "", math.Inf(1))
	return b, why + " (every wait: this hook does not tell the syncs' from the host's other work)", ok
}

// profiledShare sums the shares of categories (every precision).
func profiledShare(p *sample.GPUProfile, categories ...string) float64 {
	sum := 0.0
	for _, c := range categories {
		if s, ok := p.Share(c, ""); ok {
			sum += s
		}
	}
	return min(1, sum)
}

// batchCeiling is the most a larger batch can gain per sample, where a
// figure bounds it: the step's work per sample stays, so no pipe runs it
// faster than every cycle (the busiest of the tensor, FP32, FP64 and FP16
// pipes, GPM)
// and no model's FLOPs run past the dense peak (1 ÷ MFU). SM activity
// bounds no batch: it counts an SM with one warp resident as active, and
// a larger batch also puts more warps on each (DCGM: SM activity is
// "necessary but not sufficient"). false where neither was read.
func batchCeiling(g gpuIn) (float64, string, bool) {
	gain, why := math.Inf(1), ""
	pipe, name := g.tensor, "tensor cores"
	if g.fp32.ok && (!pipe.ok || g.fp32.v > pipe.v) {
		pipe, name = g.fp32, "FP32 pipes"
	}
	// The pipes the window keeps no median of, from the newest frame's
	// GPM: an FP64 or FP16 step is bound by those (a review: FP64 90 %
	// read a 10× bound from the FP32 pipes at 10 %).
	if m := g.gpm(); m != nil {
		for _, p := range []struct {
			v    *float64
			name string
		}{{m.FP64ActivityPct, "FP64 pipes"}, {m.FP16ActivityPct, "FP16 pipes"}, {m.TensorDFMAActivityPct, "FP64 tensor cores"}} {
			if p.v != nil && *p.v > 0 && *p.v <= 100 && (!pipe.ok || *p.v > pipe.v) {
				pipe, name = level{v: *p.v, n: 1, ok: true}, p.name
			}
		}
	}
	if pipe.ok && pipe.v > 0 {
		gain, why = 100/pipe.v, fmt.Sprintf("its busiest pipe, the %s, active %.0f %% of cycles (GPM), at most every cycle", name, pipe.v)
	}
	// Not an MFU the tensor cores could not have run (AboveTensor): a
	// bound on a figure the verdict calls off is none (a review: "at most
	// 1.78×" from MFU 56 % beside tensor cores 10 % active).
	if m := g.mfu; m != nil && m.Ratio > 0 && 1/m.Ratio < gain && (!g.tensor.ok || m.AboveTensor(g.tensor.v) == "") {
		gain, why = 1/m.Ratio, fmt.Sprintf("MFU %.0f %% at most 100 %% of the dense %s peak", 100*m.Ratio, m.Dtype)
	}
	return gain, why, !math.IsInf(gain, 0)
}
