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
	inline := s.inline || s.workers == 0
	where, profiled, which := "a worker's", "the workers' profile finds %.0f %% of their CPU in %s", "a CPU profile of the workers says which part"
	if inline {
		// The loop loads: its own samples under the DataLoader's fetch
		// are the loading's (InlineTop), the rest of its profile is the
		// step's.
		where, profiled, which = "the loop's (num_workers=0)", "the training process's profile finds %.0f %% of its loading's CPU in %s", "a CPU profile of the training process says which part"
		if p != nil && len(p.InlineTop) == 0 {
			profiled = "the training process's profile finds %.0f %% of its CPU in %s"
		}
	}
	st := sampleStageOf(in)
	evidence := fmt.Sprintf("%s takes %.0f %% of %s %s per batch (%s for %.0f samples)",
		st.the(), 100*s.getitem/s.worker(), where, ms(s.worker()), ms(s.getitem), s.batch)
	if f, share, ok := busiestInGetitem(p, inline); ok {
		evidence += fmt.Sprintf("; "+profiled, 100*share, f)
		which = "the profile's busiest function is the place to start"
	}
	fix := "do less per sample in __getitem__: keep the data as tensors and slice them (no Python loop or torch.tensor per sample), or preprocess once and cache; "
	if st.iterable {
		fix = "do less per sample in the dataset's __iter__: keep the data as tensors and yield slices of them (no Python loop or torch.tensor per sample), or preprocess once and cache; "
	}
	return Cause{
		Evidence: evidence,
		Fix:      fix + which,
		Bound:    s.bound(stageCut{worker: s.getitem}, 2)}, true
}

// sampleStage is the dataset's stage that makes each sample (the hook's
// "getitem" stage), as the job's dataset has it: a map-style dataset's
// __getitem__, or, for an IterableDataset, which has no __getitem__, the
// next items of the iterator its __iter__ returns (a generator's body, or
// that iterator's __next__). The hook times both alike (the fetch less the
// collate); the kind is read from the profile's stacks, which hold torch's
// fetcher (sample.Profile.Dataset). Unknown (no profile, Python before
// 3.11), it is __getitem__, the usual kind.
type sampleStage struct {
	iterable bool
	// cpuJob: the step is on the CPU (stepOnCPU: the hook read the
	// model's forward there, or a sampled loop has no accelerator beside
	// it): no fix moves work to a GPU (a review: a CPU job was told to
	// augment on the GPU).
	cpuJob bool
	// augmentTop is the busiest function of the loading's augmenting
	// category (topOf), "" where none is named: array math (numpy's FFT)
	// is not images, and its fix is not torchvision's (a user's review).
	augmentTop string
}

// sampleStageOf is the window's sampleStage, from its newest profile.
func sampleStageOf(in *causeIn) sampleStage {
	p := in.w.profile
	st := sampleStage{iterable: p != nil && p.Dataset == sample.DatasetIterable, cpuJob: stepOnCPU(in.w)}
	if p != nil {
		st.augmentTop, _ = topOf(p, sample.CatAugmenting)
	}
	return st
}

// the names the stage as a sentence's subject: "the dataset's
// __getitem__", "iterating the dataset (its __iter__)".
func (st sampleStage) the() string {
	if st.iterable {
		return "iterating the dataset (its __iter__)"
	}
	return "the dataset's __getitem__"
}

// short is the() where the dataset was named before: "__getitem__",
// "iterating the dataset".
func (st sampleStage) short() string {
	if st.iterable {
		return "iterating the dataset"
	}
	return "__getitem__"
}

// busiestInGetitem is the workers' busiest function outside collating,
// the hand-over and waiting (so, most likely, __getitem__'s: the job's own
// line where no category names it), with where it is and its share of the
// workers' CPU; none without the workers' profile. Loading inline
// (num_workers=0) the training process loads: its samples under the
// DataLoader's fetch (InlineTop) are read instead, or its whole profile
// (Top) where it has none of them (a profile from before InlineTop).
func busiestInGetitem(p *sample.Profile, inline bool) (string, float64, bool) {
	if p == nil {
		return "", 0, false
	}
	if inline {
		if len(p.InlineTop) > 0 { // the loop's loading, else its whole profile
			return busiestOf(p.InlineTop)
		}
		return busiestOf(p.Top)
	}
	return busiestOf(p.WorkersTop)
}

// busiestOf is a profile's busiest function that does loading's own work
// (not collating, the hand-over, waiting, the interpreter or the
// collector), with where it is and its flat share; none under
// minBusiestShare, which points nowhere (a review: "0 % of their CPU in
// __main__.<module> … the place to start", beside a profile all waiting).
func busiestOf(top []sample.ProfileFunc) (string, float64, bool) {
	for _, f := range top {
		switch profileCategoryOf(f) {
		case sample.CatCollating, sample.CatSerializing, sample.CatWaiting, sample.CatInterpreter, sample.CatGC:
			continue
		}
		if !(f.Flat >= minBusiestShare) || gpuwatchOwn(f) {
			continue
		}
		return placeOf(f), f.Flat, true
	}
	return "", 0, false
}

// minBusiestShare is the least flat share of a profile's CPU a function
// needs to be named the place to start.
const minBusiestShare = 0.05
