package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/gpuwatch/gpuwatch/sample"
)

// gpuPanel: per GPU a utilization bar, a sparkline whose bursty seconds
// (p95 ≥ 70 with p5 < 10 within the second, diagnose's Bursty: the sawtooth of a waiting GPU) are
// drawn in the warning colour, and memory, power, temperature, PCIe (and,
// where the line has room, GPM's occupancy and DRAM bandwidth). Where there
// is room, the compute lines say how much of the first judged GPU the work
// uses: the step's MFU and the achieved rate against the model's dense
// peak, each with how it was read, SM and tensor activity, occupancy, DRAM
// bandwidth (by precision where GPM gives it), or without GPM the share of
// time the loop's process's kernels run; what is missing says why. Zoomed,
// the peak's datasheet and the MFU's whole method. With no GPU, the
// virtual accelerator of a watched loader, clearly labelled.
type gpuPanel struct{}

func (gpuPanel) want(pv *view, w int) (int, int) {
	f := pv.frame
	more := 0
	if g := pv.computeGPU(); g != nil {
		// As many lines as the compute figures take in their long forms:
		// a panel given fewer folds them into fewer.
		more = max(1, len(flowFigures(pv.computeFigures(g), w-cells(computePrefix(g)), tierLong)))
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
		// The line saying the loop's wait was not read is drawn only
		// where the panel has room to spare (zoomed).
		n := 2 + len(pv.noGPULines(w))
		return n, n
	}
	// The reason is what the user acts on (a driver missing): its lines
	// are the least, the hint below them the most.
	n := 1 + len(pv.noGPULines(w))
	return n, n + 1
}

// maxReasonLines bounds the lines the reason why no GPU is read wraps to:
// at a width or a reason where it takes more, the last line is cut.
const maxReasonLines = 4

// noGPULines say why no GPU is read, wrapped to w: after the virtual
// accelerator's basis where a loader is watched, else after "no GPU:".
// The reason is a probe's ("nvidia: libnvidia-ml.so.1 not found (no NVIDIA
// driver on this machine); amd: …"), longer than a panel at 80 or 120
// columns: cut at the panel's edge, it lost what to do about it.
func (pv *view) noGPULines(w int) []string {
	f := pv.frame
	reason := sample.Printable(f.Unavailable[sample.SourceGPU])
	if reason == "" {
		reason = "none found"
	}
	text := "no GPU: " + reason
	if a := f.Accel; a != nil {
		text = "  = " + a.Describe() + "; not a GPU. No GPU: " + reason
	}
	lines := wrap(text, w, "    ")
	if len(lines) > maxReasonLines {
		lines = lines[:maxReasonLines]
		lines[maxReasonLines-1] = fit(lines[maxReasonLines-1]+" …", w)
	}
	for i, l := range lines {
		if rest, ok := strings.CutPrefix(l, "no GPU: "); ok && f.Accel == nil {
			lines[i] = pv.st.Warn.Render("no GPU: ") + rest
		} else {
			lines[i] = pv.st.Dim.Render(l)
		}
	}
	return lines
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
			lines = append(lines, pv.noGPULines(w)...)
			if a.LoopRunDelayPct == nil {
				lines = append(lines, pv.st.Dim.Render("    the loop thread's wait for a CPU was not read"))
			}
			return block(lines, w, h)
		}
		lines = append(lines, pv.noGPULines(w)...)
		lines = append(lines, pv.st.Dim.Render("no loader watched either: `gpuwatch demo`, or attach to a loader, to see the accelerator from its step time"))
		return block(lines, w, h)
	}
	// The compute lines take the rows left only when every GPU line fits.
	cg := pv.computeGPU()
	if f.JobGPUs != "" {
		lines = pv.jobGPULines(w, h)
		if cg != nil {
			lines = append(lines, pv.computeLines(cg, w, h-len(lines))...)
		}
		return block(lines, w, h)
	}
	rows := h
	if cg == nil || h <= len(f.GPUs) {
		cg = nil
	} else {
		rows = len(f.GPUs)
	}
	start := min(pv.scroll, max(0, len(f.GPUs)-rows))
	for i := start; i < len(f.GPUs) && len(lines) < rows; i++ {
		lines = append(lines, pv.gpuLine(&f.GPUs[i], hist, w))
	}
	if cg != nil {
		lines = append(lines, pv.computeLines(cg, w, h-len(lines))...)
	}
	return block(lines, w, h)
}

