package diagnose

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// Classify says which situation a window of frames (oldest first) shows.
// It is pure: the same frames and thresholds give the same verdict. Signals
// a frame lacks are not used, and without any accelerator signal (no GPU
// utilization, no loader) it never claims starvation: it reports what the
// host shows and says what is missing.
func Classify(frames []sample.Frame, th Thresholds) Verdict {
	return classify(frames, frames, th, WarmingUp, nil)
}

// beforeFirstBatch: the loop has not started, in run's start-up grace
// (Target.Starting): no loader is read yet (the hook loads before the
// process is sampled), the sampler sees no first batch, or the hook has
// been read once and its rates need a second reading. What the process
// does now (imports, building its dataset, loading its model) is no input
// pipeline, and its want of worker processes no num_workers=0: a real
// H200 run's main thread at 101 % of a core while it imported was called
// single_core_maxed (testdata/gpu). Past the grace a process that never
// iterates a DataLoader is judged by its threads, still with no worker
// count claimed.
func beforeFirstBatch(f *sample.Frame) bool {
	if f.Target == nil || !f.Target.Starting {
		return false
	}
	l := f.Loader
	return l == nil || l.RatesPending || (l.Sampled != nil && l.Sampled.BeforeFirstBatch)
}

// notJudged says why a window that would be judged is not: the loop has
// not had its first batch (in run's start-up grace), a loader that does
// not answer, whose rates are unknown, where the rest would say idle or
// healthy, or a loader whose batches flow with no wait, step or GPU read,
// where the rest would say idle.
func notJudged(last *sample.Frame, w *window, d decision) (Evidence, bool) {
	if beforeFirstBatch(last) {
		if l := last.Loader; l != nil && l.RatesPending {
			return evidence("loader.batches", float64(l.Batches), ">=", 0, "",
				"the hook's counters were read once: the loop's rates need a second reading, and it is judged from the frames after its start"), true
		}
		return evidence("loader.batches", 0, "<", 1, "",
			"the training loop has not had its first batch yet (the process imports, or builds its dataset): its loader is judged from its first batch"), true
	}
	if l := last.Loader; d.kind == Idle && l != nil && l.Source == "embedded" && l.Batches == 0 {
		// The embedded loader, started anew (the demo's next scenario),
		// reads its first batch: not idle (a review: "nothing is
		// running" a second before io-bound's first 1,851 samples/s).
		return evidence("loader.batches", 0, "<", 1, "", "the embedded loader has started and not handed out its first batch yet"), true
	}
	if l := w.loaderDown; l != nil && (d.kind == Idle || d.kind == Healthy || d.variant == underusedWaitUnread) {
		// An endpoint that does not answer is not a stopped loop: say
		// nothing rather than idle (another user may be holding the
		// hook's connections while the loop runs at full speed).
		return evidence("loader.connected", 0, "<", 1, "", notAnswering(l)+": its rates are unknown, so idle or busy cannot be told"), true
	}
	if l := last.Loader; d.kind == Idle && d.variant == variantHostOnly && l != nil && w.sampled == nil && w.batchesPerSec.ok && w.batchesPerSec.v > 0 {
		// Batches flow from a loader that times neither its waits nor
		// its steps, with no GPU read: nothing is idle, and nothing says
		// whether the loop waits (a hostile user's review: "idle" while
		// batches flowed).
		return evidence("loader.batches_per_sec", w.batchesPerSec.v, ">", 0, "/s", fmt.Sprintf(
			"the loader at %s hands out %.3g batches/s but no wait or step of its loop was timed in the window (gpuwatch_loader_wait_seconds, gpuwatch_loader_step_seconds), and no GPU is read: whether the loop waits for input cannot be told",
			l.Source, w.batchesPerSec.v)), true
	}
	return Evidence{}, false
}

// notAnswering says which loader does not answer, and since when.
func notAnswering(l *sample.Loader) string {
	text := "the loader at " + l.Source + " does not answer"
	if l.DisconnectedSince != nil {
		text += " since " + l.DisconnectedSince.Format("15:04:05")
	}
	return text
}

