package probes

import (
	"context"
	"testing"
	"time"
)

// BenchmarkSamplerTickSystem is one Sampler tick of every system probe on
// this machine's real /proc and /sys. Target: ≤ 1 ms and ≤ 200 allocations.
func BenchmarkSamplerTickSystem(b *testing.B) {
	s := NewSampler(SystemProbes(Roots{}, ProcOptions{}, DiskOptions{}, NetOptions{}), SamplerOptions{Timeout: time.Second})
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
	for _, p := range SystemProbes(Roots{}, ProcOptions{}, DiskOptions{}, NetOptions{}) {
		b.Run(p.Name(), func(b *testing.B) {
			ctx := context.Background()
			tick := time.Now()
			collect := func() {
				tick = tick.Add(time.Second)
				f := frameAt(tick)
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
