package tui

import (
	"fmt"
	"math"

	"github.com/gpuwatch/gpuwatch/sample"
)

// A panel's trend is its headline figure over the history, drawn as a
// tall chart in the rows the panel gets beyond what its figures use: a
// tall terminal shows how the run got here instead of blank rows
// (docs/architecture.md, "The dashboard").

// trender is a panel with a trend.
type trender interface {
	// trend reads the figure of each frame that has it, oldest first;
	// ok is false when no frame does.
	trend(pv *view) (t trend, ok bool)
}

// trend is a series and how to label it.
type trend struct {
	name string
	vals []float64
	// unit formats a value for the caption; nil: the values are percent
	// (0–100) and drawn as such. Otherwise the chart's top is the peak.
	unit func(float64) string
	// stale: the newest frame lacks the figure (its probe failed); the
	// caption says so rather than give the last value as now.
	stale bool
}

// Trend charts take at least minTrendRows (a caption and two rows of
// chart) and at most maxTrendRows: taller says nothing more.
const (
	minTrendRows = 3
	maxTrendRows = 17
)

// drawTrend draws t into w×h: a caption, then the chart over a y axis
// (100 % or the peak at the top, 0 at the bottom).
func (pv *view) drawTrend(t trend, w, h int) []string {
	if h <= 0 {
		return nil
	}
	latest, shown := t.vals[len(t.vals)-1], min(len(t.vals), max(1, w-axisCells))
	vals, top, peak := t.vals, "100%", ""
	now := fmt.Sprintf("%.0f%%", latest)
	if t.unit != nil {
		max := 0.0
		for _, v := range t.vals[len(t.vals)-shown:] {
			max = math.Max(max, v)
		}
		scaled := make([]float64, len(vals))
		for i, v := range vals {
			if max > 0 {
				scaled[i] = v / max * 100
			}
		}
		vals, top, now, peak = scaled, "peak", t.unit(latest), ", peak "+t.unit(max)
	}
	if t.stale {
		now = "not read (last " + now + ")"
	}
	lines := []string{pv.st.Dim.Render(fmt.Sprintf("%s: now %s%s · the last %s", t.name, now, peak, frames(shown)))}
	rows := h - 1
	for i, r := range pv.tallSpark(vals, w-axisCells, rows) {
		axis := "    │"
		switch {
		case i == 0:
			axis = fmt.Sprintf("%4s┤", top)
		case i == rows-1:
			axis = "   0┤"
		case rows >= 5 && i == (rows-1)/2 && t.unit == nil && (rows-1)%2 == 0:
			axis = " 50%┤"
		}
		lines = append(lines, pv.st.Dim.Render(axis)+r)
	}
	return block(lines, w, h)
}

// withTrend pads a panel's lines to h, drawing its trend in the rest when
// that holds a chart: a panel whose figures come in steps (a history row
// per core) does not leave the lines between two steps blank.
func (pv *view) withTrend(p trender, lines []string, w, h int) []string {
	if rest := h - len(lines); rest >= minTrendRows {
		if t, ok := p.trend(pv); ok {
			lines = append(lines, pv.drawTrend(t, w, rest)...)
		}
	}
	return block(lines, w, h)
}

// axisCells is the width of a trend chart's y axis ("100%┤").
const axisCells = 5

// trendOf is panel id's trend when it has one worth drawing: a scaled
// series that never left zero (an idle network) says nothing.
func trendOf(id panelID, pv *view) (trend, bool) {
	tr, ok := panels[id].(trender)
	if !ok {
		return trend{}, false
	}
	t, ok := tr.trend(pv)
	if !ok || t.unit == nil {
		return t, ok
	}
	for _, v := range t.vals {
		if v > 0 {
			return t, true
		}
	}
	return t, false
}

func frames(n int) string {
	if n == 1 {
		return "frame"
	}
	return fmt.Sprintf("%d frames", n)
}

// series reads one figure of every history frame that has it; stale says
// the newest frame lacks it (its probe failed), so the last value is not
// "now".
func series(hist []*sample.Frame, of func(*sample.Frame) (float64, bool)) (vals []float64, stale, ok bool) {
	for _, f := range hist {
		if v, ok := of(f); ok {
			vals = append(vals, v)
		}
	}
	if n := len(hist); n > 0 && len(vals) > 0 {
		_, has := of(hist[n-1])
		stale = !has
	}
	return vals, stale, len(vals) > 0
}

func (gpuPanel) trend(pv *view) (trend, bool) {
	if vals, stale, ok := series(pv.hist, (*sample.Frame).GPUUtil); ok {
		return trend{name: "GPU util (judged GPUs)", vals: vals, stale: stale}, true
	}
	vals, stale, ok := series(pv.hist, func(f *sample.Frame) (float64, bool) {
		if f.Accel == nil {
			return 0, false
		}
		return f.Accel.BusyPct, true
	})
	return trend{name: "accelerator busy", vals: vals, stale: stale}, ok
}

func (cpuPanel) trend(pv *view) (trend, bool) {
	vals, stale, ok := series(pv.hist, func(f *sample.Frame) (float64, bool) {
		if f.CPU == nil {
			return 0, false
		}
		return f.CPU.BusyPct, true
	})
	return trend{name: "CPU busy", vals: vals, stale: stale}, ok
}

func (loaderPanel) trend(pv *view) (trend, bool) {
	vals, stale, ok := series(pv.hist, func(f *sample.Frame) (float64, bool) {
		if f.Loader == nil || f.Loader.WaitShare == nil {
			return 0, false
		}
		return *f.Loader.WaitShare * 100, true
	})
	return trend{name: "loop waiting", vals: vals, stale: stale}, ok
}

func (procPanel) trend(pv *view) (trend, bool) {
	vals, stale, ok := series(pv.hist, func(f *sample.Frame) (float64, bool) {
		p := f.Procs
		if p == nil || p.FocusPID == 0 {
			return 0, false
		}
		sum := 0.0
		for _, pr := range p.List {
			sum += pr.CPUPct
		}
		return sum, true
	})
	return trend{name: "watched CPU", vals: vals, stale: stale, unit: func(v float64) string { return fmt.Sprintf("%.0f%%", v) }}, ok
}

func (memPanel) trend(pv *view) (trend, bool) {
	vals, stale, ok := series(pv.hist, func(f *sample.Frame) (float64, bool) {
		if f.Mem == nil || f.Mem.TotalBytes == 0 {
			return 0, false
		}
		return float64(f.Mem.UsedBytes) / float64(f.Mem.TotalBytes) * 100, true
	})
	return trend{name: "memory used", vals: vals, stale: stale}, ok
}

func (diskPanel) trend(pv *view) (trend, bool) {
	vals, stale, ok := series(pv.hist, func(f *sample.Frame) (float64, bool) {
		d, ok := f.BusiestDisk()
		return d.BusyPct, ok
	})
	return trend{name: "busiest disk", vals: vals, stale: stale}, ok
}

func (netPanel) trend(pv *view) (trend, bool) {
	vals, stale, ok := series(pv.hist, func(f *sample.Frame) (float64, bool) {
		if len(f.Net) == 0 {
			return 0, false
		}
		sum := 0.0
		for _, n := range f.Net {
			sum += n.RxBytesPerSec + n.TxBytesPerSec
		}
		return sum, true
	})
	return trend{name: "network in+out", vals: vals, stale: stale, unit: func(v float64) string { return size(v) + "/s" }}, ok
}
