package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// GPUInfo is one GPU over the recording: how busy its counters read and
// how much of it the step used (docs/diagnosis.md, "On a real GPU"). A
// mean is over the frames that read it; a figure no frame read is absent,
// and NotRead says why where a frame said.
type GPUInfo struct {
	Index  int    `json:"index"`
	Name   string `json:"name"`
	Frames int    `json:"frames"` // frames that carried the GPU
	// CeilingFrames are those of them in which the loader replayed kept
	// batches to measure its ceiling (gpuwatch run --ceiling): the input
	// free, the GPU busier than the job keeps it. They are left out of the
	// means and MFU below, and said.
	CeilingFrames int `json:"ceiling_frames,omitempty"`
	// MeanUtilPct is NVML's utilization: the share of time any kernel
	// ran, 100 % for one kernel on one SM.
	MeanUtilPct *float64 `json:"mean_util_pct,omitempty"`
	// GPM (Hopper and later): the share of cycles the SMs, the tensor
	// cores and the memory interface were active.
	MeanSMActivityPct     *float64 `json:"mean_sm_activity_pct,omitempty"`
	MeanTensorActivityPct *float64 `json:"mean_tensor_activity_pct,omitempty"`
	MeanDRAMBWUtilPct     *float64 `json:"mean_dram_bw_util_pct,omitempty"`
	// MeanSMOccupancyPct is GPM's SM occupancy: the warps resident of the
	// maximum, a share of the SMs' capacity the kernels filled.
	MeanSMOccupancyPct *float64 `json:"mean_sm_occupancy_pct,omitempty"`
	// The tensor cores' activity by instruction (GPM's HMMA, IMMA and
	// DFMA_TENSOR_UTIL): half-precision matmuls (fp16, bf16, tf32), int8
	// ones and fp64 ones.
	MeanTensorHMMAActivityPct *float64 `json:"mean_tensor_hmma_activity_pct,omitempty"`
	MeanTensorIMMAActivityPct *float64 `json:"mean_tensor_imma_activity_pct,omitempty"`
	MeanTensorDFMAActivityPct *float64 `json:"mean_tensor_dfma_activity_pct,omitempty"`
	// The non-tensor floating-point pipes' activity (GPM's FP16_UTIL,
	// FP32_UTIL, FP64_UTIL): a busy FP32 pipe beside idle tensor cores is
	// a matmul left in fp32.
	MeanFP16ActivityPct *float64 `json:"mean_fp16_activity_pct,omitempty"`
	MeanFP32ActivityPct *float64 `json:"mean_fp32_activity_pct,omitempty"`
	MeanFP64ActivityPct *float64 `json:"mean_fp64_activity_pct,omitempty"`
	// MeanTFLOPSLow and MeanTFLOPSHigh are the step's achieved matmul
	// rate (sample.GPU.StepTFLOPS: the tensor cores' activity × the
	// model's dense peak at the dtype the hook read), the means over the
	// frames; equal where every frame's dtype was read (TFLOPSDtype), else
	// the range from TF32's peak to bf16's. DenseTFLOPS is the peak they
	// are set against, of DenseDtype (the last frame's); PeakModel and
	// PeakSource name the peak table's row the last frame that carried a
	// peak matched and the datasheet its figures come from (set with or
	// without a rate: MFU is set against the same row).
	MeanTFLOPSLow  *float64 `json:"mean_tflops_low,omitempty"`
	MeanTFLOPSHigh *float64 `json:"mean_tflops_high,omitempty"`
	TFLOPSDtype    string   `json:"tflops_dtype,omitempty"`
	TFLOPSFrames   int      `json:"tflops_frames,omitempty"` // the frames the means are over
	// TFLOPSMixed: the hook read two dtypes over the recording (the job
	// changed its precision): the range covers both.
	TFLOPSMixed bool     `json:"tflops_mixed,omitempty"`
	DenseTFLOPS *float64 `json:"dense_tflops,omitempty"`
	DenseDtype  string   `json:"dense_dtype,omitempty"`
	PeakModel   string   `json:"peak_model,omitempty"`
	PeakSource  string   `json:"peak_source,omitempty"`
	hasPeak     bool     // some frame carried a peak row (its model may be empty)
	// MeanMFUPct is the step's model FLOPs utilization (sample.MFU) over
	// the frames that derived it on this GPU, against the dense peak of
	// MFUDtype (the last frame's).
	MeanMFUPct *float64 `json:"mean_mfu_pct,omitempty"`
	MFUDtype   string   `json:"mfu_dtype,omitempty"`
	MFUFrames  int      `json:"mfu_frames,omitempty"`
	// mfuTensorPct is the tensor activity's mean over those same frames,
	// which MFU is held against.
	mfuTensorPct *float64
	PeakMemUsed  *uint64 `json:"peak_mem_used_bytes,omitempty"`
	MemTotal     *uint64 `json:"mem_total_bytes,omitempty"`
	// Settings is what the job already does (autocast, TF32, compile,
	// batch …), the hook's newest read on the GPU its loop ran on
	// (sample.Frame.StepSettings), and SettingsLine it in a line
	// (sample.JobSettings.Summary); absent on the other GPUs.
	Settings     *sample.JobSettings `json:"settings,omitempty"`
	SettingsLine string              `json:"settings_line,omitempty"`
	// GPUProfile is the newest finished profile of the step's GPU time
	// (the hook's torch.profiler window, gpuwatch run --gpu-profile) on
	// the GPU its loop ran on; GPUProfileLine it in a line
	// (sample.GPUProfile.Summary) and GPUProfileShares each category's
	// share of the profiled step (sample.GPUProfile.Share: of the GPU's
	// busy and idle time), "idle" its waits, "sync" those of them that
	// began in a host sync (where the hook split them).
	GPUProfile       *sample.GPUProfile `json:"gpu_profile,omitempty"`
	GPUProfileLine   string             `json:"gpu_profile_line,omitempty"`
	GPUProfileShares []GPUTimeShare     `json:"gpu_profile_shares,omitempty"`
	// NotRead names the figures no frame read, with the reason a frame
	// gave ("gpm: needs Hopper or later").
	NotRead []string `json:"not_read,omitempty"`
}

