package tui

import "strings"

// plainGlyphs maps every glyph the dashboard draws beyond ASCII to one
// ASCII character of the same width (one cell), so a plain view keeps its
// layout: rules, axes, bars, sparklines, marks.
var plainGlyphs = strings.NewReplacer(
	"─", "-", "│", "|", "┤", "|", "▕", "|", "▏", "|",
	"▁", ".", "▂", ".", "▃", "-", "▄", "-", "▅", "=", "▆", "=", "▇", "#", "█", "#",
	"▉", "#", "▊", "#", "▋", "#", "▌", "#", "▍", "#", "▎", "#",
	"░", ".", "▒", ":", "▓", "%",
	"●", "*", "▸", ">", "⇒", ">", "◀", "<", "▶", ">", "❚", "|", "■", "#",
	"·", ".", "…", "~", "×", "x", "≥", ">", "≤", "<", "≈", "~", "→", ">", "←", "<",
	"↑", "^", "↓", "v", "µ", "u", "−", "-", "–", "-", "—", "-", "°", " ",
)

// plainText is the view with ASCII glyphs (TERM=dumb). Text from outside
// (process names) keeps its letters: only the glyphs above change.
func plainText(s string) string { return plainGlyphs.Replace(s) }
