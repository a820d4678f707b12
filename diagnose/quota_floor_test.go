package diagnose

import (
	"math"
	"testing"
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
