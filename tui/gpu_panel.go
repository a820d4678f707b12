package tui

import (
	"fmt"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// gpuPanel: per GPU a utilization bar, a sparkline whose bursty seconds
// (p95 ≥ 70 with p5 < 10 within the second, diagnose's Bursty: the sawtooth of a waiting GPU) are
// drawn in the warning colour, and memory, power, temperature, PCIe. Where
// there is room, one line says how much of the first judged GPU the work
// uses: SM and tensor activity (by precision where GPM gives it) and the
// achieved rate against the model's dense peak, or why there is none. With
// no GPU, the virtual accelerator of a watched loader, clearly labelled.
type gpuPanel struct{}

func (gpuPanel) want(pv *view, w int) (int, int) {
	f := pv.frame
	more := 0
	if pv.computeGPU() != nil {
		more = 1
	}
	switch {
	case len(f.GPUs) > 0 && f.JobGPUs != "":
		n := 0
		for i := range f.GPUs {
			if f.GPUs[i].Job {
				n++
			}
		}
		return 2 + min(n, 4), 2 + n + more // the job's GPUs, then one line for the others
	case len(f.GPUs) > 0:
		return 2, 1 + len(f.GPUs) + more
	case f.Accel != nil:
		return 2, 3
	}
	return 2, 3
}

func (gpuPanel) draw(pv *view, w, h int) []string {
	f := pv.frame
	hist := pv.hist
	var lines []string
	if len(f.GPUs) == 0 {
		if a := f.Accel; a != nil {
			vals := make([]float64, 0, len(hist))
			for _, hf := range hist {
				if hf.Accel != nil {
					vals = append(vals, hf.Accel.BusyPct)
				}
			}
			head := fmt.Sprintf("virtual accelerator %s %s ", pv.bar(a.BusyPct, 10), pct(a.BusyPct))
			lines = append(lines, head+pv.spark(vals, nil, w-visible(head)-1))
			basis := "  = " + a.Describe() + "; not a GPU. No GPU: " + f.Unavailable[sample.SourceGPU]
			if a.LoopRunDelayPct == nil {
				basis += ". The loop thread's wait for a CPU was not read"
			}
			lines = append(lines, pv.st.Dim.Render(basis))
			return block(lines, w, h)
		}
		reason := f.Unavailable[sample.SourceGPU]
		if reason == "" {
			reason = "none found"
		}
		lines = append(lines, pv.st.Warn.Render("no GPU: ")+reason)
		lines = append(lines, pv.st.Dim.Render("no loader watched either: `gpuwatch demo`, or attach to a loader, to see the accelerator from its step time"))
		return block(lines, w, h)
	}
	// The compute line takes a row only when every GPU line still fits.
	cg := pv.computeGPU()
	if f.JobGPUs != "" {
		lines = pv.jobGPULines(w, h)
		if cg != nil && len(lines) < h {
			lines = append(lines, pv.computeLine(cg, w))
		}
		return block(lines, w, h)
	}
	rows := h
	if cg != nil && h > len(f.GPUs) {
		rows = h - 1
	} else {
		cg = nil
	}
	start := min(pv.scroll, max(0, len(f.GPUs)-rows))
	for i := start; i < len(f.GPUs) && len(lines) < rows; i++ {
		lines = append(lines, pv.gpuLine(&f.GPUs[i], hist, w))
	}
	if cg != nil {
		lines = append(lines, pv.computeLine(cg, w))
	}
	return block(lines, w, h)
}

// computeGPU is the GPU the compute line describes: the first judged one
// with GPM, a peak, or a reason for lacking a peak; nil for none.
func (pv *view) computeGPU() *sample.GPU {
	f := pv.frame
	for i := range f.GPUs {
		g := &f.GPUs[i]
		if f.JudgedGPU(i) && !g.Lost && (g.GPM != nil || g.Peak != nil || g.Unavailable["peak"] != "") {
			return g
		}
	}
	return nil
}

// computeLine says how much of g the work uses: utilization says a kernel
// ran, SM activity how much of the GPU, tensor activity how much of its
// matmul units, and activity × the dense peak the rate it reaches
// (sample.GPU.TensorTFLOPS: an estimate). A missing part says why.
func (pv *view) computeLine(g *sample.GPU, w int) string {
	// The rate first: a narrow panel cuts the end of the line; the step's
	// MFU before it on the loop's GPU (sample.MFU).
	var parts, tail []string
	if l := pv.frame.Loader; l != nil && l.MFU != nil && l.MFU.GPUIndex == g.Index {
		parts = append(parts, fmt.Sprintf("MFU %.0f%% (%s)", 100*l.MFU.Ratio, l.MFU.Dtype))
	}
	if m := g.GPM; m != nil {
		if m.TensorActivityPct != nil {
			parts = append(parts, fmt.Sprintf("tensor %.0f%%", *m.TensorActivityPct))
		}
		parts = append(parts, peakPart(g, pv.frame.StepSettings(g)))
		if m.SMActivityPct != nil {
			parts = append(parts, fmt.Sprintf("SM %.0f%%", *m.SMActivityPct))
		}
		if p := byPrecision(m); p != "" {
			parts = append(parts, p)
		}
	} else {
		parts = append(parts, peakPart(g, pv.frame.StepSettings(g)))
		if why := g.Unavailable["gpm"]; why != "" {
			parts = append(parts, why)
		}
	}
	if g.Peak != nil {
		tail = append(tail, g.Peak.Model)
	}
	// Printable: a recording's reasons and model names are outside text.
	line := fmt.Sprintf("  GPU %d: %s", g.Index, strings.Join(append(parts, tail...), " · "))
	return pv.st.Dim.Render(fit(sample.Printable(line), w))
}

// byPrecision lists the pipes GPM gave by precision, "HMMA 12 FP32 3";
// empty for none.
func byPrecision(m *sample.GPM) string {
	var b []string
	for _, p := range []struct {
		name string
		v    *float64
	}{{"HMMA", m.TensorHMMAActivityPct}, {"IMMA", m.TensorIMMAActivityPct}, {"DFMA", m.TensorDFMAActivityPct},
		{"FP16", m.FP16ActivityPct}, {"FP32", m.FP32ActivityPct}, {"FP64", m.FP64ActivityPct}} {
		if p.v != nil {
			b = append(b, fmt.Sprintf("%s %.0f%%", p.name, *p.v))
		}
	}
	return strings.Join(b, " ")
}

// peakPart is the achieved rate against the dense peak at the dtype the
// hook read (s; nil: not read, and the rate is tf32's to bf16's,
// sample.GPU.StepTFLOPS), or the peak alone without tensor activity, or
// why there is none.
func peakPart(g *sample.GPU, s *sample.JobSettings) string {
	if g.Peak == nil {
		if why := g.Unavailable["peak"]; why != "" {
			return why
		}
		return "no dense peak in the frame"
	}
	if r, ok := g.StepTFLOPS(s); ok {
		if r.Dtype != "" || r.Low == r.High {
			return fmt.Sprintf("%s ≈%.0f/%.0f TFLOPS dense", r.PeakDtype, r.High, r.Peak)
		}
		return fmt.Sprintf("≈%.0f–%.0f/%.0f TFLOPS dense (tf32–%s: dtype not read)", r.Low, r.High, r.Peak, r.PeakDtype)
	}
	for _, dt := range []string{sample.DtypeBF16, sample.DtypeFP16} {
		if peak, ok := g.Peak.DenseTFLOPS[dt]; ok {
			return fmt.Sprintf("%s peak %.0f TFLOPS dense", dt, peak)
		}
	}
	return "no bf16/fp16 peak known"
}

// jobGPULines are the job's GPUs, marked ▸, and the others folded into a
// line: they are not judged.
func (pv *view) jobGPULines(w, h int) []string {
	f := pv.frame
	var lines []string
	others, sum, n := 0, 0.0, 0
	for i := range f.GPUs {
		g := &f.GPUs[i]
		if g.Job {
			if len(lines) < h-1 {
				lines = append(lines, "▸"+pv.gpuLine(g, pv.hist, w-1))
			}
			continue
		}
		others++
		if g.UtilPct != nil {
			sum, n = sum+*g.UtilPct, n+1
		}
	}
	fold := fmt.Sprintf("  the job's GPUs: %s", sample.Printable(f.JobGPUs))
	if others > 0 {
		fold = fmt.Sprintf("  %d other GPU(s) folded", others)
		if n > 0 {
			fold += fmt.Sprintf(", mean %.0f %%", sum/float64(n))
		}
		fold += " · the job's: " + sample.Printable(f.JobGPUs)
	}
	return append(lines, pv.st.Dim.Render(fit(fold, w)))
}

func (pv *view) gpuLine(g *sample.GPU, hist []*sample.Frame, w int) string {
	name := sample.Printable(strings.TrimPrefix(strings.TrimPrefix(g.Name, "NVIDIA "), "AMD "))
	if f := strings.Fields(name); len(f) > 2 {
		name = f[0] + " " + f[1] // "H100 80GB HBM3" → "H100 80GB"
	}
	if len(name) > 10 {
		name = name[:10]
	}
	head := fmt.Sprintf("%d %-10s ", g.Index, name)
	if g.Lost {
		return head + pv.st.Bad.Render("LOST: "+g.Unavailable["device"])
	}
	util := -1.0
	if g.UtilPct != nil {
		util = *g.UtilPct
	}
	var b strings.Builder
	b.WriteString(head)
	if util >= 0 {
		b.WriteString(pv.bar(util, 8) + " " + pct(util) + " ")
	} else {
		b.WriteString(pv.st.Dim.Render("util n/a     ") + " ")
	}
	var tail strings.Builder
	if s := g.UtilSamples; s != nil {
		fmt.Fprintf(&tail, " p5-95 %3.0f-%-3.0f", s.P5, s.P95)
	}
	if m := g.GPM; m != nil && m.SMActivityPct != nil {
		// Utilization says a kernel ran; SM activity how much of the GPU.
		fmt.Fprintf(&tail, " SM %.0f%%", *m.SMActivityPct)
		if m.TensorActivityPct != nil {
			fmt.Fprintf(&tail, " TC %.0f%%", *m.TensorActivityPct)
		}
	}
	if len(g.MIG) > 0 {
		fmt.Fprintf(&tail, " MIG×%d", len(g.MIG))
	}
	if g.MemUsedBytes != nil && g.MemTotalBytes != nil {
		fmt.Fprintf(&tail, " %s/%s", size(float64(*g.MemUsedBytes)), size(float64(*g.MemTotalBytes)))
	}
	if g.PowerWatts != nil {
		fmt.Fprintf(&tail, " %3.0fW", *g.PowerWatts)
	}
	if g.TempC != nil {
		fmt.Fprintf(&tail, " %2.0f°C", *g.TempC)
	}
	if g.PCIeRxBytesPerSec != nil && g.PCIeTxBytesPerSec != nil {
		fmt.Fprintf(&tail, " pcie ↓%s ↑%s", size(*g.PCIeRxBytesPerSec), size(*g.PCIeTxBytesPerSec))
	}
	if len(g.ClockEvents) > 0 && g.ClockEvents[0] != "idle" {
		fmt.Fprintf(&tail, " [%s]", strings.Join(g.ClockEvents, ","))
	}
	// The sparkline comes before the tail: the sawtooth is the point. It
	// takes what the tail leaves, and at least 12 cells when the line has
	// them; the tail is cut instead.
	sparkW := w - visible(b.String()) - visible(tail.String()) - 1
	if rest := w - visible(b.String()) - 1; sparkW < 12 {
		sparkW = min(12, rest)
	}
	if sparkW >= 6 {
		vals := make([]float64, 0, len(hist))
		bursty := make([]bool, 0, len(hist))
		for _, hf := range hist[max(0, len(hist)-sparkW):] {
			for j := range hf.GPUs {
				if hf.GPUs[j].Index == g.Index && hf.GPUs[j].UtilPct != nil {
					vals = append(vals, *hf.GPUs[j].UtilPct)
					s := hf.GPUs[j].UtilSamples
					bursty = append(bursty, pv.th.Bursty(s))
				}
			}
		}
		b.WriteString(pv.spark(vals, bursty, sparkW))
	}
	b.WriteString(tail.String())
	return b.String()
}