// computeGPU is the GPU the compute lines describe: the first judged one
// with GPM, a peak, a reason for lacking a peak, or the loop's process's
// SM utilization; nil for none.
func (pv *view) computeGPU() *sample.GPU {
	f := pv.frame
	for i := range f.GPUs {
		g := &f.GPUs[i]
		if f.JudgedGPU(i) && !g.Lost && (g.GPM != nil || g.Peak != nil || g.Unavailable["peak"] != "" || pv.loopSM(g) != nil) {
			return g
		}
	}
	return nil
}

// loopSM is the SM utilization NVML gives the training loop's process
// (Loader.PID) on g: the share of g's time its kernels ran; nil where g
// does not list it with one.
func (pv *view) loopSM(g *sample.GPU) *float64 {
	l := pv.frame.Loader
	if l == nil || l.PID == nil {
		return nil
	}
	for _, p := range g.Processes {
		if p.PID == *l.PID {
			return p.SMUtilPct
		}
	}
	return nil
}

// figure is one part of the compute lines: its forms, longest first —
// the words with how they were read, then shorter ones for a narrow panel
// or one line; none, or an empty one, says nothing. names marks a first
// form that names the peak's model; model marks the model alone, said only
// where no figure shown names it; afterLong a figure said only where the
// one before it took its first form.
type figure struct {
	forms                   []string
	names, model, afterLong bool
}

// The tiers of flowFigures: the long forms, the middle ones, the short ones.
const (
	tierLong = iota
	tierMid
	tierShort
)

// fig is a figure of forms, longest first.
func fig(forms ...string) figure { return figure{forms: forms} }

// computeFigures says how much of g the work uses: utilization says a
// kernel ran, SM activity how much of the GPU, occupancy how full its SMs
// are, DRAM bandwidth how much of its memory's, tensor activity how much of
// its matmul units, and activity × the dense peak the rate it reaches
// (sample.GPU.StepTFLOPS: an estimate). The step's MFU (sample.MFU) and the
// rate come first: one line cuts its end. A figure not read is left out; a
// missing part says why.
func (pv *view) computeFigures(g *sample.GPU) []figure {
	var figs []figure
	if l := pv.frame.Loader; l != nil && l.MFU != nil && l.MFU.GPUIndex == g.Index {
		// sample.MFU's method, briefly: the zoom gives it whole.
		r, dt := sample.PercentWords(l.MFU.Ratio), l.MFU.Dtype
		odd, short := "", ""
		if m := g.GPM; m != nil && m.TensorActivityPct != nil && l.MFU.AboveTensor(*m.TensorActivityPct) != "" {
			// Above what the tensor cores ran: the verdict says why.
			odd, short = ", above the tensor cores' activity", "?"
		}
		figs = append(figs, fig(fmt.Sprintf("MFU %s%% at %s%s (FLOPs counted by the hook × steps/s ÷ peak)", r, dt, odd),
			fmt.Sprintf("MFU %s%% %s%s (hook's FLOPs × steps/s ÷ peak)", r, dt, odd), fmt.Sprintf("MFU %s%%%s (%s)", r, short, dt)))
	}
	rate, more := ratePart(g, pv.frame.StepSettings(g))
	figs = append(figs, rate, more)
	if m := g.GPM; m != nil {
		for _, p := range []struct {
			long, short string
			v           *float64
		}{{"tensor", "tensor", m.TensorActivityPct}, {"SM active", "SM", m.SMActivityPct},
			{"occupancy", "occ", m.SMOccupancyPct}, {"DRAM bandwidth", "DRAM", m.DRAMBWUtilPct}} {
			if p.v != nil {
				figs = append(figs, fig(fmt.Sprintf("%s %.0f%%", p.long, *p.v), fmt.Sprintf("%s %.0f%%", p.long, *p.v), fmt.Sprintf("%s %.0f%%", p.short, *p.v)))
			}
		}
		if p := byPrecision(m); p != "" {
			figs = append(figs, fig(p))
		}
	} else {
		// Without GPM, NVML's per-process SM utilization still says how
		// much of the GPU's time the job's own kernels take.
		if v := pv.loopSM(g); v != nil {
			figs = append(figs, fig(fmt.Sprintf("job's kernels %.0f%% of the time (per process)", *v), fmt.Sprintf("job's kernels %.0f%%", *v)))
		}
		if why := g.Unavailable["gpm"]; why != "" {
			figs = append(figs, fig(why))
		}
	}
	if g.Peak != nil {
		figs = append(figs, figure{forms: []string{g.Peak.Model}, model: true})
	}
	// Printable before they are measured: a recording's reasons and model
	// names are outside text.
	for _, f := range figs {
		for i := range f.forms {
			f.forms[i] = sample.Printable(f.forms[i])
		}
	}
	return figs
}

