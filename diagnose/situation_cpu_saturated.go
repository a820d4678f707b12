package diagnose

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// CPUSaturated: every core busy, the accelerator waiting. See docs/diagnosis.md, "Verdicts".
// Its title said "by preprocessing" beside "processes outside the job
// use 2.0 of the 2.0 busy cores" (a review): the evidence says whose.
const CPUSaturated Kind = 4

func init() {
	register(Situation{
		Kind:       CPUSaturated,
		ID:         "cpu_saturated",
		Title:      "All cores saturated", // whose work fills them, the evidence says: not always preprocessing
		Tone:       ToneBad,
		InputBound: true,
		Stage:      "decoding",
		Advice:     saturatedAdvice,
		Practice:   saturatedPractice,
		Scenarios:  []string{"cpu-bound"},
		rules: []rule{
			{name: "crowded", sees: "the training process's compute threads crowd out its workers", variant: cpuCrowded, holds: crowdedRule},
			{name: "others", sees: "every core is busy, at least half of them with processes outside the job, and the loop waits for input", variant: cpuOthers, holds: othersRule},
			{name: "cores", sees: "every core is busy", holds: coresRule},
			{name: "throttled", sees: "the job uses its whole CPU limit and is throttled, though its loop does not wait", variant: cpuThrottled, holds: throttledRule},
			{name: "taken", sees: "the loop's steps wait for a CPU that processes outside the job hold, though its loop does not wait for input", variant: cpuTaken, holds: takenRule},
			{name: "own", sees: "every core is busy with the job's own work and the loop's steps wait for a CPU, though its loop does not wait for input", variant: cpuOwn, holds: ownRule},
			{name: "host-only", sees: "no accelerator signal, and every core is busy", variant: variantHostOnly, holds: coresRule},
		},
	})
}

// cpuCrowded: the training process's own compute threads take the CPUs
// its workers need; the advice is fewer compute threads, not more cores.
const cpuCrowded variant = "crowded"

// cpuThrottled: the job is held at its CPU quota: the loop does not wait
// for input because it waits for the quota itself.
const cpuThrottled variant = "throttled"

// cpuTaken: processes outside the job hold the CPUs the loop's step needs:
// the step (wall time) is long because its thread waits for a CPU.
const cpuTaken variant = "taken"

// cpuOwn: the loop's thread waits for a CPU its own job's processes
// hold; where the training process's compute threads use more than the
// workers, the advice is theirs (cpuCrowded's), else preprocessing's.
const cpuOwn variant = "own"

// cpuOthers: the loop waits for input while processes outside the job
// hold most of the busy cores; its workers' preprocessing is not what
// fills them.
const cpuOthers variant = "others"

// restartsDominate is the share of the time the workers' start-up every
// epoch takes (window.restartShare) past which cpu_saturated says it
// instead of the preprocessing catalogue.
const restartsDominate = 0.5

// lightLoading is the share of the cores the workers' timed stages fill
// under which cpu_saturated does not say preprocessing fills them.
const lightLoading = 0.1

// takenDelayPct is the least share of wall time the loop's thread waits
// for a CPU (its run delay, sample.VirtualAccel) that names cpuTaken.
const takenDelayPct = 25

// saturatedPractice: what practice teaches where the workers fill the
// cores, said where no cause beneath the kind is named (Situation.Practice).
var saturatedPractice = []string{
	"move augmentations to the GPU (torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI)",
	"fit scalers and tokenizers on a sample, not on every batch",
}

