package diagnose

import (
	"fmt"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// host_sync: the GPU is the limit and the job's step makes the host wait
// for it — loss.item(), print(tensor), .cpu(), torch.cuda.synchronize() —
// at a line the hook counted (loader.syncs, python/gpuwatch_hook/_syncs.py):
// each drains the GPU's queue, and the GPU idles until the host has
// launched the next kernels.
func init() {
	registerCause(causeRule{id: "host_sync", stages: []string{"step"}, gpu: true, find: hostSyncCause})
}

func hostSyncCause(in *causeIn) (Cause, bool) {
	g, ok := in.gpuBound()
	if !ok {
		return Cause{}, false
	}
	syncs := lastSyncs(in.frames)
	if len(syncs) == 0 || !in.atLeast("host_sync", syncs[0].PerStep, in.w.th.HostSyncPerStep) {
		return Cause{}, false
	}
	if s, split := g.profile.BoundShare("sync", ""); split && s < in.w.th.HostSyncIdleShare {
		return Cause{}, false // counted, and measured costing the GPU nothing to speak of
	}
	top := syncs[0]
	ev := fmt.Sprintf("%s %s syncs %s", top.Site, hostCallWords(top), perStepWords(top.PerStep))
	if top.SecondsPerStep != nil && *top.SecondsPerStep > 0 {
		ev += fmt.Sprintf(" (the host waits %s a step there for the GPU to drain its queue)", ms(*top.SecondsPerStep))
	}
	var more []string
	total := top.PerStep
	for _, s := range syncs[1:] {
		total += s.PerStep
		if s.PerStep >= in.w.th.HostSyncPerStep && len(more) < 2 {
			more = append(more, fmt.Sprintf("%s %s %s", s.Site, hostCallWords(s), perStepWords(s.PerStep)))
		}
	}
	if len(more) > 0 {
		ev += "; also " + strings.Join(more, ", ")
	}
	if len(syncs) > 1 {
		ev += fmt.Sprintf(" — %.3g host syncs a step in all (the hook's count)", total)
	}
	fix := "log every N steps and keep values on the GPU: accumulate on the device (running += loss.detach()) and call .item() once per log interval; print or format tensors only when logging"
	switch top.Call {
	case "synchronize":
		fix = "take torch.cuda.synchronize() out of the step (keep it for timing runs); " + fix
	case "bool":
		fix = "branch on a tensor only every N steps (or with torch.where on the device); " + fix
	case "grad_scaler":
		fix = gradScalerFix(g.settings, g.gpu)
	}
	c := Cause{Evidence: ev, Fix: fix,
		BoundWhy: "no bound from counters: what a sync costs is the GPU's idle time after it, until the host has launched the next kernels, which needs a profile of the step (gpuwatch run --gpu-profile); the hook's count says how often the host waits, and its time in the call how long"}
	if b, why, ok := waitsProfiled(g, "sync", "the GPU idles after the host's syncs", "the GPU idles"); ok {
		c.Bound, c.BoundWhy = b, why+": at most that idle time goes"
	}
	return c, true
}

// lastSyncs is the newest frame's host syncs the hook counted, most
// calls first.
func lastSyncs(frames []sample.Frame) []sample.HostSync {
	for i := len(frames) - 1; i >= 0; i-- {
		if l := frames[i].Loader; l != nil && len(l.Syncs) > 0 {
			return l.Syncs
		}
	}
	return nil
}

// hostCallWords is the call as the job's code reads: "tensor.item()".
func hostCallWords(s sample.HostSync) string {
	w := sample.HostSyncWords(s.Call)
	if strings.HasPrefix(w, ".") {
		return "tensor" + w
	}
	return w
}

// perStepWords says how often: "every step", "3 times a step", "once
// every 2 steps".
func perStepWords(n float64) string {
	switch {
	case n >= 1.5:
		return fmt.Sprintf("%.3g times a step", n)
	case n >= 0.95:
		return "every step"
	case n > 0:
		return fmt.Sprintf("once every %.3g steps", 1/n)
	}
	return "in no step"
}

// gradScalerFix is host_sync's fix where the top sync is torch's
// GradScaler's own (its check of the gradients for inf/NaN in step()),
// which the job cannot move to a log interval: bf16 needs no loss
// scaling, and a fused optimizer takes the check on the GPU (torch's
// GradScaler.step hands it to an optimizer whose
// _step_supports_amp_scaling is set: Adam's with fused=True), the one fix
// on a GPU without bf16 (a review: a V100 was told to autocast to bf16).
func gradScalerFix(s *sample.JobSettings, gpu *sample.GPU) string {
	const drop = "bf16 needs no loss scaling: drop the GradScaler (scaler.scale, scaler.step, scaler.update), and its sync every step goes with it"
	const fused = "a fused optimizer takes the GradScaler's inf/NaN check on the GPU, with no sync: torch.optim.Adam(params, fused=True) (AdamW too from torch 2.0)"
	if s != nil && s.Autocast != nil && *s.Autocast && s.AutocastDtype == "bfloat16" {
		return "autocast is in bfloat16 already: " + drop
	}
	if s.CastDtype() == "bfloat16" {
		return "the model's weights are in bfloat16 already: " + drop
	}
	if gpu != nil && gpu.Peak != nil && !(gpu.Peak.DenseTFLOPS[sample.DtypeBF16] > 0) {
		return "the GradScaler's check is the price of fp16's loss scaling, and the " + gpu.Peak.Model + " has no bf16: " + fused
	}
	return "the GradScaler's check is the price of fp16's loss scaling: autocast to bfloat16 instead where the GPU has it (Ampere and later), and " + drop + "; or keep fp16 with " + fused
}
