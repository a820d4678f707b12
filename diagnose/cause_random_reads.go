package diagnose

import "fmt"

// random_reads: io_bound's mapped-file rule holds (the workers fault a
// mapped file's pages in at random), with the stages timed.
func init() {
	registerCause(causeRule{id: "random_reads", stages: []string{"getitem"}, find: randomReadsCause})
}

func randomReadsCause(in *causeIn) (Cause, bool) {
	s := in.s
	if in.d.variant != ioMmap || !s.ok {
		return Cause{}, false
	}
	return Cause{
		Evidence: fmt.Sprintf("%s takes %s of a worker's %s per batch, faulting a mapped file's pages in at random", sampleStageOf(in).short(), ms(s.getitem), ms(s.worker())),
		Fix:      "read contiguous runs: sort or chunk the indices so each read covers neighbouring samples (a sampler over blocks), or read the file sequentially",
		Bound:    s.bound(stageCut{worker: s.getitem}, 4)}, true
}