func saturatedAdvice(in adviceIn) ([]string, bool) {
	w, cores := in.w, in.cores
	r := &w.roles
	switch {
	case in.d.variant == cpuCrowded, in.d.variant == cpuOwn && r.computePct.ok && !w.workersCPUMissed && (!r.workersPct.ok || r.computePct.v >= r.workersPct.v):
		// (own: the compute threads, not the workers, fill the cores — a
		// review: an MLP at torch.set_num_threads(8) on 2 cores was told to
		// cache its preprocessing.)
		n := max(1, cores-max(w.workers, 0))
		if s := w.gpu.settings; s != nil && s.IntraOpThreads != nil && *s.IntraOpThreads <= n {
			// torch's pool is capped already (a user's review: a script
			// that called torch.set_num_threads(1) was told to): the busy
			// threads are another pool's, or not a pool.
			return []string{fmt.Sprintf("leave cores for the workers: torch's intra-op pool has %s already (torch.get_num_threads()), so the busy threads are another's: OPENBLAS_NUM_THREADS=%d OMP_NUM_THREADS=%d MKL_NUM_THREADS=%d in the training process's environment (read when it starts) cap BLAS's and OpenMP's own; the process list names the threads",
				sample.Plural(*s.IntraOpThreads, "thread"), n, n, n)}, false
		}
		return []string{fmt.Sprintf("leave cores for the workers: torch.set_num_threads(%d), and OPENBLAS_NUM_THREADS=%d OMP_NUM_THREADS=%d in the training process's environment (read when torch starts)", n, n, n)}, false
	}
	switch in.d.variant {
	case cpuThrottled:
		return throttledAdvice(w), false
	case cpuTaken:
		return []string{fmt.Sprintf("give the job its own CPUs (a cpuset, taskset -c, the pod's CPU request) or move the processes outside it (%.1f cores here): its loop's steps wait for a CPU, not for input", w.othersCores.v)}, true
	case cpuOthers:
		return []string{fmt.Sprintf("give the job its own CPUs (a cpuset, taskset -c, the pod's CPU request) or move the processes outside it (%.1f cores here): the cores its workers would use are theirs", w.othersCores.v)}, true
	}
	here := fmt.Sprintf("the %d cores here", cores)
	if w.confined() {
		here = "the " + cpuCount(w.job.CPUCapacityCores) + " the job has"
	}
	if in.d.variant == variantHostOnly && (!w.haveLoader || w.sampled != nil && w.sampled.BeforeFirstBatch) {
		// No data loader seen, nor a batch from one (a loop with no
		// DataLoader under gpuwatch run): nothing says the CPU is
		// preprocessing (a review: a model's own step on the CPU was told
		// to cache its preprocessing and move augmentations to the GPU).
		if w.haveLoader { // gpuwatch run's job, before any DataLoader batch: the hook would time one
			return []string{fmt.Sprintf("%s are busy, and the job has iterated no DataLoader: the busiest processes and threads are what uses them", here)}, false
		}
		return []string{fmt.Sprintf("%s are busy, and no data loader is seen handing out batches: the busiest processes and threads are what uses them; where a DataLoader feeds the job, gpuwatch run -- CMD times it", here)}, false
	}
	if r := w.restartShare(); r >= restartsDominate {
		// The workers' start-up is most of the time: the model's change
		// (persistent workers, the DataLoader built once) says what to do,
		// and preprocessing's catalogue is a guess beside it (a hostile
		// user's review: "move augmentations to the GPU" for a
		// worker_init_fn that took 0.4 s every epoch).
		return []string{fmt.Sprintf("the workers start anew every epoch: %s before each epoch's first batch, %.0f %% of the loop's time; more cores or cached preprocessing shorten only the rest",
			sample.FormatDuration(w.epochStallMs/1000), 100*r)}, false
	}
	if st := w.workerStageSec; st.ok && w.batchesPerSec.ok && w.workers > 0 && st.v*w.batchesPerSec.v < lightLoading*float64(cores) {
		// The workers' timed stages fill a sliver of the cores: what
		// fills them is not preprocessing (a user's review: a job whose
		// samples were ready tensors in RAM, each batch made in
		// microseconds, was told to cache its preprocessing and fit its
		// scalers on a sample, beside another job that took the box).
		return []string{fmt.Sprintf("%s are busy, but the workers' loading takes %s a batch (%.2f of a core): not preprocessing; the busiest processes and threads are what uses them",
			here, sample.FormatDuration(st.v), st.v*w.batchesPerSec.v)}, false
	}
	a := []string{
		fmt.Sprintf("preprocessing needs more than %s: do it once and cache the result (on disk, or in RAM as ready tensors)", here),
	}
	for _, p := range saturatedPractice {
		// No GPU read, or the hook read the model on the CPU: nothing to
		// move the augmentations to (a review: a job on a box without a
		// GPU was told to).
		if strings.Contains(p, "to the GPU") && noGPUStep(w) {
			continue
		}
		a = append(a, p)
	}
	if line, ok := oversubscribedLine(w, cores); ok {
		a = append(a, line)
	}
	return a, false
}

