package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestPlainViewIsASCII: with TERM=dumb (Options.Plain) every machine's
// view, at every size, is ASCII with each line exactly as wide as the
// terminal: no glyph of the dashboard is left to draw as mojibake.
func TestPlainViewIsASCII(t *testing.T) {
	for name, m := range machines(t) {
		m.opt.Plain = true
		for _, size := range [][2]int{{80, 24}, {120, 40}, {250, 70}} {
			m.w, m.h = size[0], size[1]
			out := ansi.Strip(m.Render())
			for i, l := range strings.Split(out, "\n") {
				for _, r := range l {
					if r > 0x7e {
						t.Fatalf("%s %v line %d: %q in %q", name, size, i, r, l)
					}
				}
				if len(l) != size[0] {
					t.Fatalf("%s %v line %d is %d wide: %q", name, size, i, len(l), l)
				}
			}
		}
	}
}
