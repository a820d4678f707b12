package diagnose

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// Cause is what the job's own code does that costs the job its time,
// beneath the verdict's kind: the stage or the batch's content the window
// shows (the hand-over of large float32 batches, a float64 payload,
// padding, __getitem__, random reads, the loop's own handling of each
// batch), the evidence in the job's terms, the fix practice names, and the
// bound on what the fix can gain. No DataLoader knob makes these fixes;
// the verdict's kind stays what the host shows. Each cause is one
// registered file, cause_<id>.go (docs/architecture.md, "a cause";
// docs/diagnosis.md, "Causes and their bounds").
type Cause struct {
	// ID is stable: one of CauseIDs.
	ID       string `json:"id"`
	Evidence string `json:"evidence"`
	Fix      string `json:"fix"`
	// Stages are the stages the fix makes cheaper, as the hook names them.
	Stages []string `json:"stages,omitempty"`
	Bound  *Bound   `json:"bound,omitempty"`
	// BoundWhy says how the bound was read where it is not the pipeline
	// model's (the GPU causes: a ratio of dense peaks, of SM activity),
	// or why there is none.
	BoundWhy string `json:"bound_why,omitempty"`
}

// causeRule is one cause, whole: its id, the stages its fix cuts, the
// workers' profile category it reads ("" for none), and its rule, which
// returns the cause with its evidence, fix and bound when the window shows
// it. Its file's init registers it.
type causeRule struct {
	id       string
	stages   []string
	category string
	// gpu: a cause of the GPU-bound step (cause_gpu.go), read from GPM
	// and the job's settings; its bound is the step's, not the input
	// pipeline's, and the input's ceiling does not cap it.
	gpu  bool
	find func(in *causeIn) (Cause, bool)
	// supersedes is the start of a situation's advice line that says the
	// same as this cause: where the cause is named the line goes, so that
	// one thing is said once.
	supersedes string
}

// causeRules is the registry, in the order of registration; CauseIDs the
// ids, sorted.
var (
	causeRules []*causeRule
	CauseIDs   []string
)

// registerCause adds a cause; TestEveryCauseIsWhole fails on an id
// registered twice, missing from docs/diagnosis.md or without a case.
func registerCause(r causeRule) {
	for _, o := range causeRules {
		if o.id == r.id {
			panic("diagnose: cause " + r.id + " registered twice")
		}
	}
	causeRules = append(causeRules, &r)
	CauseIDs = append(CauseIDs, r.id)
	slices.Sort(CauseIDs)
}

// causeExclusions is the one list of causes that exclude others: where
// the first holds, the others are not named, whatever their strength.
// Every other pair of causes is named side by side, ranked by what its
// fix can gain.
var causeExclusions = []struct {
	cause, excludes []string
	why             string
}{
	{[]string{"float64"}, []string{"handover"},
		"float32 at the source halves the same bytes the hand-over's fix cuts: one fix at a time"},
	{[]string{"float64", "handover"}, []string{"convert"},
		"the conversion is the ToTensor that makes the large batches: the payload's fix is the one to make"},
	{[]string{"random_reads"}, []string{"small_files", "decode", "decompress", "augment", "convert", "tokenize", "getitem"},
		"__getitem__ faults a mapped file's pages in: its time is the storage's"},
	{[]string{"small_files"}, []string{"decode", "decompress", "augment", "convert", "tokenize", "getitem"},
		"__getitem__'s time is off the CPU, reading small files"},
	{[]string{"decode", "decompress", "augment", "convert", "tokenize"}, []string{"getitem"},
		"the workers' profile says which part of __getitem__: its causes take the place of the whole's"},
}

// causeIn is what a cause's rule reads: the window, its stage times, the
// batches' payload, whether the loop waits on busy workers, and the causes
// the verdict shown before named (hysteresis: held).
type causeIn struct {
	frames []sample.Frame
	w      *window
	d      decision
	s      *stageTimes
	pay    *sample.BatchPayload
	// waits: the loop waits on busy workers. Stage causes need it: a
	// healthy loop whose workers idle between batches has nothing to gain
	// from them. Where CPU-bound workers fill the CPUs they can have
	// (saturated cores, or their CPU and their waits for one at least
	// busyWorkerShare of what the loop and other processes leave them),
	// they are the limit even where their timed stages do not fill their
	// periods: batches come back in order, so the worker a CPU runs faster
	// idles for its turn while the one short of a CPU holds the loop
	// (issue 58: the text loop's 2 workers on 2 busy cores filled 1.4 of
	// their 2 periods; in CI's run of 2026-11-28 the cores read 88 %
	// busy, under CPUSaturatedPct, the workers wanted 1.9 of the 1.8 CPUs
	// left them, and no cause was named).
	waits bool
	held  func(id string) bool
}

// atLeast says a cause's measure v reaches its threshold th: the whole
// threshold for a cause not named before, CauseLeaveRatio of it for one
// the verdict shown named (a cause enters and leaves with hysteresis, as
// kinds do, so that a measure near its threshold does not flip the cause
// from one frame to the next).
func (in *causeIn) atLeast(id string, v, th float64) bool {
	if in.held != nil && in.held(id) {
		th *= in.w.th.CauseLeaveRatio
	}
	return v >= th
}

