package tui

import (
	"fmt"

	"github.com/gpuwatch/gpuwatch/sample"
)

// procPanel lists the focused process tree (--pid, or the demo's own
// process) or the busiest processes, then the busiest threads: a thread
// near 100 % is a pegged core.
type procPanel struct{}

func (procPanel) want(pv *view, w int) (int, int) {
	p := pv.frame.Procs
	if p == nil {
		return 2, 2
	}
	return 3, 3 + len(p.List) + len(p.Threads)
}

func (procPanel) draw(pv *view, w, h int) []string {
	p := pv.frame.Procs
	if p == nil {
		return block([]string{pv.st.Dim.Render("processes: " + orNone(pv.frame.Unavailable["proc"]))}, w, h)
	}
	head := "busiest processes"
	if p.FocusPID != 0 {
		head = fmt.Sprintf("pid %d and its %d descendants", p.FocusPID, max(0, len(p.List)-1))
	}
	rows := []string{pv.st.Label.Render(fmt.Sprintf("%7s %5s %4s %7s %9s  %s", "PID", "CPU%", "THR", "RSS", "READ/s", "NAME")) + pv.st.Dim.Render("  "+head)}
	for _, pr := range p.List {
		rows = append(rows, procRow(&pr))
	}
	if len(p.Threads) > 0 {
		rows = append(rows, pv.st.Label.Render(fmt.Sprintf("%7s %5s %4s %7s %9s  %s", "TID", "CPU%", "", "", "", "THREAD")))
		for _, t := range p.Threads {
			line := fmt.Sprintf("%7d %5.0f %4s %7s %9s  %s (pid %d)", t.TID, t.CPUPct, "", "", "", sample.Printable(t.Name), t.PID)
			if t.CPUPct >= 90 {
				line = pv.st.Bad.Render(line)
			}
			rows = append(rows, line)
		}
	}
	// The header stays; the rest scrolls.
	off := min(pv.scroll, max(0, len(rows)-h))
	out := append([]string{rows[0]}, rows[1+off:]...)
	return block(out, w, h)
}

func procRow(pr *sample.Proc) string {
	read := "-"
	if pr.ReadBytesPerSec != nil {
		read = size(*pr.ReadBytesPerSec)
	}
	return fmt.Sprintf("%7d %5.0f %4d %7s %9s  %s", pr.PID, pr.CPUPct, pr.Threads, size(float64(pr.RSSBytes)), read, sample.Printable(pr.Name))
}