// ratePart is the achieved rate against the dense peak at the dtype the
// hook read (s; nil: not read, and the rate is tf32's to bf16's,
// sample.GPU.StepTFLOPS), or the peak alone without tensor activity, or
// why there is none; more says the dtype was not read, after a range's
// long form (its shorter ones say it themselves), or is empty.
func ratePart(g *sample.GPU, s *sample.JobSettings) (rate figure, more figure) {
	if g.Peak == nil {
		why := g.Unavailable["peak"]
		if why == "" {
			why = "no dense peak in the frame"
		}
		return fig(why), figure{}
	}
	model := g.Peak.Model
	if r, ok := g.StepTFLOPS(s); ok {
		if r.Dtype != "" || r.Low == r.High {
			f := fig(fmt.Sprintf("%s ≈ %.0f of %.0f TFLOPS (tensor activity × %s dense %s peak)", r.PeakDtype, r.High, r.Peak, model, r.PeakDtype),
				fmt.Sprintf("%s ≈%.0f/%.0f TFLOPS dense (activity × peak)", r.PeakDtype, r.High, r.Peak),
				fmt.Sprintf("%s ≈%.0f/%.0f TFLOPS dense", r.PeakDtype, r.High, r.Peak))
			f.names = true
			return f, figure{}
		}
		f := fig(fmt.Sprintf("≈ %.0f–%.0f TFLOPS (tensor activity × %s dense tf32–%s peak)", r.Low, r.High, model, r.PeakDtype),
			fmt.Sprintf("≈%.0f–%.0f/%.0f TFLOPS (activity × peak, tf32–%s)", r.Low, r.High, r.Peak, r.PeakDtype),
			fmt.Sprintf("≈%.0f–%.0f/%.0f TFLOPS (dtype not read)", r.Low, r.High, r.Peak))
		f.names = true
		return f, figure{forms: []string{"the step's dtype not read"}, afterLong: true}
	}
	for _, dt := range []string{sample.DtypeBF16, sample.DtypeFP16} {
		if peak, ok := g.Peak.DenseTFLOPS[dt]; ok {
			f := fig(fmt.Sprintf("%s dense %s peak %.0f TFLOPS", model, dt, peak), fmt.Sprintf("%s peak %.0f TFLOPS dense", dt, peak))
			f.names = true
			return f, figure{}
		}
	}
	return fig("no bf16/fp16 peak known"), figure{}
}

// computeLines are g's compute lines, at most rows of w cells: the figures
// in their long forms, joined by " · " while they fit a line and aligned
// under the first; where those take more rows than there are, the middle
// forms, then the short ones; where those do too, the last line holds the
// rest and is cut. Zoomed, the peak's source and the MFU's whole method
// follow, wrapped.
func (pv *view) computeLines(g *sample.GPU, w, rows int) []string {
	if rows <= 0 {
		return nil
	}
	prefix := computePrefix(g)
	indent := spaces(cells(prefix))
	figs := pv.computeFigures(g)
	var lines []string
	for t := tierLong; t <= tierShort; t++ {
		if lines = flowFigures(figs, w-cells(prefix), t); len(lines) <= rows {
			break
		}
	}
	if len(lines) > rows {
		lines = append(lines[:rows-1], strings.Join(lines[rows-1:], " · "))
	}
	for i := range lines {
		if i == 0 {
			lines[i] = prefix + lines[i]
		} else {
			lines[i] = indent + lines[i]
		}
	}
	if room := w - len(indent) - 2; pv.zoomed && room > 0 {
		for _, d := range pv.computeDetails(g) {
			for i, l := range strings.Split(ansi.Wrap(sample.Printable(d), room, " "), "\n") {
				if i > 0 {
					l = "  " + strings.TrimLeft(l, " ")
				}
				lines = append(lines, indent+l)
			}
		}
	}
	lines = lines[:min(len(lines), rows)]
	for i, l := range lines {
		lines[i] = pv.st.Dim.Render(fit(l, w))
	}
	return lines
}

