package host

import (
	"testing"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
)

func TestMemBytesAndRates(t *testing.T) {
	s := probetest.NewSnapshots(t, "normal")
	p := NewMem(s.Roots().Proc)
	m0 := s.MustCollect(p, "t0").Mem
	if m0 == nil || m0.SwapInPagesPerSec != nil {
		t.Fatalf("first reading = %+v: want bytes but no rates", m0)
	}
	m := s.MustCollect(p, "t1").Mem
	const kib = 1024
	if m.TotalBytes != 16384000*kib || m.AvailableBytes != 8192000*kib || m.CachedBytes != 4096000*kib {
		t.Errorf("bytes = %+v", m)
	}
	if m.UsedBytes != (16384000-8192000)*kib {
		t.Errorf("used = %d, want total - available", m.UsedBytes)
	}
	if m.SwapUsedBytes != (2097152-1048576)*kib {
		t.Errorf("swap used = %d", m.SwapUsedBytes)
	}
	probetest.NearPtr(t, "swap in", m.SwapInPagesPerSec, 50)
	probetest.NearPtr(t, "swap out", m.SwapOutPagesPerSec, 200)
	probetest.NearPtr(t, "major faults", m.MajorFaultsPerSec, 100)
}

func TestParseMeminfoWithoutMemAvailableUsesFree(t *testing.T) {
	m, err := parseMeminfo([]byte("MemTotal: 1000 kB\nMemFree: 300 kB\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.available != 300*1024 {
		t.Fatalf("available = %d, want MemFree", m.available)
	}
	if _, err := parseMeminfo([]byte("MemFree: 1 kB\n"), nil); err == nil {
		t.Fatal("accepted meminfo without MemTotal")
	}
}
