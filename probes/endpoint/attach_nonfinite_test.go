package endpoint

import (
	"testing"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
)

// TestNonFiniteMetricsDoNotPoisonTheLoader: a NaN histogram sum (valid
// Prometheus text) is dropped instead of turning the wait share into NaN.
func TestNonFiniteMetricsDoNotPoisonTheLoader(t *testing.T) {
	text := "# TYPE gpuwatch_loader_wait_seconds histogram\ngpuwatch_loader_wait_seconds_bucket{le=\"1\"} 5\ngpuwatch_loader_wait_seconds_bucket{le=\"+Inf\"} 5\ngpuwatch_loader_wait_seconds_sum NaN\ngpuwatch_loader_wait_seconds_count 5\ngpuwatch_loader_batches_total 5\n"
	c, _, err := CountersFromMetrics([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeLoader{c: LoaderCounters{Buckets: c.Buckets}}
	p := NewLoader(src)
	collectLoader(t, p, probetest.T0)
	src.c = c
	l := collectLoader(t, p, probetest.T0.Add(1e9)).Loader
	for _, q := range []*float64{l.WaitShare, l.WaitMeanMs} {
		if q != nil && *q != *q {
			t.Fatal("NaN from a NaN sum")
		}
	}
	if c.Batches != 5 || c.Wait.Count != 0 {
		t.Fatalf("want the batches kept and the broken histogram dropped: %+v", c)
	}
	c2, _, err := CountersFromMetrics([]byte("gpuwatch_loader_read_seconds_total +Inf\ngpuwatch_loader_queue_depth NaN\ngpuwatch_loader_batches_total 1\n"))
	if err != nil || c2.ReadSeconds != nil || c2.QueueDepth != nil {
		t.Fatalf("non-finite gauges kept: %+v %v", c2, err)
	}
}
