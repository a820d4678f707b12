package diagnose

import (
	"fmt"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// Healthy: the accelerator is the busy part. See docs/diagnosis.md, "Verdicts".
const Healthy Kind = 1

func init() {
	register(Situation{
		Kind:      Healthy,
		ID:        "healthy",
		Title:     "Healthy: the accelerator is the busy part",
		Tone:      ToneGood,
		Advice:    healthyAdvice,
		Scenarios: []string{"healthy"},
		rules: []rule{
			{name: "moderate", sees: "nothing waits much, but the loop waits a little", variant: healthyModerate, holds: moderateRule},
			{name: "busy", sees: "the accelerator is busy", variant: healthyBusy, holds: busyRule},
			{name: "plain", sees: "nothing waits, and nothing else holds", holds: healthyRule},
		},
	})
}

// The variants of healthy. A window can show both; moderate, tried first,
// names it then (busy matters only where no wait share is seen).
const (
	healthyModerate variant = "moderate" // the loop waits at least WaitShareModerate: one or two more workers would help
	healthyBusy     variant = "busy"     // the accelerator at or above AccelBusyPct: the verdict is sure without a loader
)

// moderateRule: the loop waits, but less than starved.
func moderateRule(f *facts) (decision, bool) {
	w := f.w
	if !w.waitShare.ok || w.waitShare.v < f.th.WaitShareModerate {
		return decision{}, false
	}
	return healthyRule(f)
}

// busyRule: the accelerator is at or above AccelBusyPct.
func busyRule(f *facts) (decision, bool) {
	if !f.accel.ok || f.accel.v < f.th.AccelBusyPct {
		return decision{}, false
	}
	return healthyRule(f)
}

func healthyAdvice(in adviceIn) ([]string, bool) {
	w, th := in.w, in.th
	a := []string{usedLine(w)}
	// A larger batch only where the GPU has room to fill: not beside SMs
	// at or above BatchFullPct active (GPM; batch_headroom's cut-off).
	// Without GPM nothing says how full the SMs are (utilization reads
	// 100 % while one small kernel runs), and the memory's room is said.
	if w.gpuMemTot > 0 && w.gpuMemUsed < th.GPUMemRoomShare*w.gpuMemTot && !(w.smActivity.ok && w.smActivity.v >= th.BatchFullPct) {
		a = append(a, fmt.Sprintf("a larger batch fits: %s of %s GPU memory in use", sample.FormatBytes(w.gpuMemUsed), sample.FormatBytes(w.gpuMemTot)))
	}
	if in.d.variant == healthyModerate && !in.modeled {
		a = append(a, fmt.Sprintf("the loop still waits %.0f %% of the time: one or two more workers would remove it", 100*w.waitShare.v))
	}
	if acc, real := w.accel(); real && acc.v < th.GPULowPct {
		line := fmt.Sprintf("the GPU is %.0f %% busy: a larger batch or fewer host syncs (.item(), .cpu()) keep it busier", acc.v)
		if w.gpu.syncsCounted { // host_sync names those it counts where they matter
			line = fmt.Sprintf("the GPU is %.0f %% busy: a larger batch keeps it busier; %s", acc.v, uncountedSyncs)
		}
		a = append(a, line)
	}
	if w.worldSize > 1 && w.ranksSeen < w.worldSize {
		// One rank watched alone (gpuwatch run on each rank, as srun
		// starts them): its step holds its wait for the others in the
		// all-reduce, so a straggler elsewhere reads as this rank's busy
		// step (a hostile user's review: rank 0 healthy, exit 0, while
		// rank 1 loaded every batch itself and paced the job).
		a = append(a, fmt.Sprintf("gpuwatch sees %d of this job's %d ranks: a busy step here includes the wait for the others in the all-reduce, so a slower rank elsewhere paces the job unseen; watch every rank at once (on one node, gpuwatch run on the launcher or gpuwatch attach on their ports; across nodes, serve on each and fleet)", w.ranksSeen, w.worldSize))
	}
	return a, false
}

// healthyRule: the evidence that the accelerator is the busy part, as
// far as the window shows: how busy, how steady, how little the loop
// waits. It always holds, last of the table.
func healthyRule(f *facts) (decision, bool) {
	w, th, accel := f.w, f.th, f.accel
	var d decision
	if accel.ok {
		op, text := ">=", fmt.Sprintf("%s is %.0f %% busy", f.accelName(), accel.v)
		if accel.v < th.AccelBusyPct {
			op = "<"
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
			e.Text = fmt.Sprintf("the training loop waits %.0f %% of its time for input: moderately input-bound (≥ %.0f %%)", 100*w.waitShare.v, 100*th.WaitShareModerate)
		}
		d.evidence = append(d.evidence, e)
	}
	return d, true
}

// usedLine says how much of the GPU the GPU-bound step uses, as far as
// the window shows: GPM's SM and tensor activity and the achieved rate
// against the dense peak. It never advises what the job already does, nor
// what the window gives no evidence for: mixed precision is advised by
// the tensor_idle cause, from GPM or from every setting that decides it
// (a conv model's cudnn TF32 among them), not here. With no GPU seen the
// accelerator is the loop's step time, and nothing says what the step
// runs or on what: no tensor cores are spoken of.
func usedLine(w *window) string {
	g := &w.gpu
	if !w.smActivity.ok {
		if _, real := w.accel(); !real {
			if off, ok := offCPUStep(w); ok {
				return off + profileWords(g)
			}
			return "the accelerator is the limit (no GPU seen: the step is the loop's own time, and how much of an accelerator it uses is not read)" + profileWords(g)
		}
		line := "the accelerator is the limit"
		switch r := g.noGPM; {
		case g.procSM.ok && r != "":
			line += fmt.Sprintf(": the job's kernels run on it %.0f %% of the time (NVML, per process; how much of its SMs they fill needs GPM: %s)", g.procSM.v, r)
		case g.procSM.ok:
			line += fmt.Sprintf(": the job's kernels run on it %.0f %% of the time (NVML, per process)", g.procSM.v)
		case r != "":
			line += " (how much of it the step uses needs GPM: " + r + ")"
		}
		if s := g.settings; s == nil || s.Autocast == nil {
			// Not read: said as a condition, never as advice the job
			// may already follow.
			return line + ": if the step is not in bf16/fp16 yet, mixed precision runs its matmuls on the tensor cores (gpuwatch run reads what the job uses)"
		}
		return line + mfuWords(g) + profileWords(g)
	}
	line := fmt.Sprintf("the accelerator is the limit: its SMs are active %.0f %% of cycles", w.smActivity.v)
	if g.tensor.ok {
		line += fmt.Sprintf(", its tensor cores %.1f %%", g.tensor.v)
	}
	line += " (GPM)"
	// Tensor cores all but idle: a TFLOPS figure would be ≈ 0 of a peak
	// the step does not aim at (tensor_idle says why, and its bound).
	if g.mig != nil {
		// Said once: MFU's reason names the instance where the FLOPs
		// were counted.
		if !strings.Contains(g.mfuWhy, "MIG") {
			line += "; no achieved rate: the step runs on a MIG instance (" + g.mig.Profile + "), and its share of the GPU's dense peak is not read"
		}
	} else if g.gpu != nil && g.gpu.Peak != nil && (!g.tensor.ok || g.tensor.v >= w.th.TensorIdlePct) {
		if r, ok := g.stepRate(); ok {
			line += "; " + r.Words(g.gpu.Peak.Model) + " (activity × peak)"
		}
	} else if g.gpu != nil && g.gpu.Peak == nil && g.mfu == nil {
		// Said once: MFU's reason names the peak where the FLOPs were
		// counted (a review: an unknown model said nothing of it).
		if why := g.gpu.Unavailable["peak"]; why != "" && !strings.Contains(g.mfuWhy, "peak") {
			line += "; no achieved rate: " + why
		}
	}
	return line + mfuWords(g) + profileWords(g)
}

// profileWords is the hook's profile of the step's GPU time where it
// recorded one ("; GPU time per step (5 steps, profiled): matmul bf16
// 61 %, …; recording cost 400ms"); "" where it did not.
func profileWords(g *gpuStep) string {
	if g.profile == nil {
		return ""
	}
	return "; " + g.profile.Summary()
}

// mfuWords is the step's model FLOPs utilization where it was derived
// (sample.MFU: the hook counted the model's FLOPs, the GPU's dense peak
// for the step's dtype is known): "; MFU 31 % (…)"; on a GPU, why not
// where it is not ("; MFU not derived: the hook did not count …"). It
// needs no GPM.
func mfuWords(g *gpuStep) string {
	m := g.mfu
	if m == nil {
		if g.mfuWhy != "" && g.gpu != nil {
			return "; MFU not derived: " + g.mfuWhy
		}
		return ""
	}
	return fmt.Sprintf("; MFU %s %% (%s)", sample.PercentWords(m.Ratio), m.Method) + mfuAboveTensor(g)
}

// mfuAboveTensor is sample.MFU.AboveTensor against the window's median
// tensor activity, as the healthy line says it.
func mfuAboveTensor(g *gpuStep) string {
	if !g.tensor.ok {
		return ""
	}
	if s := g.mfu.AboveTensor(g.tensor.v); s != "" {
		return ", " + s
	}
	return ""
}

// offCPUShare: with no GPU seen, a step whose training process's threads
// use under this share of a core while the loop steps runs mostly off the
// CPU.
const offCPUShare = 0.25

// offCPUStep says, with no GPU seen, that the step which is the limit ran
// on no CPU either: the loop's thread and the training process's other
// threads together used under offCPUShare of a core over the share of the
// time the loop stepped (its thread's wait for a CPU counted as use).
// "The accelerator is the limit" was said of a step that slept 49 of its
// 51 ms (a review): the step waits on something else — a sleep, I/O, a
// lock, a remote call.
func offCPUStep(w *window) (string, bool) {
	r := w.roles
	if !r.loopPct.ok || !r.computePct.ok || !w.waitShare.ok {
		return "", false // the process's other threads unread: its CPU is not known
	}
	if s := w.gpu.settings; s == nil || s.Device != "cpu" {
		// Only where the hook read the forward on the CPU: elsewhere the
		// step may wait on a device gpuwatch cannot read (no NVML, ROCm,
		// XPU), or on one not read yet.
		return "", false
	}
	used := r.loopPct.v/100 + r.computePct.v/100
	on := used
	if w.loopRunDelay.ok {
		// Time the loop's thread waited for a CPU is not time off it: a
		// box others crowd.
		on += w.loopRunDelay.v / 1000
	}
	stepping := 1 - w.waitShare.v
	if stepping <= 0 || on >= offCPUShare*stepping {
		return "", false
	}
	return fmt.Sprintf("the step is the limit, and it runs mostly off the CPU (no GPU seen): the training process's threads used %.2f of a core while its loop stepped %.0f %% of the time, so the step waits on something else (a sleep, I/O, a lock, a remote call); no loader knob helps", used, 100*stepping), true
}
