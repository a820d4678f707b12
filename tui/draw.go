package tui

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi/parser"
	"github.com/clipperhouse/displaywidth"

	"github.com/gpuwatch/gpuwatch/sample"
)

// fit truncates or pads s (which may hold ANSI styles) to exactly w cells.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := cells(s)
	if n > w {
		s, n = cut(s, w-1), w-1 // room for the ellipsis
		s += "…"
		n++
	}
	return s + spaces(w-n)
}

// cells is s's width on a terminal, its escape sequences skipped: the
// widths of its code points summed, as wcwidth counts and a terminal
// advances its cursor (every glyph the dashboard draws is one code point,
// so grapheme segmentation, 1.7x the frame's time, would give the same
// answer). A code point's width is runeCells'. go-runewidth, which ansi's
// Wc functions ask, fills a 2.2 MB table in memory at its first code
// point past U+02FF (docs/architecture.md, "The dashboard's memory").
func cells(s string) int {
	n := 0
	walk(s, func(_ string, w int) { n += max(w, 0) })
	return n
}

// cut is s's code points that fit in w cells, its escape sequences all
// kept (a style opened before the cut is closed after it), padded with
// spaces where a wide one would have straddled the edge: exactly w cells,
// or fewer only where s is narrower.
func cut(s string, w int) string {
	var b strings.Builder
	n, full := 0, false
	walk(s, func(seg string, cw int) {
		switch {
		case cw < 0: // an escape sequence or a control
			b.WriteString(seg)
		case !full && n+cw <= w:
			b.WriteString(seg)
			n += cw
		default:
			full = true
		}
	})
	return b.String() + spaces(w-n)
}

// walk calls f with each code point of s and its width, and with each
// escape sequence or control byte and -1, in order, as ansi's parser
// splits them.
func walk(s string, f func(seg string, w int)) {
	st := parser.GroundState
	start := 0 // where the sequence being read began
	for i := 0; i < len(s); i++ {
		c := s[i]
		if st == parser.GroundState && c >= 0x20 && c < 0x7f {
			f(s[i:i+1], 1)
			start = i + 1
			continue
		}
		next, action := parser.Table.Transition(st, c)
		if action == parser.PrintAction || next == parser.Utf8State {
			if start < i {
				f(s[start:i], -1)
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			f(s[i:i+size], runeCells(r))
			i += size - 1
			start = i + 1
			st = parser.GroundState
			continue
		}
		st = next
		if st == parser.GroundState { // a sequence, or a control, ended here
			f(s[start:i+1], -1)
			start = i + 1
		}
	}
	if start < len(s) {
		f(s[start:], -1)
	}
}

// runeCells is the cells a code point takes: displaywidth's, from tables
// in the binary, in the East Asian width that ansi and go-runewidth read
// from RUNEWIDTH_EASTASIAN; a regional indicator is one cell, as wcwidth
// and go-runewidth count it (a flag is two of them).
func runeCells(r rune) int {
	if r >= 0x1f1e6 && r <= 0x1f1ff {
		return 1
	}
	return widthOptions.Rune(r)
}

// widthOptions is displaywidth's options as ansi sets its own.
var widthOptions = func() displaywidth.Options {
	ea, err := strconv.ParseBool(os.Getenv("RUNEWIDTH_EASTASIAN"))
	return displaywidth.Options{EastAsianWidth: err == nil && ea}
}()

// blank is a line of w spaces.
func blank(w int) string { return spaces(w) }

// manySpaces is where spaces cuts its runs from: a padding a frame draws
// hundreds of times costs no allocation of its own.
var manySpaces = strings.Repeat(" ", 512)

// spaces is n spaces (none for n ≤ 0).
func spaces(n int) string {
	if n <= len(manySpaces) {
		return manySpaces[:max(n, 0)]
	}
	return strings.Repeat(" ", n)
}

// repeat is strings.Repeat with a count below 0 taken as 0: a count
// computed from a number that came from outside (a recording, a loader)
// must not crash the view.
func repeat(s string, n int) string { return strings.Repeat(s, max(n, 0)) }

// unit is x within 0–1, NaN as 0: the share a bar fills.
func unit(x float64) float64 {
	if x != x {
		return 0
	}
	return min(1, max(0, x))
}

// stack appends lines that are already w cells wide, then blank lines up to
// h: no measuring.
func stack(lines []string, w, h int) []string {
	if len(lines) > h {
		return lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, blank(w))
	}
	return lines
}

