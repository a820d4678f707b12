package diagnose

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// advise writes the advice for the kind (docs/diagnosis.md), filled with this
// machine's numbers. With a pipeline model (m), the computed changes and
// their prediction come first, and the catalogue's knob lines make way for
// them; a knob already set is never advised. Each kind's own lines come
// from its situation (Situation.Advice).
func advise(d decision, w *window, th Thresholds, m *modelAdvice, pay *sample.BatchPayload) []string {
	cores := w.cores
	keep := min(2, max(cores-1, 0)) // cores kept for the training process
	in := adviceIn{d: d, w: w, th: th, modeled: m != nil, cores: cores, keep: keep, suggest: max(1, cores-keep)}
	if line, ok := stuckLine(d, w); ok {
		return []string{line} // no knob unsticks a hang, and the model's figures are from before it
	}
	var a []string
	if w.iterableRepeats {
		a = append(a, repeatsLine(w))
	}
	if m != nil && len(m.changes) > 0 {
		a = append(a, changeLine(m.changes, m.predicted, m.pipeline.Measured))
		if line, ok := iterableWorkersLine(m.changes, w); ok {
			a = append(a, line)
		}
		if m.toRead {
			a = append(a, noKnobHelps(m.pipeline, planned{limit: LimitWorkers}, th)) // why: no count weighed until their CPU is read
		}
	} else if m != nil && d.kind.Problem() {
		m.noChange = noKnobHelps(m.pipeline, m.planned, th)
		a = append(a, m.noChange)
	}
	if d.kind == CPUSaturated && w.confined() {
		a = append(a, fmt.Sprintf("the job's allocation is the limit: it may use %s CPU — ask for more CPUs (Slurm --cpus-per-task, the pod's CPU limit), and keep num_workers within it", sample.FormatCPUs(w.job.CPUCapacityCores)))
	}
	if d.kind == MemoryPressure && w.job != nil && w.job.MemLimitBytes != nil {
		a = append(a, fmt.Sprintf("the job's memory limit is %s: ask for more (Slurm --mem, the pod's memory limit), or hold less per worker", sample.FormatBytes(float64(*w.job.MemLimitBytes))))
	}
	if fn := situationOf(d.kind).Advice; fn != nil {
		lines, last := fn(in)
		a = append(a, lines...)
		if last {
			return a
		}
	}
	if transferBound(d.kind, w, th) {
		a = append(a, transferLine(w, pay))
	}
	switch {
	case d.variant != variantHostOnly:
	case w.sampled != nil && w.sampled.BeforeFirstBatch: // gpuwatch run's job: the hook is in it already
		a = append(a, "no accelerator signal: run where the GPU is to see whether the accelerator waits")
	default:
		a = append(a, "no accelerator signal: run where the GPU is, or attach to the loader (gpuwatch attach URL), to see whether the accelerator waits")
	}
	return a
}

// The wait under way that reads as a hang, not a slow input: at least
// stuckHangSec (sample.HangWait, the figure's one home), and stuckHangSteps
// times what a batch takes where that is known — the loop's step, and a
// worker's time on a batch (its timed stages) over the workers: a
// pipeline that is slow but moving is told its knobs.
const (
	stuckHangSec   = float64(sample.HangWait / time.Second)
	stuckHangSteps = 10.0
)

// stuckLine is the advice for a loop that has waited a hang's time for
// one batch (an input-bound kind, the newest frame's wait under way): a
// worker or a read that hangs, which no knob fixes.
func stuckLine(d decision, w *window) (string, bool) {
	if !situationOf(d.kind).InputBound || !w.waiting.ok || w.waiting.v < stuckHangSec {
		return "", false
	}
	if w.stepMs.ok && w.waiting.v < stuckHangSteps*w.stepMs.v/1000 {
		return "", false
	}
	if w.workerStageSec.ok && w.waiting.v < stuckHangSteps*w.workerStageSec.v/float64(max(1, w.workers)) {
		return "", false
	}
	where := "py-spy dump --pid PID on the training process and each worker shows where it is"
	if len(w.workerPIDs) > 0 {
		where = fmt.Sprintf("py-spy dump --pid PID on the training process and each worker (%s) shows where it is", pidList(w.workerPIDs, 4))
	}
	return fmt.Sprintf("the loop has waited %s for one batch: a worker or a read that hangs (or, at an epoch's start, workers that take that long to start: worker_init_fn, opening the dataset), which no knob fixes — %s; DataLoader(timeout=SECONDS) makes a hang an error instead of a stall",
		sample.FormatDuration(w.waiting.v), where), true
}

// pidList writes at most n PIDs, "1, 2, 3 and 2 more".
func pidList(pids []int, n int) string {
	var s string
	for i, p := range pids[:min(n, len(pids))] {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(p)
	}
	if len(pids) > n {
		s += fmt.Sprintf(" and %d more", len(pids)-n)
	}
	return s
}

// transferLine is the advice for copies that fill the PCIe link: what
// the job does not do yet of pinned memory and non_blocking copies (the
// hook's copy figures, or the pin_memory knob), then smaller dtypes or a
// decode on the GPU, which help either way.
func transferLine(w *window, pay *sample.BatchPayload) string {
	pinned, async := w.knobs[sample.KnobPin.Flag] == "true", false
	if pay != nil && pay.Copy != nil {
		pinned = pinned || pay.Copy.PinnedShare >= 0.995
		async = pay.Copy.NonBlockingShare >= 0.995
	}
	var do string
	switch {
	case !pinned && !async:
		do = "pin_memory=True with .to(device, non_blocking=True), "
	case !pinned:
		do = "pin_memory=True (its copies are non_blocking already), "
	case !async:
		do = ".to(device, non_blocking=True) (its batches are pinned already), "
	}
	return "the copies to the GPU fill its PCIe link: " + do + "send smaller dtypes (uint8 images, not float32), or decode on the GPU (NVIDIA DALI, torchvision.io.decode_jpeg on cuda)"
}

