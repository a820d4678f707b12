package diagnose

import (
	"fmt"
	"strconv"

	"github.com/gpuwatch/gpuwatch/sample"
)

// SingleCoreMaxed: one thread pegged while the rest idle, the accelerator waiting. See docs/diagnosis.md, "Verdicts".
const SingleCoreMaxed Kind = 3

func init() {
	register(Situation{
		Kind:       SingleCoreMaxed,
		ID:         "single_core_maxed",
		Title:      "One core maxed: loading runs on a single thread",
		Tone:       ToneWarn,
		InputBound: true,
		Stage:      "decoding",
		Advice:     singleCoreAdvice,
		Practice:   singleCorePractice,
		Scenarios:  []string{"single-core"},
		rules: []rule{
			{name: "no-workers", sees: "num_workers=0: the loop's own thread loads every batch", holds: noWorkersRule},
			{name: "inline", sees: "num_workers=0: the loop loads each batch itself, on the CPU", holds: inlineLoading},
			{name: "loop-hot", sees: "the loop's thread is pegged while its workers idle", variant: singleLoopHot, holds: loopHotRule},
			{name: "thread", sees: "one thread is pegged", holds: threadRule},
			{name: "host-only", sees: "no accelerator signal, and one thread is pegged", variant: variantHostOnly, holds: threadRule},
		},
	})
}

// singleLoopHot: the pegged thread is the training loop's own, while its
// workers idle: more workers will not help, and no other advice follows.
const singleLoopHot variant = "loop-hot"

func singleCoreAdvice(in adviceIn) ([]string, bool) {
	w := in.w
	var a []string
	switch {
	case in.d.variant == singleLoopHot:
		return []string{fmt.Sprintf("the %s %s not the limit: the busiest thread does the training loop's per-batch work (the step, and taking each batch from the workers); more workers will not help, larger batches amortize the per-batch cost", sample.Plural(w.workers, "worker"), map[bool]string{true: "is", false: "are"}[w.workers == 1])}, true
	case w.workers > 0:
		a = append(a, fmt.Sprintf("one thread is pegged although the loader has %s: find what serializes the work (a lock, the GIL, decoding in the training process); the CPU profile names the function", sample.Plural(w.workers, "worker")))
	case w.workers == 0 && !in.modeled && w.sampled != nil:
		// Sampled with no model: a step on the CPU (no GPU signal) runs
		// as loading does, so no worker count is computed (sampledPipeline).
		a = append(a, "loading runs on the training process's own thread (num_workers=0); sampled, a step on the CPU reads as loading, so neither the worker count nor its gain is computed: gpuwatch run -- CMD times the step and computes both")
	case w.workers == 0 && !in.modeled: // an unknown count (-1) is no num_workers=0
		a = append(a, fmt.Sprintf("loading runs on one thread of the training process (num_workers=0): set num_workers to %d (%d cores, keep %d for the training process)", in.suggest, in.cores, in.keep))
	}
	if w.paging.readsNothing(in.th) {
		// Both lines are about reading files: a job that reads next to
		// nothing from storage (its samples made or held in memory) has
		// no file per sample to batch, nor columns to leave unread.
		return a, false
	}
	return append(a, singleCorePractice...), false
}

// singleCorePractice: what practice teaches where one thread loads, said
// where no cause beneath the kind is named (Situation.Practice): both
// about reading files, so not where the job reads nothing.
var singleCorePractice = []string{"batch the preprocessing: read one file per batch, not one per sample", "read only the columns (fields) the model uses"}

// noWorkersRule: the loop's own thread is pegged loading every batch,
// because the loader has no workers (loopBound, num_workers=0).
func noWorkersRule(f *facts) (decision, bool) {
	d, ok := loopBound(f)
	return d, ok && f.w.workers == 0
}

// loopHotRule: the loop's own thread is pegged while the loader's
// workers idle (loopBound with workers): its per-batch work is the limit.
func loopHotRule(f *facts) (decision, bool) {
	d, ok := loopBound(f)
	return d, ok && f.w.workers > 0
}

// threadRule: one thread (or one core) is pegged while the machine is
// not saturated (singleThreadEvidence).
func threadRule(f *facts) (decision, bool) {
	return join(f.single, f.wait), len(f.single) > 0
}

// singleThreadEvidence: one thread (or, without thread data, one core)
// pegged while the machine is not saturated.
func singleThreadEvidence(w *window, th Thresholds, cpuSat bool) []Evidence {
	var single []Evidence
	switch {
	case cpuSat:
		return nil
	case w.hottestThread.ok && w.hottestThread.v >= th.SingleThreadPct:
		single = append(single, evidence("procs.threads.cpu_pct", w.hottestThread.v, ">=", th.SingleThreadPct, "%",
			fmt.Sprintf("thread %s (tid %d) runs at %.0f %% of a core (≥ %.0f %%)", w.threadName, w.threadTID, w.hottestThread.v, th.SingleThreadPct)))
	case !w.hottestThread.ok && w.cores > 1 && w.hottestCore.ok && w.hottestCore.v >= th.SingleThreadPct:
		single = append(single, evidence("cpu.cores.busy_pct", w.hottestCore.v, ">=", th.SingleThreadPct, "%",
			fmt.Sprintf("one core is %.0f %% busy while the machine is %.0f %% busy", w.hottestCore.v, w.cpuBusy.v)))
	case w.workers == 0 && w.hottestThread.ok && w.hottestThread.v >= th.SingleThreadPct-20:
		// The loader says num_workers=0: loading runs in the training loop
		// itself — the signature in docs/diagnosis.md — even when contention
		// holds its thread a little under the 90 % mark.
		single = append(single, evidence("loader.workers", 0, "<=", 0, "",
			fmt.Sprintf("thread %s (tid %d) runs at %.0f %% of a core, and the loader has no workers (num_workers=0): it loads in the training loop",
				w.threadName, w.threadTID, w.hottestThread.v)))
	}
	if len(single) > 0 && w.cpuBusy.ok {
		single = append(single, evidence("cpu.busy_pct", w.cpuBusy.v, "<", th.CPUSaturatedPct, "%",
			fmt.Sprintf("the other cores are mostly idle: the machine is %.0f %% busy", w.cpuBusy.v)))
	}
	return single
}