// GPUTimeShare is one category of the GPU's work (sample.GPUTimeCategories,
// or "idle", and "sync" the part of it that began in a host sync) and its
// share of the profiled step, 0–1.
type GPUTimeShare struct {
	Category string  `json:"category"`
	Share    float64 `json:"share"`
}

// meanAcc is a mean over the readings present.
type meanAcc struct {
	sum float64
	n   int
}

func (m *meanAcc) add(v *float64) {
	if v != nil && finite(*v) {
		m.sum += *v
		m.n++
	}
}

func (m meanAcc) mean() *float64 {
	if m.n == 0 {
		return nil
	}
	v := m.sum / float64(m.n)
	return &v
}

// gpuAcc is one GPU's sums; gpmWhy and peakWhy keep the first reason
// the GPU gave for no GPM and no dense peak (said once, not every frame).
type gpuAcc struct {
	info                    GPUInfo
	util, sm, tensor, dram  meanAcc
	occ, hmma, imma, dfma   meanAcc
	fp16, fp32, fp64        meanAcc
	gpmFrames               int // frames that carried GPM
	mfu                     meanAcc
	mfuTensor               meanAcc // the tensor activity of the frames MFU was read in
	gpmWhy, peakWhy, mfuWhy string
	rateWhy                 string                 // why a frame with GPM and a peak gave no rate (the step in plain fp32)
	rates                   map[string]*[2]meanAcc // the rates' low and high by the dtype read ("": not read)
	peak                    *sample.GPUPeak        // the last frame's dense peaks
	step                    stepAcc                // what the hook read of the loop's step on this GPU
}

// stepAcc is what the hook read of the job's step on the GPU its loop ran
// on: the newest settings and GPU profile, and why there were none.
type stepAcc struct {
	loopFrames int  // frames with a loader whose loop ran on this GPU
	hooked     bool // a loop frame's loader was instrumented, not sampled
	elsewhere  bool // settings read in a frame whose loop's GPU was not known
	settings   *sample.JobSettings
	profile    *sample.GPUProfile // the newest done one
	lastState  *sample.GPUProfile // the newest of any state
}

