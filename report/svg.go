package report

import (
	"fmt"
	"math"
	"strings"
)

const chartW, chartH, padL, padB = 900.0, 180.0, 56.0, 22.0

type line struct {
	v     []*float64
	color string
	name  string
}

type band struct{ lo, hi []*float64 }

// lineChart draws lines over time; maxY 0 scales to the data.
func lineChart(id string, t []float64, lines []line, bd *band, maxY float64, unit string) string {
	return markedChart(id, t, lines, bd, yAxis{maxY, unit}, nil)
}

// yAxis is a chart's top (0: scaled to the data) and unit.
type yAxis struct {
	max  float64
	unit string
}

// replayName is the legend of the ceiling's replay, shaded on the charts
// it would be misread on.
const replayName = "the ceiling's replay: kept batches, not the job's own input"

// markedChart is lineChart with the points where replay is true shaded:
// the ceiling's replay (gpuwatch run --ceiling), whose GPU and loader
// figures are not the job's own.
func markedChart(id string, t []float64, lines []line, bd *band, ax yAxis, replay []bool) string {
	maxY, unit := ax.max, ax.unit
	if maxY == 0 {
		for _, l := range lines {
			for _, v := range l.v {
				if v != nil {
					maxY = max(maxY, *v)
				}
			}
		}
		if maxY == 0 {
			maxY = 1
		}
	}
	tMax := 1.0
	if len(t) > 0 {
		tMax = t[len(t)-1] + t[0]
	}
	x := func(ti float64) float64 { return padL + ti/tMax*(chartW-padL-8) }
	y := func(v float64) float64 { return chartH - padB - min(v, maxY)/maxY*(chartH-padB-8) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" viewBox="0 0 %.0f %.0f" role="img">`, id, chartW, chartH)
	fmt.Fprintf(&b, `<text x="4" y="14" font-size="11">%s %s</text><text x="4" y="%.0f" font-size="11">0</text>`, axis(maxY), unit, chartH-padB)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="11" text-anchor="end">%s</text>`, chartW-8, chartH-6, dur(tMax))
	marked := shadeRuns(&b, t, replay, x)
	if bd != nil {
		var pts []string
		for i := range t {
			if i < len(bd.hi) && bd.hi[i] != nil {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(t[i]), y(*bd.hi[i])))
			}
		}
		for i := len(t) - 1; i >= 0; i-- {
			if i < len(bd.lo) && bd.lo[i] != nil {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(t[i]), y(*bd.lo[i])))
			}
		}
		if len(pts) > 2 {
			fmt.Fprintf(&b, `<polygon class="band" points="%s" fill="#2e9e44" fill-opacity="0.18"/>`, strings.Join(pts, " "))
		}
	}
	for _, l := range lines {
		var pts []string
		for i := range t {
			if i < len(l.v) && l.v[i] != nil {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(t[i]), y(*l.v[i])))
			}
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`, strings.Join(pts, " "), l.color)
		}
	}
	b.WriteString(`</svg><div class="legend">`)
	for _, l := range lines {
		fmt.Fprintf(&b, `<span style="color:%s">━ %s</span>`, l.color, l.name)
	}
	if bd != nil && hasData(bd.lo) {
		b.WriteString(`<span style="color:#2e9e44">▒ p5–p95</span>`)
	}
	if marked {
		b.WriteString(`<span style="color:#888">▒ ` + replayName + `</span>`)
	}
	b.WriteString("</div>")
	return b.String()
}

// shadeRuns draws a grey rectangle over each run of points where on is
// true, from half a point before the run to half a point after it; it
// says whether it drew any.
func shadeRuns(b *strings.Builder, t []float64, on []bool, x func(float64) float64) bool {
	half := 0.5
	if len(t) > 0 {
		half = t[0] // the points are the middles of equal buckets
	}
	drew := false
	for i := 0; i < len(t) && i < len(on); i++ {
		if !on[i] {
			continue
		}
		j := i
		for j+1 < len(t) && j+1 < len(on) && on[j+1] {
			j++
		}
		x0, x1 := x(t[i]-half), x(t[j]+half)
		fmt.Fprintf(b, `<rect class="replay" x="%.1f" y="8" width="%.1f" height="%.0f" fill="#888" fill-opacity="0.15"/>`, x0, x1-x0, chartH-padB-8)
		drew, i = true, j
	}
	return drew
}

