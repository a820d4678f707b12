package training

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/probes/host"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestClassifyTraining: which processes of a tree train, which are their
// DataLoader workers, which launch them, for the shapes jobs take.
func TestClassifyTraining(t *testing.T) {
	py := "/usr/bin/python3.11"
	train := "python3 train.py --epochs 3"
	spawn := "python3 -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, pipe_handle=7) --multiprocessing-fork"
	proc := func(pid, ppid int, exe, cmd, maps string, ticks uint64) *procInfo {
		return &procInfo{pid: pid, ppid: ppid, exe: exe, cmdline: cmd, maps: maps, ticks: ticks}
	}
	tests := []struct {
		name  string
		procs []*procInfo
		want  map[int][]int // training PID → its workers
	}{
		{"a script and its forked workers", []*procInfo{
			proc(100, 1, py, train, "libtorch", 50), proc(101, 100, py, train, "libtorch", 90), proc(102, 100, py, train, "libtorch", 80),
		}, map[int][]int{100: {101, 102}}},
		{"workers started by multiprocessing's spawn", []*procInfo{
			proc(100, 1, py, train, "libtorch", 50), proc(101, 100, py, spawn, "libtorch", 90),
		}, map[int][]int{100: {101}}},
		{"the resource tracker is no worker", []*procInfo{
			proc(100, 1, py, train, "libtorch", 50), proc(101, 100, py, "python3 -c from multiprocessing.resource_tracker import main;main(5)", "", 0),
		}, map[int][]int{100: nil}},
		{"torchrun launches ranks: the ranks train, not torchrun", []*procInfo{
			proc(10, 1, py, "python3 /usr/bin/torchrun --nproc-per-node 2 train.py", "libtorch", 5),
			proc(11, 10, py, "python3 -u train.py", "libtorch", 100), proc(12, 10, py, "python3 -u train.py", "libtorch", 300),
			proc(13, 12, py, "python3 -u train.py", "libtorch", 70),
		}, map[int][]int{11: nil, 12: {13}}},
		{"a shell starts the ranks", []*procInfo{
			proc(10, 1, "/usr/bin/bash", "bash launch.sh", "", 0),
			proc(11, 10, py, "python3 train.py", "libtorch", 100), proc(12, 10, py, "python3 train.py", "libtorch", 90),
		}, map[int][]int{11: nil, 12: nil}},
		{"a launcher script with a shell in between", []*procInfo{
			proc(10, 1, py, "python3 launch.py", "libtorch", 1),
			proc(11, 10, "/usr/bin/sh", "sh -c python3 train.py", "", 0), proc(12, 11, py, "python3 train.py", "libtorch", 90),
		}, map[int][]int{12: nil}},
		{"nothing maps torch or CUDA", []*procInfo{
			proc(100, 1, py, "python3 serve.py", "", 50), proc(101, 1, "/usr/bin/yes", "yes", "", 100),
		}, map[int][]int{}},
		{"a C++ program on the GPU", []*procInfo{
			proc(100, 1, "/opt/app/trainer", "trainer --gpus 1", "/dev/nvidia", 50),
		}, map[int][]int{100: nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			procs := map[int]*procInfo{}
			for _, p := range tc.procs {
				procs[p.pid] = p
			}
			got := classifyTraining(procs)
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %v", got, tc.want)
			}
			for _, g := range got {
				want, ok := tc.want[g.PID]
				if !ok || !slices.Equal(g.Workers, want) {
					t.Errorf("pid %d with workers %v: want %v (%v)", g.PID, g.Workers, want, ok)
				}
			}
			for i := 1; i < len(got); i++ {
				if got[i].CPUTicks > got[i-1].CPUTicks {
					t.Errorf("not busiest first: %+v", got)
				}
			}
		})
	}
}

// TestTreeRootOfPgrepMatches: `pgrep -f train.py` prints the training
// process and its workers; --pid takes the root of them, whatever the
// order.
func TestTreeRootOfPgrepMatches(t *testing.T) {
	parent := exec.Command("sh", "-c", "sleep 30 & sleep 30 & wait")
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = parent.Process.Kill(); _ = parent.Wait() }()
	var kids []int
	for deadline := time.Now().Add(5 * time.Second); len(kids) < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(parent.Process.Pid) + "/task/" + strconv.Itoa(parent.Process.Pid) + "/children")
		kids = kids[:0]
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			kids = append(kids, n)
		}
	}
	if len(kids) < 2 {
		t.Skip("no /proc/PID/task/TID/children here")
	}
	for _, pids := range [][]int{{parent.Process.Pid, kids[0], kids[1]}, {kids[1], kids[0], parent.Process.Pid}} {
		if got := TreeRoot("/proc", pids); got != parent.Process.Pid {
			t.Errorf("TreeRoot(%v) = %d, want %d", pids, got, parent.Process.Pid)
		}
	}
	if got := TreeRoot("/proc", []int{kids[1], kids[0]}); got != kids[1] {
		t.Errorf("siblings: TreeRoot = %d, want the first one given (%d)", got, kids[1])
	}
}

