package host

import (
	"errors"
	"testing"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
)

func TestPSIAveragesAndIntervalRates(t *testing.T) {
	s := probetest.NewSnapshots(t, "normal")
	p := NewPSI(s.Roots().Proc)
	if f := s.MustCollect(p, "t0"); f.PSI == nil || f.PSI.CPU.SomePct != nil {
		t.Fatalf("first reading = %+v: want averages, no rates", f.PSI)
	}
	psi := s.MustCollect(p, "t1").PSI
	probetest.Near(t, "cpu some avg10", psi.CPU.SomeAvg10, 1.5)
	probetest.NearPtr(t, "cpu some over the interval", psi.CPU.SomePct, 20)
	probetest.NearPtr(t, "io some", psi.IO.SomePct, 5)
	probetest.NearPtr(t, "io full", psi.IO.FullPct, 3)
	probetest.NearPtr(t, "io full avg10", psi.IO.FullAvg10, 0.2)
	probetest.NearPtr(t, "memory some", psi.Memory.SomePct, 0)
}

func TestPSIMissingIsUnavailable(t *testing.T) {
	s := probetest.NewSnapshots(t, "no-pressure")
	_, err := s.Collect(NewPSI(s.Roots().Proc), "t0")
	if !errors.Is(err, probes.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestPSICPUWithoutFullLineAndCounterBack(t *testing.T) {
	s := probetest.NewSnapshots(t, "backwards")
	p := NewPSI(s.Roots().Proc)
	s.MustCollect(p, "t0")
	psi := s.MustCollect(p, "t1").PSI
	if psi.CPU.FullAvg10 != nil || psi.CPU.FullPct != nil {
		t.Errorf("cpu full = %v, want nil: the file has no full line", psi.CPU.FullAvg10)
	}
	if psi.CPU.SomePct != nil {
		t.Errorf("total went backwards, yet some pct = %v", *psi.CPU.SomePct)
	}
	if psi.IO != nil || psi.Memory != nil {
		t.Errorf("io/memory files are absent, yet filled")
	}
	probetest.NearPtr(t, "cpu some after reset", s.MustCollect(p, "t2").PSI.CPU.SomePct, 10)
}
