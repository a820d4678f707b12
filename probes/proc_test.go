package probes

import (
	"testing"
)

func TestProcFocusTreeAndBusiestThreads(t *testing.T) {
	s := newSnapshots(t, "normal")
	p := NewProc(s.roots().Proc, ProcOptions{PID: 100})
	s.mustCollect(p, "t0")
	ps := s.mustCollect(p, "t1").Procs
	if ps.FocusPID != 100 || len(ps.List) != 2 {
		t.Fatalf("procs = %+v, want pid 100 and its worker 200", ps)
	}
	main, worker := ps.List[0], ps.List[1]
	if main.PID != 100 || main.Name != "python (main)" || main.State != "R" || main.Threads != 3 {
		t.Errorf("main = %+v", main)
	}
	near(t, "main cpu", main.CPUPct, 95)
	near(t, "worker cpu", worker.CPUPct, 30)
	if worker.PID != 200 || worker.PPID != 100 {
		t.Errorf("worker = %+v", worker)
	}
	nearPtr(t, "main read bytes/s", main.ReadBytesPerSec, 10485760)
	nearPtr(t, "main write bytes/s", main.WriteBytesPerSec, 1048576)
	nearPtr(t, "main disk read bytes/s", main.DiskReadBytesPerSec, 2097152)
	if len(ps.Threads) < 3 {
		t.Fatalf("threads = %+v", ps.Threads)
	}
	top := ps.Threads[0]
	if top.TID != 100 || top.PID != 100 {
		t.Errorf("busiest thread = %+v, want tid 100", top)
	}
	near(t, "busiest thread cpu", top.CPUPct, 90)
	near(t, "second thread (the worker) cpu", ps.Threads[1].CPUPct, 30)
	if ps.Threads[2].Name != "worker-101" {
		t.Errorf("third thread = %+v", ps.Threads[2])
	}
}

func TestProcTopWithoutFocus(t *testing.T) {
	s := newSnapshots(t, "normal")
	p := NewProc(s.roots().Proc, ProcOptions{Top: 3})
	s.mustCollect(p, "t0")
	ps := s.mustCollect(p, "t1").Procs
	if len(ps.List) != 3 {
		t.Fatalf("list = %+v, want the top 3", ps.List)
	}
	for i, want := range []int{100, 200, 300} {
		if ps.List[i].PID != want {
			t.Errorf("rank %d = pid %d, want %d", i, ps.List[i].PID, want)
		}
	}
	if ps.List[2].ReadBytesPerSec != nil {
		t.Errorf("pid 300 has no readable io file, yet rate = %v", *ps.List[2].ReadBytesPerSec)
	}
}

func TestProcFocusExitedIsAnError(t *testing.T) {
	s := newSnapshots(t, "normal")
	p := NewProc(s.roots().Proc, ProcOptions{PID: 4242})
	if _, err := s.collect(p, "t0"); err == nil {
		t.Fatal("a focus PID that is not there gave no error")
	}
}

func TestParsePidStat(t *testing.T) {
	line := "7 (a) (b) c) R 1 7 7 0 -1 0 0 0 0 0 250 50 0 0 20 0 4 0 99 0 10"
	st, err := parsePidStat([]byte(line), nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(st.comm) != "a) (b) c" || st.state != 'R' || st.ppid != 1 || st.ticks != 300 || st.sticks != 50 || st.threads != 4 || st.starttime != 99 || st.rssPages != 10 {
		t.Fatalf("parsed %+v", st)
	}
	for _, bad := range []string{"", "7 a R", "7 (x) R 1 2", "7 (x) RR 1 7 7 0 -1 0 0 0 0 0 250 50 0 0 20 0 4 0 99 0 10"} {
		if _, err := parsePidStat([]byte(bad), nil); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