// gpuBuilder gathers the GPUs over the frames, in the order first seen,
// at most MaxGPUs of them.
type gpuBuilder struct {
	byIndex map[int]*gpuAcc
	order   []int
}

// MaxGPUs bounds the GPUs a report lists (a recording is outside input).
const MaxGPUs = 64

func (b *gpuBuilder) add(f *sample.Frame) {
	for i := range f.GPUs {
		g := &f.GPUs[i]
		a := b.byIndex[g.Index]
		if a == nil {
			if len(b.order) >= MaxGPUs {
				continue
			}
			if b.byIndex == nil {
				b.byIndex = map[int]*gpuAcc{}
			}
			a = &gpuAcc{info: GPUInfo{Index: g.Index, Name: g.Name}}
			b.byIndex[g.Index] = a
			b.order = append(b.order, g.Index)
		}
		a.step.add(f, g, i)
		if c := f.Loader.CeilingOf(); c != nil && c.State == sample.CeilingReplaying {
			a.info.Frames++
			a.info.CeilingFrames++
			continue
		}
		a.add(g, f.StepSettings(g))
		if l := f.Loader; l != nil && l.MFU != nil && l.MFU.GPUIndex == g.Index {
			pct := 100 * l.MFU.Ratio
			a.mfu.add(&pct)
			a.info.MFUDtype = l.MFU.Dtype
			if g.GPM != nil {
				a.mfuTensor.add(g.GPM.TensorActivityPct)
			}
		} else if l != nil && l.MFUWhy != "" && (f.LoopGPU() == g || f.LoopGPU() == nil && f.JudgedGPU(i)) {
			a.mfuWhy = l.MFUWhy // the latest: the loop's frames come after its start's
		}
	}
}

func (a *gpuAcc) add(g *sample.GPU, s *sample.JobSettings) {
	a.info.Frames++
	if why := g.Unavailable["gpm"]; why != "" && a.gpmWhy == "" {
		a.gpmWhy = why
	}
	if why := g.Unavailable["peak"]; why != "" && a.peakWhy == "" {
		a.peakWhy = why
	}
	a.util.add(g.UtilPct)
	if m := g.GPM; m != nil {
		a.gpmFrames++
		a.sm.add(m.SMActivityPct)
		a.tensor.add(m.TensorActivityPct)
		a.dram.add(m.DRAMBWUtilPct)
		a.occ.add(m.SMOccupancyPct)
		a.hmma.add(m.TensorHMMAActivityPct)
		a.imma.add(m.TensorIMMAActivityPct)
		a.dfma.add(m.TensorDFMAActivityPct)
		a.fp16.add(m.FP16ActivityPct)
		a.fp32.add(m.FP32ActivityPct)
		a.fp64.add(m.FP64ActivityPct)
	}
	if g.Peak != nil {
		a.peak = g.Peak
		a.info.PeakModel, a.info.PeakSource, a.info.hasPeak = g.Peak.Model, g.Peak.Source, true
	}
	r, ok := g.StepTFLOPS(s)
	if !ok && g.GPM != nil && g.Peak != nil && s.TensorDtype() == sample.DtypeFP32 && a.rateWhy == "" {
		a.rateWhy = "the step runs in plain fp32 (autocast off, TF32 off): its matmuls are not on the tensor cores"
	}
	if ok {
		if a.rates == nil {
			a.rates = map[string]*[2]meanAcc{}
		}
		acc := a.rates[r.Dtype]
		if acc == nil {
			acc = new([2]meanAcc)
			a.rates[r.Dtype] = acc
		}
		acc[0].add(&r.Low)
		acc[1].add(&r.High)
	}
	if u := g.MemUsedBytes; u != nil && (a.info.PeakMemUsed == nil || *u > *a.info.PeakMemUsed) {
		v := *u
		a.info.PeakMemUsed = &v
	}
	if t := g.MemTotalBytes; t != nil {
		v := *t
		a.info.MemTotal = &v
	}
}

