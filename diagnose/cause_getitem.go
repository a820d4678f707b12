package diagnose

import (
	"fmt"

	"github.com/gpuwatch/gpuwatch/sample"
)

// getitem: the dataset's __getitem__ takes most of a CPU-bound worker's
// time, and the workers' profile names no part of it (causeExclusions).
func init() {
	registerCause(causeRule{id: "getitem", stages: []string{"getitem"}, find: getitemCause})
}

func getitemCause(in *causeIn) (Cause, bool) {
	s, p := in.s, in.w.profile
	if !s.ok || !in.waits || !s.cpuBound || !in.atLeast("getitem", s.getitem/s.worker(), s.th.GetitemShare) {
		return Cause{}, false
	}
	where := "a worker's"
	if s.inline || s.workers == 0 {
		where = "the loop's (num_workers=0)"
	}
	evidence := fmt.Sprintf("the dataset's __getitem__ takes %.0f %% of %s %s per batch (%s for %.0f samples)",
		100*s.getitem/s.worker(), where, ms(s.worker()), ms(s.getitem), s.batch)
	if f, share, ok := busiestInGetitem(p); ok {
		evidence += fmt.Sprintf("; the workers' profile finds %.0f %% of their CPU in %s", 100*share, f)
	}
	return Cause{
		Evidence: evidence,
		Fix:      "do less per sample in __getitem__: keep the data as tensors and slice them (no Python loop or torch.tensor per sample), or preprocess once and cache; a CPU profile of the workers says which part",
		Bound:    s.bound(stageCut{worker: s.getitem}, 2)}, true
}

// busiestInGetitem is the workers' busiest function outside collating,
// the hand-over and waiting (so, most likely, __getitem__'s: the job's own
// line where no category names it), with where it is and its share of the
// workers' CPU; none without the workers' profile.
func busiestInGetitem(p *sample.Profile) (string, float64, bool) {
	if p == nil {
		return "", 0, false
	}
	for _, f := range p.WorkersTop {
		switch profileCategoryOf(f) {
		case sample.CatCollating, sample.CatSerializing, sample.CatWaiting, sample.CatInterpreter, sample.CatGC:
			continue
		}
		return placeOf(f), f.Flat, true
	}
	return "", 0, false
}