func axis(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.1fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v > 0 && v < 10:
		return fmt.Sprintf("%.2g", v) // a line peaking at 0.4 topped an axis that read "0"
	}
	return fmt.Sprintf("%.0f", v)
}

// heatmap draws per-core (or per core group) busy % over time.
func heatmap(id string, s Series) string {
	rows := len(s.Cores)
	if rows == 0 || len(s.T) == 0 {
		return "<p>no CPU data</p>"
	}
	cell := (chartW - padL - 8) / float64(len(s.T))
	rowH := math.Max(3, math.Min(14, 220/float64(rows)))
	h := rowH*float64(rows) + 16
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" viewBox="0 0 %.0f %.0f" role="img">`, id, chartW, h)
	label := "core"
	if s.CoreGroup > 1 {
		label = fmt.Sprintf("%d cores/row", s.CoreGroup)
	}
	fmt.Fprintf(&b, `<text x="4" y="12" font-size="10">%s</text>`, label)
	for r, vals := range s.Cores {
		for i, v := range vals {
			if v == nil {
				continue
			}
			a := math.Min(1, math.Max(0, *v/100))
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.2f" height="%.1f" fill="#d62f2f" fill-opacity="%.2f"/>`,
				padL+float64(i)*cell, 14+float64(r)*rowH, cell+0.05, rowH, 0.05+0.95*a)
		}
	}
	b.WriteString(`</svg><div class="legend"><span>darker = busier (0–100 %)</span></div>`)
	return b.String()
}

// timelineSVG is the verdicts over time as coloured bands.
func timelineSVG(s *Summary) string {
	if len(s.Timeline) == 0 {
		return ""
	}
	start, total := s.Recording.Start, math.Max(s.Recording.DurationSec, 1)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="chart-verdicts" viewBox="0 0 %.0f 40" role="img">`, chartW)
	for _, seg := range s.Timeline {
		x0 := padL + seg.Start.Sub(start).Seconds()/total*(chartW-padL-8)
		wd := math.Max(0.5, seg.Seconds/total*(chartW-padL-8))
		fmt.Fprintf(&b, `<rect x="%.1f" y="6" width="%.1f" height="22" fill="%s"><title>%s %s</title></rect>`, x0, wd, kindColour(seg.Kind), seg.Kind, dur(seg.Seconds))
	}
	b.WriteString(`<text x="4" y="22" font-size="11">verdict</text></svg><div class="legend">`)
	seen := map[string]bool{}
	for _, seg := range s.Timeline {
		if !seen[seg.Kind] {
			seen[seg.Kind] = true
			fmt.Fprintf(&b, `<span style="color:%s">■ %s</span>`, kindColour(seg.Kind), seg.Kind)
		}
	}
	b.WriteString("</div>")
	return b.String()
}

func histogram(id string, bins []HistBin) string {
	most := 0
	for _, bn := range bins {
		most = max(most, bn.Count)
	}
	if most == 0 {
		return ""
	}
	bw := (chartW - padL - 8) / float64(len(bins))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" viewBox="0 0 %.0f %.0f" role="img"><text x="4" y="14" font-size="11">batches</text>`, id, chartW, chartH)
	for i, bn := range bins {
		hgt := float64(bn.Count) / float64(most) * (chartH - padB - 20)
		x := padL + float64(i)*bw
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#d62f2f"/>`, x+2, chartH-padB-hgt, bw-4, hgt)
		lbl := fmt.Sprintf("≤%gms", bn.UpperMs)
		if bn.UpperMs < 0 {
			lbl = "more"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" font-size="10" text-anchor="middle">%s</text>`, x+bw/2, chartH-6, lbl)
	}
	b.WriteString(`</svg><div class="legend"><span>wait per batch: how many batches waited up to each bound</span></div>`)
	return b.String()
}

func hasData(v []*float64) bool {
	for _, x := range v {
		if x != nil {
			return true
		}
	}
	return false
}