// heldFromBefore marks a verdict the window's frames from before its
// loader went quiet still hold: their figures are from then (they read
// as now for the window's length). Its first line says so before its
// figure — the one-line views show that line alone — and its confidence
// is halved (confidence).
func heldFromBefore(d *decision, w *window) {
	l := w.loaderDown
	if l == nil {
		return
	}
	if len(d.evidence) > 0 {
		d.evidence[0].Text = notAnswering(l) + "; before: " + d.evidence[0].Text
	} else {
		d.evidence = []Evidence{evidence("loader.connected", 0, "<", 1, "", notAnswering(l))}
	}
}

// classify is Classify with a longer history for the pipeline model: a
// loader that times only its loop (the hook) is modelled from its means
// over history, which a loader whose epochs are shorter than the window
// needs (the Diagnoser keeps ModelFrames of it). shown is the kind the
// Diagnoser shows now, and held says which causes it names: both leave at
// a lower bar than they enter (hysteresis).
func classify(frames, history []sample.Frame, th Thresholds, shown Kind, held func(string) bool) Verdict {
	if len(frames) == 0 {
		return Verdict{Kind: WarmingUp}
	}
	w := read(frames, th)
	w.shown = shown
	v := Verdict{Since: frames[0].Time, Missing: w.missing()}
	if len(frames) < th.MinFrames {
		v.Kind = WarmingUp
		return v
	}
	d := decide(&w, th)
	if e, ok := notJudged(&frames[len(frames)-1], &w, d); ok {
		v.Kind, v.Evidence = WarmingUp, []Evidence{e}
		return v
	}
	if e, ok := profileEvidence(d.kind, &w, th, d.variant == ioMmap, timedCollating(frames, &w)); ok {
		d.evidence = append(d.evidence, e)
	}
	d.evidence = append(d.evidence, ceilingEvidence(frames, &w)...) // ceiling.go
	slices.SortStableFunc(d.evidence[min(1, len(d.evidence)):], func(a, b Evidence) int { return cmp.Compare(b.strength, a.strength) })
	if f, ok := takenByOthers(&w, th); ok && d.kind != Healthy && d.kind != Idle && d.variant != cpuTaken && d.variant != cpuOthers {
		d.secondary = append(d.secondary, f)
	}
	if transferBound(d.kind, &w, th) {
		d.evidence = append(d.evidence, evidence("gpu.pcie_rx_link_share", w.pcieRx.v, ">=", th.PCIeLinkShare, "ratio",
			fmt.Sprintf("host-to-device copies run at %.0f %% of GPU %d's %s link: the input is transfer-bound", 100*w.pcieRx.v, w.pcieGPU, w.pcieLink)))
	}
	if e, ok := laggingGPU(frames, th); ok {
		if d.kind.Problem() {
			d.evidence = append(d.evidence, e)
		} else {
			d.secondary = append(d.secondary, Finding{Kind: GPUStarved, Text: e.Text})
		}
	}
	if e, ok := ambiguousRanks(frames); ok {
		// Two loaders say one rank: which one holds the job back cannot
		// be told; say so first, whatever the verdict.
		d.evidence = append([]Evidence{e}, d.evidence...)
	} else if e, straggler, ok := rankEvidence(frames, th); ok && d.kind.Problem() {
		// Several ranks: first, which one holds the job back.
		d.evidence = append([]Evidence{e}, d.evidence...)
		v.Straggler = straggler
	}
	heldFromBefore(&d, &w)
	v.Kind, v.Evidence, v.Secondary = d.kind, d.evidence, d.secondary
	var m *modelAdvice
	if d.kind.Problem() || d.kind == Healthy {
		mw := &w
		if len(history) > len(frames) && (!w.readSec.ok || !w.decodeSec.ok) {
			long := read(history, th)
			mw = &long
		}
		if p, ok := pipeline(mw); ok {
			m = &modelAdvice{pipeline: p, planned: plan(p, w.cores, d.kind.Problem())}
			if len(m.changes) > 0 {
				v.Changes, v.Predicted = m.changes, &m.predicted
			}
		}
	}
	if d.variant == ioMmap {
		v.Changes = append(v.Changes, mmapChanges(&w, v.Changes)...)
	}
	v.Advice = capModel(frames, m, advise(d, &w, th, m, lastPayload(frames))) // predictions capped by the measured ceiling (ceiling.go)
	v.Causes, v.Advice = withCauses(frames, &w, d, v.Advice, held)
	if m != nil && m.noChange != "" && len(v.Changes) == 0 && slices.Contains(v.Advice, m.noChange) { // a mapped dataset's changes come from beside the model (mmapChanges)
		v.NoChange = m.noChange
	}
	v.Confidence = confidence(d, &w, th)
	v.Severity = severity(d, &w, th)
	return v
}

