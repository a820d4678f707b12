package diagnose

import "fmt"

// MemoryPressure: the host swaps or stalls on memory. See docs/diagnosis.md, "Verdicts".
const MemoryPressure Kind = 6

func init() {
	register(Situation{
		Kind:        MemoryPressure,
		ID:          "memory_pressure",
		Title:       "Memory pressure: the host is swapping or stalling",
		Tone:        ToneBad,
		InputBound:  true,
		Advice:      memoryAdvice,
		Practice:    memoryPractice,
		NoRecording: "no recording yet: this machine has no swap, and the tests make the pressure from fixtures (classify_test.go)",
		rules: []rule{
			{name: "pressed", sees: "the job's cgroup at its limit with kills or swap, the host swapping, or tasks stalled on memory", holds: memoryRule},
		},
	})
}

func memoryAdvice(in adviceIn) ([]string, bool) {
	w := in.w
	first := "lower num_workers or prefetch_factor: each worker holds its own batches in memory"
	switch {
	case w.workers == 0:
		// No worker holds a batch: fewer of them cannot help.
		first = "num_workers is 0: no worker holds batches, so the memory is the training process's own (a dataset held in RAM, batches or outputs kept across steps)"
	case w.workers > 0 && w.prefetch > 0:
		first = fmt.Sprintf("lower num_workers (now %d) or prefetch_factor (now %d): each worker holds its own batches in memory", w.workers, w.prefetch)
	case w.workers > 0:
		first = fmt.Sprintf("lower num_workers (now %d) or prefetch_factor: each worker holds its own batches in memory", w.workers)
	}
	return append([]string{first}, memoryPractice...), false
}

// memoryPractice: what practice teaches where memory is pressed, said
// where no cause beneath the kind is named (Situation.Practice): float64
// says which batches are wider than they need to be.
var memoryPractice = []string{"keep samples in smaller dtypes (uint8 images, float16/bfloat16 features)"}

// memoryEvidence: is memory pressed, for the job (its cgroup's limit) or
// the host (swap, PSI)? Every rule reads it: it picks the memory phase.
// streaming says the job's cgroup is at its limit full of page cache,
// nothing killed or swapped, with more memory available on the host than
// the whole limit: a PSI memory stall is then that cgroup reclaiming its
// cache (memoryRule).
func memoryEvidence(w *window, th Thresholds) (mem []Evidence, streaming bool) {
	if j := w.job; j != nil && j.MemLimitBytes != nil && j.MemUsedBytes != nil && *j.MemLimitBytes > 0 {
		// The job's own limit: the host can have memory to spare while the
		// job reclaims, swaps or is OOM-killed at its cgroup's limit.
		full := float64(*j.MemUsedBytes) / float64(*j.MemLimitBytes)
		// A cgroup mostly full of page cache is how Linux uses memory: the
		// cache is reclaimed first, and hitting the limit then is routine
		// (a dataset streamed through a container). Only an OOM kill or
		// swap makes that pressure.
		cache := j.MemFileBytes != nil && float64(*j.MemFileBytes) >= th.JobCacheShare*float64(*j.MemUsedBytes) && w.jobOOMKills == 0 && w.jobSwapGrowth <= 0
		streaming = full >= th.JobMemFullShare && cache && w.memAvail >= float64(*j.MemLimitBytes)
		if full >= th.JobMemFullShare && !cache && (w.jobMaxEvents > 0 || w.jobOOMKills > 0 || w.jobSwapGrowth > 0) {
			text := fmt.Sprintf("the job's memory cgroup holds %s of its %s limit (%.0f %%)", fmtBytes(float64(*j.MemUsedBytes)), fmtBytes(float64(*j.MemLimitBytes)), 100*full)
			if w.jobMaxEvents > 0 {
				text += fmt.Sprintf("; %d charges met the limit over the window (memory.events max; v1: memory.failcnt, each page charge that had to reclaim first)", w.jobMaxEvents)
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
	return mem, streaming
}

// memoryRule: memory is pressed (the memory phase holds no other
// reading), with the major faults that show it.
func memoryRule(f *facts) (decision, bool) {
	w, th := f.w, f.th
	mem := f.mem
	if f.streaming && len(mem) == 1 && mem[0].Metric == "psi.memory.some_pct" {
		// Only PSI's stall, and it is the job's cgroup reclaiming the page
		// cache of data larger than its limit as the job reads on, with
		// the host's memory to spare: the limit meeting the dataset, not
		// memory pressed, and "fewer workers" would not help (CI's mmap
		// loop read in blocks, a 3 GiB file through a 1 GiB cgroup, was
		// told so at 11 % stalled). The window is judged as without it
		// (decide), the stall a secondary finding.
		return decision{}, false
	}
	if w.majFaults.ok && w.majFaults.v >= th.MajorFaultsPerSec {
		mem = append(mem, evidence("mem.major_faults_per_sec", w.majFaults.v, ">=", th.MajorFaultsPerSec, "/s",
			fmt.Sprintf("%.0f major page faults/s (≥ %.0f)", w.majFaults.v, th.MajorFaultsPerSec)))
	}
	return decision{evidence: mem}, true
}
