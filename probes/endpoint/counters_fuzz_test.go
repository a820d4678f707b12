package endpoint

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
)

func FuzzCountersFromMetrics(f *testing.F) {
	real, _ := os.ReadFile(filepath.Join("testdata", "attach", "loader-metrics.txt"))
	f.Add(real)
	f.Add([]byte("gpuwatch_loader_batches_total 1\n"))
	hook, _ := os.ReadFile(filepath.Join("testdata", "attach", "hook-stages-metrics.txt"))
	f.Add(hook)
	settings, _ := os.ReadFile(filepath.Join("testdata", "attach", "hook-settings-metrics.txt"))
	f.Add(settings)
	ceiling, _ := os.ReadFile(filepath.Join("testdata", "attach", "hook-ceiling-metrics.txt"))
	f.Add(ceiling)
	cost, _ := os.ReadFile(filepath.Join("testdata", "attach", "hook-cost-metrics.txt"))
	f.Add(cost)
	f.Add([]byte("gpuwatch_loader_batches_total 1\ngpuwatch_hook_cpu_seconds_total NaN\n"))
	// Whatever a loader's endpoint serves, counters it yields must go
	// through the loader probe without a panic, a wait share outside 0–1
	// or a NaN percentile.
	f.Fuzz(func(t *testing.T, text []byte) {
		c, _, err := CountersFromMetrics(text)
		if err != nil {
			return
		}
		src := &fakeLoader{c: LoaderCounters{Buckets: c.Buckets}}
		p := NewLoader(src)
		collectLoader(t, p, probetest.T0)
		src.c = c
		l := collectLoader(t, p, probetest.T0.Add(time.Second)).Loader
		if l.WaitShare != nil && (*l.WaitShare < 0 || *l.WaitShare > 1) {
			t.Fatalf("wait share %v", *l.WaitShare)
		}
		for _, q := range []*float64{l.WaitP50Ms, l.WaitP95Ms, l.WaitP99Ms, l.WaitMeanMs} {
			if q != nil && *q != *q {
				t.Fatal("NaN wait figure")
			}
		}
		// The stages and the payload: shares within 0–1, no NaN, no
		// negative time.
		if s := l.Stages; s != nil {
			for _, v := range []*float64{s.GetitemShare, s.CollateShare, s.HandoverShare} {
				if v != nil && !(*v >= 0 && *v <= 1) {
					t.Fatalf("stage share %v", *v)
				}
			}
			for _, v := range []*float64{s.GetitemMs, s.CollateMs, s.HandoverMs, s.TakeMs, s.PinMs, s.StepMs, s.FirstBatchMs} {
				if v != nil && !(*v >= 0) {
					t.Fatalf("stage time %v", *v)
				}
			}
		}
		if c := l.Ceiling; c != nil {
			if len(c.Reason) > maxCeilingReason {
				t.Fatalf("reason of %d bytes", len(c.Reason))
			}
			for _, v := range []*float64{c.SamplesPerSec, c.BatchesPerSec, c.StepMs, c.StarvingStepMs, c.BeforeSamplesPerSec, c.Seconds} {
				if v != nil && !(*v >= 0) {
					t.Fatalf("ceiling figure %v", *v)
				}
			}
			if cost, _, ok := l.InputCost(); ok && !(cost >= 0 && cost <= 1) {
				t.Fatalf("input cost %v", cost)
			}
		}
		for _, v := range []*float64{l.HookCPUSecPerSec, l.HookCPUPerSampleUs} {
			if v != nil && !(*v >= 0 && *v <= 1e9) {
				t.Fatalf("hook cost %v", *v)
			}
		}
		if p := l.Payload; p != nil {
			for _, v := range []*float64{p.Float64Share, p.PinnedShare, p.PaddingShare} {
				if v != nil && !(*v >= 0 && *v <= 1) {
					t.Fatalf("payload share %v", *v)
				}
			}
			if len(p.Tensors) > maxPayloadTensors {
				t.Fatalf("%d tensors", len(p.Tensors))
			}
		}
	})
}
