package host

import (
	"testing"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
)

func TestCPUSharesPerCoreAndTotal(t *testing.T) {
	s := probetest.NewSnapshots(t, "normal")
	p := NewCPU(s.Roots().Proc)
	if f := s.MustCollect(p, "t0"); f.CPU != nil {
		t.Fatal("first reading has no baseline, yet CPU was filled")
	}
	c := s.MustCollect(p, "t1").CPU
	if c == nil || len(c.Cores) != 2 {
		t.Fatalf("cpu = %+v, want 2 cores", c)
	}
	// cpu0: +90 user +5 system +5 idle of 100 ticks; cpu1: +10 user +80 idle +10 iowait.
	probetest.Near(t, "cpu0 busy", c.Cores[0].BusyPct, 95)
	probetest.Near(t, "cpu0 user", c.Cores[0].UserPct, 90)
	probetest.Near(t, "cpu0 system", c.Cores[0].SystemPct, 5)
	probetest.Near(t, "cpu1 busy", c.Cores[1].BusyPct, 10)
	probetest.Near(t, "cpu1 iowait", c.Cores[1].IowaitPct, 10)
	probetest.Near(t, "total busy", c.BusyPct, 52.5)
	probetest.Near(t, "total iowait", c.IowaitPct, 5)
	probetest.Near(t, "context switches/s", c.ContextSwitchesPerSec, 1500)
	probetest.Near(t, "load1", c.Load1, 1.5)
	probetest.Near(t, "load15", c.Load15, 0.25)
	if c.ProcsRunning != 2 {
		t.Errorf("procs_running = %d, want 2", c.ProcsRunning)
	}
}

func TestCPU256CoresHalfBusy(t *testing.T) {
	s := probetest.NewSnapshots(t, "cores256")
	p := NewCPU(s.Roots().Proc)
	s.MustCollect(p, "t0")
	c := s.MustCollect(p, "t1").CPU
	if len(c.Cores) != 256 {
		t.Fatalf("%d cores, want 256", len(c.Cores))
	}
	for _, k := range c.Cores {
		want := 0.0
		if k.ID < 128 {
			want = 100
		}
		if k.BusyPct != want {
			t.Fatalf("cpu%d busy %v, want %v", k.ID, k.BusyPct, want)
		}
	}
	probetest.Near(t, "total busy", c.BusyPct, 50)
	if c.ProcsRunning != 130 {
		t.Errorf("run queue %d, want 130", c.ProcsRunning)
	}
}

func TestCPUCountersBackwardsAndHotplugStayInRange(t *testing.T) {
	s := probetest.NewSnapshots(t, "backwards")
	p := NewCPU(s.Roots().Proc)
	s.MustCollect(p, "t0")
	c1 := s.MustCollect(p, "t1").CPU
	// iowait went 500→450: counted as 0, so cpu0 is 50 user of 150 ticks.
	if len(c1.Cores) != 1 || c1.Cores[0].ID != 0 {
		t.Fatalf("t1 cores = %+v, want only cpu0 (cpu1 went offline)", c1.Cores)
	}
	probetest.Near(t, "cpu0 busy after iowait went back", c1.Cores[0].BusyPct, 100*50.0/150)
	probetest.Near(t, "cpu0 iowait", c1.Cores[0].IowaitPct, 0)
	c2 := s.MustCollect(p, "t2").CPU
	// cpu1 is back, but has no baseline yet.
	if len(c2.Cores) != 1 {
		t.Fatalf("t2 cores = %+v, want cpu0 only until cpu1 has a baseline", c2.Cores)
	}
	for _, c := range []float64{c1.BusyPct, c1.IowaitPct, c2.BusyPct, c2.UserPct} {
		if c < 0 || c > 100 {
			t.Fatalf("share %v out of range", c)
		}
	}
}

func TestParseProcStatRejectsGarbage(t *testing.T) {
	tests := []struct {
		name, in string
	}{
		{"empty", ""},
		{"no total line", "cpu0 1 2 3 4\n"},
		{"short cpu line", "cpu 1 2\n"},
		{"letters in counters", "cpu 1 x 3 4 5\n"},
		{"bad cpu number", "cpu 1 2 3 4\ncpuX 1 2 3 4\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var st procStat
			if err := parseProcStat([]byte(tc.in), &st, nil); err == nil {
				t.Fatalf("accepted %q", tc.in)
			}
		})
	}
}

func TestParseProcStatOldKernelFewerColumns(t *testing.T) {
	var st procStat
	// Linux 2.6.0 had only user nice system idle iowait irq softirq.
	if err := parseProcStat([]byte("cpu 1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7\n"), &st, nil); err != nil {
		t.Fatal(err)
	}
	if st.all.softirq != 7 || st.all.steal != 0 || len(st.cores) != 1 {
		t.Fatalf("parsed %+v", st)
	}
}
