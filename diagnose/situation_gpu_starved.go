package diagnose

import (
	"fmt"

	"github.com/gpuwatch/gpuwatch/sample"
)

// GPUStarved: the accelerator waits on input; no host resource is saturated. See docs/diagnosis.md, "Verdicts".
const GPUStarved Kind = 2

func init() {
	register(Situation{
		Kind:       GPUStarved,
		ID:         "gpu_starved",
		Title:      "Accelerator starved by the input pipeline",
		Tone:       ToneWarn,
		InputBound: true,
		Stage:      "waiting",
		Advice:     starvedAdvice,
		Scenarios:  []string{"starved"},
		rules: []rule{
			{name: "starved", sees: "nothing on the host is saturated: starved", holds: starvedRule},
		},
	})
}

func starvedAdvice(in adviceIn) ([]string, bool) {
	if in.modeled {
		return nil, false
	}
	return catalogKnobs(in.w, in.suggest, in.cores, in.keep), false
}

// stuckWaitSec is the wait under way the evidence names: a second and
// more is a loop stuck for a batch (a hung worker or read), not the wait
// between two batches of an input-bound loop the share already says.
const stuckWaitSec = 1.0

// waitEvidence: is the accelerator waiting for input? Every rule reads it:
// it picks the waiting phase.
func waitEvidence(w *window, th Thresholds) []Evidence {
	var wait []Evidence
	if w.waitShare.ok && w.waitShare.v >= th.WaitShareStarved {
		text := fmt.Sprintf("the training loop waits %.0f %% of its time for the next batch (≥ %.0f %%: input-bound)", 100*w.waitShare.v, 100*th.WaitShareStarved)
		if w.waiting.ok && w.waiting.v >= stuckWaitSec {
			text += fmt.Sprintf("; it has waited %s for the batch it asked for", sample.FormatDuration(w.waiting.v))
		}
		wait = append(wait, evidence("loader.wait_share", w.waitShare.v, ">=", th.WaitShareStarved, "ratio", text))
	}
	if w.gpuP95.ok && w.gpuP95.v >= th.BurstyP95 && w.gpuP5.v < th.BurstyP5 {
		wait = append(wait, evidence("gpu.util_p5", w.gpuP5.v, "<", th.BurstyP5, "%",
			fmt.Sprintf("GPU utilization is bursty: p95 %.0f %%, p5 %.0f %% within each second (busy, then waiting)", w.gpuP95.v, w.gpuP5.v)))
	}
	return wait
}

// starvedRule: the accelerator waits and no other waiting rule holds; it
// always holds, last of its phase. Too few workers, or a host with CPU to
// spare, say where to look.
func starvedRule(f *facts) (decision, bool) {
	w, th := f.w, f.th
	d := join(f.wait)
	if f.fewWorkers {
		text := fmt.Sprintf("only %s for %d cores", sample.Plural(w.workers, "loader worker"), w.cores)
		if w.workers == 0 {
			text = fmt.Sprintf("no loader workers (num_workers=0: the training loop loads each batch itself) on %d cores", w.cores) // not "only 0 loader workers" (a user's review)
		}
		d.evidence = append(d.evidence, evidence("loader.workers", float64(w.workers), "<", th.WorkersPerCoreLow*float64(w.cores), "", text))
	}
	d.evidence = append(d.evidence, idleCPUEvidence(w, th)...)
	return d, true
}

// idleCPUEvidence says why the CPUs do not count as saturated, in the
// figure cpuEvidence judged: the job's use of its limit where it is
// confined, else the host's busy share less spinning compute threads
// (a host that reads 100 % busy is not called unsaturated without the
// reason).
func idleCPUEvidence(w *window, th Thresholds) []Evidence {
	bar, _ := saturatedBar(w, th)
	if w.confined() {
		if !w.jobUsed.ok {
			return nil
		}
		c := w.job.CPUCapacityCores
		return []Evidence{evidence("job.cpu_used_cores", w.jobUsed.v, "<", bar/100*c, "cores",
			fmt.Sprintf("the job's CPUs are not saturated: it may use %s and used %s%s", sample.FormatCPUs(c), sample.FormatCPUs(w.jobUsed.v), w.usedBy()))}
	}
	if !w.cpuBusy.ok {
		return nil
	}
	busy, spin := workBusy(w)
	if w.cpuBusy.v >= bar && spin > 0 {
		return []Evidence{evidence("cpu.busy_pct", busy, "<", bar, "%",
			"no host resource is saturated: "+spinningText(w.cpuBusy.v, busy))}
	}
	return []Evidence{evidence("cpu.busy_pct", w.cpuBusy.v, "<", bar, "%",
		fmt.Sprintf("no host resource is saturated: CPU %.0f %% busy", w.cpuBusy.v))}
}
