package host

import (
	"slices"
	"testing"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
)

func TestNetRatesSkipLoopback(t *testing.T) {
	s := probetest.NewSnapshots(t, "normal")
	p := NewNet(s.Roots().Proc, NetOptions{})
	s.MustCollect(p, "t0")
	n := s.MustCollect(p, "t1").Net
	if len(n) != 1 || n[0].Name != "eth0" {
		t.Fatalf("net = %+v, want eth0 only", n)
	}
	probetest.Near(t, "rx", n[0].RxBytesPerSec, 1000000)
	probetest.Near(t, "tx", n[0].TxBytesPerSec, 250000)
}

func TestNetCounterResetSkipsOneInterval(t *testing.T) {
	s := probetest.NewSnapshots(t, "backwards")
	p := NewNet(s.Roots().Proc, NetOptions{})
	s.MustCollect(p, "t0")
	if n := s.MustCollect(p, "t1").Net; len(n) != 0 {
		t.Fatalf("reset counters gave %+v", n)
	}
	n := s.MustCollect(p, "t2").Net
	if len(n) != 1 {
		t.Fatalf("net = %+v", n)
	}
	probetest.Near(t, "rx after reset", n[0].RxBytesPerSec, 100000)
	probetest.Near(t, "tx after reset", n[0].TxBytesPerSec, 50000)
}

func TestNetHidesVirtualInterfacesUnlessAskedFor(t *testing.T) {
	for _, c := range []struct {
		all  bool
		want []string
	}{{false, []string{"eth0"}}, {true, []string{"eth0", "ifb0", "lo", "veth3f2a"}}} {
		s := probetest.NewSnapshots(t, "virtual-net")
		p := NewNet(s.Roots().Proc, NetOptions{All: c.all})
		s.MustCollect(p, "t0")
		var got []string
		for _, n := range s.MustCollect(p, "t1").Net {
			got = append(got, n.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("all=%v: interfaces %v, want %v", c.all, got, c.want)
		}
	}
}
