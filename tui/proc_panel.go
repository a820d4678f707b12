package tui

import (
	"cmp"
	"fmt"
	"slices"

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
	return 3, 3 + len(p.List) + len(p.Threads) + gpuProcRows(pv.frame)
}

// gpuProcRows is how many lines the GPU processes take: a header and one
// per process (none without GPU processes).
func gpuProcRows(f *sample.Frame) int {
	n := 0
	for i := range f.GPUs {
		n += len(f.GPUs[i].Processes)
	}
	if n == 0 {
		return 0
	}
	return 1 + n
}

// gpuProcLines lists every GPU process: PID, GPU, GPU memory, SM % and
// the command where the process view knows it; by memory, or by SM %
// (the s key).
func (pv *view) gpuProcLines() []string {
	f := pv.frame
	type row struct {
		pid, gpu      int
		mem, sm       float64
		haveSM        bool
		user, command string
	}
	var rows []row
	for i := range f.GPUs {
		for _, p := range f.GPUs[i].Processes {
			r := row{pid: p.PID, gpu: f.GPUs[i].Index, mem: -1, user: p.User, command: p.Command}
			if p.UsedMemBytes != nil {
				r.mem = float64(*p.UsedMemBytes)
			}
			if p.SMUtilPct != nil {
				r.sm, r.haveSM = *p.SMUtilPct, true
			}
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	by := "GPU memory"
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(b.mem, a.mem) })
	if pv.sortBySM {
		by = "SM %"
		slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(b.sm, a.sm) })
	}
	names := map[int]string{}
	if p := f.Procs; p != nil {
		for _, pr := range p.List {
			names[pr.PID] = pr.Name
		}
	}
	out := []string{pv.st.Label.Render(fmt.Sprintf("%7s %5s %8s %4s  %-8s %s", "PID", "GPU", "GPU-MEM", "SM%", "USER", "GPU PROCESS")) + pv.st.Dim.Render("  by "+by+" (s: sort)")}
	for _, r := range rows {
		mem, sm := "-", "-"
		if r.mem >= 0 {
			mem = size(r.mem)
		}
		if r.haveSM {
			sm = fmt.Sprintf("%.0f", r.sm)
		}
		name := r.command
		if name == "" {
			name = names[r.pid]
		}
		out = append(out, fmt.Sprintf("%7d %5d %8s %4s  %-8.8s %s", r.pid, r.gpu, mem, sm, sample.Printable(r.user), sample.Printable(name)))
	}
	return out
}

func (procPanel) draw(pv *view, w, h int) []string {
	p := pv.frame.Procs
	if p == nil {
		return block([]string{pv.st.Dim.Render("processes: " + orNone(pv.frame.Unavailable["proc"]))}, w, h)
	}
	head := "busiest processes"
	if p.FocusPID != 0 {
		head = fmt.Sprintf("pid %d and its %s", p.FocusPID, sample.Plural(max(0, len(p.List)-1), "descendant"))
	}
	rows := []string{pv.st.Label.Render(fmt.Sprintf("%7s %5s %4s %7s %9s %6s  %s", "PID", "CPU%", "THR", "RSS", "READ/s", "MAJF/s", "NAME")) + pv.st.Dim.Render("  "+head)}
	for _, pr := range p.List {
		rows = append(rows, procRow(&pr))
	}
	if len(p.Threads) > 0 {
		rows = append(rows, pv.st.Label.Render(fmt.Sprintf("%7s %5s %4s %7s %9s %6s  %s", "TID", "CPU%", "", "", "", "", "THREAD")))
		for _, t := range p.Threads {
			line := fmt.Sprintf("%7d %5.0f %4s %7s %9s %6s  %s (pid %d)", t.TID, t.CPUPct, "", "", "", faults(t.MajorFaultsPerSec), sample.Printable(t.Name), t.PID)
			if t.CPUPct >= pv.th.SingleThreadPct {
				line = pv.st.Bad.Render(line)
			}
			rows = append(rows, line)
		}
	}
	rows = append(rows, pv.gpuProcLines()...)
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
	return fmt.Sprintf("%7d %5.0f %4d %7s %9s %6s  %s", pr.PID, pr.CPUPct, pr.Threads, size(float64(pr.RSSBytes)), read, faults(pr.MajorFaultsPerSec), sample.Printable(pr.Name))
}

// faults is a major-fault rate for a column: "-" before two readings, ""
// for none (a quiet column), else the rate.
func faults(r *float64) string {
	switch {
	case r == nil:
		return "-"
	case *r < 0.5:
		return ""
	}
	return fmt.Sprintf("%.0f", *r)
}
