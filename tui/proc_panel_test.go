package tui

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

func procFrame() *sample.Frame {
	gmem := uint64(10 << 30)
	loop := 1
	return &sample.Frame{
		Procs: &sample.Procs{FocusPID: 1, List: []sample.Proc{
			{PID: 2, PPID: 1, Name: "pt_data_worker", CPUPct: 90, RSSBytes: 100 << 20},
			{PID: 3, PPID: 2, Name: "child", CPUPct: 50, RSSBytes: 5 << 30},
			{PID: 1, PPID: 0, Name: "python", CPUPct: 10, RSSBytes: 1 << 30},
			{PID: 4, PPID: 1, Name: "other", CPUPct: 5, RSSBytes: 1 << 20},
		}, Threads: []sample.Thread{
			{TID: 2, PID: 2, Name: "pt_data_worker", CPUPct: 90},
			{TID: 1, PID: 1, Name: "python", CPUPct: 60},
			{TID: 11, PID: 1, Name: "python", CPUPct: 40},
		}},
		GPUs:   []sample.GPU{{Index: 0, Processes: []sample.GPUProcess{{PID: 4, UsedMemBytes: &gmem}}}},
		Loader: &sample.Loader{LoopTID: &loop, WorkerPIDs: []int{2}},
	}
}

func procOrderOf(pv *view) string {
	var names []string
	for _, r := range pv.procRows(pv.frame.Procs) {
		names = append(names, strings.Repeat(">", r.indent)+r.p.Name)
	}
	return strings.Join(names, " ")
}

// TestProcessPanelOrdersFiltersAndTrees: o orders by CPU, RSS or GPU
// memory; t draws children under their parents; a filter keeps what
// matches (with its ancestors in the tree).
func TestProcessPanelOrdersFiltersAndTrees(t *testing.T) {
	th := diagnose.DefaultThresholds()
	pv := &view{frame: procFrame(), st: &Styles{}, th: &th}
	for _, c := range []struct {
		pv   procView
		want string
	}{
		{procView{}, "pt_data_worker child python other"},
		{procView{order: byRSS}, "child python pt_data_worker other"},
		{procView{order: byGPUMem}, "other pt_data_worker child python"},
		{procView{tree: true}, "python >pt_data_worker >>child >other"},
		{procView{tree: true, filter: "CHI"}, "python >pt_data_worker >>child"},
		{procView{filter: "chi"}, "child"},
		{procView{filter: "4"}, "other"},
	} {
		pv.procs = c.pv
		if got := procOrderOf(pv); got != c.want {
			t.Errorf("%+v: %q, want %q", c.pv, got, c.want)
		}
	}
}

// TestThreadsSayWhatTellsThemApart: the loop's thread, a worker's and the
// others are told by their role and TID, not by the process name
// repeated; a thread of another process names it.
func TestThreadsSayWhatTellsThemApart(t *testing.T) {
	th := diagnose.DefaultThresholds()
	pv := &view{frame: procFrame(), st: &Styles{}, th: &th}
	rows := pv.threadRows(pv.frame.Procs)
	want := []string{
		"      2    90 worker      -  (pid 2 pt_data_worker)",
		"      1    60 loop        -",
		"     11    40             -",
	}
	for i, w := range want {
		if strings.TrimRight(rows[i], " ") != w {
			t.Errorf("row %d: %q, want %q", i, rows[i], w)
		}
	}
}
