package tune

import (
	"context"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/probes"
)

// BenchmarkModelPredictionError measures the real loader on a grid —
// workers {1, 2, 4} × read latency {0, 2 ms} × decode {100 µs, 600 µs} a
// sample — and, from each configuration's window, predicts the other
// worker counts of its row. It reports the median and p90 of
// |predicted / measured − 1| in percent, for the prediction's point (the
// range's low side) and its high side, and the share of the measured
// rates inside the range widened by 15 % either way. It takes about two
// minutes (one run per configuration); CI runs it once (-benchtime 1x).
func BenchmarkModelPredictionError(b *testing.B) {
	if testing.Short() {
		b.Skip("runs the loader for minutes")
	}
	dir := b.TempDir()
	base := loader.Default()
	base.Dataset, base.DatasetSize, base.SampleSize, base.StepTime, base.Persistent = dir, 32<<20, 16<<10, 20*time.Millisecond, true
	ds, err := loader.OpenDataset(base.Dataset, base.DatasetSize, base.Seed)
	if err != nil {
		b.Fatal(err)
	}
	e := &EmbeddedTrials{Base: base, Dataset: ds, Interval: 500 * time.Millisecond, Th: diagnose.DefaultThresholds(),
		Roots: probes.Roots{Proc: "/proc", Sys: "/sys"}}
	var errs, highErrs []float64
	inside := 0
	for range b.N {
		errs, highErrs, inside = errs[:0], highErrs[:0], 0
		for _, lat := range []time.Duration{0, 2 * time.Millisecond} {
			for _, dec := range []time.Duration{100 * time.Microsecond, 600 * time.Microsecond} {
				counts := []int{1, 2, 4}
				measured := map[int]TuneStep{}
				for _, w := range counts {
					e.Base.ReadLatency, e.Base.DecodeCost = lat, dec
					s, err := e.Settle(context.Background(), Setting{"workers": strconv.Itoa(w)}, 12*time.Second)
					if err != nil {
						b.Fatal(err)
					}
					measured[w] = s
				}
				for _, from := range counts {
					p, ok := diagnose.Model(measured[from].Window)
					if !ok {
						b.Fatalf("no model from %d workers", from)
					}
					for _, to := range counts {
						if to == from {
							continue
						}
						k := p.Knobs
						k.Workers = to
						pred, _ := p.Predict(k)
						got := measured[to].Measured.SamplesPerSec
						errs = append(errs, 100*math.Abs(pred.SamplesPerSec/got-1))
						highErrs = append(highErrs, 100*math.Abs(pred.HighSamplesPerSec/got-1))
						if got >= 0.85*pred.SamplesPerSec && got <= 1.15*pred.HighSamplesPerSec {
							inside++
						}
					}
				}
			}
		}
	}
	slices.Sort(errs)
	slices.Sort(highErrs)
	b.ReportMetric(errs[len(errs)/2], "median_err_%")
	b.ReportMetric(errs[len(errs)*9/10], "p90_err_%")
	b.ReportMetric(highErrs[len(highErrs)/2], "high_median_err_%")
	b.ReportMetric(highErrs[len(highErrs)*9/10], "high_p90_err_%")
	b.ReportMetric(100*float64(inside)/float64(len(errs)), "in_range_%")
}
