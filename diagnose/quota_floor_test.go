package diagnose

import (
	"math"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestAQuotaIsTheWorkersCeilingLessTheLoop (a review): a job held at a
// 0.5-CPU quota, its loop's thread using 0.12 of it, was given the whole
// half CPU for its workers (the 0.5 floor unconfined boxes get), and was
// told 2 → 3 workers for 1.2×; by hand the third gave 2 %. The workers
// get what the quota leaves the loop.
func TestAQuotaIsTheWorkersCeilingLessTheLoop(t *testing.T) {
	w := read(quotaFrames(true, nil), DefaultThresholds())
	p, ok := pipeline(&w)
	if !ok {
		t.Fatal("no pipeline")
	}
	if want := 0.5 - p.LoopCPUs - p.SpinCPUs; p.LoopCPUs <= 0 || math.Abs(p.CPUs-want) > 1e-9 {
		t.Errorf("workers' CPUs %.3f (loop %.3f): want the quota less the loop, %.3f", p.CPUs, p.LoopCPUs, want)
	}
}

// TestAQuotaCapsTheSplitPipelinesWorkersToo: gpuwatch's own loader (its
// read and decode seconds timed) at the same quota gets the same ceiling
// (a review: the fix reached one of the two pipelines).
func TestAQuotaCapsTheSplitPipelinesWorkersToo(t *testing.T) {
	frames := quotaFrames(true, nil)
	for i := range frames {
		rd, dc := 0.02, 0.4
		frames[i].Loader.ReadSecPerSec, frames[i].Loader.DecodeSecPerSec = &rd, &dc
	}
	w := read(frames, DefaultThresholds())
	p, ok := pipeline(&w)
	if !ok {
		t.Fatal("no pipeline")
	}
	if p.CPUs >= 0.5 || p.CPUs < 0.125 {
		t.Errorf("workers' CPUs %.3f at a 0.5 quota, its loop using 0.12: want what the quota leaves", p.CPUs)
	}
}

// TestTheWorkersHaveWhatTheyWereSeenToUse (a user's review): one worker
// process using 0.67 of a core while another job kept the box busy was
// held to "the 0.5 CPUs the workers have … at most 19 batches/s" beside
// 23.9 measured. The workers' CPUs are never fewer than they used, and
// the rate the CPUs allow is never below the measured one.
//
// On a GPU box of 8 cores the training process keeps a core (KeepCPUs),
// which must not take back what the workers had (a review: 18 batches/s
// beside 23.9). Where their CPU was not read, their wall time a batch is
// no CPU they were seen to use: 8 workers waiting on storage read as "the
// 8.0 CPUs the workers have" on a 2-core box (a review).
func TestTheWorkersHaveWhatTheyWereSeenToUse(t *testing.T) {
	for _, gpuBox := range []bool{false, true} {
		p := workersSeenToUse(t, gpuBox, 1, false)
		if p.CPUs < 0.67-1e-9 {
			t.Errorf("GPU box %v: workers' CPUs %.3f, they used 0.67", gpuBox, p.CPUs)
		}
		if r := p.cpuRate(p.CPUSec); r < 23.9-1e-6 {
			t.Errorf("GPU box %v: the CPUs allow %.1f batches/s: 23.9 were measured", gpuBox, r)
		}
	}
	for _, n := range []int{1, 4, 8} {
		if p := workersSeenToUse(t, false, n, true); p.CPUs > 2 {
			t.Errorf("%d workers, CPU unread: %.1f CPUs on a 2-core box", n, p.CPUs)
		}
	}
}

func workersSeenToUse(t *testing.T, gpuBox bool, n int, unread bool) *Pipeline {
	t.Helper()
	frames := quotaFrames(false, nil)
	for i := range frames {
		f := &frames[i]
		f.Job = nil
		f.CPU.BusyPct, f.CPU.Cores[0].BusyPct, f.CPU.Cores[1].BusyPct = 98, 98, 98 // another job takes the rest
		if gpuBox {
			for c := 2; c < 8; c++ {
				f.CPU.Cores = append(f.CPU.Cores, sample.Core{ID: c, BusyPct: 98})
			}
			util := 40.0
			f.GPUs = []sample.GPU{{Index: 0, Name: "NVIDIA H100", Vendor: "nvidia", UtilPct: &util}}
		}
		hookLoop(f, 23.9, 0.5, 20, n, 67, map[string]string{"persistent": "true", "pin": "false"})
		if unread {
			f.Procs.List = f.Procs.List[:1] // the workers' CPU not read
		}
	}
	w := read(frames, DefaultThresholds())
	p, ok := pipeline(&w)
	if !ok {
		t.Fatal("no pipeline")
	}
	return p
}
