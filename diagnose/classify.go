package diagnose

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gpuwatch/gpuwatch/sample"
)

// Classify says which situation a window of frames (oldest first) shows.
// It is pure: the same frames and thresholds give the same verdict. Signals
// a frame lacks are not used, and without any accelerator signal (no GPU
// utilization, no loader) it never claims starvation: it reports what the
// host shows and says what is missing.
func Classify(frames []sample.Frame, th Thresholds) Verdict { return classify(frames, frames, th) }

// classify is Classify with a longer history for the pipeline model: a
// loader that times only its loop (the hook) is modelled from its means
// over history, which a loader whose epochs are shorter than the window
// needs (the Diagnoser keeps ModelFrames of it).
func classify(frames, history []sample.Frame, th Thresholds) Verdict {
	if len(frames) == 0 {
		return Verdict{Kind: WarmingUp}
	}
	w := read(frames, th)
	v := Verdict{Since: frames[0].Time, Missing: w.missing()}
	if len(frames) < th.MinFrames {
		v.Kind = WarmingUp
		return v
	}
	d := decide(&w, th)
	if l := w.loaderDown; l != nil && (d.kind == Idle || d.kind == Healthy) {
		// An endpoint that does not answer is not a stopped loop: say
		// nothing rather than idle (another user may be holding the
		// hook's connections while the loop runs at full speed).
		v.Kind = WarmingUp
		text := "the loader at " + l.Source + " does not answer"
		if l.DisconnectedSince != nil {
			text += " since " + l.DisconnectedSince.Format("15:04:05")
		}
		v.Evidence = []Evidence{evidence("loader.connected", 0, "<", 1, "", text+": its rates are unknown, so idle or busy cannot be told")}
		return v
	}
	if e, ok := profileEvidence(d.kind, &w, th, d.mmap); ok {
		d.evidence = append(d.evidence, e)
	}
	slices.SortStableFunc(d.evidence[min(1, len(d.evidence)):], func(a, b Evidence) int { return cmp.Compare(b.strength, a.strength) })
	if f, ok := takenByOthers(&w, th); ok && d.kind != Healthy && d.kind != Idle {
		d.secondary = append(d.secondary, f)
	}
	if w.pcieRx.ok && w.pcieRx.v >= th.PCIeLinkShare && d.kind.Problem() && d.kind != MemoryPressure && d.kind != GPUUnderused {
		// Copies fill the link: the batches reach the GPU no faster.
		d.transfer = true
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
	v.Kind, v.Evidence, v.Secondary = d.kind, d.evidence, d.secondary
	var m *modelAdvice
	if d.kind.Problem() || d.kind == Healthy {
		mw := &w
		if len(history) > len(frames) && (!w.readSec.ok || !w.decodeSec.ok) {
			long := read(history, th)
			mw = &long
		}
		if p, ok := pipeline(mw); ok {
			m = &modelAdvice{pipeline: p}
			m.changes, m.predicted, m.limit = plan(p, w.cores)
			if len(m.changes) > 0 {
				v.Changes, v.Predicted = m.changes, &m.predicted
			}
		}
	}
	if d.mmap {
		v.Changes = append(v.Changes, mmapChanges(&w, v.Changes)...)
	}
	v.Advice = advise(d, &w, th, m)
	v.Confidence = confidence(d, &w, th)
	v.Severity = severity(d, &w, th)
	return v
}

// decision is a kind with the evidence for it; primary is the first.
type decision struct {
	kind      Kind
	evidence  []Evidence
	hostOnly  bool // no accelerator signal at all
	crowded   bool // cpu_saturated: the training process's compute threads take the CPUs
	loopHot   bool // single_core_maxed: the loop's own thread, with idle workers
	secondary []Finding
	remote    bool // io_bound from the loader's reads, with no busy disk
	moderate  bool // healthy, but the loop waits a little
	busy      bool // healthy, and the accelerator at or above AccelBusyPct
	transfer  bool // host-to-device copies fill the PCIe link
	mmap      bool // io_bound: a mapped dataset's pages fault in from the disk
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
// list is empty when that resource shows nothing past its threshold.
type facts struct {
	w  *window
	th Thresholds

	mem, wait, cpu, io, single, reads []Evidence

	accel      level // the accelerator's busy %: a real GPU, else the virtual one
	real       bool  // accel is a real GPU
	cpuSat     bool  // the CPUs are saturated (busy, or PSI with a run queue)
	fewWorkers bool  // fewer workers than WorkersPerCoreLow of the cores
}

func gather(w *window, th Thresholds) *facts {
	f := &facts{w: w, th: th}
	f.accel, f.real = w.accel()
	f.mem = memoryEvidence(w, th)
	f.wait = waitEvidence(w, th)
	f.cpu, f.cpuSat = cpuEvidence(w, th)
	f.io = ioEvidence(w, th)
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

// decide picks the kind: memory pressure first (swapping slows everything
// else down), then, when the accelerator waits, the first waiting rule that
// holds; without any accelerator signal, what the host shows; else idle or
// healthy.
func decide(w *window, th Thresholds) decision {
	f := gather(w, th)
	switch {
	case len(f.mem) > 0:
		if d, ok := cacheChurnDecision(f); ok {
			return d
		}
		return memoryDecision(f)
	case len(f.wait) > 0:
		for _, r := range waitingRules {
			if d, ok := r.decide(f); ok {
				return d
			}
		}
	case !f.accel.ok && !w.waitShare.ok:
		return hostOnlyDecision(f)
	}
	if d, ok := idleDecision(f); ok {
		return d
	}
	if d, ok := underusedDecision(f); ok {
		return d
	}
	return healthyDecision(f)
}

// waitingRule is one row of the decision table for an accelerator that
// waits: the first rule that holds names the kind.
type waitingRule struct {
	name   string
	decide func(f *facts) (decision, bool)
}

// waitingRules, in order. The thread rules come first: they look inside the
// job, where the host-wide rules only see totals.
var waitingRules = []waitingRule{
	{"num_workers=0: the loop's own thread loads every batch", func(f *facts) (decision, bool) {
		d, ok := loopBound(f.w, f.th, f.wait, f.cpuSat, f.cpu)
		return d, ok && f.w.workers == 0
	}},
	{"num_workers=0: the loop loads each batch itself, on the CPU", func(f *facts) (decision, bool) {
		return inlineLoading(f.w, f.th, f.wait, f.cpuSat, f.cpu)
	}},
	{"the training process's compute threads crowd out its workers", func(f *facts) (decision, bool) {
		e, ok := crowdedOut(f.w, f.th)
		if !ok || !f.cpuSat {
			return decision{}, false
		}
		d := join(CPUSaturated, e, f.cpu, f.wait)
		d.crowded = true
		return d, true
	}},
	{"the loop's thread is pegged while its workers idle", func(f *facts) (decision, bool) {
		return loopBound(f.w, f.th, f.wait, f.cpuSat, f.cpu)
	}},
	{"a mapped dataset's pages fault in from the disk", func(f *facts) (decision, bool) {
		e, ok := mmapEvidence(f.w, f.th, f.io)
		if !ok {
			return decision{}, false
		}
		d := join(IOBound, e, f.io, f.wait, f.reads)
		d.mmap = true
		return d, true
	}},
	{"every core is busy", func(f *facts) (decision, bool) {
		return join(CPUSaturated, f.cpu, f.wait), f.cpuSat
	}},
	{"storage is busy", func(f *facts) (decision, bool) {
		return join(IOBound, f.io, f.wait, f.reads), len(f.io) > 0
	}},
	{"one thread is pegged", func(f *facts) (decision, bool) {
		return join(SingleCoreMaxed, f.single, f.wait), len(f.single) > 0
	}},
	{"enough workers read, and no local disk is busy: a remote store", func(f *facts) (decision, bool) {
		if len(f.reads) == 0 || f.fewWorkers {
			return decision{}, false
		}
		w, th := f.w, f.th
		d := join(IOBound, f.reads, f.wait)
		d.evidence = append(d.evidence, evidence("loader.workers", float64(w.workers), ">=", th.WorkersPerCoreLow*float64(w.cores), "",
			fmt.Sprintf("%d workers are reading, yet no disk here is busy: the store (network, object storage or a throttle) is the limit", w.workers)))
		d.remote = true
		return d, true
	}},
	{"nothing on the host is saturated: starved", func(f *facts) (decision, bool) {
		w, th := f.w, f.th
		d := join(GPUStarved, f.wait)
		if f.fewWorkers {
			d.evidence = append(d.evidence, evidence("loader.workers", float64(w.workers), "<", th.WorkersPerCoreLow*float64(w.cores), "",
				fmt.Sprintf("only %s for %d cores", sample.Plural(w.workers, "loader worker"), w.cores)))
		}
		if w.cpuBusy.ok {
			d.evidence = append(d.evidence, evidence("cpu.busy_pct", w.cpuBusy.v, "<", th.CPUSaturatedPct, "%",
				fmt.Sprintf("no host resource is saturated: CPU %.0f %% busy", w.cpuBusy.v)))
		}
		return d, true
	}},
}

func join(k Kind, first []Evidence, rest ...[]Evidence) decision {
	d := decision{kind: k, evidence: append([]Evidence(nil), first...)}
	for _, r := range rest {
		d.evidence = append(d.evidence, r...)
	}
	return d
}

func memoryEvidence(w *window, th Thresholds) []Evidence {
	var mem []Evidence
	if j := w.job; j != nil && j.MemLimitBytes != nil && j.MemUsedBytes != nil && *j.MemLimitBytes > 0 {
		// The job's own limit: the host can have memory to spare while the
		// job reclaims, swaps or is OOM-killed at its cgroup's limit.
		full := float64(*j.MemUsedBytes) / float64(*j.MemLimitBytes)
		// A cgroup mostly full of page cache is how Linux uses memory: the
		// cache is reclaimed first, and hitting the limit then is routine
		// (a dataset streamed through a container). Only an OOM kill or
		// swap makes that pressure.
		cache := j.MemFileBytes != nil && float64(*j.MemFileBytes) >= th.JobCacheShare*float64(*j.MemUsedBytes) && w.jobOOMKills == 0 && w.jobSwapGrowth <= 0
		if full >= th.JobMemFullShare && !cache && (w.jobMaxEvents > 0 || w.jobOOMKills > 0 || w.jobSwapGrowth > 0) {
			text := fmt.Sprintf("the job's memory cgroup holds %s of its %s limit (%.0f %%)", fmtBytes(float64(*j.MemUsedBytes)), fmtBytes(float64(*j.MemLimitBytes)), 100*full)
			if w.jobMaxEvents > 0 {
				text += fmt.Sprintf("; at the limit %d times", w.jobMaxEvents)
			}
			if w.jobOOMKills > 0 {
				text += fmt.Sprintf("; %d OOM kill(s)", w.jobOOMKills)
			}
			if w.jobSwapGrowth > 0 {
				text += fmt.Sprintf("; swapped out %s more", fmtBytes(w.jobSwapGrowth))
			}
			mem = append(mem, evidence("job.mem_used_share", full, ">=", th.JobMemFullShare, "ratio", text))
		}
	}
	if w.swapPages.ok && w.swapPages.v >= th.SwapPagesPerSec {
		text := fmt.Sprintf("the host swaps %.0f pages/s (≥ %.0f)", w.swapPages.v, th.SwapPagesPerSec)
		if len(mem) > 0 {
			text += fmt.Sprintf(", %s available to the host", fmtBytes(w.memAvail))
		}
		mem = append(mem, evidence("mem.swap_pages_per_sec", w.swapPages.v, ">=", th.SwapPagesPerSec, "pages/s", text))
	}
	if w.psiMem.ok && w.psiMem.v >= th.PSIMemSomePct {
		mem = append(mem, evidence("psi.memory.some_pct", w.psiMem.v, ">=", th.PSIMemSomePct, "%",
			fmt.Sprintf("tasks stalled on memory %.0f %% of the time (PSI, ≥ %.0f %%)", w.psiMem.v, th.PSIMemSomePct)))
	}
	return mem
}

func memoryDecision(f *facts) decision {
	w, th := f.w, f.th
	mem := f.mem
	if w.majFaults.ok && w.majFaults.v >= th.MajorFaultsPerSec {
		mem = append(mem, evidence("mem.major_faults_per_sec", w.majFaults.v, ">=", th.MajorFaultsPerSec, "/s",
			fmt.Sprintf("%.0f major page faults/s (≥ %.0f)", w.majFaults.v, th.MajorFaultsPerSec)))
	}
	return decision{kind: MemoryPressure, evidence: mem}
}

// waitEvidence: is the accelerator waiting for input?
func waitEvidence(w *window, th Thresholds) []Evidence {
	var wait []Evidence
	if w.waitShare.ok && w.waitShare.v >= th.WaitShareStarved {
		wait = append(wait, evidence("loader.wait_share", w.waitShare.v, ">=", th.WaitShareStarved, "ratio",
			fmt.Sprintf("the training loop waits %.0f %% of its time for the next batch (≥ %.0f %%: input-bound)", 100*w.waitShare.v, 100*th.WaitShareStarved)))
	}
	if w.gpuP95.ok && w.gpuP95.v >= th.BurstyP95 && w.gpuP5.v < th.BurstyP5 {
		wait = append(wait, evidence("gpu.util_p5", w.gpuP5.v, "<", th.BurstyP5, "%",
			fmt.Sprintf("GPU utilization is bursty: p95 %.0f %%, p5 %.0f %% within each second (busy, then waiting)", w.gpuP95.v, w.gpuP5.v)))
	}
	return wait
}

func cpuEvidence(w *window, th Thresholds) (cpu []Evidence, saturated bool) {
	if w.confined() {
		return jobCPUEvidence(w, th)
	}
	// Compute threads that spin (an idle BLAS pool in sched_yield) make a
	// core read busy, but yield it to any thread with work: they are not
	// demand. Saturation is judged without them.
	busy, spin := w.cpuBusy.v, 0.0
	if w.spinPct.ok && w.cores > 0 {
		spin = w.spinPct.v / float64(w.cores)
		busy = max(0, busy-spin)
	}
	saturated = w.cpuBusy.ok && busy >= th.CPUSaturatedPct
	switch {
	case saturated:
		cpu = append(cpu, evidence("cpu.busy_pct", w.cpuBusy.v, ">=", th.CPUSaturatedPct, "%",
			fmt.Sprintf("all %d cores are %.0f %% busy (≥ %.0f %%)", w.cores, w.cpuBusy.v, th.CPUSaturatedPct)))
	case w.cpuBusy.ok && w.cpuBusy.v >= th.CPUSaturatedPct && spin > 0:
		cpu = append(cpu, evidence("cpu.busy_pct", busy, "<", th.CPUSaturatedPct, "%",
			fmt.Sprintf("the cores read %.0f %% busy, but %.0f points of it are compute threads spinning idle (they yield to work): %.0f %% is work", w.cpuBusy.v, spin, busy)))
	}
	runnable := w.runQueue.v
	if w.spinThreads.ok {
		runnable = max(0, runnable-w.spinThreads.v)
	}
	if w.runQueue.ok && w.cores > 0 && runnable > float64(w.cores) {
		cpu = append(cpu, evidence("cpu.procs_running", w.runQueue.v, ">", float64(w.cores), "",
			fmt.Sprintf("%.0f runnable tasks for %d cores", w.runQueue.v, w.cores)))
	}
	if w.psiCPU.ok && w.psiCPU.v >= th.PSICPUSomePct {
		cpu = append(cpu, evidence("psi.cpu.some_pct", w.psiCPU.v, ">=", th.PSICPUSomePct, "%",
			fmt.Sprintf("tasks waited for a CPU %.0f %% of the time (PSI)", w.psiCPU.v)))
		saturated = saturated || (w.runQueue.ok && runnable > float64(w.cores))
	}
	return cpu, saturated
}

// jobCPUEvidence judges saturation on the job's terms: its CPU use against
// the capacity its cgroup gives it (quota, cpuset), and throttling.
func jobCPUEvidence(w *window, th Thresholds) (cpu []Evidence, saturated bool) {
	j := w.job
	capacity := j.CPUCapacityCores
	limit := fmt.Sprintf("cpuset %s", j.CPUSet)
	if q := j.CPUQuotaCores; q != nil && *q <= capacity+1e-9 {
		limit = fmt.Sprintf("quota %.0f ms per %.0f ms", *j.CPUQuotaUs/1000, *j.CPUPeriodUs/1000)
	}
	if w.jobUsed.ok && w.jobUsed.v >= th.CPUSaturatedPct/100*capacity {
		saturated = true
		text := fmt.Sprintf("the job may use %.2g CPU (%s) and used %.2g", capacity, limit, w.jobUsed.v)
		if w.jobThrottle.ok && w.jobThrottle.v > 0 {
			text += fmt.Sprintf("; throttled %.0f %% of periods", 100*w.jobThrottle.v)
		}
		cpu = append(cpu, evidence("job.cpu_used_cores", w.jobUsed.v, ">=", th.CPUSaturatedPct/100*capacity, "cores", text))
	} else if w.jobThrottle.ok && w.jobThrottle.v >= th.ThrottledShare {
		saturated = true
		cpu = append(cpu, evidence("job.throttled_periods_share", w.jobThrottle.v, ">=", th.ThrottledShare, "ratio",
			fmt.Sprintf("the job is throttled in %.0f %% of periods (%s)", 100*w.jobThrottle.v, limit)))
	}
	if saturated && w.cpuBusy.ok && w.cpuBusy.v < th.CPUSaturatedPct {
		cpu = append(cpu, evidence("cpu.busy_pct", w.cpuBusy.v, "<", th.CPUSaturatedPct, "%",
			fmt.Sprintf("the host is %.0f %% busy: the job's limit, not the machine, is full", w.cpuBusy.v)))
	}
	return cpu, saturated
}

func ioEvidence(w *window, th Thresholds) []Evidence {
	var io []Evidence
	if w.diskBusy.ok && w.diskBusy.v >= th.DiskBusyPct {
		io = append(io, evidence("disk.busy_pct", w.diskBusy.v, ">=", th.DiskBusyPct, "%",
			fmt.Sprintf("%s is %.0f %% busy (≥ %.0f %%)", w.diskName, w.diskBusy.v, th.DiskBusyPct)))
	}
	if w.psiIO.ok && w.psiIO.v >= th.PSIIOSomePct {
		io = append(io, evidence("psi.io.some_pct", w.psiIO.v, ">=", th.PSIIOSomePct, "%",
			fmt.Sprintf("tasks stalled on I/O %.0f %% of the time (PSI, ≥ %.0f %%)", w.psiIO.v, th.PSIIOSomePct)))
	}
	if w.iowait.ok && w.iowait.v >= th.IowaitPct {
		io = append(io, evidence("cpu.iowait_pct", w.iowait.v, ">=", th.IowaitPct, "%",
			fmt.Sprintf("CPUs idle waiting on I/O %.0f %% of the time (≥ %.0f %%)", w.iowait.v, th.IowaitPct)))
	}
	return io
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

// readEvidence: the loader spends its time reading, not decoding.
func readEvidence(w *window, th Thresholds) []Evidence {
	if !w.readSec.ok || !w.decodeSec.ok || w.readSec.v < th.ReadSecPerSec || w.readSec.v < th.ReadDominance*w.decodeSec.v {
		return nil
	}
	return []Evidence{evidence("loader.read_sec_per_sec", w.readSec.v, ">=", th.ReadDominance*w.decodeSec.v, "s/s",
		fmt.Sprintf("the loader spends %.1f s per second reading and %.1f s decoding (reads ≥ %.0f× decode)", w.readSec.v, w.decodeSec.v, th.ReadDominance))}
}

// hostOnlyDecision: no accelerator signal. Say what the host shows, never
// "starved".
func hostOnlyDecision(f *facts) decision {
	var d decision
	switch {
	case f.cpuSat:
		d = join(CPUSaturated, f.cpu)
	case len(f.io) > 0:
		d = join(IOBound, f.io)
	case len(f.single) > 0:
		d = join(SingleCoreMaxed, f.single)
	default:
		d = decision{kind: Idle}
		if w := f.w; w.cpuBusy.ok {
			d.evidence = append(d.evidence, evidence("cpu.busy_pct", w.cpuBusy.v, "<", f.th.CPUSaturatedPct, "%",
				fmt.Sprintf("no accelerator signal; the host is %.0f %% busy with nothing saturated", w.cpuBusy.v)))
		}
	}
	d.hostOnly = true
	return d
}

func (f *facts) accelName() string {
	if f.real && !f.w.gpuUtil.ok {
		return "the GPU's MIG instances (SM activity, GPM)"
	}
	if f.real {
		return "the GPU"
	}
	basis := f.w.accelBasis
	if basis == "" {
		basis = "loader step time / wall time"
	}
	return "the accelerator (virtual: " + basis + ")"
}

// idleDecision: the accelerator does nothing, or the loader hands out no
// batches.
func idleDecision(f *facts) (decision, bool) {
	w, th, accel := f.w, f.th, f.accel
	// Stopped: no batch in the whole window. A loader whose short epochs
	// each restart their workers hands out no batch in most frames, and
	// all of them in one: its median is 0, its mean is not, and its loop
	// waits rather than idles.
	loaderStopped := w.haveLoader && w.batchesPerSec.ok && w.batchesPerSec.v == 0 &&
		!(w.meanBatchesPerSec.ok && w.meanBatchesPerSec.v > 0)
	// A sampled loop whose wait could not be split says nothing of a
	// loader at work: with the GPU idle and nothing saturated, it is idle.
	noLoader := !w.haveLoader || (w.sampled != nil && !w.waitShare.ok)
	if !(accel.ok && accel.v < th.IdlePct && (noLoader || loaderStopped)) && !(loaderStopped && !f.real) {
		return decision{}, false
	}
	d := decision{kind: Idle}
	if accel.ok {
		d.evidence = append(d.evidence, evidence("accel.busy_pct", accel.v, "<", th.IdlePct, "%",
			fmt.Sprintf("%s is %.0f %% busy", f.accelName(), accel.v)))
	}
	if loaderStopped {
		d.evidence = append(d.evidence, evidence("loader.batches_per_sec", 0, "<=", 0, "/s", "the loader hands out no batches"))
	}
	return d, true
}

// underusedDecision: no input wait, the GPU reads busy, but GPM says its
// SMs mostly idle — utilization only says a kernel was running.
func underusedDecision(f *facts) (decision, bool) {
	w, th, accel := f.w, f.th, f.accel
	if !f.real || !w.gpuUtil.ok || !accel.ok || accel.v < th.AccelBusyPct || !w.smActivity.ok || w.smActivity.v >= th.SMActivityLowPct {
		return decision{}, false
	}
	return decision{kind: GPUUnderused, evidence: []Evidence{evidence("gpu.sm_activity_pct", w.smActivity.v, "<", th.SMActivityLowPct, "%",
		fmt.Sprintf("utilization %.0f %% but SM activity %.0f %% (GPM): a kernel is always running, yet the SMs are mostly idle — small or launch-bound kernels, or waits on host syncs", accel.v, w.smActivity.v))}}, true
}

func healthyDecision(f *facts) decision {
	w, th, accel := f.w, f.th, f.accel
	d := decision{kind: Healthy}
	if accel.ok {
		op, text := ">=", fmt.Sprintf("%s is %.0f %% busy", f.accelName(), accel.v)
		if accel.v < th.AccelBusyPct {
			op = "<"
		} else {
			d.busy = true
		}
		d.evidence = append(d.evidence, evidence("accel.busy_pct", accel.v, op, th.AccelBusyPct, "%", text))
	}
	if w.gpuP5.ok && w.gpuP5.v >= th.BurstyP5 {
		d.evidence = append(d.evidence, evidence("gpu.util_p5", w.gpuP5.v, ">=", th.BurstyP5, "%",
			fmt.Sprintf("GPU utilization is steady within each second: p5 %.0f %%, p95 %.0f %%", w.gpuP5.v, w.gpuP95.v)))
	}
	if w.waitShare.ok {
		e := evidence("loader.wait_share", w.waitShare.v, "<", th.WaitShareStarved, "ratio",
			fmt.Sprintf("the training loop waits %.0f %% of its time for input (< %.0f %%)", 100*w.waitShare.v, 100*th.WaitShareStarved))
		if w.waitShare.v >= th.WaitShareModerate {
			d.moderate = true
			e.Text = fmt.Sprintf("the training loop waits %.0f %% of its time for input: moderately input-bound (≥ %.0f %%)", 100*w.waitShare.v, 100*th.WaitShareModerate)
		}
		d.evidence = append(d.evidence, e)
	}
	return d
}

// takenByOthers is the finding that other processes take the job's CPUs:
// its key thread waits for a CPU (run-queue delay) while processes outside
// the watched tree use cores. The fix is placement, not the job.
func takenByOthers(w *window, th Thresholds) (Finding, bool) {
	if !w.runDelay.ok || w.runDelay.v < th.RunDelayMsPerSec || !w.othersCores.ok || w.othersCores.v < th.OthersCores {
		return Finding{}, false
	}
	t := w.delayedThread
	return Finding{Kind: CPUSaturated, Text: fmt.Sprintf("CPU taken by others: thread %s (tid %d) waited %.0f ms/s for a CPU while processes outside the job used %.1f cores — give the job its own CPUs (a cpuset, taskset) or move the others",
		t.Name, t.TID, w.runDelay.v, w.othersCores.v)}, true
}

// loopBound is the num_workers=0 signature seen per thread: the loop
// waits, and the loop's own thread is the busiest thread, because the
// loader has no workers, or because its workers idle (under half a core
// each) while the loop's per-batch work (the step, taking each batch from
// the workers) pegs its thread. Other busy cores become a secondary
// finding.
func loopBound(w *window, th Thresholds, wait []Evidence, cpuSat bool, cpu []Evidence) (decision, bool) {
	r := &w.roles
	if w.workers < 0 || !r.loopHottest.ok || r.loopHottest.v < 0.5 || r.loopPct.v < th.LoopThreadPct {
		return decision{}, false
	}
	idleWorkers := w.workers > 0 && r.workersPct.ok && r.workersPct.v < th.BusyThreadPct*float64(w.workers)
	if w.workers > 0 && !idleWorkers {
		return decision{}, false
	}
	name := r.loopName
	if name == "" {
		name = "?"
	}
	d := decision{kind: SingleCoreMaxed, loopHot: idleWorkers}
	text := fmt.Sprintf("thread %s (tid %d), the training loop, runs at %.0f %% of a core loading every batch itself: the loader has no workers (num_workers=0)",
		name, r.loopTID, r.loopPct.v)
	if idleWorkers {
		text = fmt.Sprintf("thread %s (tid %d), the training loop, runs at %.0f %% of a core while its %d workers use %.1f cores together: the loop's own per-batch work is the limit",
			name, r.loopTID, r.loopPct.v, w.workers, r.workersPct.v/100)
	}
	d.evidence = append(d.evidence, evidence("loader.loop_thread_cpu_pct", r.loopPct.v, ">=", th.LoopThreadPct, "%", text))
	d.evidence = append(d.evidence, wait...)
	d.secondary = append(d.secondary, computeFinding(w, th, cpuSat, cpu)...)
	return d, true
}

// inlineLoading is the num_workers=0 trap seen from the loop's wait: the
// loader has no workers, the loop waits for its batches (it loads them
// itself: that is its wait), and its own thread's CPU covers at least
// InlineLoadCPUShare of that time, so the loading is CPU work on one
// thread, whatever else the step does on the other cores. Loading inline
// that waits on storage is left to the I/O rules.
func inlineLoading(w *window, th Thresholds, wait []Evidence, cpuSat bool, cpu []Evidence) (decision, bool) {
	r := &w.roles
	if w.workers != 0 || !w.waitShare.ok || w.waitShare.v < th.WaitShareStarved || !r.loopPct.ok ||
		r.loopPct.v < th.InlineLoadCPUShare*100*w.waitShare.v {
		return decision{}, false
	}
	name := r.loopName
	if name == "" {
		name = "?"
	}
	d := decision{kind: SingleCoreMaxed}
	d.evidence = append(d.evidence, evidence("loader.loop_thread_cpu_pct", r.loopPct.v, ">=", th.InlineLoadCPUShare*100*w.waitShare.v, "%",
		fmt.Sprintf("the training loop loads every batch itself (num_workers=0): %.0f %% of its time goes to loading, on its own thread %s (tid %d, %.0f %% of a core)",
			100*w.waitShare.v, name, r.loopTID, r.loopPct.v)))
	d.evidence = append(d.evidence, wait[min(1, len(wait)):]...)
	d.secondary = append(d.secondary, computeFinding(w, th, cpuSat, cpu)...)
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
		}
		return []Finding{f}
	case cpuSat && len(cpu) > 0:
		return []Finding{{Kind: CPUSaturated, Text: cpu[0].Text}}
	}
	return nil
}

// crowdedOut is evidence that the training process's own compute threads
// take most of the CPUs while its workers starve: the process (its loop
// and its BLAS/OpenMP pools) uses at least ComputeCrowdShare of the cores,
// its non-loop threads at least half a core, and the workers less than
// those threads. The fix is fewer compute threads, not more cores.
func crowdedOut(w *window, th Thresholds) ([]Evidence, bool) {
	r := &w.roles
	if w.workers <= 0 || w.cores == 0 || !r.computePct.ok || !r.workersPct.ok || !r.loopPct.ok {
		return nil, false
	}
	process := r.loopPct.v + r.computePct.v
	limit := th.ComputeCrowdShare * 100 * float64(w.cores)
	if process < limit || r.computePct.v < th.BusyThreadPct || r.workersPct.v >= r.computePct.v {
		return nil, false
	}
	es := []Evidence{evidence("procs.training_process_cpu_pct", process, ">=", limit, "%",
		fmt.Sprintf("compute threads of the training process use %.1f of %d cores (the loop's thread %.1f, its other threads %.1f); the %d workers get %.1f",
			process/100, w.cores, r.loopPct.v/100, r.computePct.v/100, w.workers, r.workersPct.v/100))}
	if r.haveCompute {
		es = append(es, evidence("procs.threads.cpu_pct", r.compute.CPUPct, ">=", th.BusyThreadPct, "%", r.describeCompute(th)))
	}
	return es, true
}

func confidence(d decision, w *window, th Thresholds) float64 {
	c := 0.55 + 0.1*float64(min(len(d.evidence), 3))
	if len(d.evidence) > 0 {
		c += 0.1 * min(1, max(0, d.evidence[0].strength))
	}
	switch {
	case d.hostOnly:
		c *= 0.5
	case d.kind == Healthy && !w.waitShare.ok && !d.busy:
		c *= 0.7 // no loader and a GPU not clearly busy: input waits are unseen
	}
	c *= min(1, float64(w.frames)/float64(max(th.WindowFrames, 1)))
	return min(0.95, max(0.05, c))
}

func severity(d decision, w *window, th Thresholds) Severity {
	if !d.kind.Problem() {
		return Info
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
// is in read syscalls" for io_bound), else the largest.
func profileEvidence(k Kind, w *window, th Thresholds, mmap bool) (Evidence, bool) {
	if w.profile == nil || !k.Problem() {
		return Evidence{}, false
	}
	want := situationOf(k).Stage
	best := w.profile.Categories[0]
	for _, c := range w.profile.Categories {
		if c.Name == want && c.Share >= th.ProfileCategoryShare || c.Share > best.Share && best.Name != want {
			best = c
		}
	}
	words := sample.ProfileCategoryWords[best.Name]
	if mmap && best.Name == "reading" {
		words = "reading: copying out of the mapped dataset, its page faults included"
	}
	return evidence("profile."+best.Name+"_share", best.Share, ">=", 0, "ratio",
		fmt.Sprintf("the loader's CPU profile: %.0f %% of its CPU is %s", 100*best.Share, words)), true
}

func fmtBytes(b float64) string { return sample.FormatBytes(b) }