// computePrefix opens g's first compute line.
func computePrefix(g *sample.GPU) string { return fmt.Sprintf("  GPU %d: ", g.Index) }

// flowFigures lays figs out in lines of room cells: each in its first form
// from tier on that fits a line (its last where none does), joined by
// " · " while they fit, else on a new line.
func flowFigures(figs []figure, room, tier int) []string {
	var lines []string
	cur, named, prevLong := "", false, false
	for _, f := range figs {
		if len(f.forms) == 0 {
			continue
		}
		i := min(tier, len(f.forms)-1)
		for i < len(f.forms)-1 && cells(f.forms[i]) > room {
			i++
		}
		s, afterLong := f.forms[i], prevLong
		named, prevLong = named || f.names && i == 0, i == 0
		if s == "" || f.model && named || f.afterLong && !afterLong {
			continue
		}
		switch {
		case cur == "":
			cur = s
		case cells(cur)+3+cells(s) <= room:
			cur += " · " + s
		default:
			lines, cur = append(lines, cur), s
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// computeDetails are the zoom's lines under g's figures: the dense peaks
// and the datasheet they come from, and the MFU's whole method, or why
// there is no MFU.
func (pv *view) computeDetails(g *sample.GPU) []string {
	var out []string
	if p := g.Peak; p != nil {
		var by []string
		for _, dt := range sample.Dtypes {
			if v, ok := p.DenseTFLOPS[dt]; ok {
				unit := ""
				if dt == sample.DtypeINT8 {
					unit = " TOPS"
				}
				by = append(by, fmt.Sprintf("%s %.4g%s", dt, v, unit))
			}
		}
		line := fmt.Sprintf("peak: the %s's dense TFLOPS: %s", p.Model, strings.Join(by, ", "))
		if p.Source != "" {
			line += "; from the " + p.Source
		} else {
			line += "; its source is not named"
		}
		out = append(out, line)
	}
	if l := pv.frame.Loader; l != nil {
		switch {
		case l.MFU != nil && l.MFU.GPUIndex == g.Index && l.MFU.Method != "":
			out = append(out, "MFU: "+l.MFU.Method)
		case l.MFU == nil && l.MFUWhy != "" && pv.frame.LoopGPU() == g:
			out = append(out, "no MFU: "+l.MFUWhy)
		}
	}
	return out
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
	// cut, not a byte slice: a name's code points stay whole.
	head := fmt.Sprintf("%d %s ", g.Index, cut(name, 10))
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
	tail := gpuTail(g)
	// The sparkline comes before the tail: the sawtooth is the point. It
	// takes what the tail leaves, and at least 12 cells when the line has
	// them; the tail is cut instead.
	sparkW := w - visible(b.String()) - visible(tail) - 1
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
	b.WriteString(tail)
	return b.String()
}

// gpuTail is a GPU line's figures after its sparkline: the spread, SM and
// tensor activity, MIG, memory, power, temperature, PCIe, clock events,
// and last occupancy and DRAM (a wide line has room for them).
func gpuTail(g *sample.GPU) string {
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
	if m := g.GPM; m != nil {
		// Last: a wide line (the zoom) has room for them; the compute
		// lines give the first judged GPU's where it has none.
		if m.SMOccupancyPct != nil {
			fmt.Fprintf(&tail, " occ %.0f%%", *m.SMOccupancyPct)
		}
		if m.DRAMBWUtilPct != nil {
			fmt.Fprintf(&tail, " DRAM %.0f%%", *m.DRAMBWUtilPct)
		}
	}
	return tail.String()
}