// loopBound is the num_workers=0 signature seen per thread: the loop
// waits, and the loop's own thread is the busiest thread, because the
// loader has no workers, or because its workers idle (under half a core
// each) while the loop's per-batch work (the step, taking each batch from
// the workers) pegs its thread. Other busy cores become a secondary
// finding.
func loopBound(f *facts) (decision, bool) {
	w, th := f.w, f.th
	r := &w.roles
	if w.workers < 0 || !r.loopHottest.ok || r.loopHottest.v < 0.5 || r.loopPct.v < th.LoopThreadPct {
		return decision{}, false
	}
	idleWorkers := w.workers > 0 && r.workersPct.ok && !w.workersCPUMissed && r.workersPct.v < th.BusyThreadPct*float64(w.workers) // unread is not idle
	if w.workers > 0 && !idleWorkers {
		return decision{}, false
	}
	name := r.loopName
	if name == "" {
		name = "?"
	}
	var d decision
	text := fmt.Sprintf("thread %s (tid %d), the training loop, runs at %.0f %% of a core loading every batch itself: the loader has no workers (num_workers=0)",
		name, r.loopTID, r.loopPct.v)
	if w.sampled != nil {
		// Sampled: "no workers" is no worker process seen, which is also
		// a job whose first epoch has not started (CUDA's set-up, building
		// the model: an H100 job read so for its first 5 s, stop 47).
		text = fmt.Sprintf("thread %s (tid %d), the training loop, runs at %.0f %% of a core with no loader worker process: it loads every batch itself (num_workers=0), or its first epoch has not started (sampled: gpuwatch cannot tell; gpuwatch run can)",
			name, r.loopTID, r.loopPct.v)
	}
	if idleWorkers {
		text = fmt.Sprintf("thread %s (tid %d), the training loop, runs at %.0f %% of a core while its %s %.1f cores together: the loop's own per-batch work is the limit",
			name, r.loopTID, r.loopPct.v, map[bool]string{true: "1 worker uses", false: strconv.Itoa(w.workers) + " workers use"}[w.workers == 1], r.workersPct.v/100)
	}
	d.evidence = append(d.evidence, evidence("loader.loop_thread_cpu_pct", r.loopPct.v, ">=", th.LoopThreadPct, "%", text))
	d.evidence = append(d.evidence, f.wait...)
	d.secondary = append(d.secondary, computeFinding(w, th, f.cpuSat, f.cpu)...)
	return d, true
}

// inlineLoading is the num_workers=0 trap seen from the loop's wait: the
// loader has no workers, the loop waits for its batches (it loads them
// itself: that is its wait), and its own thread's CPU covers at least
// InlineLoadCPUShare of that time, so the loading is CPU work on one
// thread, whatever else the step does on the other cores. Loading inline
// that waits on storage is left to the I/O rules.
func inlineLoading(f *facts) (decision, bool) {
	w, th := f.w, f.th
	r := &w.roles
	if w.workers != 0 || !w.waitShare.ok || w.waitShare.v < th.WaitShareStarved || !r.loopPct.ok ||
		r.loopPct.v < th.InlineLoadCPUShare*100*w.waitShare.v {
		return decision{}, false
	}
	name := r.loopName
	if name == "" {
		name = "?"
	}
	var d decision
	d.evidence = append(d.evidence, evidence("loader.loop_thread_cpu_pct", r.loopPct.v, ">=", th.InlineLoadCPUShare*100*w.waitShare.v, "%",
		fmt.Sprintf("the training loop loads every batch itself (num_workers=0): %.0f %% of its time goes to loading, on its own thread %s (tid %d, %.0f %% of a core)",
			100*w.waitShare.v, name, r.loopTID, r.loopPct.v)))
	d.evidence = append(d.evidence, f.wait[min(1, len(f.wait)):]...)
	d.secondary = append(d.secondary, computeFinding(w, th, f.cpuSat, f.cpu)...)
	return d, true
}

// computeFinding is what else the training process's threads do, for a
// verdict about its loop: its compute pools busy (or spinning) on the
// other cores.
func computeFinding(w *window, th Thresholds, cpuSat bool, cpu []Evidence) []Finding {
	r := &w.roles
	other := "the other cores are"
	if w.cores == 2 {
		other = "the other core is"
	}
	switch {
	case r.haveCompute && r.compute.CPUPct >= th.BusyThreadPct:
		f := Finding{Kind: CPUSaturated, Text: other + " busy too: " + r.describeCompute(th)}
		if !cpuSat {
			f.Kind = Healthy // busy, not saturated: a note, not a second problem
			f.Text = other + " partly busy: " + r.describeCompute(th)
			if spinning(r.compute, th) {
				// A pool in sched_yield: busy by the counters, yielded to
				// any other thread that wants the core (not saturation).
				f.Text = other + " busy only with a spinning pool, which yields it to other threads: " + r.describeCompute(th)
			}
		}
		return []Finding{f}
	case cpuSat && len(cpu) > 0:
		return []Finding{{Kind: CPUSaturated, Text: cpu[0].Text}}
	}
	return nil
}