// block pads lines to h lines of exactly w cells.
func block(lines []string, w, h int) []string {
	out := make([]string, h)
	for i := range out {
		if i < len(lines) {
			out[i] = fit(lines[i], w)
		} else {
			out[i] = strings.Repeat(" ", max(w, 0))
		}
	}
	return out
}

// bar draws pct (0–100) in width cells with eighth-cell precision.
func (pv *view) bar(pct float64, width int) string {
	if width <= 0 {
		return ""
	}
	pct = 100 * unit(pct/100)
	eighths := int(pct / 100 * float64(width*8))
	full, part := eighths/8, eighths%8
	var b strings.Builder
	b.WriteString(strings.Repeat("█", full))
	if full < width && part > 0 {
		b.WriteString(string([]rune("▏▎▍▌▋▊▉")[part-1]))
		full++
	}
	filled := b.String()
	// Display bands of any bar (CPU, GPU, memory …), not a rule: a busy
	// GPU is good, a busy core may not be. The verdict's numbers colour
	// what they judge (waits, ranks, pegged threads).
	style := pv.st.barGreen
	switch {
	case pct >= 90:
		style = pv.st.barRed
	case pct >= 70:
		style = pv.st.barYellow
	}
	return style.Render(filled) + repeat(" ", width-full)
}

// spark draws values (0–100) as a sparkline of the newest width values;
// bursty[i] marks values drawn in the warning colour.
func (pv *view) spark(values []float64, bursty []bool, width int) string {
	if width <= 0 {
		return ""
	}
	start := max(0, len(values)-width)
	var b strings.Builder
	b.Grow(3*(len(values)-start) + 64)
	// One paint a run of cells of one colour, not one a cell.
	paints := [2]paint{pv.st.sparkPaint, pv.st.burstPaint}
	cur := -1 // 0 steady, 1 bursty
	for i := start; i < len(values); i++ {
		lvl := int(values[i]/100*8 + 0.5)
		lvl = min(8, max(0, lvl))
		c := 0
		if bursty != nil && bursty[i] {
			c = 1
		}
		if c != cur {
			if cur >= 0 {
				b.WriteString(paints[cur].post)
			}
			b.WriteString(paints[c].pre)
			cur = c
		}
		b.WriteString(pv.st.sparkGlyph[lvl])
	}
	if cur >= 0 {
		b.WriteString(paints[cur].post)
	}
	return repeat(" ", width-(len(values)-start)) + b.String()
}

// rule is a panel's title line: "─ CPU ─────────".
func (m *Model) rule(title string, w int, focused bool) string {
	t := " " + title + " "
	left := "─"
	rest := max(0, w-cells(t)-1)
	if focused {
		return left + m.styles.TitleFocus.Render(t) + m.styles.Dim.Render(strings.Repeat("─", rest))
	}
	return m.styles.Dim.Render(left) + m.styles.Title.Render(t) + m.styles.Dim.Render(strings.Repeat("─", rest))
}

// size is a short byte size: "1.2G", "300K", "0B".
func size(v float64) string {
	return strings.Replace(sample.FormatBytes(v), "iB", "", 1)
}

func pct(v float64) string { return fmt.Sprintf("%3.0f%%", v) }

// ago says how long before now t was, in frame time.
func ago(now, t time.Time) string {
	if t.IsZero() || now.Before(t) {
		return ""
	}
	d := now.Sub(t).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
