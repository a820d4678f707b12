package probes

import (
	"errors"
	"testing"
)

func TestPSIAveragesAndIntervalRates(t *testing.T) {
	s := newSnapshots(t, "normal")
	p := NewPSI(s.roots().Proc)
	if f := s.mustCollect(p, "t0"); f.PSI == nil || f.PSI.CPU.SomePct != nil {
		t.Fatalf("first reading = %+v: want averages, no rates", f.PSI)
	}
	psi := s.mustCollect(p, "t1").PSI
	near(t, "cpu some avg10", psi.CPU.SomeAvg10, 1.5)
	nearPtr(t, "cpu some over the interval", psi.CPU.SomePct, 20)
	nearPtr(t, "io some", psi.IO.SomePct, 5)
	nearPtr(t, "io full", psi.IO.FullPct, 3)
	nearPtr(t, "io full avg10", psi.IO.FullAvg10, 0.2)
	nearPtr(t, "memory some", psi.Memory.SomePct, 0)
}

func TestPSIMissingIsUnavailable(t *testing.T) {
	s := newSnapshots(t, "no-pressure")
	_, err := s.collect(NewPSI(s.roots().Proc), "t0")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestPSICPUWithoutFullLineAndCounterBack(t *testing.T) {
	s := newSnapshots(t, "backwards")
	p := NewPSI(s.roots().Proc)
	s.mustCollect(p, "t0")
	psi := s.mustCollect(p, "t1").PSI
	if psi.CPU.FullAvg10 != nil || psi.CPU.FullPct != nil {
		t.Errorf("cpu full = %v, want nil: the file has no full line", psi.CPU.FullAvg10)
	}
	if psi.CPU.SomePct != nil {
		t.Errorf("total went backwards, yet some pct = %v", *psi.CPU.SomePct)
	}
	if psi.IO != nil || psi.Memory != nil {
		t.Errorf("io/memory files are absent, yet filled")
	}
	nearPtr(t, "cpu some after reset", s.mustCollect(p, "t2").PSI.CPU.SomePct, 10)
}
