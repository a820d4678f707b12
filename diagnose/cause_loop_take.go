package diagnose

import "fmt"

// loop_take: the training loop's own handling of each batch (unpickling,
// pinning) is a large share of its time, where the loop, not the workers,
// is the limit.
func init() {
	registerCause(causeRule{id: "loop_take", stages: []string{"take", "pin"}, find: loopTakeCause})
}

func loopTakeCause(in *causeIn) (Cause, bool) {
	s := in.s
	if !s.ok || s.inline || s.workers == 0 {
		return Cause{}, false
	}
	own := s.take + s.pin
	// Only where the loop, not the workers, is the limit: the workers
	// could make batches faster than the loop takes them (issue 39: "205 ms
	// taking each batch" said while the loop waited on busy workers).
	if own <= 0 || !in.atLeast("loop_take", own/s.loop(), s.th.LoopTakeShare) || float64(s.workers)/s.worker() < 1.1/s.loop() {
		return Cause{}, false
	}
	return Cause{
		Evidence: fmt.Sprintf("the training loop spends %s per batch taking it (unpickling %s, pinning %s) of its own %s",
			ms(own), ms(s.take), ms(s.pin), ms(s.loop())),
		Fix:   "hand the loop fewer, smaller tensors (uint8, one stacked tensor instead of many), and pin only what goes to the accelerator",
		Bound: s.bound(stageCut{loop: own}, 2)}, true
}
