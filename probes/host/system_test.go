package host

import (
	"context"
	"runtime"
	"testing"

	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/sample"
)

// systemProbes are this family's probes on r with default options, in the
// order session's probe set adds them.
func systemProbes(r probes.Roots) []probes.Probe {
	r = r.WithDefaults()
	return []probes.Probe{NewCPU(r.Proc), NewMem(r.Proc), NewDisk(r, DiskOptions{}), NewNet(r.Proc, NetOptions{}), NewPSI(r.Proc), NewProc(r.Proc, ProcOptions{})}
}

// TestSystemProbesOnThisMachine runs the real probes on the real /proc: the
// per-core list must match the kernel's CPU count and memory must add up.
func TestSystemProbesOnThisMachine(t *testing.T) {
	s := probes.NewSampler(systemProbes(probes.Roots{}), probes.SamplerOptions{})
	defer s.Close()
	s.Tick(context.Background())
	f := s.Tick(context.Background())
	for _, src := range []sample.Source{sample.SourceCPU, sample.SourceMem, sample.SourceDisk, sample.SourceNet, sample.SourceProc} {
		if r := f.Unavailable[src]; r != "" {
			t.Errorf("%s unavailable on this machine: %s", src, r)
		}
	}
	if f.CPU == nil || len(f.CPU.Cores) != runtime.NumCPU() {
		t.Fatalf("cpu = %+v, want %d cores", f.CPU, runtime.NumCPU())
	}
	if f.Mem == nil || f.Mem.TotalBytes == 0 || f.Mem.AvailableBytes > f.Mem.TotalBytes {
		t.Fatalf("mem = %+v", f.Mem)
	}
	if f.Procs == nil || len(f.Procs.List) == 0 {
		t.Fatalf("procs = %+v", f.Procs)
	}
}