// decision is a kind with the evidence for it (the primary is the first),
// and the variant of the rule that decided it, which its advice and
// confidence read.
type decision struct {
	kind      Kind
	variant   variant
	evidence  []Evidence
	secondary []Finding
}

func evidence(metric string, value float64, op string, threshold float64, unit, text string) Evidence {
	s := 0.0
	if threshold != 0 {
		if op == "<" {
			s = (threshold - value) / threshold
		} else {
			s = (value - threshold) / threshold
		}
	}
	return Evidence{Metric: metric, Value: value, Op: op, Threshold: threshold, Unit: unit, Text: text, strength: s}
}

// facts is the evidence per resource, gathered once from a window: each
// list is empty when that resource shows nothing past its threshold. The
// rules of every situation read it; evidence only one rule needs (a mapped
// dataset's faults) that rule gathers itself, in its situation's file.
type facts struct {
	w  *window
	th Thresholds

	mem, wait, cpu, io, single, reads []Evidence
	// othersIO is storage's busy evidence where the watched tree read next
	// to nothing (paging.readsNothing): another process's I/O, not the
	// job's wait (a review: io_bound on a job that read 7 MiB in all,
	// while another user's job kept the disk 91 % busy). Said beside.
	othersIO  []Evidence
	streaming bool // the memory stall is the job's cgroup reclaiming its cache (memoryEvidence)

	accel      level // the accelerator's busy %: a real GPU, else the virtual one
	real       bool  // accel is a real GPU
	cpuSat     bool  // the CPUs are saturated (busy, or PSI with a run queue)
	fewWorkers bool  // fewer workers than WorkersPerCoreLow of the cores
}

func gather(w *window, th Thresholds) *facts {
	f := &facts{w: w, th: th}
	f.accel, f.real = w.accel()
	f.mem, f.streaming = memoryEvidence(w, th)
	f.wait = waitEvidence(w, th)
	f.cpu, f.cpuSat = cpuEvidence(w, th)
	f.io = ioEvidence(w, th)
	if len(f.io) > 0 && w.paging.readsNothing(th) && !w.treeCPUMissed() { // a tree that misses the job's workers misses their reads too
		f.othersIO, f.io = f.io, nil
	}
	f.single = singleThreadEvidence(w, th, f.cpuSat)
	f.reads = readEvidence(w, th)
	f.fewWorkers = w.workers >= 0 && w.cores > 0 && float64(w.workers) < th.WorkersPerCoreLow*float64(w.cores)
	if len(f.wait) == 0 && f.real && f.accel.v < th.GPULowPct && (f.cpuSat || len(f.io) > 0 || len(f.single) > 0) {
		// SageMaker's CPU and I/O bottleneck rules: a low GPU while a host
		// resource is saturated is a GPU waiting on that resource.
		f.wait = append(f.wait, evidence("gpu.util_pct", f.accel.v, "<", th.GPULowPct, "%",
			fmt.Sprintf("the GPU is only %.0f %% busy (< %.0f %%)", f.accel.v, th.GPULowPct)))
	}
	return f
}

// phase is the part of the decision table a window is judged by.
type phase int

// The phases, in the order decide tries them.
const (
	phaseMemory   phase = iota // memory is pressed: swapping slows everything else down
	phaseWaiting               // the accelerator waits for input
	phaseHostOnly              // no accelerator signal at all: what the host shows, never "starved"
	phaseSettled               // nothing waits: idle, underused or healthy
	phases
)

