package loader

import (
	"context"
	"testing"
	"time"
)

func benchRun(b *testing.B, c Config, ds *Dataset) (time.Duration, Snapshot) {
	b.Helper()
	l := New(c, ds, nil)
	start := time.Now()
	if err := l.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	return time.Since(start), l.Snapshot()
}

// BenchmarkOverheadPerSample is the pipeline's own cost per sample with no
// work: samples of 64 bytes from RAM, no decode, no step. Target ≤ 2 µs.
func BenchmarkOverheadPerSample(b *testing.B) {
	for _, workers := range []int{0, 2} {
		b.Run(map[int]string{0: "workers=0", 2: "workers=2"}[workers], func(b *testing.B) {
			c, ds := small(b)
			c.SampleSize, c.BatchSize, c.DatasetSize = 64, 64, 1<<20
			c.Workers, c.Prefetch, c.Cache = workers, 2*min(workers, 1), true
			c.DecodeCost, c.StepTime, c.WorkerStart, c.Epochs = 0, 0, 0, 1
			if err := ds.LoadIntoMemory(); err != nil {
				b.Fatal(err)
			}
			// One epoch is 16384 samples; run enough epochs for b.N.
			c.Epochs = max(1, b.N/c.Samples())
			b.ResetTimer()
			d, s := benchRun(b, c, ds)
			b.ReportMetric(float64(d.Nanoseconds())/float64(s.Samples), "ns/sample")
		})
	}
}

// BenchmarkSequentialPageCached reads a page-cached dataset in order with
// one worker, 64 KiB per sample and per pread, no decode, no step: the
// figure to put beside fio's psync sequential read at bs=64k
// (bench/fio-vs-loader.sh). Target ≥ 70 % of fio.
func BenchmarkSequentialPageCached(b *testing.B) {
	c := Default()
	c.SampleSize, c.BatchSize, c.DatasetSize = 64<<10, 16, 256<<20
	c.Workers, c.Prefetch, c.Access = 1, 4, Sequential
	c.DecodeCost, c.StepTime, c.WorkerStart, c.Jitter, c.Epochs = 0, 0, 0, 0, 1
	c.Dataset = DefaultDatasetDir(c.DatasetSize)
	ds, err := OpenDataset(c.Dataset, c.DatasetSize, c.Seed)
	if err != nil {
		b.Fatal(err)
	}
	benchRun(b, c, ds) // warm the page cache
	b.ResetTimer()
	var bytes int64
	var d time.Duration
	for i := 0; i < b.N; i++ {
		di, s := benchRun(b, c, ds)
		d += di
		bytes += int64(s.BytesRead)
	}
	b.ReportMetric(float64(bytes)/d.Seconds()/(1<<20), "MiB/s")
}