// adviceIn is what a kind's advice reads: the decision and its window,
// whether a pipeline model gives the knob lines (modeled), and the cores:
// how many, how many to keep for the training process, how many workers
// to suggest.
type adviceIn struct {
	d                    decision
	w                    *window
	th                   Thresholds
	modeled              bool
	cores, keep, suggest int
}

// catalogKnobs is the starved catalogue's knob advice when there is no
// model to compute it: never a value already set, never "from N to N".
func catalogKnobs(w *window, suggest, cores, keep int) []string {
	var a []string
	switch {
	case w.workers < 0:
		// Its count is unknown: no change from it is advised, only the
		// bound the cores set.
		a = append(a, fmt.Sprintf("num_workers is unknown (the loader did not say): on %d cores, up to %s leave %d for the training process; workers that wait on reads or the network can outnumber cores", cores, sample.Plural(suggest, "worker"), keep))
	case w.workers < suggest:
		a = append(a, fmt.Sprintf("raise num_workers from %d to %d (%d cores, keep %d for the training process); workers that wait on reads or the network can outnumber cores", w.workers, suggest, cores, keep))
	default:
		a = append(a, fmt.Sprintf("num_workers is %d on %d cores: more help only where workers wait on reads or the network", w.workers, cores))
	}
	if w.prefetch > 0 {
		a = append(a, fmt.Sprintf("raise prefetch_factor from %d to %d so more batches are ready ahead of each step", w.prefetch, 2*w.prefetch))
	}
	// A knob the loader did not report is said as a condition, never as
	// a change the job may already have made; persistent workers need
	// workers (torch refuses them at num_workers=0).
	if w.workers != 0 || suggest > 0 {
		if w.newLoaderEveryEpoch {
			a = append(a, "build the DataLoader once, before the epoch loop, with persistent_workers=True: the script builds a new one every epoch, whose workers start anew whatever persistent_workers says")
		} else {
			a = append(a, knobLine(w, sample.KnobPersistent, "persistent_workers=True so workers are not restarted (and the pipeline refilled) every epoch"))
		}
	}
	if w.gpuUtil.ok {
		a = append(a, knobLine(w, sample.KnobPin, "pin_memory=True so host-to-GPU copies use page-locked memory"))
	}
	return slices.DeleteFunc(a, func(l string) bool { return l == "" })
}

// knobLine advises setting a boolean knob: "set …" where the loader said
// it is off, a condition where it did not say, nothing where it is on.
func knobLine(w *window, k *sample.Knob, set string) string {
	switch v, known := w.knobs[k.Flag]; {
	case v == "true":
		return ""
	case known:
		return "set " + set
	default:
		return "if " + k.Name + " is not set (the loader did not say): " + set
	}
}

// modelAdvice is the pipeline model's answer for a window.
type modelAdvice struct {
	pipeline *Pipeline
	planned
	noChange string // advise's line for why no change is advised (Verdict.NoChange)
}

// repeatsLine says the loader's workers yield the same samples, as their
// first batches measured it (sample.Loader.IterableRepeats): whatever the
// bottleneck, each sample is trained on once per worker, and the rates
// count every repeat (a user's review: an IterableDataset at
// num_workers=2 that did not split its range trained on each sample twice
// an epoch, and gpuwatch said nothing).
func repeatsLine(w *window) string {
	times := "once per worker"
	if w.workers >= 2 {
		times = fmt.Sprintf("%d times", w.workers)
	}
	split := "the IterableDataset does not split its data by worker"
	if w.splitsByWorker {
		split = "its IterableDataset names get_worker_info, yet its split gives each worker the same data"
	}
	return fmt.Sprintf("the DataLoader's workers yield the same samples: two workers' first two batches were the same bytes, and the first worker's second was not its first — %s, so an epoch trains on each sample %s and the samples/s counts every repeat; split it in __iter__ by torch.utils.data.get_worker_info() (each worker its share: range(info.id, n, info.num_workers))", split, times)
}

// iterableWorkersLine is the caution for workers added to a loop that
// loads inline from an IterableDataset (its kind read from the profile):
// each worker runs the dataset's __iter__ whole, so the rate the change
// promises counts every sample once per worker unless the dataset splits
// its data by worker (a review: "num_workers 0 → 2" was advised bare;
// the next, 1 → 2 was: a second worker yields every sample again too).
//
// Not where the hook read the dataset's code asking get_worker_info (in
// its __iter__, or the DataLoader's worker_init_fn): it splits already,
// and the caution would repeat what the job does.
func iterableWorkersLine(cs []Change, w *window) (string, bool) {
	if w.profile == nil || w.profile.Dataset != sample.DatasetIterable || w.splitsByWorker || w.iterableApart || w.iterableRepeats {
		return "", false // repeatsLine says it, measured
	}
	for _, c := range cs {
		from, err1 := strconv.Atoi(c.From)
		to, err2 := strconv.Atoi(c.To)
		if c.Knob == sample.KnobWorkers.Name && err1 == nil && err2 == nil && to > from && to >= 2 {
			return "an IterableDataset runs its __iter__ in every worker: it yields each sample once only where it splits its data by worker (torch.utils.data.get_worker_info() in __iter__); else each worker yields every sample", true
		}
	}
	return "", false
}
