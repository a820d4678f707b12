package tui

import (
	"fmt"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// gpuPanel: per GPU a utilization bar, a sparkline whose bursty seconds
// (p95 ≥ 70 with p5 < 10 within the second, diagnose's Bursty: the sawtooth of a waiting GPU) are
// drawn in the warning colour, and memory, power, temperature, PCIe. With
// no GPU, the virtual accelerator of a watched loader, clearly labelled.
type gpuPanel struct{}

func (gpuPanel) want(pv *view, w int) (int, int) {
	f := pv.frame
	switch {
	case len(f.GPUs) > 0 && f.JobGPUs != "":
		n := 0
		for i := range f.GPUs {
			if f.GPUs[i].Job {
				n++
			}
		}
		return 2 + min(n, 4), 2 + n // the job's GPUs, then one line for the others
	case len(f.GPUs) > 0:
		return 2, 1 + len(f.GPUs)
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
			lines = append(lines, pv.st.Dim.Render("  = loader step time / wall time; not a GPU. No GPU: "+f.Unavailable[sample.SourceGPU]))
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
	if f.JobGPUs != "" {
		return block(pv.jobGPULines(w, h), w, h)
	}
	rows := h
	start := min(pv.scroll, max(0, len(f.GPUs)-rows))
	for i := start; i < len(f.GPUs) && len(lines) < rows; i++ {
		lines = append(lines, pv.gpuLine(&f.GPUs[i], hist, w))
	}
	return block(lines, w, h)
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
