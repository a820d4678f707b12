package diagnose

import (
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// BenchmarkClassify256Cores8GPUs classifies a 60-frame window of a
// 256-core, 8-GPU machine with a loader. Target ≤ 100 µs.
func BenchmarkClassify256Cores8GPUs(b *testing.B) {
	fs := frames(60, func(i int, f *sample.Frame) {
		host(f, 40, 1, 30)
		for c := 16; c < 256; c++ {
			f.CPU.Cores = append(f.CPU.Cores, sample.Core{ID: c, BusyPct: float64(c % 100)})
		}
		for d := 0; d < 15; d++ {
			f.Disks = append(f.Disks, sample.Disk{Name: "nvme", BusyPct: float64(d)})
		}
		gpus(f, 8, 60, 0, 100)
		loader(f, 0.3, 64, 2, 30)
		thread(f, 70)
	})
	th := DefaultThresholds()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Classify(fs, th)
	}
}

// BenchmarkDiagnoserObserve is the per-frame cost in a live session.
func BenchmarkDiagnoserObserve(b *testing.B) {
	fs := frames(64, func(i int, f *sample.Frame) { host(f, 40, 1, 3); gpus(f, 8, 90, 80, 99); loader(f, 0.02, 8, 1, 3) })
	d := NewDiagnoser(DefaultThresholds())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d.Observe(&fs[i%len(fs)])
	}
}
