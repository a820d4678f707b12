package tui

import (
	"strings"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// panelID names a panel; the order is the focus order.
type panelID int

const (
	pGPU panelID = iota
	pCPU
	pLoader
	pProcs
	pMem
	pDisks
	pNet
	pProfile
	numPanels
)

var panelTitles = [numPanels]string{"GPU", "CPU", "Loader", "Processes", "Memory & pressure", "Disks", "Network", "Profile"}

// panel draws itself into exactly w×h cells; want says the fewest lines
// it needs and how many it could use (title included).
type panel interface {
	want(pv *view, w int) (least, most int)
	draw(pv *view, w, h int) []string
}

// view is all a panel sees: the frame shown, the history behind it (frozen
// while paused), the newest batches, the styles and its own scroll offset — never the Model,
// its keys or the other panels.
type view struct {
	frame   *sample.Frame
	hist    []*sample.Frame
	batches []sample.BatchTiming // the newest batches, for the train row
	st      *Styles
	scroll  int
	// straggler is the rank the verdict names; zoomed says the panel fills
	// the screen (the loader panel then details the selected rank).
	straggler *int
	zoomed    bool
	sortBySM  bool   // GPU processes by SM % instead of memory (the s key)
	kind      string // the verdict's kind, for the straggler's row
	replay    bool   // a recording plays: nothing more will be taken
	th        *diagnose.Thresholds
	procs     procView // the process panel's order, filter and tree
	filtering bool     // the filter is being typed
}

// view is panel id's narrow view of the model.
func (m *Model) view(id panelID) *view {
	return &view{frame: m.shown.Frame, hist: m.hframes, batches: m.shownBatches(), st: &m.styles, scroll: m.scroll[id],
		straggler: m.shown.Verdict.Straggler, zoomed: m.zoom && m.focus == id, sortBySM: m.sortBySM, kind: m.shown.Verdict.Kind.String(),
		replay: m.opt.Replay != nil, th: &m.opt.Thresholds, procs: m.procs, filtering: m.filtering}
}

var panels = [numPanels]panel{gpuPanel{}, cpuPanel{}, loaderPanel{}, procPanel{}, memPanel{}, diskPanel{}, netPanel{}, profilePanel{}}

// columns lays panels out by width: one column up to 119 cells, two up to
// 199, three from 200.
func columns(w int) [][]panelID {
	switch {
	case w >= 200:
		return [][]panelID{{pGPU, pCPU, pMem}, {pLoader, pDisks, pNet}, {pProcs, pProfile}}
	case w >= 120:
		return [][]panelID{{pGPU, pCPU, pMem, pNet}, {pLoader, pProcs, pDisks, pProfile}}
	}
	return [][]panelID{{pGPU, pCPU, pLoader, pProcs, pMem, pDisks, pNet, pProfile}}
}

// body draws the panels into w×h.
func (m *Model) body(w, h int) []string {
	if h <= 0 {
		return nil
	}
	if m.zoom {
		return m.drawPanel(m.focus, w, h, 0)
	}
	cols := columns(w)
	gap := 1
	cw := (w - gap*(len(cols)-1)) / len(cols)
	rendered := make([][]string, len(cols))
	for i, col := range cols {
		width := cw
		if i == len(cols)-1 {
			width = w - (cw+gap)*(len(cols)-1)
		}
		rendered[i] = m.column(col, width, h)
	}
	out := make([]string, h)
	for y := 0; y < h; y++ {
		n := gap * (len(rendered) - 1)
		for i := range rendered {
			n += len(rendered[i][y])
		}
		var b strings.Builder
		b.Grow(n) // one allocation a row, not one per doubling
		for i := range rendered {
			if i > 0 {
				b.WriteString(spaces(gap))
			}
			b.WriteString(rendered[i][y])
		}
		out[y] = b.String()
	}
	return out
}

// column stacks panels into w×h: every panel gets its least height in
// order while they fit (the last ones are left out when they do not), then
// spare lines go to each panel up to what it could use, in order; what is
// still spare goes to the panels' trend charts, shared evenly, and only
// then to the last panel shown, so the column fills.
func (m *Model) column(ids []panelID, w, h int) []string {
	heights := make([]int, len(ids))
	most := make([]int, len(ids))
	used := 0
	for i, id := range ids {
		l, mo := panels[id].want(m.view(id), w)
		if used+l > h {
			break
		}
		heights[i], most[i] = l, mo
		used += l
	}
	for i := range ids {
		if heights[i] == 0 {
			continue
		}
		add := min(h-used, most[i]-heights[i])
		if add > 0 {
			heights[i] += add
			used += add
		}
	}
	charts := make([]int, len(ids))
	used += m.shareTrends(ids, w, h-used, heights, charts)
	for i := len(ids) - 1; i >= 0 && used < h; i-- {
		if heights[i] > 0 {
			if charts[i] > 0 {
				charts[i] += h - used // a taller chart, not blank rows above it
			}
			heights[i] += h - used
			used = h
		}
	}
	out := make([]string, 0, h)
	for i, id := range ids {
		if heights[i] > 0 {
			out = append(out, m.drawPanel(id, w, heights[i], charts[i])...)
		}
	}
	return stack(out, w, h)
}

// shareTrends gives spare lines to the trend charts of the panels shown
// (heights > 0) that have one: evenly, each between minTrendRows and
// maxTrendRows. It sets charts[i] and returns the lines given.
func (m *Model) shareTrends(ids []panelID, w, spare int, heights, charts []int) int {
	var with []int
	for i, id := range ids {
		if heights[i] > 0 {
			t, ok := trendOf(id, m.view(id))
			m.trends[id] = t // drawPanel draws it: read once a render
			if ok {
				with = append(with, i)
			}
		}
	}
	// As many charts as the spare lines hold at their least, first ones first.
	with = with[:min(len(with), spare/minTrendRows)]
	given := 0
	for k, i := range with {
		n := min(maxTrendRows, (spare-given)/(len(with)-k))
		charts[i] = n
		heights[i] += n
		given += n
	}
	return given
}

// drawPanel draws a panel with its title rule, and its trend chart in the
// last chart lines of its h.
func (m *Model) drawPanel(id panelID, w, h, chart int) []string {
	title := panelTitles[id]
	if m.zoom && id == m.focus {
		title += " (enter: back)"
	}
	// draw returns h-1 lines of exactly w cells (it pads with block): the
	// title rule is fitted here, nothing is measured twice.
	lines := []string{fit(m.rule(title, w, id == m.focus), w)}
	if body := h - 1 - chart; body > 0 {
		lines = append(lines, panels[id].draw(m.view(id), w, body)...)
	}
	if chart > 0 {
		lines = append(lines, m.view(id).drawTrend(m.trends[id], w, chart)...) // w cells wide (block)
	}
	return stack(lines, w, h)
}
