package diagnose

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// rankMean is one rank's wait share and step over a window.
type rankMean struct {
	rank         int
	url          string
	pid          int
	workers      *int
	wait, step   float64
	nWait, nStep int
}

// ownJob says whether a loader is a job of its own, no rank of a
// distributed job: it reports a world of one (the Ranks probe says so of a
// discovered loader without a WORLD_SIZE above 1). Nil is a URL given
// with no rank reported: the user named it one job's rank.
func ownJob(r sample.Rank) bool { return r.WorldSize != nil && *r.WorldSize <= 1 }

// rankMeans averages each rank's wait share and step over the frames,
// in rank order; ranks with no wait reading, loaders that are jobs of
// their own (ownJob), and loaders none of the newest goneFrames frames
// sees connected (gone since: a hostile user's review read "ranks 0, 0
// and 1 wait in the all-reduce" from a job that had ended beside the one
// running; one read missed, a straggler too busy to answer in time, is
// not gone) are left out. Two loaders that say the same rank are two
// means.
func rankMeans(frames []sample.Frame) []rankMean {
	type key struct {
		rank int
		url  string
	}
	now := map[key]bool{}
	for i := max(0, len(frames)-goneFrames); i < len(frames); i++ {
		for _, r := range frames[i].Ranks {
			if r.Connected {
				now[key{r.Rank, r.URL}] = true
			}
		}
	}
	byRank := map[key]*rankMean{}
	for i := range frames {
		for _, r := range frames[i].Ranks {
			k := key{r.Rank, r.URL}
			if !r.Connected || r.WaitShare == nil || ownJob(r) || !now[k] {
				continue
			}
			m := byRank[k]
			if m == nil {
				m = &rankMean{rank: r.Rank, url: r.URL}
				byRank[k] = m
			}
			m.pid, m.workers = r.PID, r.Workers
			m.wait += *r.WaitShare
			m.nWait++
			if r.StepSec != nil {
				m.step += *r.StepSec
				m.nStep++
			}
		}
	}
	out := make([]rankMean, 0, len(byRank))
	for _, m := range byRank {
		m.wait /= float64(m.nWait)
		if m.nStep > 0 {
			m.step /= float64(m.nStep)
		}
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b rankMean) int { return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.url, b.url)) })
	return out
}

// goneFrames is how many frames in a row a loader is not seen connected
// before the ranks' evidence leaves it out (rankMeans).
const goneFrames = 3

// ambiguousRanks is the evidence that loaders of the newest frame say the
// same rank (two jobs on one node, a restarted rank, a launcher that sets
// RANK wrong): their numbers cannot tell them apart, so no rank is named
// the straggler. False when every rank number is one loader's. Jobs of
// their own (ownJob) each say rank 0 and are not ambiguous.
func ambiguousRanks(frames []sample.Frame) (Evidence, bool) {
	if len(frames) == 0 {
		return Evidence{}, false
	}
	byRank := map[int][]sample.Rank{}
	var dup []int
	for _, r := range frames[len(frames)-1].Ranks {
		if !r.Connected || ownJob(r) {
			continue
		}
		if byRank[r.Rank] = append(byRank[r.Rank], r); len(byRank[r.Rank]) == 2 {
			dup = append(dup, r.Rank)
		}
	}
	if len(dup) == 0 {
		return Evidence{}, false
	}
	slices.Sort(dup)
	var who []string
	for _, r := range byRank[dup[0]] {
		w := sample.Printable(r.URL)
		if r.PID > 0 {
			w += fmt.Sprintf(" (pid %d)", r.PID)
		}
		who = append(who, w)
	}
	text := fmt.Sprintf("ranks ambiguous: %d loaders say %s (%s): two jobs on this node, a restarted rank, or a launcher that sets RANK wrong; no rank is named the straggler",
		len(byRank[dup[0]]), rankList([]int{dup[0]}), strings.Join(who, ", "))
	if len(dup) > 1 {
		text += fmt.Sprintf("; %s are said twice too", rankList(dup[1:]))
	}
	return evidence("ranks.ambiguous", float64(len(dup)), ">=", 1, "ranks", text), true
}