// below is atLeast for a measure that names a cause when low: a held
// cause stays while v is under th ÷ CauseLeaveRatio.
func (in *causeIn) below(id string, v, th float64) bool {
	if in.held != nil && in.held(id) && in.w.th.CauseLeaveRatio > 0 {
		th /= in.w.th.CauseLeaveRatio
	}
	return v < th
}

// causesOf are the causes the window shows, ranked by what their fixes can
// gain (the bound at k; causes without a bound last); none without the
// stages or the payload the hook measures.
func causesOf(frames []sample.Frame, w *window, d decision, held func(string) bool) []Cause {
	if d.kind == Idle || d.kind == WarmingUp {
		return nil
	}
	s := readStages(frames, w)
	s.th = w.th
	if p, ok := pipeline(w); ok && p.OverheadSec > 0 {
		s.ownWait = true // the loop's wait is its own: no stage of the workers' holds it back
	}
	in := &causeIn{frames: frames, w: w, d: d, s: &s, pay: lastPayload(frames), held: held,
		waits: w.meanWaitShare.ok && w.meanWaitShare.v >= w.th.WaitShareModerate && (s.workersBusy() || s.cpuBound && (d.kind == CPUSaturated || workersFillCPUs(w)))}
	found := map[string]Cause{}
	for _, r := range causeRules {
		if c, ok := r.find(in); ok {
			c.ID = r.id
			if c.Stages == nil {
				c.Stages = r.stages
			}
			found[c.ID] = c
		}
	}
	out := make([]Cause, 0, len(found))
	for _, r := range causeRules {
		if c, ok := found[r.id]; ok && !excluded(r.id, found) {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b Cause) int { return cmp.Compare(rankGain(b), rankGain(a)) })
	return out
}

// ruleOf is a registered cause's rule.
func ruleOf(id string) *causeRule {
	for _, r := range causeRules {
		if r.id == id {
			return r
		}
	}
	return &causeRule{id: id}
}

// excluded says a cause that holds is left out by another that holds
// (causeExclusions).
func excluded(id string, found map[string]Cause) bool {
	for _, x := range causeExclusions {
		if !slices.Contains(x.excludes, id) {
			continue
		}
		for _, by := range x.cause {
			if _, ok := found[by]; ok {
				return true
			}
		}
	}
	return false
}

// rankGain is what a cause's fix gains at its k; 0 without a bound.
func rankGain(c Cause) float64 {
	if c.Bound == nil {
		return 0
	}
	return c.Bound.Gain
}

// withCauses is the window's causes, and the advice with a line for each
// first: what the job's own code costs comes before the knobs.
func withCauses(frames []sample.Frame, w *window, d decision, advice []string, held func(string) bool) ([]Cause, []string) {
	cs := causesOf(frames, w, d, held)
	if len(cs) == 0 {
		return nil, advice
	}
	for i := range cs {
		if !ruleOf(cs[i].ID).gpu {
			capBound(frames, cs[i].Bound) // no bound past the measured ceiling (ceiling.go)
		}
	}
	if p := situationOf(d.kind).Practice; len(p) > 0 {
		advice = slices.DeleteFunc(slices.Clone(advice), func(a string) bool { return slices.Contains(p, a) })
	}
	lines := make([]string, 0, len(cs)+len(advice))
	for _, c := range cs {
		lines = append(lines, causeLine(c))
		if p := ruleOf(c.ID).supersedes; p != "" {
			advice = slices.DeleteFunc(slices.Clone(advice), func(a string) bool { return strings.HasPrefix(a, p) })
		}
	}
	return cs, append(lines, advice...)
}

// moveCut is the time moving the batch's bytes takes (collate, hand-over,
// take, pin), for the share of them the fix touches.
func moveCut(s *stageTimes, share float64) stageCut {
	return stageCut{worker: share * (s.collate + s.handover), loop: share * (s.take + s.pin)}
}

// lastPayload is the newest frame's look inside the batches.
func lastPayload(frames []sample.Frame) *sample.BatchPayload {
	for i := len(frames) - 1; i >= 0; i-- {
		if l := frames[i].Loader; l != nil && l.Payload != nil && l.Payload.BytesPerBatch > 0 {
			return l.Payload
		}
	}
	return nil
}

// causeLine is a cause as an advice line: its evidence, its fix, and its
// bound.
func causeLine(c Cause) string {
	s := c.Evidence + ": " + c.Fix
	if c.BoundWhy != "" {
		if b := c.Bound; b != nil {
			return s + fmt.Sprintf(" — at most %s, %s", boundRate(b.SamplesPerSec, b.Gain), c.BoundWhy)
		}
		return s + " — " + c.BoundWhy
	}
	if b := c.Bound; b != nil {
		s += fmt.Sprintf(" — at most %s at %.2g× less", boundRate(b.SamplesPerSec, b.Gain), b.K)
		if b.FreeGain > b.Gain*1.005 {
			s += fmt.Sprintf(", %s if %s cost nothing", boundRate(b.FreeSamples, b.FreeGain), stageWords(c.Stages))
		}
	}
	return s
}

func boundRate(samples, gain float64) string {
	if samples > 0 {
		return fmt.Sprintf("≈ %.0f samples/s (%.2f×)", samples, gain)
	}
	return fmt.Sprintf("%.2f×", gain)
}

func stageWords(st []string) string {
	if len(st) == 1 {
		return "it"
	}
	return "they"
}

func ms(sec float64) string { return sample.FormatDuration(sec) }