// precedence is the decision table's order: per phase, the rules by their
// key ("<situation id>/<rule name>"), each declared in its situation's
// file. The first rule of the window's phase that holds names the kind;
// when none does, the first settled rule that holds, and the last settled
// rule always holds. TestEveryRuleHasItsPlace fails on a key no situation
// declares and on a rule no key places.
var precedence = [phases][]string{
	phaseMemory: {
		"io_bound/cache-churn", // a mapped dataset's churning cache, not the job's memory
		"memory_pressure/pressed",
	},
	// The thread rules come first: they look inside the job, where the
	// host-wide rules only see totals.
	phaseWaiting: {
		"single_core_maxed/no-workers",
		"single_core_maxed/inline",
		"cpu_saturated/crowded",
		"single_core_maxed/loop-hot",
		"io_bound/mmap",
		"cpu_saturated/others",
		"cpu_saturated/cores",
		"io_bound/disk",
		"single_core_maxed/thread",
		"io_bound/remote",
		"gpu_starved/starved",
	},
	phaseHostOnly: {
		"cpu_saturated/host-only",
		"io_bound/host-only",
		"single_core_maxed/host-only",
		"idle/host-only",
	},
	phaseSettled: {
		"idle/stopped",
		"cpu_saturated/throttled", // the loop waits for the quota, not for input (issue 56)
		"cpu_saturated/taken",     // the loop waits for a CPU others hold, not for input
		"cpu_saturated/own",       // the loop waits for a CPU its own job's processes hold
		"gpu_underused/sm-idle",
		"gpu_underused/host-idle",
		"gpu_underused/wait-unread",
		"healthy/moderate",
		"healthy/busy",
		"healthy/plain",
	},
}

// phase is the part of the table the facts are judged by.
func (f *facts) phase() phase {
	if len(f.mem) > 0 {
		return phaseMemory
	}
	return f.phaseBeside()
}

// phaseBeside is the phase by what the window shows besides memory.
func (f *facts) phaseBeside() phase {
	switch {
	case len(f.wait) > 0:
		return phaseWaiting
	case !f.accel.ok && !f.w.waitShare.ok:
		return phaseHostOnly
	}
	return phaseSettled
}

// decide picks the kind: the first rule of the window's phase that holds
// (precedence), else the first settled one.
func decide(w *window, th Thresholds) decision {
	f := gather(w, th)
	d := decideBy(f)
	if len(f.othersIO) > 0 {
		d.secondary = append(d.secondary, Finding{Kind: IOBound, Text: fmt.Sprintf("storage is busy, but not with the job's reads (its processes read under %s/s from storage): %s — another process's I/O",
			fmtBytes(quietReadBytes), f.othersIO[0].Text)})
	}
	return d
}

// decideBy is decide over the window's facts.
func decideBy(f *facts) decision {
	p := f.phase()
	if d, ok := table.first(p, f); ok || p == phaseSettled {
		return d
	}
	if p == phaseMemory {
		// No memory rule held (a cgroup streaming its cache, memoryRule):
		// judged by the rest, the stall said beside.
		d, ok := table.first(f.phaseBeside(), f)
		if !ok {
			d, _ = table.first(phaseSettled, f)
		}
		d.secondary = append(d.secondary, Finding{Kind: MemoryPressure, Text: streamedText(f.w, f.mem[0])})
		return d
	}
	d, _ := table.first(phaseSettled, f)
	return d
}

// streamedText says a memory stall that is the job's cgroup reclaiming
// its page cache (memoryRule).
func streamedText(w *window, stall Evidence) string {
	limit := "its memory limit"
	if j := w.job; j != nil && j.MemLimitBytes != nil {
		limit = "its memory limit (" + fmtBytes(float64(*j.MemLimitBytes)) + ")"
	}
	return fmt.Sprintf("%s: the job's cgroup reclaiming the page cache of data larger than %s as it reads on, nothing swapped or killed, %s available on the host; not memory pressed",
		stall.Text, limit, fmtBytes(w.memAvail))
}

// join is a decision whose evidence is first, then each of rest.
func join(first []Evidence, rest ...[]Evidence) decision {
	d := decision{evidence: append([]Evidence(nil), first...)}
	for _, r := range rest {
		d.evidence = append(d.evidence, r...)
	}
	return d
}

// transferBound says whether host-to-device copies fill the PCIe link in
// a problem the copies can add to: the batches reach the GPU no faster.
// Its evidence and its advice line go with any such kind.
func transferBound(k Kind, w *window, th Thresholds) bool {
	return w.pcieRx.ok && w.pcieRx.v >= th.PCIeLinkShare && k.Problem() && k != MemoryPressure && k != GPUUnderused
}

// loopDelayShownPct: the loop thread's wait for a CPU, taken off the
// virtual accelerator's busy share, is said in its evidence from this
// share of wall time (sample.VirtualAccel).
const loopDelayShownPct = 5

