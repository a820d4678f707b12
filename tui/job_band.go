package tui

import (
	"fmt"

	"github.com/gpuwatch/gpuwatch/sample"
)

// jobBand is gpuwatch run's command under the banner: what runs, where its
// output goes, and its last lines (2, or 4 on a tall terminal). Empty when
// no command was started.
func (m *Model) jobBand(w, h int) []string {
	j := m.shown.Job
	if j == nil {
		return nil
	}
	head := fmt.Sprintf("job pid %d: %s", j.PID, sample.Printable(j.Command))
	if j.Log != "" {
		head += m.styles.Dim.Render("  · its output → " + sample.Printable(j.Log))
	}
	if j.Exited != "" {
		head = m.styles.Warn.Render(fmt.Sprintf("job pid %d %s", j.PID, j.Exited)) + m.styles.Dim.Render("  · "+sample.Printable(j.Command))
		if j.Log != "" {
			head += m.styles.Dim.Render("  · output in " + sample.Printable(j.Log))
		}
	}
	n := 2
	if h >= 40 {
		n = 4
	}
	lines := []string{fit(head, w)}
	tail := j.Tail[max(0, len(j.Tail)-n):]
	for i := 0; i < n; i++ {
		s := ""
		if i < len(tail) {
			s = "  │ " + tail[i]
		} else if i == 0 && len(tail) == 0 && j.Log != "" {
			s = "  │ (no output yet)"
		}
		lines = append(lines, fit(m.styles.Dim.Render(s), w))
	}
	return lines
}
