package diagnose

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/internal/pprofsum"
	"github.com/gpuwatch/gpuwatch/sample"
)

// registerProfileCause registers a cause read from the workers' profile:
// its category (one of sample.ProfileCategories), its fix (for the
// dataset's stage that makes each sample: sampleStage), its rule
// profileCause's.
func registerProfileCause(id, category string, fix func(sampleStage) string) {
	registerCause(causeRule{id: id, stages: []string{"getitem"}, category: category, find: profileCause(id, category, fix)})
}

// anyStage is a fix that names no stage of the dataset's.
func anyStage(fix string) func(sampleStage) string {
	return func(sampleStage) string { return fix }
}

// profileCause is the rule of a cause read from the workers' own CPU
// profile (decode, augment, convert, tokenize: the categories practice has
// a fix for): named where the loop waits on CPU-bound workers and the
// category takes at least ProfileCauseShare of the workers' CPU. Several
// categories that share the workers' time are each named, with their
// share, fix and bound, and ranked (causesOf), not one winner picked near
// a threshold (issue 58: decode 27 %, augment 19 %, convert 18 % flipped
// the images loop's cause from run to run). Only gpuwatch run profiles the
// workers (the hook merges their profiles); with num_workers=0 the loop's
// own loading is read from the training process's profile (its samples
// under the DataLoader's fetch, Profile.Inline: a review found JPEG
// decoding 55 % of it never named); without either there is no such
// cause. Each happens inside __getitem__, so the stage it cuts is its
// time, at most its share of a worker's (or the loop's loading) time per
// batch.
func profileCause(id, category string, fix func(sampleStage) string) func(*causeIn) (Cause, bool) {
	return func(in *causeIn) (Cause, bool) {
		s, p := in.s, in.w.profile
		if !s.ok || !in.waits || !s.cpuBound || p == nil || s.getitem <= 0 {
			return Cause{}, false
		}
		cats, whose, of, per := p.Workers, "the workers' CPU", "their profile", "a worker's"
		if len(cats) == 0 && s.inline {
			cats, whose, of, per = p.Inline, "the loop's loading CPU", "the training process's profile, num_workers=0", "the loop's"
		}
		if len(cats) == 0 {
			return Cause{}, false
		}
		shares := map[string]float64{}
		for _, c := range cats {
			shares[c.Name] = c.Share
		}
		share := shares[category]
		if !in.atLeast(id, share, s.th.ProfileCauseShare) {
			return Cause{}, false
		}
		// The workers' profile outside __getitem__: collating, the hand-over,
		// waiting. The stages' own clocks split a worker's time, and the
		// profile only splits __getitem__'s share: a profile's shares are of
		// the CPU it sampled, not of the wall time, and a sampler thread (a
		// worker whose SIGPROF is in use) samples where the GIL lets it in
		// (the text loop, so sampled: tokenizing 63 % of the samples, collate
		// 21 %, while __getitem__ took 96 % of the time by its clock).
		outside := shares[sample.CatCollating] + shares[sample.CatSerializing] + shares[sample.CatWaiting]
		part := s.getitem * share / max(1-outside, share) // at most getitem: the denominator is at least share
		cut, free := part, stageCut{worker: part}
		if id == "convert" {
			// Its fix takes the whole per-sample path away, the Python
			// loop that feeds the conversions with it: a slice is all
			// __getitem__ has left (the time-series loop: converting 51 %
			// of the workers' CPU, the comprehension that builds its lists
			// included, and the fix gained 3.18×). Free, it may take
			// collate's conversions too: samples that were lists or
			// arrays, default_collate made tensors of one by one.
			cut, free = s.getitem, stageCut{worker: s.getitem + s.collate}
		}
		evidence := fmt.Sprintf("%.0f %% of %s is %s (%s): about %s of %s %s per batch",
			100*share, whose, sample.ProfileCategoryWords[category], of, ms(part), per, ms(s.worker()))
		if f, ok := topOf(p, category); ok {
			evidence += ", most in " + f
		}
		return Cause{Evidence: evidence, Fix: fix(sampleStageOf(in)), Bound: s.boundFree(stageCut{worker: cut}, 2, free)}, true
	}
}

// loadingTop is the busiest functions of a profile's loading: the
// workers' (WorkersTop), else the loop's own loading inline (InlineTop,
// num_workers=0), else the whole profile's (one from before them, or a
// loader that is not torch's) — not the training loop's float(loss) or
// backward beside them.
func loadingTop(p *sample.Profile) []sample.ProfileFunc {
	switch {
	case len(p.WorkersTop) > 0:
		return p.WorkersTop
	case len(p.InlineTop) > 0:
		return p.InlineTop
	}
	return p.Top
}

// cpuTop is the functions a line about the profile's CPU shares names:
// the loading's (loadingTop) where loading is most of the CPU sampled,
// else the whole profile's — a num_workers=0 loop loading 3 % of its CPU
// beside a backward pass of 94 % named the fetch for "94 % of its CPU".
func cpuTop(p *sample.Profile) []sample.ProfileFunc {
	if len(p.WorkersTop) > 0 && p.WorkersShare >= 0.5 || len(p.InlineTop) > 0 && p.InlineShare >= 0.5 {
		return loadingTop(p)
	}
	return p.Top
}

// topOf is the loading's busiest function of a category (loadingTop),
// with where it is: outside text (the job's own names), made printable
// and cut short.
func topOf(p *sample.Profile, category string) (string, bool) {
	for _, f := range loadingTop(p) {
		if profileCategoryOf(f) == category {
			return placeOf(f), true
		}
	}
	return "", false
}

// profileCategoryOf is a profile function's category (pprofsum's table).
func profileCategoryOf(f sample.ProfileFunc) string { return pprofsum.FuncCategory(f) }

// gpuwatchOwn says f is gpuwatch's hook's own code, or a call it makes
// (a C call caught running is placed at its caller's line): never the
// job's busiest function to optimise (a user's review: "the busiest such
// function is time.perf_counter (gpuwatch_hook/_stages.py:215)").
func gpuwatchOwn(f sample.ProfileFunc) bool {
	return strings.HasPrefix(f.File, "gpuwatch_hook/") || strings.Contains(f.File, "/gpuwatch_hook/")
}

// placeOf is a function with where it is: outside text (the job's own
// names), made printable and cut short.
func placeOf(f sample.ProfileFunc) string {
	s := f.Name
	if w := f.Where(); w != "" {
		s += " (" + w + ")"
	}
	return sample.Printable(shorten(s, 160))
}

// shorten cuts s to at most n bytes on a rune boundary, marked with "…".
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
