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
func Classify(frames []sample.Frame, th Thresholds) Verdict {
	if len(frames) == 0 {
		return Verdict{Kind: WarmingUp}
	}
	w := read(frames)
	v := Verdict{Since: frames[0].Time, Missing: w.missing()}
	if len(frames) < th.MinFrames {
		v.Kind = WarmingUp
		return v
	}
	d := decide(&w, th)
	if e, ok := profileEvidence(d.kind, &w); ok {
		d.evidence = append(d.evidence, e)
	}
	slices.SortStableFunc(d.evidence[min(1, len(d.evidence)):], func(a, b Evidence) int { return cmp.Compare(b.strength, a.strength) })
	v.Kind, v.Evidence, v.Secondary = d.kind, d.evidence, d.secondary
	v.Advice = advise(d, &w, th)
	v.Confidence = confidence(d, &w, th)
	v.Severity = severity(d, &w)
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

func decide(w *window, th Thresholds) decision {
	// Memory pressure first: swapping slows everything else down.
	var mem []Evidence
	if w.swapPages.ok && w.swapPages.v >= th.SwapPagesPerSec {
		mem = append(mem, evidence("mem.swap_pages_per_sec", w.swapPages.v, ">=", th.SwapPagesPerSec, "pages/s",
			fmt.Sprintf("the host swaps %.0f pages/s (≥ %.0f)", w.swapPages.v, th.SwapPagesPerSec)))
	}
	if w.psiMem.ok && w.psiMem.v >= th.PSIMemSomePct {
		mem = append(mem, evidence("psi.memory.some_pct", w.psiMem.v, ">=", th.PSIMemSomePct, "%",
			fmt.Sprintf("tasks stalled on memory %.0f %% of the time (PSI, ≥ %.0f %%)", w.psiMem.v, th.PSIMemSomePct)))
	}
	if len(mem) > 0 {
		if w.majFaults.ok && w.majFaults.v >= th.MajorFaultsPerSec {
			mem = append(mem, evidence("mem.major_faults_per_sec", w.majFaults.v, ">=", th.MajorFaultsPerSec, "/s",
				fmt.Sprintf("%.0f major page faults/s (≥ %.0f)", w.majFaults.v, th.MajorFaultsPerSec)))
		}
		return decision{kind: MemoryPressure, evidence: mem}
	}

	accel, real := w.accel()
	accelName := "the GPU"
	if !real {
		accelName = "the accelerator (virtual: loader step time / wall time)"
	}

	// Is the accelerator waiting for input?
	var wait []Evidence
	if w.waitShare.ok && w.waitShare.v >= th.WaitShareStarved {
		wait = append(wait, evidence("loader.wait_share", w.waitShare.v, ">=", th.WaitShareStarved, "ratio",
			fmt.Sprintf("the training loop waits %.0f %% of its time for the next batch (≥ %.0f %%: input-bound)", 100*w.waitShare.v, 100*th.WaitShareStarved)))
	}
	if w.gpuP95.ok && w.gpuP95.v >= th.BurstyP95 && w.gpuP5.v < th.BurstyP5 {
		wait = append(wait, evidence("gpu.util_p5", w.gpuP5.v, "<", th.BurstyP5, "%",
			fmt.Sprintf("GPU utilization is bursty: p95 %.0f %%, p5 %.0f %% within each second (busy, then waiting)", w.gpuP95.v, w.gpuP5.v)))
	}
	lowGPU := real && accel.v < th.GPULowPct

	// Host resources.
	var cpu, io, single, reads []Evidence
	cpuSat := w.cpuBusy.ok && w.cpuBusy.v >= th.CPUSaturatedPct
	if cpuSat {
		cpu = append(cpu, evidence("cpu.busy_pct", w.cpuBusy.v, ">=", th.CPUSaturatedPct, "%",
			fmt.Sprintf("all %d cores are %.0f %% busy (≥ %.0f %%)", w.cores, w.cpuBusy.v, th.CPUSaturatedPct)))
	}
	if w.runQueue.ok && w.cores > 0 && w.runQueue.v > float64(w.cores) {
		cpu = append(cpu, evidence("cpu.procs_running", w.runQueue.v, ">", float64(w.cores), "",
			fmt.Sprintf("%.0f runnable tasks for %d cores", w.runQueue.v, w.cores)))
	}
	if w.psiCPU.ok && w.psiCPU.v >= th.PSICPUSomePct {
		cpu = append(cpu, evidence("psi.cpu.some_pct", w.psiCPU.v, ">=", th.PSICPUSomePct, "%",
			fmt.Sprintf("tasks waited for a CPU %.0f %% of the time (PSI)", w.psiCPU.v)))
		cpuSat = cpuSat || (w.runQueue.ok && w.runQueue.v > float64(w.cores))
	}
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
	if !cpuSat && w.hottestThread.ok && w.hottestThread.v >= th.SingleThreadPct {
		single = append(single, evidence("procs.threads.cpu_pct", w.hottestThread.v, ">=", th.SingleThreadPct, "%",
			fmt.Sprintf("thread %s (tid %d) runs at %.0f %% of a core (≥ %.0f %%)", w.threadName, w.threadTID, w.hottestThread.v, th.SingleThreadPct)))
	} else if !cpuSat && !w.hottestThread.ok && w.cores > 1 && w.hottestCore.ok && w.hottestCore.v >= th.SingleThreadPct {
		single = append(single, evidence("cpu.cores.busy_pct", w.hottestCore.v, ">=", th.SingleThreadPct, "%",
			fmt.Sprintf("one core is %.0f %% busy while the machine is %.0f %% busy", w.hottestCore.v, w.cpuBusy.v)))
	}
	if len(single) == 0 && !cpuSat && w.workers == 0 && w.hottestThread.ok && w.hottestThread.v >= th.SingleThreadPct-20 {
		// The loader says num_workers=0: loading runs in the training loop
		// itself — DESIGN.md's signature — even when contention holds its
		// thread a little under the 90 % mark.
		single = append(single, evidence("loader.workers", 0, "<=", 0, "",
			fmt.Sprintf("thread %s (tid %d) runs at %.0f %% of a core, and the loader has no workers (num_workers=0): it loads in the training loop",
				w.threadName, w.threadTID, w.hottestThread.v)))
	}
	if len(single) > 0 && w.cpuBusy.ok {
		single = append(single, evidence("cpu.busy_pct", w.cpuBusy.v, "<", th.CPUSaturatedPct, "%",
			fmt.Sprintf("the other cores are mostly idle: the machine is %.0f %% busy", w.cpuBusy.v)))
	}
	fewWorkers := w.workers >= 0 && w.cores > 0 && float64(w.workers) < th.WorkersPerCoreLow*float64(w.cores)
	if w.readSec.ok && w.decodeSec.ok && w.readSec.v >= 0.5 && w.readSec.v >= th.ReadDominance*w.decodeSec.v {
		reads = append(reads, evidence("loader.read_sec_per_sec", w.readSec.v, ">=", th.ReadDominance*w.decodeSec.v, "s/s",
			fmt.Sprintf("the loader spends %.1f s per second reading and %.1f s decoding (reads ≥ %.0f× decode)", w.readSec.v, w.decodeSec.v, th.ReadDominance)))
	}

	waiting := len(wait) > 0
	if !waiting && lowGPU && (cpuSat || len(io) > 0 || len(single) > 0) {
		// SageMaker's CPU and I/O bottleneck rules: a low GPU while a host
		// resource is saturated is a GPU waiting on that resource.
		wait = append(wait, evidence("gpu.util_pct", accel.v, "<", th.GPULowPct, "%",
			fmt.Sprintf("the GPU is only %.0f %% busy (< %.0f %%)", accel.v, th.GPULowPct)))
		waiting = true
	}
	join := func(k Kind, first []Evidence, rest ...[]Evidence) decision {
		d := decision{kind: k, evidence: append([]Evidence(nil), first...)}
		for _, r := range rest {
			d.evidence = append(d.evidence, r...)
		}
		return d
	}
	if waiting {
		// The num_workers=0 trap comes first: whatever else fills the
		// other cores, the loop loading inline is what to fix. Then the
		// training process's compute threads crowding out its workers.
		// Then, with idle workers, a pegged loop thread.
		if d, ok := loopBound(w, th, wait, cpuSat, cpu); ok && w.workers == 0 {
			return d
		}
		if e, ok := crowdedOut(w, th); ok && cpuSat {
			d := join(CPUSaturated, e, cpu, wait)
			d.crowded = true
			return d
		}
		if d, ok := loopBound(w, th, wait, cpuSat, cpu); ok {
			return d
		}
	}
	if waiting {
		switch {
		case cpuSat:
			return join(CPUSaturated, cpu, wait)
		case len(io) > 0:
			return join(IOBound, io, wait, reads)
		case len(single) > 0:
			return join(SingleCoreMaxed, single, wait)
		case len(reads) > 0 && !fewWorkers:
			d := join(IOBound, reads, wait)
			d.evidence = append(d.evidence, evidence("loader.workers", float64(w.workers), ">=", th.WorkersPerCoreLow*float64(w.cores), "",
				fmt.Sprintf("%d workers are reading, yet no disk here is busy: the store (network, object storage or a throttle) is the limit", w.workers)))
			d.remote = true
			return d
		}
		d := join(GPUStarved, wait)
		if fewWorkers {
			d.evidence = append(d.evidence, evidence("loader.workers", float64(w.workers), "<", th.WorkersPerCoreLow*float64(w.cores), "",
				fmt.Sprintf("only %d loader workers for %d cores", w.workers, w.cores)))
		}
		if w.cpuBusy.ok {
			d.evidence = append(d.evidence, evidence("cpu.busy_pct", w.cpuBusy.v, "<", th.CPUSaturatedPct, "%",
				fmt.Sprintf("no host resource is saturated: CPU %.0f %% busy", w.cpuBusy.v)))
		}
		return d
	}

	if !accel.ok && !w.waitShare.ok {
		// No accelerator signal: say what the host shows, never "starved".
		var d decision
		switch {
		case cpuSat:
			d = join(CPUSaturated, cpu)
		case len(io) > 0:
			d = join(IOBound, io)
		case len(single) > 0:
			d = join(SingleCoreMaxed, single)
		default:
			d = decision{kind: Idle}
			if w.cpuBusy.ok {
				d.evidence = append(d.evidence, evidence("cpu.busy_pct", w.cpuBusy.v, "<", th.CPUSaturatedPct, "%",
					fmt.Sprintf("no accelerator signal; the host is %.0f %% busy with nothing saturated", w.cpuBusy.v)))
			}
		}
		d.hostOnly = true
		return d
	}

	loaderStopped := w.haveLoader && w.batchesPerSec.ok && w.batchesPerSec.v == 0
	if (accel.ok && accel.v < th.IdlePct && (!w.haveLoader || loaderStopped)) || (loaderStopped && !real) {
		d := decision{kind: Idle}
		if accel.ok {
			d.evidence = append(d.evidence, evidence("accel.busy_pct", accel.v, "<", th.IdlePct, "%",
				fmt.Sprintf("%s is %.0f %% busy", accelName, accel.v)))
		}
		if loaderStopped {
			d.evidence = append(d.evidence, evidence("loader.batches_per_sec", 0, "<=", 0, "/s", "the loader hands out no batches"))
		}
		return d
	}

	d := decision{kind: Healthy}
	if accel.ok {
		op, text := ">=", fmt.Sprintf("%s is %.0f %% busy", accelName, accel.v)
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

// loopBound is the num_workers=0 signature seen per thread: the loop
// waits, and the loop's own thread is the busiest thread, because the
// loader has no workers, or because its workers idle (under half a core
// each) while the loop's per-batch work (the step, taking each batch from
// the workers) pegs its thread. Other busy cores become a secondary
// finding.
func loopBound(w *window, th Thresholds, wait []Evidence, cpuSat bool, cpu []Evidence) (decision, bool) {
	r := &w.roles
	if w.workers < 0 || !r.loopHottest.ok || r.loopHottest.v < 0.5 || r.loopPct.v < th.SingleThreadPct-20 {
		return decision{}, false
	}
	idleWorkers := w.workers > 0 && r.workersPct.ok && r.workersPct.v < 50*float64(w.workers)
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
	d.evidence = append(d.evidence, evidence("loader.loop_thread_cpu_pct", r.loopPct.v, ">=", th.SingleThreadPct-20, "%", text))
	d.evidence = append(d.evidence, wait...)
	other := "the other cores are"
	if w.cores == 2 {
		other = "the other core is"
	}
	switch {
	case r.haveCompute && r.compute.CPUPct >= 50:
		f := Finding{Kind: CPUSaturated, Text: other + " busy too: " + r.describeCompute(th)}
		if !cpuSat {
			f.Kind = Healthy // busy, not saturated: a note, not a second problem
			f.Text = other + " partly busy: " + r.describeCompute(th)
		}
		d.secondary = append(d.secondary, f)
	case cpuSat && len(cpu) > 0:
		d.secondary = append(d.secondary, Finding{Kind: CPUSaturated, Text: cpu[0].Text})
	}
	return d, true
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
	if process < limit || r.computePct.v < 50 || r.workersPct.v >= r.computePct.v {
		return nil, false
	}
	es := []Evidence{evidence("procs.training_process_cpu_pct", process, ">=", limit, "%",
		fmt.Sprintf("compute threads of the training process use %.1f of %d cores (the loop's thread %.1f, its other threads %.1f); the %d workers get %.1f",
			process/100, w.cores, r.loopPct.v/100, r.computePct.v/100, w.workers, r.workersPct.v/100))}
	if r.haveCompute {
		es = append(es, evidence("procs.threads.cpu_pct", r.compute.CPUPct, ">=", 50, "%", r.describeCompute(th)))
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

func severity(d decision, w *window) Severity {
	if !d.kind.Problem() {
		return Info
	}
	accel, _ := w.accel()
	if (w.waitShare.ok && w.waitShare.v >= 0.5) || (accel.ok && accel.v < 25) || d.kind == MemoryPressure && w.swapPages.v >= 1000 {
		return Critical
	}
	return Warning
}

// profileEvidence adds what the loader's CPU profile says, when one was
// taken: the category that matches the verdict ("71 % of the loader's CPU
// is in read syscalls" for io_bound), else the largest.
func profileEvidence(k Kind, w *window) (Evidence, bool) {
	if w.profile == nil || !k.Problem() {
		return Evidence{}, false
	}
	want := map[Kind]string{IOBound: "reading", CPUSaturated: "decoding", SingleCoreMaxed: "decoding", GPUStarved: "waiting"}[k]
	best := w.profile.Categories[0]
	for _, c := range w.profile.Categories {
		if c.Name == want && c.Share >= 0.3 || c.Share > best.Share && best.Name != want {
			best = c
		}
	}
	words := map[string]string{
		"reading": "in read syscalls (files, network)", "decoding": "decoding and computing",
		"waiting": "waiting (channels, locks, sleep)", "gc": "in the garbage collector and runtime", "other": "elsewhere",
	}[best.Name]
	return evidence("profile."+best.Name+"_share", best.Share, ">=", 0, "ratio",
		fmt.Sprintf("the loader's CPU profile: %.0f %% of its CPU is %s", 100*best.Share, words)), true
}
