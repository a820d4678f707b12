package tui

import (
	"io"
	"testing"

	uv "github.com/charmbracelet/ultraviolet"
)

// BenchmarkTerminalRender is what bubbletea does once per new frame: parse
// the view into cells, diff against the screen and write the changes,
// alternating two successive real frames at 120×40.
func BenchmarkTerminalRender(b *testing.B) {
	m := recorded(b, "single-core.jsonl", 26)
	m.w, m.h = 120, 40
	views := [2]string{}
	views[0] = m.Render()
	m.shown.Frame.Time = m.shown.Frame.Time.Add(1)
	m.batches = append(m.batches, m.batches[len(m.batches)-5:]...)
	views[1] = m.Render()
	r := uv.NewTerminalRenderer(io.Discard, []string{"TERM=xterm-256color"})
	r.Resize(120, 40)
	buf := uv.NewScreenBuffer(120, 40)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf.Clear()
		uv.NewStyledString(views[i%2]).Draw(buf, uv.Rect(0, 0, 120, 40))
		r.Render(buf.RenderBuffer)
		_ = r.Flush()
	}
}