func (b *gpuBuilder) result() []GPUInfo {
	out := make([]GPUInfo, 0, len(b.order))
	for _, idx := range b.order {
		a := b.byIndex[idx]
		info := a.info
		info.MeanUtilPct, info.MeanSMActivityPct = a.util.mean(), a.sm.mean()
		info.MeanTensorActivityPct, info.MeanDRAMBWUtilPct = a.tensor.mean(), a.dram.mean()
		info.MeanSMOccupancyPct = a.occ.mean()
		info.MeanTensorHMMAActivityPct, info.MeanTensorIMMAActivityPct, info.MeanTensorDFMAActivityPct = a.hmma.mean(), a.imma.mean(), a.dfma.mean()
		info.MeanFP16ActivityPct, info.MeanFP32ActivityPct, info.MeanFP64ActivityPct = a.fp16.mean(), a.fp32.mean(), a.fp64.mean()
		a.rate(&info)
		info.MeanMFUPct, info.MFUFrames = a.mfu.mean(), a.mfu.n
		info.mfuTensorPct = a.mfuTensor.mean()
		if a.gpmFrames == 0 {
			info.NotRead = append(info.NotRead, "SM and tensor activity: "+orElse(a.gpmWhy, "no frame carried GPM"))
			if a.peak == nil && a.peakWhy != "" {
				info.NotRead = append(info.NotRead, "dense peak: "+a.peakWhy)
			}
		} else if missing := a.gpmMissing(); len(missing) > 0 {
			// Which: a driver that returns none, or a recording from a
			// gpuwatch that did not read them yet — the frames cannot tell.
			info.NotRead = append(info.NotRead, fmt.Sprintf("%s: none in the %d frames with GPM (the driver returned none, or the recording's gpuwatch did not read them)", strings.Join(missing, ", "), a.gpmFrames))
		}
		if a.gpmFrames > 0 && info.MeanTFLOPSHigh == nil {
			why := a.peakWhy
			if a.peak != nil {
				why = orElse(a.rateWhy, "no frame read the tensor cores' activity")
			}
			info.NotRead = append(info.NotRead, "TFLOPS: "+orElse(why, "the frames carry no dense peak for "+orDash(info.Name)+", nor a reason (recorded without one)"))
		}
		if info.MeanMFUPct == nil && a.mfuWhy != "" {
			info.NotRead = append(info.NotRead, "MFU: "+a.mfuWhy)
		}
		a.step.result(&info)
		out = append(out, info)
	}
	return out
}

// gpmMissing names the GPM figures no frame with GPM gave (the driver
// returns each metric on its own: nil, never 0, where it does not).
func (a *gpuAcc) gpmMissing() []string {
	var out []string
	for _, m := range []struct {
		name string
		acc  meanAcc
	}{
		{"SM activity", a.sm}, {"SM occupancy", a.occ}, {"tensor activity", a.tensor}, {"DRAM bandwidth", a.dram},
		{"HMMA", a.hmma}, {"IMMA", a.imma}, {"DFMA", a.dfma}, {"FP16 pipe", a.fp16}, {"FP32 pipe", a.fp32}, {"FP64 pipe", a.fp64},
	} {
		if m.acc.n == 0 {
			out = append(out, m.name)
		}
	}
	return out
}

// add reads what the hook read of the step in frame f where g (f.GPUs[i])
// is the loop's GPU; where the loop's GPU is not known, a judged GPU
// notes settings read that it cannot place.
func (s *stepAcc) add(f *sample.Frame, g *sample.GPU, i int) {
	l := f.Loader
	if l == nil {
		return
	}
	loop := f.LoopGPU()
	if loop == nil {
		if f.JudgedGPU(i) && l.Settings.Summary() != "" {
			s.elsewhere = true
		}
		return
	}
	if loop != g {
		return
	}
	s.loopFrames++
	if l.Sampled == nil {
		s.hooked = true
	}
	if st := f.StepSettings(g); st.Summary() != "" {
		s.settings = st
	}
	if p := l.GPUProfile; p != nil {
		s.lastState = p
		if p.Done() {
			s.profile = p
		}
	}
}

