package tui

import (
	"testing"
	"time"

	"github.com/charmbracelet/colorprofile"
)

// BenchmarkRenderRecordedFrame is what the dashboard does once a frame:
// render the view of a real 2-core frame (the single-core demo) at
// 120×40 in a 256-colour terminal's styles, alternating two successive
// frames so that nothing is served from a previous render. (The screen's
// draw of it is session's BenchmarkScreenIdleDraw.)
func BenchmarkRenderRecordedFrame(b *testing.B) {
	m := recorded(b, "single-core.jsonl", 26)
	m.SetColorProfile(colorprofile.ANSI256)
	m.w, m.h = 120, 40
	t0 := m.shown.Frame.Time
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		m.shown.Frame.Time = t0.Add(time.Duration(i % 2))
		_ = m.Render()
	}
}