// TestFinderSeesALateImport: a script maps torch a second or two after it
// starts; the finder, which saw it without, looks again and finds it. A
// fixture tree stands for /proc (stat, exe, cmdline, maps).
func TestFinderSeesALateImport(t *testing.T) {
	root := t.TempDir()
	dir := root + "/100"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// stat: pid (comm) state ppid … with utime and stime at columns 14, 15.
	stat := "100 (python3) S 1 100 100 0 -1 0 0 0 0 0 250 50 0 0 20 0 1 0 12345 0 10 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	write := func(name, s string) {
		if err := os.WriteFile(dir+"/"+name, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stat", stat)
	write("cmdline", "python3\x00train.py\x00")
	write("maps", "55d0c0000000-55d0c0001000 r--p 00000000 fd:01 100 /usr/bin/python3.11\n")
	if err := os.Symlink("/usr/bin/python3.11", dir+"/exe"); err != nil {
		t.Fatal(err)
	}
	f := NewTrainingFinder(root, nil)
	clock := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	f.now = func() time.Time { return clock }
	if got := f.Find(0); len(got) != 0 {
		t.Fatalf("found %+v before torch was imported", got)
	}
	write("maps", "55d0c0000000-55d0c0001000 r--p 00000000 fd:01 100 /usr/bin/python3.11\n7f00-7f01 r-xp 0 fd:01 200 /usr/lib/python3/dist-packages/torch/lib/libtorch_cpu.so\n")
	if got := f.Find(0); len(got) != 0 {
		t.Fatalf("looked again before %v: %+v", recheck, got)
	}
	// A process that ran no CPU since the first look is not read again
	// (this fixture's maps changed without it: no real process does).
	clock = clock.Add(recheck)
	if got := f.Find(0); len(got) != 0 {
		t.Fatalf("read again a process that did not run: %+v", got)
	}
	// The import took CPU (2.5 s of it): the next look reads it.
	write("stat", strings.Replace(stat, " 250 50 ", " 500 50 ", 1))
	clock = clock.Add(recheck)
	got := f.Find(0)
	if len(got) != 1 || got[0].PID != 100 || got[0].Why != "it maps libtorch" || !got[0].Python || got[0].Command != "python3 train.py" {
		t.Fatalf("after the import: %+v", got)
	}
}

// TestFinderTakesTheProcProbesReading: while the Proc probe's reading is
// fresh, a scan takes every process's numbers from it (here it says the
// other process is the busier one); once it is stale, the finder reads
// /proc itself again.
func TestFinderTakesTheProcProbesReading(t *testing.T) {
	root := t.TempDir()
	for _, p := range []struct{ pid, ticks int }{{100, 300}, {200, 100}} {
		dir := fmt.Sprintf("%s/%d", root, p.pid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		stat := fmt.Sprintf("%d (python3) S 1 %d %d 0 -1 0 0 0 0 0 %d 0 0 0 20 0 1 0 12345 0 10 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", p.pid, p.pid, p.pid, p.ticks)
		for name, s := range map[string]string{
			"stat":    stat,
			"cmdline": "python3\x00train.py\x00",
			"maps":    "7f00-7f01 r-xp 0 fd:01 200 /usr/lib/python3/dist-packages/torch/lib/libtorch_cpu.so\n",
		} {
			if err := os.WriteFile(dir+"/"+name, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink("/usr/bin/python3.11", dir+"/exe"); err != nil {
			t.Fatal(err)
		}
	}
	clock := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	table := new(host.ProcTable)
	table.Store(clock, []host.ProcRow{
		{PID: 100, PPID: 1, Start: 12345, Ticks: 300},
		{PID: 200, PPID: 1, Start: 12345, Ticks: 900},
	})
	f := NewTrainingFinder(root, table)
	f.now = func() time.Time { return clock }
	pids := func(got []TrainingProcess) []int {
		var out []int
		for _, p := range got {
			out = append(out, p.PID)
		}
		return out
	}
	if got := pids(f.Find(0)); !slices.Equal(got, []int{200, 100}) {
		t.Errorf("with a fresh reading: %v, want [200 100] (its ticks)", got)
	}
	clock = clock.Add(tableFresh)
	if got := pids(f.Find(0)); !slices.Equal(got, []int{100, 200}) {
		t.Errorf("with a stale reading: %v, want [100 200] (the stat files' ticks)", got)
	}
}

// TestProcProbeFillsTheTable: a Collect on the real /proc leaves this
// process, with its parent, in the table.
func TestProcProbeFillsTheTable(t *testing.T) {
	table := new(host.ProcTable)
	p := host.NewProc("/proc", host.ProcOptions{Table: table})
	f := &sample.Frame{Time: time.Now()}
	if err := p.Collect(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	rows, ok := table.AppendSince(nil, f.Time.Add(-time.Second))
	if !ok {
		t.Fatal("no fresh reading after a Collect")
	}
	for _, r := range rows {
		if r.PID == os.Getpid() {
			if r.PPID != os.Getppid() || r.Start == 0 {
				t.Errorf("this process: %+v, want parent %d and a start time", r, os.Getppid())
			}
			return
		}
	}
	t.Errorf("this process (%d) is not among %d rows", os.Getpid(), len(rows))
}