// notHooked is why a sampled loop's frames carry no settings or GPU
// profile: only the hook reads them.
const notHooked = "the loop was sampled, not instrumented (the hook reads it: gpuwatch run, or a script that imports gpuwatch_hook)"

// result sets info's settings and GPU profile, or says why there are none
// on the loop's GPU (or, where no frame placed the loop, on the judged
// GPUs).
func (s *stepAcc) result(info *GPUInfo) {
	switch {
	case s.settings != nil:
		info.Settings, info.SettingsLine = s.settings, s.settings.Summary()
	case s.loopFrames > 0 && !s.hooked:
		info.NotRead = append(info.NotRead, "settings: "+notHooked)
	case s.loopFrames > 0:
		info.NotRead = append(info.NotRead, "settings: the loader's frames carry none (a hook that does not read them, or none read yet)")
	case s.elsewhere:
		info.NotRead = append(info.NotRead, "settings: read, but not on which GPU the loop runs (no GPU lists the loader's process)")
	}
	if p := s.profile; p != nil {
		info.GPUProfile, info.GPUProfileLine = p, p.Summary()
		for _, c := range append(slices.Clip(sample.GPUTimeCategories), "idle", "sync") {
			if v, ok := p.Share(c, ""); ok {
				info.GPUProfileShares = append(info.GPUProfileShares, GPUTimeShare{Category: c, Share: v})
			}
		}
		return
	}
	if s.loopFrames == 0 {
		return
	}
	switch p := s.lastState; {
	case p == nil && !s.hooked:
		info.NotRead = append(info.NotRead, "GPU profile: "+notHooked)
	case p == nil:
		info.NotRead = append(info.NotRead, "GPU profile: not recorded (gpuwatch run --gpu-profile, attach --gpu-profile, or POST /gpu-profile?steps=N)")
	case p.State == sample.GPUProfileRefused:
		info.NotRead = append(info.NotRead, "GPU profile: refused: "+orElse(sample.Printable(p.Reason), "no reason given"))
	case p.State == sample.GPUProfileWaiting || p.State == sample.GPUProfileRecording:
		info.NotRead = append(info.NotRead, "GPU profile: still "+p.State+" at the recording's end")
	default:
		info.NotRead = append(info.NotRead, "GPU profile: nothing measured")
	}
}

// rate sets info's achieved rate: the mean over the frames whose dtype
// the hook read, where it read one dtype (the frames before it read the
// settings, the job's start, are left out as MFU's are); else the range
// over every frame, TF32's rate to bf16's. The peak is the dtype's (the
// range's high one's) on this GPU's model.
func (a *gpuAcc) rate(info *GPUInfo) {
	known, mixed := "", false
	dtypes := slices.Sorted(maps.Keys(a.rates)) // summed in one order: the report is the same run to run
	for _, d := range dtypes {
		if d != "" {
			if known != "" {
				known, mixed = "", true // two dtypes read: no one rate
				break
			}
			known = d
		}
	}
	info.TFLOPSMixed = mixed
	var lo, hi meanAcc
	for _, d := range dtypes {
		if acc := a.rates[d]; known == "" || d == known {
			lo.sum, lo.n = lo.sum+acc[0].sum, lo.n+acc[0].n
			hi.sum, hi.n = hi.sum+acc[1].sum, hi.n+acc[1].n
		}
	}
	info.MeanTFLOPSLow, info.MeanTFLOPSHigh, info.TFLOPSDtype, info.TFLOPSFrames = lo.mean(), hi.mean(), known, hi.n
	if info.MeanTFLOPSHigh == nil || a.peak == nil {
		return
	}
	d := known
	if d == "" {
		d = sample.DtypeBF16
		if _, ok := a.peak.DenseTFLOPS[d]; !ok {
			d = sample.DtypeFP16
		}
	}
	if p, ok := a.peak.DenseTFLOPS[d]; ok {
		info.DenseTFLOPS, info.DenseDtype, info.PeakModel = &p, d, a.peak.Model
	}
}