// rankEvidence is the first evidence of a job of several ranks: the rank
// that holds the others back — it waits for its own input while the
// others wait for it in the all-reduce, their steps longer by that wait —
// or, when every rank waits for input alike, that. It is false with fewer
// than two ranks reporting, or when no rank waits past WaitShareStarved.
// Where the newest frame's loader is a job of its own beside other
// loaders, it is that they are separate jobs (separateJobs), never a
// straggler.
func rankEvidence(frames []sample.Frame, th Thresholds) (Evidence, *int, bool) {
	if e, ok := separateJobs(frames); ok {
		return e, nil, true
	}
	ranks := rankMeans(frames)
	if len(ranks) < 2 {
		return Evidence{}, nil, false
	}
	waits := make([]float64, len(ranks))
	for i, r := range ranks {
		waits[i] = r.wait
	}
	s, ok := th.Straggler(waits)
	if !ok {
		lo, hi := slices.Min(waits), slices.Max(waits)
		if lo < th.WaitShareStarved {
			return Evidence{}, nil, false
		}
		return evidence("ranks.min_wait_share", lo, ">=", th.WaitShareStarved, "ratio",
			fmt.Sprintf("all %d ranks wait for input alike (%.0f–%.0f %% of their time): no one rank holds the job back; the input pipeline is slow on every rank", len(ranks), 100*lo, 100*hi)), nil, true
	}
	st := ranks[s]
	var others []rankMean
	for i, r := range ranks {
		if i != s {
			others = append(others, r)
		}
	}
	text := fmt.Sprintf("rank %d waits %.0f %% of its time for its next batch", st.rank, 100*st.wait)
	if st.workers != nil {
		text += fmt.Sprintf(" (num_workers=%d)", *st.workers)
	}
	if gpu, ok := gpuOf(frames, st.pid); ok {
		text += fmt.Sprintf(", on GPU %d", gpu)
	}
	var nums []int
	stepSum, n, waitMax := 0.0, 0, 0.0
	for _, r := range others {
		nums = append(nums, r.rank)
		waitMax = max(waitMax, r.wait)
		if r.nStep > 0 {
			stepSum += r.step
			n++
		}
	}
	verb, their := "wait", "their steps are"
	if len(nums) == 1 {
		verb, their = "waits", "its steps are"
	}
	if n > 0 && st.nStep > 0 && st.step > 0 && stepSum/float64(n) >= th.AllReduceStepRatio*st.step {
		text += fmt.Sprintf("; %s %s in the all-reduce: %s %.1f× rank %d's", rankList(nums), verb, their, stepSum/float64(n)/st.step, st.rank)
	} else {
		text += fmt.Sprintf("; %s %s at most %.0f %% for input", rankList(nums), verb, 100*waitMax)
	}
	rank := st.rank
	return evidence("ranks.straggler_wait_share", st.wait, ">=", th.WaitShareStarved, "ratio", text), &rank, true
}

// separateJobs is the evidence that the loaders of the newest frame are
// not one job's ranks: the one the frame reads (Pacing, the one that
// waits most for input) is a job of its own (ownJob) and others answer
// beside it. Each is named by its process, not a rank number; no loader
// holds another back, for no all-reduce ties them. False with fewer than
// two loaders answering, or when the frame's loader is a distributed
// job's rank.
func separateJobs(frames []sample.Frame) (Evidence, bool) {
	if len(frames) == 0 {
		return Evidence{}, false
	}
	var pace *sample.Rank
	var others []string
	n, ranked := 0, false
	for _, r := range frames[len(frames)-1].Ranks {
		if !r.Connected {
			continue
		}
		n++
		ranked = ranked || !ownJob(r)
		if r.Pacing && pace == nil {
			pace = &r
			continue
		}
		if len(others) < 3 {
			others = append(others, loaderWait(r))
		}
	}
	if pace == nil || !ownJob(*pace) || n < 2 {
		return Evidence{}, false
	}
	list := strings.Join(others, ", ")
	if n-1 > len(others) {
		list += fmt.Sprintf(" and %d more", n-1-len(others))
	}
	text := fmt.Sprintf("%d loaders here are separate jobs, not ranks of one (no torch.distributed WORLD_SIZE above 1 ties them; no all-reduce waits between them): this verdict reads %s, the one that waits most for input; beside it %s",
		n, loaderWait(*pace), list)
	if ranked {
		// Beside a distributed job's ranks, which are one job (a review:
		// "3 loaders here are separate jobs" of a 2-rank job and a script).
		text = fmt.Sprintf("this verdict reads %s, a job of its own, the one that waits most for input (no torch.distributed WORLD_SIZE above 1 ties it to the others; no all-reduce waits between them); beside it %s",
			loaderWait(*pace), list)
	}
	return evidence("ranks.separate_jobs", float64(n), ">=", 2, "loaders", text), true
}

// loaderWait names a loader by its process (its URL where the PID is
// unknown), and the rank of its job where it is one, with its wait share.
func loaderWait(r sample.Rank) string {
	w := "pid " + strconv.Itoa(r.PID)
	if r.PID <= 0 {
		w = sample.Printable(r.URL)
	}
	if !ownJob(r) {
		w += fmt.Sprintf(" (rank %d", r.Rank)
		if r.WorldSize != nil {
			w += fmt.Sprintf(" of %d", *r.WorldSize)
		}
		w += ")"
	}
	if r.WaitShare != nil {
		w += fmt.Sprintf(" waiting %.0f %%", 100**r.WaitShare)
	}
	return w
}