// oversubscribedLine says more workers than cores oversubscribe the CPU
// where each wants a CPU most of its time; where they mostly wait on
// something else, it says that instead. false where the workers are no
// more than the cores.
func oversubscribedLine(w *window, cores int) (string, bool) {
	if w.workers <= cores || cores <= 0 {
		return "", false
	}
	// Each wanting a CPU under half its time, and all of them together
	// fewer than the cores (a review: 16 workers at 20 % each want 3.2
	// CPUs of 2, half their time queued for one).
	if want, ok := workersWantCPU(w); ok && want < workersMostlyElsewhere && want*float64(w.workers) < float64(cores) {
		// Workers that want a CPU a fraction of their time wait on
		// something else (a sleep, storage, the network): "more will
		// not help" is not theirs to say (a user's review: 8 workers
		// sleeping 30 ms a batch on 2 busy cores were told so; 16
		// gave 1.63×, taking CPU from the processes beside them).
		// What more workers would get is the model's to say.
		return fmt.Sprintf("%d workers on %d cores, but each wants a CPU only %.0f %% of its time (its CPU and its wait for one, /proc and schedstat): most of their time they wait on something else (a sleep, storage, the network, a lock), not on the cores", w.workers, cores, 100*want), true
	}
	return fmt.Sprintf("%d workers on %d cores already oversubscribe the CPU: more workers will not help", w.workers, cores), true
}

// workersMostlyElsewhere is the share of its time a worker wants a CPU
// (running or waiting for one) under which it waits mostly on something
// else: more workers are not more CPU-bound contention.
const workersMostlyElsewhere = 0.5

