package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
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
		return block([]string{pv.st.Dim.Render("processes: " + orNone(pv.frame.Unavailable[sample.SourceProc]))}, w, h)
	}
	// How the list is drawn first (it changes with the keys), then what
	// it holds: a narrow panel cuts the end.
	head := "by " + procOrderNames[pv.procs.order]
	if pv.procs.tree {
		head += " · tree"
	}
	switch {
	case pv.filtering:
		head += " · filter: " + sample.Printable(pv.procs.filter) + "▏"
	case pv.procs.filter != "":
		head += " · filter " + strconv.Quote(pv.procs.filter)
	}
	if p.FocusPID != 0 {
		head += fmt.Sprintf(" · pid %d and its %s", p.FocusPID, sample.Plural(max(0, len(p.List)-1), "descendant"))
	} else {
		head += " · the busiest processes"
	}
	rows := []string{pv.st.Label.Render(fmt.Sprintf("%7s %5s %4s %7s %9s %6s  %s", "PID", "CPU%", "THR", "RSS", "READ/s", "MAJF/s", "NAME")) + pv.st.Dim.Render("  "+head)}
	for _, r := range pv.procRows(p) {
		rows = append(rows, procRow(r.p, r.indent))
	}
	if ts := pv.threadRows(p); len(ts) > 0 {
		rows = append(rows, pv.st.Label.Render(fmt.Sprintf("%7s %5s %-6s %6s  %s", "TID", "CPU%", "ROLE", "MAJF/s", "THREAD")))
		rows = append(rows, ts...)
	}
	rows = append(rows, pv.gpuProcLines()...)
	// The header stays; the rest scrolls.
	off := min(pv.scroll, max(0, len(rows)-h))
	out := append([]string{rows[0]}, rows[1+off:]...)
	return block(out, w, h)
}

// procOrder is the process panel's order (the o key).
type procOrder int

const (
	byCPU procOrder = iota
	byRSS
	byGPUMem
	numProcOrders
)

var procOrderNames = [numProcOrders]string{"CPU", "RSS", "GPU memory"}

// procView is how the process panel lists: its order, a tree of parents
// and children (the t key), and a filter on names (/ or f).
type procView struct {
	order  procOrder
	tree   bool
	filter string
}

// maxFilter bounds the filter typed, in runes.
const maxFilter = 64

// filterKey types the process filter: enter keeps it, esc clears it.
func (m *Model) filterKey(msg tea.KeyPressMsg) {
	f := []rune(m.procs.filter)
	switch msg.String() {
	case "enter":
		m.filtering = false
	case "esc":
		m.filtering, m.procs.filter = false, ""
	case "backspace":
		if len(f) > 0 {
			m.procs.filter = string(f[:len(f)-1])
		}
	default:
		if t := msg.Text; t != "" && len(f) < maxFilter && sample.Printable(t) == t {
			m.procs.filter += t
		}
	}
	m.scroll[pProcs] = 0
}

// shownProc is a process row: the process and its depth in the tree.
type shownProc struct {
	p      *sample.Proc
	indent int
}

// procRows orders and filters the processes; as a tree, each child comes
// under its parent (siblings in the order), and a filter keeps the
// matching processes with their ancestors.
func (pv *view) procRows(p *sample.Procs) []shownProc {
	list := pv.sortedProcs(p)
	if !pv.procs.tree {
		var out []shownProc
		for _, pr := range list {
			if pv.procMatches(pr) {
				out = append(out, shownProc{p: pr})
			}
		}
		return out
	}
	return pv.procTree(list)
}

// sortedProcs lists the processes in the panel's order (CPU, RSS or GPU
// memory summed over the GPUs, highest first); ties keep the frame's order.
func (pv *view) sortedProcs(p *sample.Procs) []*sample.Proc {
	gpuMem := map[int]float64{}
	for i := range pv.frame.GPUs {
		for _, gp := range pv.frame.GPUs[i].Processes {
			if gp.UsedMemBytes != nil {
				gpuMem[gp.PID] += float64(*gp.UsedMemBytes)
			}
		}
	}
	list := make([]*sample.Proc, len(p.List))
	for i := range p.List {
		list[i] = &p.List[i]
	}
	slices.SortStableFunc(list, func(a, b *sample.Proc) int {
		switch pv.procs.order {
		case byRSS:
			return cmp.Compare(b.RSSBytes, a.RSSBytes)
		case byGPUMem:
			return cmp.Compare(gpuMem[b.PID], gpuMem[a.PID])
		}
		return cmp.Compare(b.CPUPct, a.CPUPct)
	})
	return list
}