// Straggler is which of several ranks' wait shares holds the others
// back: the one that waits most, when it waits at least WaitShareStarved
// and some rank waits less (when every rank waits past it, the input is
// slow on all of them alike and no one rank is named). ok is false
// otherwise. The verdict (rankEvidence) and the fleet (fleet/) name the
// straggler by this one rule.
func (th Thresholds) Straggler(waits []float64) (i int, ok bool) {
	if len(waits) < 2 {
		return 0, false
	}
	i = 0
	for j, w := range waits {
		if w > waits[i] {
			i = j
		}
	}
	if waits[i] < th.WaitShareStarved || slices.Min(waits) >= th.WaitShareStarved {
		return 0, false
	}
	return i, true
}

// RankRole is what rank r of ranks is doing, by the verdict's straggler
// (nil: none named) and these thresholds: the straggler itself, input-bound
// on its own, waiting for the straggler in the all-reduce (its step at
// least AllReduceStepRatio × the straggler's), or ok. The dashboard's
// rank rows draw it as it is computed here.
func (th Thresholds) RankRole(ranks []sample.Rank, straggler *int, r sample.Rank) sample.Role {
	if straggler != nil && *straggler == r.Rank {
		return sample.RoleStraggler
	}
	var pace *sample.Rank
	for i := range ranks {
		if p := &ranks[i]; straggler != nil && p.Rank == *straggler {
			pace = p
		}
	}
	switch {
	case r.WaitShare != nil && *r.WaitShare >= th.WaitShareStarved:
		return sample.RoleInputBound
	case pace != nil && pace.StepSec != nil && r.StepSec != nil && *r.StepSec >= th.AllReduceStepRatio**pace.StepSec:
		return sample.RoleAllReduce
	}
	return sample.RoleOK
}

// gpuOf is the GPU on whose process list pid appears, in the newest
// frame that has one.
func gpuOf(frames []sample.Frame, pid int) (int, bool) {
	if pid == 0 {
		return 0, false
	}
	for i := len(frames) - 1; i >= 0; i-- {
		for _, g := range frames[i].GPUs {
			for _, p := range g.Processes {
				if p.PID == pid {
					return g.Index, true
				}
			}
		}
	}
	return 0, false
}

// rankList names ranks in words, runs as ranges: "rank 1", "ranks 0–2
// and 4–7", "ranks 0, 2 and 5".
func rankList(nums []int) string {
	slices.Sort(nums)
	var parts []string
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, strconv.Itoa(nums[i]))
		case j == i+1:
			parts = append(parts, strconv.Itoa(nums[i]), strconv.Itoa(nums[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d–%d", nums[i], nums[j]))
		}
		i = j + 1
	}
	if len(nums) == 1 {
		return "rank " + parts[0]
	}
	if len(parts) == 1 {
		return "ranks " + parts[0]
	}
	return "ranks " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// laggingGPU finds, among the judged GPUs (the job's where known), one
// that is far less busy than the others over the window: the GPU whose
// rank waits, or that waits on the others. False with fewer than two
// GPUs, or when none lags by 30 points and sits under GPULowPct.
func laggingGPU(frames []sample.Frame, th Thresholds) (Evidence, bool) {
	type acc struct {
		sum float64
		n   int
	}
	byIndex := map[int]*acc{}
	var order []int
	for i := range frames {
		f := &frames[i]
		for j := range f.GPUs {
			g := &f.GPUs[j]
			if !f.JudgedGPU(j) || g.UtilPct == nil {
				continue
			}
			a := byIndex[g.Index]
			if a == nil {
				a = &acc{}
				byIndex[g.Index] = a
				order = append(order, g.Index)
			}
			a.sum += *g.UtilPct
			a.n++
		}
	}
	if len(order) < 2 {
		return Evidence{}, false
	}
	low, lowV, rest := -1, 0.0, 0.0
	for _, idx := range order {
		v := byIndex[idx].sum / float64(byIndex[idx].n)
		if low < 0 || v < lowV {
			low, lowV = idx, v
		}
	}
	for _, idx := range order {
		if idx != low {
			rest += byIndex[idx].sum / float64(byIndex[idx].n)
		}
	}
	rest /= float64(len(order) - 1)
	if lowV >= th.GPULowPct || rest-lowV < th.GPULagPoints {
		return Evidence{}, false
	}
	return evidence("gpu.lagging_util_pct", lowV, "<", th.GPULowPct, "%",
		fmt.Sprintf("GPU %d is %.0f %% busy while the job's other %d GPUs average %.0f %%: it lags (its rank waits for input, or it waits for the others)",
			low, lowV, len(order)-1, rest)), true
}
