package tui

import (
	"bytes"
	"image/color"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/gpuwatch/gpuwatch/diagnose"
)

// Styles are the dashboard's colours and text styles. DefaultStyles
// renders in full colour; For converts them once to what the terminal
// supports (16, 256 or true colour, none under NO_COLOR), so a frame goes
// to the terminal as it is rendered, not parsed again on its way out.
//
// Each style is a paint: lipgloss renders it once, and painting is then
// two string concatenations — no width measuring per fragment, which made
// lipgloss's Render a fifth of the dashboard's CPU.
type Styles struct {
	Title, TitleFocus, Dim, Warn, Bad, Good, Label paint
	// Tone paints a verdict by its situation's tone (diagnose.Tone): no
	// colour per kind here, so a new kind is painted the day it exists.
	Tone map[diagnose.Tone]paint
	// heat holds a core cell pre-rendered per tenth of load: the 256-core
	// grid is a concatenation, not 256 render calls.
	heat [11]string
	// sparkGlyph are the nine bar heights, and sparkPaint and burstPaint
	// their colours, steady and bursty (Thresholds.Bursty): a run of cells is
	// painted once, not once a cell (a tall chart of 240 cells a row was
	// 25 bytes of escapes a cell for the terminal to parse).
	sparkGlyph                  [9]string
	sparkPaint, burstPaint      paint
	barGreen, barYellow, barRed paint
	wait, step                  paint // train-row runs: waiting (░), stepping (█)
}

// paint is a style as the escape sequences around its text.
type paint struct{ pre, post string }

func paintOf(st lipgloss.Style) paint {
	r := st.Render("X")
	i := strings.Index(r, "X")
	return paint{pre: r[:i], post: r[i+1:]}
}

// Render paints text.
func (p paint) Render(text string) string {
	if text == "" {
		return ""
	}
	return p.pre + text + p.post
}

var (
	green  = lipgloss.Color("#5fd75f")
	yellow = lipgloss.Color("#ffd75f")
	orange = lipgloss.Color("#ff8700")
	red    = lipgloss.Color("#ff5f5f")
	blue   = lipgloss.Color("#5fafff")
	grey   = lipgloss.Color("#8a8a8a")
)

// Verdict is the paint of a verdict of kind k: its tone's.
func (s Styles) Verdict(k diagnose.Kind) paint { return s.Tone[k.Tone()] }

// DefaultStyles returns the dashboard's styles.
func DefaultStyles() Styles {
	fg := func(c color.Color) paint { return paintOf(lipgloss.NewStyle().Foreground(c)) }
	s := Styles{
		Title:      paintOf(lipgloss.NewStyle().Bold(true).Foreground(blue)),
		TitleFocus: paintOf(lipgloss.NewStyle().Bold(true).Reverse(true)),
		Dim:        fg(grey),
		Warn:       fg(yellow),
		Bad:        fg(red),
		Good:       fg(green),
		Label:      paintOf(lipgloss.NewStyle().Bold(true)),
		barGreen:   fg(green),
		barYellow:  fg(yellow),
		barRed:     fg(red),
	}
	bold := func(c color.Color) paint { return paintOf(lipgloss.NewStyle().Bold(true).Foreground(c)) }
	s.Tone = map[diagnose.Tone]paint{diagnose.ToneNeutral: bold(grey), diagnose.ToneGood: bold(green), diagnose.ToneWarn: bold(orange), diagnose.ToneBad: bold(red)}
	// Shade characters carry the level without colour (NO_COLOR, ASCII).
	shades := []rune(" ░░▒▒▓▓███")
	for i := range s.heat {
		c := heatColor(i)
		ch := "█"
		if i < len(shades) {
			ch = string(shades[i])
		}
		if i == 0 {
			ch = "·"
		}
		s.heat[i] = lipgloss.NewStyle().Foreground(c).Render(ch)
	}
	bars := []rune(" ▁▂▃▄▅▆▇█")
	s.sparkPaint, s.burstPaint = fg(green), fg(orange)
	for i, r := range bars {
		s.sparkGlyph[i] = string(r)
	}
	s.wait, s.step = fg(red), fg(green)
	return s
}

// For returns the styles as a terminal of profile p shows them: each
// escape sequence downsampled once, here, by colorprofile's own writer.
// Converting a frame's output instead parsed every sequence of every frame
// (about 15 KB a frame at 120×40) and was a tenth of the dashboard's CPU
// at idle in a 256-colour terminal, which is what tmux and most ssh
// sessions are (docs/architecture.md, "The dashboard's cost").
func (s Styles) For(p colorprofile.Profile) Styles {
	if p == colorprofile.TrueColor {
		return s
	}
	var b bytes.Buffer
	w := &colorprofile.Writer{Forward: &b, Profile: p}
	conv := func(x string) string {
		b.Reset()
		_, _ = w.Write([]byte(x)) // into a bytes.Buffer: no error
		return b.String()
	}
	pc := func(pt paint) paint { return paint{pre: conv(pt.pre), post: conv(pt.post)} }
	for _, pt := range []*paint{&s.Title, &s.TitleFocus, &s.Dim, &s.Warn, &s.Bad, &s.Good, &s.Label,
		&s.sparkPaint, &s.burstPaint, &s.barGreen, &s.barYellow, &s.barRed, &s.wait, &s.step} {
		*pt = pc(*pt)
	}
	tone := make(map[diagnose.Tone]paint, len(s.Tone))
	for t, pt := range s.Tone {
		tone[t] = pc(pt)
	}
	s.Tone = tone
	for i := range s.heat {
		s.heat[i] = conv(s.heat[i])
	}
	return s
}

// heatColor goes green → yellow → red over tenths of load.
func heatColor(tenth int) color.Color {
	switch {
	case tenth <= 0:
		return grey
	case tenth <= 4:
		return green
	case tenth <= 7:
		return yellow
	case tenth <= 8:
		return orange
	}
	return red
}
