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