// workersWantCPU is the share of its time each worker wants a CPU: the
// workers' CPU together (/proc), over their count, raised by their run
// delay's share of their time on or waiting for a CPU (schedstat; taken
// as none where not read, which reads the want short only where they
// wait for a CPU unseen). false where their CPU was not read.
func workersWantCPU(w *window) (float64, bool) {
	r := w.roles
	if !r.workersPct.ok || w.workers <= 0 || w.workersCPUMissed {
		return 0, false
	}
	want := r.workersPct.v / 100 / float64(w.workers)
	if d := w.workersRunDelay; d.ok && d.v < 1 {
		want /= 1 - d.v
	}
	return want, true
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

// othersRule: the CPUs are saturated and the loop waits for input, and
// processes outside the job hold at least half of the busy cores (a
// hostile user's review: beside two `yes`, a job whose own processes used
// 5 % of a core was told "preprocessing needs more than the 2 cores here:
// do it once and cache"). A job confined to its own CPUs is judged by
// them (cpuEvidence), not here.
func othersRule(f *facts) (decision, bool) {
	w := f.w
	if !f.cpuSat || len(f.wait) == 0 || w.confined() || !w.othersCores.ok || w.othersCores.v < f.th.OthersCores || !w.cpuBusy.ok || w.cores <= 0 || w.treeCPUMissed() {
		return decision{}, false
	}
	busy := w.cpuBusy.v / 100 * float64(w.cores)
	if w.othersCores.v < 0.5*busy {
		return decision{}, false
	}
	e := evidence("others.cores", w.othersCores.v, ">=", 0.5*busy, "cores",
		fmt.Sprintf("processes outside the job use %.1f of the %.1f busy cores", w.othersCores.v, busy))
	return join([]Evidence{e}, f.cpu, f.wait), true
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
	busy, spin := workBusy(w)
	bar, held := saturatedBar(w, th)
	saturated = w.cpuBusy.ok && busy >= bar
	if busy >= th.CPUSaturatedPct {
		bar, held = th.CPUSaturatedPct, "" // past the bar to enter: no hysteresis to speak of
	}
	switch {
	case saturated:
		cpu = append(cpu, evidence("cpu.busy_pct", w.cpuBusy.v, ">=", bar, "%",
			fmt.Sprintf("all %d cores are %.0f %% busy (≥ %.0f %%%s)", w.cores, w.cpuBusy.v, bar, held)))
	case w.cpuBusy.ok && w.cpuBusy.v >= th.CPUSaturatedPct && spin > 0:
		cpu = append(cpu, evidence("cpu.busy_pct", busy, "<", th.CPUSaturatedPct, "%",
			spinningText(w.cpuBusy.v, busy)))
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

// workBusy is the host's busy share that is work, and the points of it
// the training process's spinning compute threads take: threads that spin
// (an idle BLAS pool in sched_yield) make a core read busy, but yield it
// to any thread with work. They are not demand, so saturation is judged
// without them.
func workBusy(w *window) (busy, spin float64) {
	busy = w.cpuBusy.v
	if w.spinPct.ok && w.cores > 0 {
		spin = min(w.spinPct.v/float64(w.cores), busy) // read apart from busy: never more than it
		busy -= spin
	}
	return busy, spin
}

// spinningText says the cores read raw % busy of which work % is work,
// the three figures rounded so that they add up.
func spinningText(raw, work float64) string {
	r, k := math.Round(raw), math.Round(work)
	return fmt.Sprintf("the cores read %.0f %% busy, but %.0f points of it are compute threads spinning idle (they yield to work): %.0f %% is work", r, r-k, k)
}

// saturatedBar is the busy share at which the CPUs count as saturated:
// CPUSaturatedPct to enter, and CPUSaturatedLeavePct while the verdict
// shown is cpu_saturated (hysteresis, docs/diagnosis.md "Thresholds"),
// with the words that say so.
func saturatedBar(w *window, th Thresholds) (float64, string) {
	if w.shown == CPUSaturated && th.CPUSaturatedLeavePct < th.CPUSaturatedPct {
		return th.CPUSaturatedLeavePct, fmt.Sprintf(" while saturated; %.0f %% to enter", th.CPUSaturatedPct)
	}
	return th.CPUSaturatedPct, ""
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
	bar, _ := saturatedBar(w, th)
	if w.jobUsed.ok && w.jobUsed.v >= bar/100*capacity {
		saturated = true
		text := fmt.Sprintf("the job may use %s CPU (%s) and used %s%s", sample.FormatCPUs(capacity), limit, sample.FormatCPUs(w.jobUsed.v), w.usedBy())
		if w.jobThrottle.ok && w.jobThrottle.v > 0 {
			text += fmt.Sprintf("; throttled %.0f %% of periods", 100*w.jobThrottle.v)
		}
		cpu = append(cpu, evidence("job.cpu_used_cores", w.jobUsed.v, ">=", bar/100*capacity, "cores", text))
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
	if w.workers <= 0 || w.cores == 0 || !r.computePct.ok || !r.workersPct.ok || !r.loopPct.ok || w.workersCPUMissed {
		// (Workers that live too short for /proc to read their CPU read
		// next to 0: a user's review was told "the 1 worker gets 0.0",
		// each worker forked anew every second.)
		return nil, false
	}
	process := r.loopPct.v + r.computePct.v
	limit := th.ComputeCrowdShare * 100 * float64(w.cores)
	if process < limit || r.computePct.v < th.BusyThreadPct || r.workersPct.v >= r.computePct.v {
		return nil, false
	}
	es := []Evidence{evidence("procs.training_process_cpu_pct", process, ">=", limit, "%",
		fmt.Sprintf("compute threads of the training process use %.1f of %d cores (the loop's thread %.1f, its other threads %.1f); the %s get %.1f",
			process/100, w.cores, r.loopPct.v/100, r.computePct.v/100, sample.Plural(w.workers, "worker"), r.workersPct.v/100))}
	if r.haveCompute && r.compute.CPUPct >= th.BusyThreadPct { // an idle pool thread says nothing of the crowding
		es = append(es, evidence("procs.threads.cpu_pct", r.compute.CPUPct, ">=", th.BusyThreadPct, "%", r.describeCompute(th)))
	}
	return es, true
}

// throttledRule (issue 56): a confined job that uses its whole CPU limit
// and is throttled is limited by that limit, whatever its wait share: the
// loop does not wait for input because it waits for the quota itself, and
// its step, measured in wall time, counts the time it sat throttled — a
// virtual accelerator reads 100 % busy. Not where a real GPU is busy: its
// job is GPU-bound with a throttled host side.
func throttledRule(f *facts) (decision, bool) {
	w, th := f.w, f.th
	if !w.confined() || !w.jobThrottle.ok || w.jobThrottle.v < th.ThrottledShare || !w.jobUsed.ok ||
		w.jobUsed.v < th.CPUSaturatedPct/100*w.job.CPUCapacityCores || f.real && f.accel.ok && f.accel.v >= th.AccelBusyPct {
		return decision{}, false
	}
	cpu, _ := jobCPUEvidence(w, th)
	var d decision
	d.evidence = append(d.evidence, cpu...)
	if t := w.job.ThrottledSecPerSec; t != nil && *t > 0 {
		d.evidence = append(d.evidence, evidence("job.throttled_sec_per_sec", *t, ">", 0, "s/s",
			fmt.Sprintf("its tasks sat throttled %.2g s every second (cpu.stat throttled_time, summed over the CPUs it ran on)", *t)))
	}
	if who, ok := cpuUsers(w); ok {
		d.evidence = append(d.evidence, evidence("job.cpu_used_cores", w.jobUsed.v, ">=", th.CPUSaturatedPct/100*w.job.CPUCapacityCores, "cores", who))
	}
	if f.accel.ok && !f.real {
		d.evidence = append(d.evidence, evidence("accel.busy_pct", f.accel.v, ">=", 0, "%", throttledStep(w, f.accel.v)))
	}
	return d, true
}

// takenRule: the loop does not wait for input, but its steps, measured
// in wall time, are mostly its thread waiting for a CPU (≥ takenDelayPct
// of wall time) while processes outside the job take cores
// (takenByOthers): the accelerator it reads is no accelerator at its
// limit. A job on a real GPU is judged by the GPU's own counters. (A
// 2-worker image loop beside a busy process read healthy, "the
// accelerator is the limit", at 14 % busy.)
func takenRule(f *facts) (decision, bool) {
	w := f.w
	if f.real || !f.accel.ok || !w.virtualDelay.ok || w.virtualDelay.v < takenDelayPct {
		return decision{}, false
	}
	others, ok := takenByOthers(w, f.th)
	if !ok {
		return decision{}, false
	}
	var d decision
	text := fmt.Sprintf("the loop's steps take %.0f %% of wall time, %.0f %% of it its thread waiting for a CPU: the virtual accelerator (no GPU seen: the loop's step time) is %.0f %% busy, and the loop waits for a CPU, not for input",
		w.virtualStep.v, w.virtualDelay.v, f.accel.v)
	d.evidence = append(d.evidence, evidence("accel.cpu_wait_pct", w.virtualDelay.v, ">=", takenDelayPct, "%", text),
		evidence("others.cores", w.othersCores.v, ">=", f.th.OthersCores, "cores", others.Text))
	return d, true
}

// ownRule: the loop's thread waits for a CPU a quarter of its wall time
// or more while every core is busy and no process outside the job holds
// them (takenRule's case): its own workers and threads do. Its step then
// reads long, as if the accelerator were busy, and its loop barely waits
// for input; the CPUs are the limit (a hostile user's review: two
// augmenting workers and the loop on 2 cores read healthy, "the
// accelerator is 25 % busy … the accelerator is the limit").
func ownRule(f *facts) (decision, bool) {
	w := f.w
	if f.real || !f.cpuSat || !f.accel.ok || !w.virtualDelay.ok || w.virtualDelay.v < takenDelayPct {
		return decision{}, false
	}
	if _, taken := takenByOthers(w, f.th); taken {
		return decision{}, false
	}
	text := fmt.Sprintf("the loop's steps take %.0f %% of wall time, %.0f %% of it its thread waiting for a CPU that the job's own processes hold: the virtual accelerator (no GPU seen: the loop's step time) is %.0f %% busy, and the loop waits for a CPU, not for input",
		w.virtualStep.v, w.virtualDelay.v, f.accel.v)
	if users, ok := cpuUsers(w); ok {
		text += " (" + users + ")"
	}
	d := join(f.cpu)
	d.evidence = append([]Evidence{evidence("accel.cpu_wait_pct", w.virtualDelay.v, ">=", takenDelayPct, "%", text)}, d.evidence...)
	return d, true
}

// throttledStep says what the loop's step is made of under a quota: a
// step is wall time, and it counts the time the loop thread sat
// throttled; the accelerator's busy share has that taken off where the
// thread's run delay was read (sample.VirtualAccel).
func throttledStep(w *window, busy float64) string {
	if w.virtualStep.ok && w.virtualDelay.ok {
		return fmt.Sprintf("the loop's steps take %.0f %% of wall time, %.0f %% of it its thread waiting for a CPU (throttled): the virtual accelerator (no GPU seen: the loop's step time) is %.0f %% busy, and the loop waits for the quota, not for input",
			w.virtualStep.v, w.virtualDelay.v, busy)
	}
	return fmt.Sprintf("the step reads the virtual accelerator (no GPU seen: the loop's step time) %.0f %% busy, but the step is wall time, and it counts the time the job sat throttled (the loop thread's wait for a CPU was not read): the loop waits for the quota, not for input", busy)
}

// cpuUsers says which of the job's threads use its CPU: the loop's
// thread, the workers, the rest of the training process.
func cpuUsers(w *window) (string, bool) {
	r := &w.roles
	if !r.loopPct.ok {
		return "", false
	}
	s := fmt.Sprintf("of its %s CPU%s, the training loop's thread used %.2g", sample.FormatCPUs(w.jobUsed.v), w.usedBy(), r.loopPct.v/100)
	if r.workersPct.ok {
		s += fmt.Sprintf(", its workers %.2g", r.workersPct.v/100)
	}
	if r.computePct.ok && r.computePct.v >= 1 {
		s += fmt.Sprintf(", its other threads %.2g", r.computePct.v/100)
	}
	return s, true
}

// throttledAdvice: a larger limit, from what the job used and the time it
// sat throttled, or a job that asks less of it.
func throttledAdvice(w *window) []string {
	j := w.job
	a := []string{}
	if t := j.ThrottledSecPerSec; t != nil && *t > 0 {
		want := w.jobUsed.v + *t
		a = append(a, fmt.Sprintf("raise the job's CPU limit: it used %s of its %s CPU%s and its tasks sat throttled %.2g s a second, about %.2g CPUs of demand (a quota of %.0f ms per %.0f ms period, or --cpus=%.2g)",
			sample.FormatCPUs(w.jobUsed.v), sample.FormatCPUs(j.CPUCapacityCores), w.usedBy(), *t, want, math.Ceil(want*periodMs(j)), periodMs(j), math.Ceil(want*10)/10))
	} else {
		a = append(a, fmt.Sprintf("raise the job's CPU limit: it used %s of its %s CPU%s and was throttled in %.0f %% of periods", sample.FormatCPUs(w.jobUsed.v), sample.FormatCPUs(j.CPUCapacityCores), w.usedBy(), 100*w.jobThrottle.v))
	}
	r := &w.roles
	if w.workers > 0 && r.workersPct.ok && r.workersPct.v > 0 && !w.workersCPUMissed {
		per := r.workersPct.v / 100 / float64(w.workers)
		a = append(a, fmt.Sprintf("or ask less of it: the %s used %.2g CPU (%.2g each); decoding or augmenting less per sample, or caching its result, leaves the quota to the loop", sample.Plural(w.workers, "worker"), r.workersPct.v/100, per))
	}
	return a
}

// periodMs is the job's CFS period in ms (100 ms, the kernel's default,
// where it was not read).
func periodMs(j *sample.Job) float64 {
	if j.CPUPeriodUs != nil && *j.CPUPeriodUs > 0 {
		return *j.CPUPeriodUs / 1000
	}
	return 100
}

// cpuCount is a count of CPUs in words: "0.5 CPUs", "1 CPU", "2 CPUs",
// "128 CPUs".
func cpuCount(v float64) string {
	n := sample.FormatCPUs(v)
	if n == "1" {
		return n + " CPU"
	}
	return n + " CPUs"
}

// noGPUStep says the job has no GPU step: the hook read the model's
// forward on the CPU (another device it read is one, NVML or not: mps,
// xpu), or, where it read none, no GPU is read and the loop is a real one
// (the embedded loader's virtual accelerator stands for a GPU: the demo's).
func noGPUStep(w *window) bool {
	if s := w.gpu.settings; s != nil && s.Device != "" { // the hook read where the model runs: cuda, mps, xpu or cpu
		return s.Device == "cpu"
	}
	_, real := w.accel()
	return !real && w.loaderKind != "embedded"
}
