package diagnose

import "fmt"

// CPUSaturated: every core busy, the accelerator waiting. See docs/diagnosis.md, "Verdicts".
const CPUSaturated Kind = 4

func init() {
	register(Situation{
		Kind:       CPUSaturated,
		ID:         "cpu_saturated",
		Title:      "All cores saturated by preprocessing",
		Tone:       ToneBad,
		InputBound: true,
		Stage:      "decoding",
		Advice:     saturatedAdvice,
		Scenarios:  []string{"cpu-bound"},
		rules: []rule{
			{name: "crowded", sees: "the training process's compute threads crowd out its workers", variant: cpuCrowded, holds: crowdedRule},
			{name: "cores", sees: "every core is busy", holds: coresRule},
			{name: "host-only", sees: "no accelerator signal, and every core is busy", variant: variantHostOnly, holds: coresRule},
		},
	})
}

// cpuCrowded: the training process's own compute threads take the CPUs
// its workers need; the advice is fewer compute threads, not more cores.
const cpuCrowded variant = "crowded"

func saturatedAdvice(in adviceIn) ([]string, bool) {
	w, cores := in.w, in.cores
	switch in.d.variant {
	case cpuCrowded:
		n := max(1, cores-max(w.workers, 0))
		return []string{fmt.Sprintf("leave cores for the workers: torch.set_num_threads(%d), and OPENBLAS_NUM_THREADS=%d OMP_NUM_THREADS=%d in the training process's environment (read when torch starts)", n, n, n)}, false
	}
	here := fmt.Sprintf("the %d cores here", cores)
	if w.confined() {
		here = fmt.Sprintf("the %.2g CPUs the job has", w.job.CPUCapacityCores)
	}
	a := []string{
		fmt.Sprintf("preprocessing needs more than %s: do it once and cache the result (on disk, or in RAM as ready tensors)", here),
		"move augmentations to the GPU (torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI)",
		"fit scalers and tokenizers on a sample, not on every batch",
	}
	if w.workers > cores && cores > 0 {
		a = append(a, fmt.Sprintf("%d workers on %d cores already oversubscribe the CPU: more workers will not help", w.workers, cores))
	}
	return a, false
}

// crowdedRule: the CPUs are saturated, and the training process's
// compute threads, not its workers, take them (crowdedOut).
func crowdedRule(f *facts) (decision, bool) {
	e, ok := crowdedOut(f.w, f.th)
	if !ok || !f.cpuSat {
		return decision{}, false
	}
	return join(e, f.cpu, f.wait), true
}

// coresRule: the CPUs are saturated, the host's or the job's.
func coresRule(f *facts) (decision, bool) {
	return join(f.cpu, f.wait), f.cpuSat
}

// cpuEvidence: are the CPUs saturated, the host's (busy less spinning
// compute threads, the run queue, PSI) or, in a confined job, the job's?
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
