package host

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
)

// BenchmarkSamplerTickSystem is one Sampler tick of every system probe on
// this machine's real /proc and /sys. Target: ≤ 1 ms and ≤ 200 allocations.
func BenchmarkSamplerTickSystem(b *testing.B) {
	s := probes.NewSampler(systemProbes(probes.Roots{}), probes.SamplerOptions{Timeout: time.Second})
	defer s.Close()
	ctx := context.Background()
	s.Tick(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Tick(ctx)
	}
}

// BenchmarkProbeCollect measures each system probe alone on the real /proc.
func BenchmarkProbeCollect(b *testing.B) {
	for _, p := range systemProbes(probes.Roots{}) {
		b.Run(p.Name(), func(b *testing.B) {
			ctx := context.Background()
			tick := time.Now()
			collect := func() {
				tick = tick.Add(time.Second)
				f := probetest.FrameAt(tick)
				if err := p.Collect(ctx, f); err != nil {
					b.Fatal(err)
				}
			}
			collect()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				collect()
			}
		})
	}
}