// accelName is the accelerator in words, for evidence about how busy it is.
func (f *facts) accelName() string {
	if f.real && !f.w.gpuUtil.ok {
		if mi := f.w.gpu.mig; mi != nil && f.w.mig {
			return "the loop's MIG instance (" + mi.Profile + "; SM activity, GPM)"
		}
		if f.w.mig {
			return "the GPU's MIG instances (SM activity, GPM)"
		}
		// A frame with no utilization on a GPU not partitioned (a review:
		// "MIG instances" of an H200 with none).
		return "the GPU (SM activity, GPM: its utilization not read)"
	}
	if f.real {
		return "the GPU"
	}
	w := f.w
	basis := w.accelBasis
	if basis == "" {
		basis = "loader step time / wall time"
	}
	if w.virtualStep.ok && w.virtualDelay.ok && w.virtualDelay.v >= loopDelayShownPct {
		// Three medians, not one difference: 93 less 24 beside "63 %
		// busy" read as wrong arithmetic (a review).
		basis += fmt.Sprintf(": the step's %.0f %% less the %.0f %% its thread waited for a CPU, each the window's median, as is the busy share", w.virtualStep.v, w.virtualDelay.v)
	}
	return "the accelerator (virtual: " + basis + ")"
}

// takenByOthers is the finding that other processes take the job's CPUs:
// its key thread waits for a CPU (run-queue delay) while processes outside
// the watched tree use cores. The fix is placement, not the job. Not for a
// job throttled at its quota: its threads wait for the quota, which a
// cpuset would not give back (a review: "give the job its own CPUs" beside
// a job throttled in 100 % of periods on a host 54 % busy).
func takenByOthers(w *window, th Thresholds) (Finding, bool) {
	if !w.runDelay.ok || w.runDelay.v < th.RunDelayMsPerSec || !w.othersCores.ok || w.othersCores.v < th.OthersCores || w.treeCPUMissed() ||
		w.jobThrottle.ok && w.jobThrottle.v >= th.ThrottledShare {
		return Finding{}, false
	}
	t := w.delayedThread
	return Finding{Kind: CPUSaturated, Text: fmt.Sprintf("CPU taken by others: thread %s (tid %d) waited %.0f ms/s for a CPU while processes outside the job used %.1f cores — give the job its own CPUs (a cpuset, taskset) or move the others",
		t.Name, t.TID, w.runDelay.v, w.othersCores.v)}, true
}

func confidence(d decision, w *window, th Thresholds) float64 {
	c := 0.55 + 0.1*float64(min(len(d.evidence), 3))
	if len(d.evidence) > 0 {
		c += 0.1 * min(1, max(0, d.evidence[0].strength))
	}
	switch {
	case d.variant == variantHostOnly:
		c *= 0.5
	case d.kind == Healthy && !w.waitShare.ok && d.variant != healthyBusy:
		c *= 0.7 // no loader and a GPU not clearly busy: input waits are unseen
	}
	c *= min(1, float64(w.frames)/float64(max(th.WindowFrames, 1)))
	if w.loaderDown != nil {
		c /= 2 // its figures are from before the loader went quiet (heldFromBefore)
	}
	return min(0.95, max(0.05, c))
}

func severity(d decision, w *window, th Thresholds) Severity {
	if !d.kind.Problem() {
		return Info
	}
	if d.kind == GPUUnderused && (d.variant == underusedHostIdle || d.variant == underusedWaitUnread) {
		return Warning
	}
	accel, _ := w.accel()
	if (w.waitShare.ok && w.waitShare.v >= th.CriticalWaitShare) || (accel.ok && accel.v < th.CriticalAccelPct) ||
		d.kind == MemoryPressure && w.swapPages.v >= th.CriticalSwapPagesPerSec {
		return Critical
	}
	return Warning
}

