package gpu

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
)

func TestAMDFromSysfs(t *testing.T) {
	p := NewAMD(filepath.Join("testdata", "amd", "sys"))
	gs, err := p.GPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[0].Index != 0 || gs[1].Index != 2 {
		t.Fatalf("gpus = %+v, want cards 0 and 2 (card1 is Intel, card0-DP-1 a connector)", gs)
	}
	g := gs[0]
	if g.Vendor != "amd" || g.Name != "AMD Instinct MI210" || g.BusID != "0000:c1:00.0" {
		t.Errorf("identity = %+v", g)
	}
	probetest.NearPtr(t, "busy", g.UtilPct, 87)
	probetest.NearPtr(t, "mem busy", g.MemUtilPct, 40)
	probetest.NearPtr(t, "power (µW → W)", g.PowerWatts, 250.5)
	probetest.NearPtr(t, "power cap", g.PowerLimitWatts, 300)
	probetest.NearPtr(t, "temp (m°C → °C)", g.TempC, 65.5)
	if *g.MemUsedBytes != 12<<30 || *g.MemTotalBytes != 64<<30 {
		t.Errorf("vram = %d / %d", *g.MemUsedBytes, *g.MemTotalBytes)
	}
	if g.Unavailable != nil {
		t.Errorf("card0 missing %v", g.Unavailable)
	}
	bare := gs[1]
	if bare.UtilPct != nil || bare.Unavailable["util_pct"] == "" || bare.Unavailable["power_watts"] == "" {
		t.Errorf("card2 = %+v, want util and power unknown with reasons", bare)
	}
	if bare.MemTotalBytes == nil || *bare.MemTotalBytes != 8<<30 {
		t.Errorf("card2 vram total lost: %+v", bare)
	}
}

func TestAMDNoneIsUnavailable(t *testing.T) {
	for _, root := range []string{t.TempDir(), filepath.Join("..", "host", "testdata", "normal", "t0", "sys")} {
		_, err := NewAMD(root).GPUs(context.Background())
		if !errors.Is(err, probes.ErrUnavailable) {
			t.Fatalf("%s: err = %v", root, err)
		}
	}
}

func TestReduceSamplesNearestRank(t *testing.T) {
	vals := make([]float64, 100)
	for i := range vals {
		vals[i] = float64(100 - i) // 100 … 1, unsorted on purpose
	}
	s := reduceSamples(vals)
	if s.N != 100 || s.Min != 1 || s.Max != 100 || s.P5 != 5 || s.P95 != 95 || s.Mean != 50.5 {
		t.Fatalf("%+v", s)
	}
	if reduceSamples(nil) != nil {
		t.Fatal("no samples must be nil, not zeros")
	}
	if one := reduceSamples([]float64{42}); one.P5 != 42 || one.P95 != 42 {
		t.Fatalf("%+v", one)
	}
}

func TestDecodeClockEvents(t *testing.T) {
	if got := decodeClockEvents(0); got == nil || len(got) != 0 {
		t.Fatalf("no reason = %#v, want empty non-nil", got)
	}
	got := decodeClockEvents(0x1 | 0x4 | 0x8000)
	if len(got) != 3 || got[0] != "idle" || got[1] != "power cap" || got[2] != "reason 0x8000" {
		t.Fatalf("%v", got)
	}
}
