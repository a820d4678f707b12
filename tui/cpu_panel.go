package tui

import (
	"fmt"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// cpuPanel: a per-core heat view that stays readable from 2 to 256 cores —
// a labelled bar per core while they fit, else one shaded cell per core in
// rows of up to 64 (several cores per cell when even that does not fit) —
// and a summary line: shares, load, run queue, context switches.
type cpuPanel struct{}

const coreCell = 18 // "cpu12 ▕████▌   ▏ 93%" + a space

func (cpuPanel) want(pv *view, w int) (int, int) {
	c := pv.frame.CPU
	if c == nil {
		return 2, 2
	}
	rows, _, _ := coreRows(len(c.Cores), w, 1<<30)
	if len(c.Cores) <= 16 {
		// A history per core when there is room, up to 4 rows tall.
		rows += len(c.Cores) * maxHistoryRows
	}
	return 3, 2 + rows
}

// coreRows decides the layout of n cores in width w with at most maxRows:
// bars (one per core) or a grid with cells of `group` cores.
func coreRows(n, w, maxRows int) (rows int, bars bool, group int) {
	if per := max(1, w/coreCell); n <= 16 {
		if r := (n + per - 1) / per; r <= maxRows {
			return r, true, 1
		}
	}
	rowLen := gridRowLen(w)
	for group = 1; ; group *= 2 {
		cells := (n + group - 1) / group
		rows = (cells + rowLen - 1) / rowLen
		if rows <= maxRows || cells <= rowLen {
			return rows, false, group
		}
	}
}

func gridRowLen(w int) int { return max(8, min(64, (w-6)/8*8)) }

func (cpuPanel) draw(pv *view, w, h int) []string {
	c := pv.frame.CPU
	if c == nil {
		return block([]string{pv.st.Dim.Render("cpu: " + orNone(pv.frame.Unavailable[sample.SourceCPU]))}, w, h)
	}
	summary := fmt.Sprintf("%s busy · usr %.0f sys %.0f iow %.0f steal %.0f irq %.0f · load %.2f %.2f %.2f · run %d/%d cores · %s cs/s",
		pct(c.BusyPct), c.UserPct, c.SystemPct, c.IowaitPct, c.StealPct, c.IRQPct, c.Load1, c.Load5, c.Load15,
		c.ProcsRunning, len(c.Cores), shortNum(c.ContextSwitchesPerSec))
	lines := []string{summary}
	rows, bars, group := coreRows(len(c.Cores), w, max(1, h-1))
	if bars {
		per := max(1, w/coreCell)
		for r := 0; r < rows; r++ {
			var b strings.Builder
			for i := r * per; i < min(len(c.Cores), (r+1)*per); i++ {
				k := c.Cores[i]
				fmt.Fprintf(&b, "cpu%-2d %s%s ", k.ID, pv.bar(k.BusyPct, 8), pct(k.BusyPct))
			}
			lines = append(lines, b.String())
		}
		// With room to spare, each core's history, taller with more room:
		// a pegged thread hopping between cores shows as the peak moving
		// from core to core.
		if tall := min(maxHistoryRows, (h-len(lines))/max(1, len(c.Cores))); tall >= 1 {
			for _, k := range c.Cores {
				vals := make([]float64, 0, len(pv.hist))
				for _, hf := range pv.hist[max(0, len(pv.hist)-w):] {
					if hf.CPU != nil {
						for _, hk := range hf.CPU.Cores {
							if hk.ID == k.ID {
								vals = append(vals, hk.BusyPct)
								break
							}
						}
					}
				}
				// Each chart over its own axis: "cpu3 ┤" under "     │".
				head := fmt.Sprintf("cpu%-2d", k.ID)
				rows := pv.tallSpark(vals, w-len(head)-6, tall)
				for i, r := range rows {
					if i == len(rows)-1 {
						lines = append(lines, head+pv.st.Dim.Render("┤")+r+pct(k.BusyPct))
					} else {
						lines = append(lines, strings.Repeat(" ", len(head))+pv.st.Dim.Render("│")+r)
					}
				}
			}
		}
		return pv.withTrend(cpuPanel{}, lines, w, h)
	}
	rowLen := gridRowLen(w)
	cells := (len(c.Cores) + group - 1) / group
	for r := 0; r < rows && len(lines) < h; r++ {
		var b strings.Builder
		fmt.Fprintf(&b, "%4d ", r*rowLen*group)
		for cell := r * rowLen; cell < min(cells, (r+1)*rowLen); cell++ {
			hot := 0.0
			for i := cell * group; i < min(len(c.Cores), (cell+1)*group); i++ {
				hot = max(hot, c.Cores[i].BusyPct)
			}
			b.WriteString(pv.st.heat[min(10, int(hot/10+0.5))])
		}
		lines = append(lines, b.String())
	}
	if group > 1 && len(lines) < h {
		lines = append(lines, pv.st.Dim.Render(fmt.Sprintf("     %d cores per cell (the busiest shown)", group)))
	}
	return pv.withTrend(cpuPanel{}, lines, w, h)
}

// maxHistoryRows is the tallest a core's history grows.
const maxHistoryRows = 4

// tallSpark draws values (0–100) as a sparkline rows cells tall, top row
// first: each row holds eight of the rows×8 levels.
func (pv *view) tallSpark(values []float64, width, rows int) []string {
	if rows <= 1 {
		return []string{pv.spark(values, nil, width)}
	}
	out := make([]string, rows)
	start := max(0, len(values)-width)
	pad := strings.Repeat(" ", max(0, width-(len(values)-start)))
	var b strings.Builder
	for r := 0; r < rows; r++ {
		b.Reset()
		b.Grow(len(pad) + 3*(len(values)-start) + 32)
		b.WriteString(pad)
		b.WriteString(pv.st.sparkPaint.pre)  // one paint a row
		below := float64((rows - 1 - r) * 8) // levels in the rows under this one
		for _, v := range values[start:] {
			lvl := int(min(8, max(0, v/100*float64(rows*8)+0.5-below)))
			b.WriteString(pv.st.sparkGlyph[lvl]) // level 0 is a space
		}
		b.WriteString(pv.st.sparkPaint.post)
		out[r] = b.String()
	}
	return out
}

func shortNum(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func orNone(s string) string {
	if s == "" {
		return "no data yet"
	}
	return s
}
