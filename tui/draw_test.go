package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestCellsCountsAsWcwidthDoes: cells, which reads displaywidth's tables,
// gives the width ansi's wcwidth count (go-runewidth's) gives, on every
// line the dashboard draws and on the strings from outside it meets
// (names in other scripts, combining marks, emoji, controls, styles and
// hyperlinks), so that dropping go-runewidth's 2.2 MB table moves no cell.
func TestCellsCountsAsWcwidthDoes(t *testing.T) {
	strs := []string{
		"", "plain ascii", "\x1b[1;38;5;196mstyled\x1b[m text", "tab\there", "bell\a", "del\x7f",
		"▸ ⇒ ● ○ ◆ … ─│┌┐└┘├┤ ▁▂▃▄▅▆▇█ ⣿ ⠁ ↑↓ ← → × · ° µ ≈ ≤ ≥ ±",
		"数据加载器 训练", "한국어", "ｆｕｌｌ", "e\u0301", "🔥 hot", "👩‍💻", "\u200bzero\u200dwidth",
		"\x1b]8;;https://example.com\x07link\x1b]8;;\x07", "\x1b[2Jclear", "éàü ßø Ωπ дата", "🇩🇪🇫🇷", "\x1b[unterminated", "bad \xff\xfe utf8",
	}
	for _, m := range machines(t) {
		for _, size := range [][2]int{{80, 24}, {120, 40}, {250, 70}} {
			m.w, m.h = size[0], size[1]
			strs = append(strs, strings.Split(m.Render(), "\n")...)
		}
	}
	for _, s := range strs {
		if got, want := cells(s), ansi.StringWidthWc(s); got != want {
			t.Errorf("cells(%q) = %d, wcwidth %d", ansi.Strip(s), got, want)
		}
	}
}

// TestCellsDiffersFromWcwidthOnlyOnNewMarks: over every code point, cells
// gives wcwidth's (go-runewidth's) width, but for combining marks newer
// than displaywidth's tables (Unicode 16 and 17: 75 of them at v0.11.0),
// which it counts as one cell where go-runewidth counts none: never fewer
// cells, never two for one.
func TestCellsDiffersFromWcwidthOnlyOnNewMarks(t *testing.T) {
	differ := 0
	for r := rune(0); r <= 0x10ffff; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		s := string(r)
		c, wc := cells(s), ansi.StringWidthWc(s)
		if c == wc {
			continue
		}
		differ++
		if c != 1 || wc != 0 || r < 0x0890 {
			t.Errorf("U+%04X: cells %d, wcwidth %d", r, c, wc)
		}
	}
	if differ > 100 {
		t.Errorf("%d code points differ", differ)
	}
}

// TestFitTruncatesToItsWidth: fit gives exactly w cells as cells counts
// them (and as the terminal advances), styles kept whole, for strings
// shorter, equal and wider than w: wide glyphs, joined emoji, flags,
// conjuncts.
func TestFitTruncatesToItsWidth(t *testing.T) {
	for _, s := range []string{"short", "\x1b[31mexactly 12\x1b[m", "a name much wider than its column ▸ 数据", "数据加载器数据加载器",
		"job 👩‍💻👩‍💻👩‍💻", "🇩🇪🇫🇷🇯🇵 flags", "क्षत्रिय क्ष", "\x1b[1mbold 数据\x1b[m and plain"} {
		for _, w := range []int{1, 2, 5, 10, 12, 30} {
			got := fit(s, w)
			if n := cells(got); n != w {
				t.Errorf("fit(%q, %d) is %d cells: %q", s, w, n, got)
			}
			if strings.ContainsAny(ansi.Strip(got), "[\x1b") {
				t.Errorf("fit(%q, %d) cut a style: %q", s, w, got)
			}
			if strings.Contains(s, "\x1b[m") && !strings.Contains(got, "\x1b[m") {
				t.Errorf("fit(%q, %d) lost the style's end: %q", s, w, got)
			}
		}
	}
}
