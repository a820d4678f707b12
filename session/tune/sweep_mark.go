package tune

import (
	"fmt"
	"strconv"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// markBest marks the most samples/s, and the fewest workers (then the
// smallest prefetch) within 95 % of it.
func markBest(rs []SweepResult) {
	if len(rs) == 0 {
		return
	}
	best := -1
	for i, r := range rs {
		if r.Failed == "" && (best < 0 || r.SamplesPerSec > rs[best].SamplesPerSec) {
			best = i
		}
	}
	if best < 0 {
		return // every configuration failed
	}
	rs[best].Best = true
	cheap := -1
	cost := func(r SweepResult) (int, int) { return workersOf(r), prefetchOf(r) }
	for i, r := range rs {
		if r.Failed != "" || r.SamplesPerSec < diagnose.GoodEnough*rs[best].SamplesPerSec {
			continue
		}
		if cheap < 0 {
			cheap = i
			continue
		}
		w, p := cost(r)
		cw, cp := cost(rs[cheap])
		if w < cw || w == cw && p < cp {
			cheap = i
		}
	}
	rs[cheap].Cheapest = true
}

// workersOf and prefetchOf are a row's knob for the cheapest's order:
// the grid's, else the loader's, else 0 (unknown in every row alike).
func workersOf(r SweepResult) int { return knobOf(r, sample.KnobWorkers, r.Workers) }

func prefetchOf(r SweepResult) int { return knobOf(r, sample.KnobPrefetch, r.Prefetch) }

func knobOf(r SweepResult, k *sample.Knob, read *int) int {
	if v, ok := gridInt(r.Knobs, k); ok {
		return v
	}
	if read != nil {
		return *read
	}
	return 0
}

// gridInt is k's whole number in the grid's setting s, by its DataLoader
// keyword or its flag.
func gridInt(s Setting, k *sample.Knob) (int, bool) {
	for _, name := range []string{k.Name, k.Flag} {
		if v, err := strconv.Atoi(s[name]); err == nil {
			return v, true
		}
	}
	return 0, false
}

// MarkCeiling sets each measured configuration's share of the loop's
// ceiling (samples/s with its input free, measured once for the sweep)
// and marks as cheapest the fewest workers (then the smallest prefetch)
// within CeilingEnough of it — none when no configuration gets there.
func MarkCeiling(rs []SweepResult, ceiling float64) {
	if ceiling <= 0 {
		return
	}
	cheap := -1
	for i := range rs {
		rs[i].Cheapest = false
		if rs[i].Failed != "" {
			continue
		}
		rs[i].CeilingShare = ceilingShare(rs[i].SamplesPerSec, ceiling)
		if *rs[i].CeilingShare < CeilingEnough {
			continue
		}
		if cheap < 0 || workersOf(rs[i]) < workersOf(rs[cheap]) || workersOf(rs[i]) == workersOf(rs[cheap]) && prefetchOf(rs[i]) < prefetchOf(rs[cheap]) {
			cheap = i
		}
	}
	if cheap >= 0 {
		rs[cheap].Cheapest = true
	}
}

// ceilingOf is the ceiling the rows were marked against (MarkCeiling), 0
// for none.
func ceilingOf(rs []SweepResult) float64 {
	for _, r := range rs {
		if r.CeilingShare != nil && *r.CeilingShare > 0 {
			return r.SamplesPerSec / *r.CeilingShare
		}
	}
	return 0
}

// bestShare is the largest share of the ceiling among the rows.
func bestShare(rs []SweepResult) float64 {
	best := 0.0
	for _, r := range rs {
		if r.CeilingShare != nil {
			best = max(best, *r.CeilingShare)
		}
	}
	return best
}

// markDisturbed says which rows the rest of the box disturbed: those
// whose processes outside the job took at least disturbedCores (and
// disturbedShare of the box) more than during the quietest row's run, as
// tune says of a step (disturbed).
func markDisturbed(rs []SweepResult) {
	quiet := -1
	for i, r := range rs {
		if r.OthersCores != nil && (quiet < 0 || *r.OthersCores < *rs[quiet].OthersCores) {
			quiet = i
		}
	}
	if quiet < 0 {
		return
	}
	was := *rs[quiet].OthersCores
	for i := range rs {
		r := &rs[i]
		if r.OthersCores == nil || *r.OthersCores-was < max(disturbedCores, disturbedShare*float64(r.cores)) {
			continue
		}
		r.Disturbed = fmt.Sprintf("processes outside the job took %.1f cores during this run against %.1f during the quietest (%s): it measured its configuration and that load together",
			*r.OthersCores, was, KnobsLine(rs[quiet].Knobs))
	}
}