// procMatches reports whether a process passes the filter: no filter, a
// case-blind part of its name, or its exact PID.
func (pv *view) procMatches(pr *sample.Proc) bool {
	return pv.procs.filter == "" || strings.Contains(strings.ToLower(pr.Name), strings.ToLower(pv.procs.filter)) ||
		strconv.Itoa(pr.PID) == pv.procs.filter
}

// procTree lays the sorted processes out as a tree: each child under its
// parent, a process whose parent is not listed (or is itself) a root, and
// only the processes that match or have a descendant that does, at most
// maxTreeDepth deep.
func (pv *view) procTree(list []*sample.Proc) []shownProc {
	byPID := map[int]*sample.Proc{}
	children := map[int][]*sample.Proc{}
	for _, pr := range list {
		byPID[pr.PID] = pr
	}
	var roots []*sample.Proc
	for _, pr := range list {
		if _, ok := byPID[pr.PPID]; ok && pr.PPID != pr.PID {
			children[pr.PPID] = append(children[pr.PPID], pr)
		} else {
			roots = append(roots, pr)
		}
	}
	// keep: a process that matches, or has a descendant that does.
	keep := map[int]bool{}
	var mark func(pr *sample.Proc, depth int) bool
	mark = func(pr *sample.Proc, depth int) bool {
		k := pv.procMatches(pr)
		if depth < maxTreeDepth {
			for _, c := range children[pr.PID] {
				k = mark(c, depth+1) || k
			}
		}
		keep[pr.PID] = k
		return k
	}
	for _, r := range roots {
		mark(r, 0)
	}
	var out []shownProc
	var walk func(pr *sample.Proc, depth int)
	walk = func(pr *sample.Proc, depth int) {
		if !keep[pr.PID] {
			return
		}
		out = append(out, shownProc{p: pr, indent: depth})
		if depth < maxTreeDepth {
			for _, c := range children[pr.PID] {
				walk(c, depth+1)
			}
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return out
}

// maxTreeDepth bounds the tree drawn (a PID cycle in a hostile recording
// cannot recurse for ever).
const maxTreeDepth = 32

// threadRows are the busiest threads, each with what tells it from the
// others: its TID, the role gpuwatch gave it (the training loop's thread,
// a loader worker's, the process's main thread), its name where it is not
// its process's, and its process where that is not the focused one.
func (pv *view) threadRows(p *sample.Procs) []string {
	names := map[int]string{}
	for _, pr := range p.List {
		names[pr.PID] = pr.Name
	}
	var out []string
	for _, t := range p.Threads {
		role := t.Role // as the frame's AssignRoles set it, the diagnosis's rule
		if role == "" {
			role = sample.RoleOf(t, pv.frame.Loader) // a frame from before roles were stored
		}
		name := sample.Printable(t.Name)
		if name == sample.Printable(names[t.PID]) {
			name = ""
		}
		if t.PID != p.FocusPID || p.FocusPID == 0 {
			name = strings.TrimSpace(name + fmt.Sprintf(" (pid %d %s)", t.PID, sample.Printable(names[t.PID])))
		}
		if f := pv.procs.filter; f != "" && !strings.Contains(strings.ToLower(t.Name+" "+string(role)), strings.ToLower(f)) {
			continue
		}
		line := fmt.Sprintf("%7d %5.0f %-6s %6s  %s", t.TID, t.CPUPct, role, faults(t.MajorFaultsPerSec), name)
		if t.CPUPct >= pv.th.SingleThreadPct {
			line = pv.st.Bad.Render(line)
		}
		out = append(out, line)
	}
	return out
}

func procRow(pr *sample.Proc, indent int) string {
	read := "-"
	if pr.ReadBytesPerSec != nil {
		read = size(*pr.ReadBytesPerSec)
	}
	name := sample.Printable(pr.Name)
	if indent > 0 {
		name = strings.Repeat("  ", indent-1) + "└ " + name
	}
	return fmt.Sprintf("%7d %5.0f %4d %7s %9s %6s  %s", pr.PID, pr.CPUPct, pr.Threads, size(float64(pr.RSSBytes)), read, faults(pr.MajorFaultsPerSec), name)
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