func orElse(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// optPct is a percentage, or "not read".
func optPct(v *float64, digits int) string {
	if v == nil {
		return "not read"
	}
	return fmt.Sprintf("%.*f %%", digits, *v)
}

// Used says in a sentence how much of the GPU the step used: "SMs active
// 90 %, tensor cores 60.1 %, ≈ 595 TFLOPS of the H200 SXM's 990 dense
// bf16".
func (g *GPUInfo) Used() string {
	parts := []string{"utilization " + optPct(g.MeanUtilPct, 0), "SMs active " + optPct(g.MeanSMActivityPct, 0),
		"tensor cores " + optPct(g.MeanTensorActivityPct, 1), "memory bandwidth " + optPct(g.MeanDRAMBWUtilPct, 0)}
	if lo, hi, peak := g.MeanTFLOPSLow, g.MeanTFLOPSHigh, g.DenseTFLOPS; lo != nil && hi != nil && peak != nil {
		switch {
		case *hi < 0.5:
			// Not "≈ 0–0". Those frames may not be the ones the tensor
			// activity's mean is over (a step in plain fp32 gives none).
			parts = append(parts, fmt.Sprintf("under 1 TFLOPS of the %s's %.0f dense %s over the %d frames a rate was read in", g.PeakModel, *peak, g.DenseDtype, g.TFLOPSFrames))
		case g.TFLOPSDtype != "":
			parts = append(parts, fmt.Sprintf("≈ %.0f TFLOPS of the %s's %.0f dense %s over the %d frames the step's dtype was read in", *hi, g.PeakModel, *peak, g.DenseDtype, g.TFLOPSFrames))
		case g.TFLOPSMixed:
			parts = append(parts, fmt.Sprintf("≈ %.0f–%.0f TFLOPS of the %s's %.0f dense %s (the step's dtype changed during the recording)", *lo, *hi, g.PeakModel, *peak, g.DenseDtype))
		case *lo == *hi:
			parts = append(parts, fmt.Sprintf("≈ %.0f TFLOPS of the %s's %.0f dense %s (the step's dtype was not read)", *hi, g.PeakModel, *peak, g.DenseDtype))
		default:
			parts = append(parts, fmt.Sprintf("≈ %.0f–%.0f TFLOPS of the %s's %.0f dense %s over the %d frames a rate was read in (tf32 to %s: the step's dtype was not read)", *lo, *hi, g.PeakModel, *peak, g.DenseDtype, g.TFLOPSFrames, g.DenseDtype))
		}
	}
	if g.MeanMFUPct != nil {
		parts = append(parts, fmt.Sprintf("MFU %s %% over the %d frames the loop ran in (the model's FLOPs the hook counted, against the dense %s peak)", sample.PercentWords(*g.MeanMFUPct/100), g.MFUFrames, g.MFUDtype))
		// Against the tensor activity of the same frames: the mean over
		// every frame holds the job's start-up too (a review: MFU 55 %
		// over 12 frames "above" tensor cores 32 % over 22).
		if g.mfuTensorPct != nil {
			m := sample.MFU{Ratio: *g.MeanMFUPct / 100, Dtype: g.MFUDtype}
			if odd := m.AboveTensor(*g.mfuTensorPct); odd != "" {
				parts[len(parts)-1] += ", " + odd
			}
		}
	}
	if g.PeakMemUsed != nil && g.MemTotal != nil {
		parts = append(parts, fmt.Sprintf("memory at most %s of %s", sample.FormatBytes(float64(*g.PeakMemUsed)), sample.FormatBytes(float64(*g.MemTotal))))
	}
	if g.CeilingFrames > 0 {
		parts = append(parts, fmt.Sprintf("the %d frames of the ceiling's replay (the input free: gpuwatch run --ceiling) left out of these", g.CeilingFrames))
	}
	return strings.Join(parts, ", ")
}

// Pipes says in a line what GPM read of the SMs' occupancy and of each
// pipe, the means read only: "SM occupancy 31 %; tensor cores by
// instruction: HMMA (fp16, bf16, tf32) 45.2 %, IMMA (int8) 0.0 %; non-tensor
// pipes: FP32 2.1 %"; "" where none was read.
func (g *GPUInfo) Pipes() string {
	var parts []string
	if g.MeanSMOccupancyPct != nil {
		parts = append(parts, "SM occupancy "+optPct(g.MeanSMOccupancyPct, 0)+" (warps resident of the maximum)")
	}
	if l := pipeList(pipe{"HMMA (fp16, bf16, tf32)", g.MeanTensorHMMAActivityPct}, pipe{"IMMA (int8)", g.MeanTensorIMMAActivityPct},
		pipe{"DFMA (fp64)", g.MeanTensorDFMAActivityPct}); l != "" {
		parts = append(parts, "tensor cores by instruction: "+l)
	}
	if l := pipeList(pipe{"FP16", g.MeanFP16ActivityPct}, pipe{"FP32", g.MeanFP32ActivityPct}, pipe{"FP64", g.MeanFP64ActivityPct}); l != "" {
		parts = append(parts, "non-tensor pipes: "+l)
	}
	return strings.Join(parts, "; ")
}

// pipe is one pipe's mean activity, nil where not read.
type pipe struct {
	name string
	pct  *float64
}

// pipeList lists the pipes read, "HMMA 45.2 %, IMMA 0.0 %".
func pipeList(pipes ...pipe) string {
	var out []string
	for _, p := range pipes {
		if p.pct != nil {
			out = append(out, p.name+" "+optPct(p.pct, 1))
		}
	}
	return strings.Join(out, ", ")
}

// details are the lines under a GPU's sentence (Used): GPM's pipes, the
// peak's source, the job's settings, its GPU profile and what was not
// read; each only where there is something to say.
func (g *GPUInfo) details() []string {
	var out []string
	if p := g.Pipes(); p != "" {
		out = append(out, "GPM: "+p)
	}
	if g.PeakModel != "" || g.hasPeak { // a row without a model's name is still said: the lines do not depend on outside text
		out = append(out, "Dense peaks: the "+orDash(g.PeakModel)+"'s, from "+orElse(g.PeakSource, "a source the frames do not name"))
	}
	if g.SettingsLine != "" {
		read := "the hook's newest read"
		if t := g.Settings.ReadAt; t != nil {
			read += ", " + t.UTC().Format("15:04:05 UTC")
		}
		out = append(out, "The job's settings ("+read+"): "+g.SettingsLine)
	}
	if g.GPUProfileLine != "" {
		out = append(out, g.GPUProfileLine)
	}
	if len(g.NotRead) > 0 {
		out = append(out, "Not read: "+strings.Join(g.NotRead, "; "))
	}
	return out
}

// mdGPUs is the Markdown report's GPU section; nothing without a GPU.
func mdGPUs(b *strings.Builder, gpus []GPUInfo) {
	if len(gpus) == 0 {
		return
	}
	b.WriteString("\n## GPUs\n\nMeans over the frames that read each figure (GPM: the share of cycles active).\n\n")
	for _, g := range gpus {
		fmt.Fprintf(b, "- GPU %d (%s), %d frames: %s.\n", g.Index, md(orDash(g.Name)), g.Frames, md(g.Used()))
		for _, d := range g.details() {
			fmt.Fprintf(b, "  - %s.\n", md(d))
		}
	}
}

// htmlGPUs is the HTML report's GPU section; nothing without a GPU.
func htmlGPUs(b *strings.Builder, gpus []GPUInfo) {
	if len(gpus) == 0 {
		return
	}
	b.WriteString("<h2>GPUs</h2><p>Means over the frames that read each figure (GPM: the share of cycles active).</p><ul>")
	for _, g := range gpus {
		fmt.Fprintf(b, "<li>GPU %d (%s), %d frames: %s.", g.Index, esc(orDash(g.Name)), g.Frames, esc(g.Used()))
		if d := g.details(); len(d) > 0 {
			b.WriteString("<ul>")
			for _, line := range d {
				fmt.Fprintf(b, "<li>%s.</li>", esc(line))
			}
			b.WriteString("</ul>")
		}
		b.WriteString("</li>")
	}
	b.WriteString("</ul>")
}