// profileEvidence adds what the loader's CPU profile says, when one was
// taken: the category that matches the verdict ("71 % of the loader's CPU
// is reading (files, network)" for io_bound), else the largest.
func profileEvidence(k Kind, w *window, th Thresholds, mmap bool, timedCollate level) (Evidence, bool) {
	if w.profile == nil || !k.Problem() {
		return Evidence{}, false
	}
	// The category the kind expects where it holds its share, else the
	// largest (a kind's stage at 7 % is no evidence for it) that the
	// hook's own clocks do not contradict.
	want := situationOf(k).Stage
	cats, who, top := profileOfTheLoading(w)
	best := sample.ProfileCategory{Name: sample.CatOther}
	for _, c := range cats {
		if c.Share > best.Share && !contradicted(c, timedCollate) {
			best = c
		}
	}
	for _, c := range cats {
		if c.Name == want && c.Share >= th.ProfileCategoryShare && !contradicted(c, timedCollate) {
			best = c
		}
	}
	if best.Share <= 0 {
		return Evidence{}, false
	}
	words := sample.ProfileCategoryWords[best.Name]
	if mmap && best.Name == sample.CatReading {
		words = "reading: copying out of the mapped dataset, its page faults included"
	}
	their := "its"
	if strings.HasPrefix(who, "the workers'") {
		their = "their" // the workers' CPU (a user's review)
	}
	text := fmt.Sprintf("%s: %.0f %% of %s CPU is %s", who, 100*best.Share, their, words)
	if best.Name == sample.CatOther {
		// No category names it: the job's own code, which its busiest
		// function names better than "elsewhere" does.
		// (Top is by self time, the categories by every frame on the
		// stack: the function is named, its share is not set beside.)
		own := 0.0
		for _, f := range top {
			if gpuwatchOwn(f) {
				own += f.Flat // gpuwatch's cost, said as such below, not the job's code to optimise
				continue
			}
			if c := profileCategoryOf(f); c == "" || c == sample.CatOther {
				what := "code of no category gpuwatch knows"
				if their == "its" {
					// The training process: its step is here too (a
					// user's review: Linear.forward and run_backward
					// read as code gpuwatch does not know).
					what = "code no loading category names (the model's step, the job's own code)"
				}
				text = fmt.Sprintf("%s: %.0f %% of %s CPU is in %s; the busiest such function is %s", who, 100*best.Share, their, what, placeOf(f))
				break
			}
		}
		if own >= minBusiestShare {
			text += fmt.Sprintf("; gpuwatch's own hook takes %.0f %% of it (its cost, not the job's code)", 100*own)
		}
	}
	return evidence("profile."+best.Name+"_share", best.Share, ">=", 0, "ratio", text), true
}

// profileOfTheLoading is the profile's categories, their owner and their
// busiest functions as the profile's evidence says them: the workers'
// own where the hook merged their profiles (a review: "the loader's CPU
// profile: 80 % … run_backward" beside 2 workers, which run no backward:
// the training process's profile); a hooked loop's is the training
// process's, named so; any other loader's is the loader's.
func profileOfTheLoading(w *window) ([]sample.ProfileCategory, string, []sample.ProfileFunc) {
	p := w.profile
	switch {
	case len(p.Workers) > 0:
		return p.Workers, "the workers' CPU profile", loadingTop(p)
	case w.loaderKind == "python":
		return p.Categories, "the training process's CPU profile", cpuTop(p)
	}
	return p.Categories, "the loader's CPU profile", cpuTop(p)
}

// contradicted says the profile's collating share is far beyond what the
// hook's clocks time for it (timed: collating and handing over, as a
// share of a batch's loading, where timed): a sampler short of a CPU
// lands its few samples where the loop lets go of the GIL (torch.stack
// under default_collate), and a num_workers=0 loop whose collate the hook
// timed at 0.2 % of a batch read "59 % of its CPU is collating" from 216
// samples for 4.7 s of CPU.
func contradicted(c sample.ProfileCategory, timed level) bool {
	if !timed.ok || c.Name != sample.CatCollating {
		return false // serializing holds the loop's own unpickling too, which no stage times
	}
	return c.Share > 4*timed.v+0.2
}

// timedCollating is the share of a batch's loading (its __getitem__,
// collate and hand-over) the hook timed collating and handing over, over
// frames; not ok where it timed no stages.
func timedCollating(frames []sample.Frame, w *window) level {
	s := readStages(frames, w)
	if t := s.worker(); t > 0 {
		return level{v: (s.collate + s.handover) / t, n: 1, ok: true}
	}
	return level{}
}

func fmtBytes(b float64) string { return sample.FormatBytes(b) }
