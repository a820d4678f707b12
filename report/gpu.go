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
	// MeanUtilPct is NVML's utilization: the share of time any kernel
	// ran, 100 % for one kernel on one SM.
	MeanUtilPct *float64 `json:"mean_util_pct,omitempty"`
	// GPM (Hopper and later): the share of cycles the SMs, the tensor
	// cores and the memory interface were active.
	MeanSMActivityPct     *float64 `json:"mean_sm_activity_pct,omitempty"`
	MeanTensorActivityPct *float64 `json:"mean_tensor_activity_pct,omitempty"`
	MeanDRAMBWUtilPct     *float64 `json:"mean_dram_bw_util_pct,omitempty"`
	// MeanTFLOPSLow and MeanTFLOPSHigh are the step's achieved matmul
	// rate (sample.GPU.StepTFLOPS: the tensor cores' activity × the
	// model's dense peak at the dtype the hook read), the means over the
	// frames; equal where every frame's dtype was read (TFLOPSDtype), else
	// the range from TF32's peak to bf16's. DenseTFLOPS is the peak they
	// are set against, of DenseDtype (the last frame's).
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
	// MeanMFUPct is the step's model FLOPs utilization (sample.MFU) over
	// the frames that derived it on this GPU, against the dense peak of
	// MFUDtype (the last frame's).
	MeanMFUPct  *float64 `json:"mean_mfu_pct,omitempty"`
	MFUDtype    string   `json:"mfu_dtype,omitempty"`
	MFUFrames   int      `json:"mfu_frames,omitempty"`
	PeakMemUsed *uint64  `json:"peak_mem_used_bytes,omitempty"`
	MemTotal    *uint64  `json:"mem_total_bytes,omitempty"`
	// NotRead names the figures no frame read, with the reason a frame
	// gave ("gpm: needs Hopper or later").
	NotRead []string `json:"not_read,omitempty"`
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
	mfu                     meanAcc
	gpmWhy, peakWhy, mfuWhy string
	rateWhy                 string                 // why a frame with GPM and a peak gave no rate (the step in plain fp32)
	rates                   map[string]*[2]meanAcc // the rates' low and high by the dtype read ("": not read)
	peak                    *sample.GPUPeak        // the last frame's dense peaks
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
		a.add(g, f.StepSettings(g))
		if l := f.Loader; l != nil && l.MFU != nil && l.MFU.GPUIndex == g.Index {
			pct := 100 * l.MFU.Ratio
			a.mfu.add(&pct)
			a.info.MFUDtype = l.MFU.Dtype
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
		a.sm.add(m.SMActivityPct)
		a.tensor.add(m.TensorActivityPct)
		a.dram.add(m.DRAMBWUtilPct)
	}
	if g.Peak != nil {
		a.peak = g.Peak
	}
	r, ok := g.StepTFLOPS(s)
	if !ok && g.GPM != nil && g.Peak != nil && s.ComputeDtype() == sample.DtypeFP32 && a.rateWhy == "" {
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
		a.rate(&info)
		info.MeanMFUPct, info.MFUFrames = a.mfu.mean(), a.mfu.n
		if info.MeanSMActivityPct == nil {
			info.NotRead = append(info.NotRead, "SM and tensor activity: "+orElse(a.gpmWhy, "no frame carried GPM"))
		} else if info.MeanTFLOPSHigh == nil {
			why := a.peakWhy
			if a.peak != nil {
				why = orElse(a.rateWhy, "no frame read the tensor cores' activity")
			}
			info.NotRead = append(info.NotRead, "TFLOPS: "+orElse(why, "the frames carry no dense peak for "+orDash(info.Name)+", nor a reason (recorded without one)"))
		}
		if info.MeanMFUPct == nil && a.mfuWhy != "" {
			info.NotRead = append(info.NotRead, "MFU: "+a.mfuWhy)
		}
		out = append(out, info)
	}
	return out
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
		parts = append(parts, fmt.Sprintf("MFU %.0f %% over the %d frames the loop ran in (the model's FLOPs the hook counted, against the dense %s peak)", *g.MeanMFUPct, g.MFUFrames, g.MFUDtype))
	}
	if g.PeakMemUsed != nil && g.MemTotal != nil {
		parts = append(parts, fmt.Sprintf("memory at most %s of %s", sample.FormatBytes(float64(*g.PeakMemUsed)), sample.FormatBytes(float64(*g.MemTotal))))
	}
	return strings.Join(parts, ", ")
}

// mdGPUs is the Markdown report's GPU section; nothing without a GPU.
func mdGPUs(b *strings.Builder, gpus []GPUInfo) {
	if len(gpus) == 0 {
		return
	}
	b.WriteString("\n## GPUs\n\nMeans over the frames that read each figure (GPM: the share of cycles active).\n\n")
	for _, g := range gpus {
		fmt.Fprintf(b, "- GPU %d (%s), %d frames: %s.", g.Index, md(orDash(g.Name)), g.Frames, md(g.Used()))
		if len(g.NotRead) > 0 {
			fmt.Fprintf(b, " Not read: %s.", md(strings.Join(g.NotRead, "; ")))
		}
		b.WriteString("\n")
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
		if len(g.NotRead) > 0 {
			fmt.Fprintf(b, " Not read: %s.", esc(strings.Join(g.NotRead, "; ")))
		}
		b.WriteString("</li>")
	}
	b.WriteString("</ul>")
}
