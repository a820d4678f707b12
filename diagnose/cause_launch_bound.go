package diagnose

import (
	"fmt"

	"github.com/gpuwatch/gpuwatch/sample"
)

// launch_bound: the GPU reads busy but its SMs mostly idle while the
// training thread runs near a full core: the host launches kernels as fast
// as it can and each is too short to fill the GPU. Not named where the
// hook saw CUDA graphs replay (the fix is on).
func init() {
	registerCause(causeRule{id: "launch_bound", stages: []string{"step"}, gpu: true, find: launchBoundCause})
}

func launchBoundCause(in *causeIn) (Cause, bool) {
	g, ok := in.gpuBound()
	w, th := in.w, in.w.th
	loop := hostPath(w)
	if !ok || !loop.ok || !in.atLeast("launch_bound", loop.v, th.LoopThreadPct) {
		return Cause{}, false
	}
	if !w.smActivity.ok {
		return launchBoundByUtil(in, g, loop)
	}
	if !in.below("launch_bound", w.smActivity.v, th.SMActivityLowPct) {
		return Cause{}, false
	}
	s := g.settings
	if s != nil && s.CUDAGraphs != nil && *s.CUDAGraphs {
		return Cause{}, false
	}
	c := Cause{
		Evidence: fmt.Sprintf("%s while the GPU's SMs are %.0f %% active (GPM): the host launches kernels too short to fill the GPU", hostPathWords(w, loop), w.smActivity.v),
		Fix:      launchFix(s, memFull(g)),
		BoundWhy: fmt.Sprintf("a CUDA graph, if the SMs were active every cycle: 100 %% over %s %%", pctFigure(w.smActivity.v))}
	if w.smActivity.v >= minBoundingPct {
		c.Bound = stepBound(g, 100/w.smActivity.v)
	} else {
		// A ratio over (nearly) nothing bounds nothing: said, and no
		// bound is given, not the batch's alone (a review: "at most
		// 1.78×" beside "100 % over 0 %").
		c.BoundWhy = fmt.Sprintf("none: a CUDA graph's gain is not bounded where the SMs are active under %.1f %% of cycles (GPM)", minBoundingPct)
	}
	if b, why, ok := waitsProfiled(g, "host", "the GPU idles between kernels while the host works (not in a sync)", "the GPU idles between kernels"); ok {
		c.Bound, c.BoundWhy = b, "a CUDA graph, "+why+": the gaps closed"
	}
	withBatch(g, &c)
	return c, true
}

// minBoundingPct is the least SM activity a bound is taken over: under
// it, 100 ÷ activity bounds nothing a reader can use.
const minBoundingPct = 0.5

// pctFigure is a percentage as the bounds say it: a tenth under 10.
func pctFigure(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// withBatch widens a launch_bound cause's bound, a CUDA graph's, to what
// its other fix, a larger batch, may gain (batchCeiling): the bound holds
// for whichever the user applies. Where nothing bounds the batch, the
// bound is the graph's alone and says so.
func withBatch(g gpuIn, c *Cause) {
	if full := memFull(g); full != "" {
		c.BoundWhy += " (a larger batch is not advised: " + full + ")"
		return
	}
	k, why, ok := batchCeiling(g)
	if !ok {
		c.BoundWhy += " (a larger batch may gain more per sample: no pipe's activity or MFU bounds it)"
		return
	}
	c.BoundWhy += "; a larger batch, per sample: " + why
	if c.Bound != nil && k > c.Bound.K { // nil: the graph's gain is unbounded, and so is the cause's
		c.Bound = stepBound(g, k)
	}
}

// hostPath is the CPU of the host's one path that launches the step, % of
// a core: the loop's thread and autograd's device threads, which take
// turns (backward() waits in the loop's thread while a pt_autograd_N
// thread launches the backward's kernels). On an H200 a small fp32 MLP,
// 411 steps a second with its SMs 1 % active, was not named launch-bound
// by the loop's thread alone; practice reads such jobs as "python 62 %,
// pt_autograd_0 34 %". torch 2.11 names the thread so; torch 1.13 leaves
// it the process's name, and there only the loop's thread counts.
func hostPath(w *window) level {
	loop, ag := w.roles.loopPct, w.roles.autogradPct
	if !loop.ok || !ag.ok {
		return loop
	}
	// They take turns: a sum over a core is the two medians' noise.
	return level{v: min(100, loop.v+ag.v), n: loop.n, ok: true}
}

// hostPathWords says hostPath: "the training thread runs 93 % of a
// core", or with autograd's threads "the training thread and autograd's
// device thread take turns at 95 % of a core (58 % and 37 %)".
func hostPathWords(w *window, path level) string {
	loop, ag := w.roles.loopPct, w.roles.autogradPct
	if !ag.ok || ag.v < 1 {
		return fmt.Sprintf("the training thread runs %.0f %% of a core", path.v)
	}
	return fmt.Sprintf("the training thread and autograd's device thread, which take turns launching the step, run %.0f %% of a core (%.0f %% and %.0f %%)", path.v, loop.v, ag.v)
}

// launchFix is the fix, never one the job has: CUDA graphs, by
// torch.compile's reduce-overhead mode where the model is compiled; and a
// larger batch, unless the GPU's memory is full (full says how full).
func launchFix(s *sample.JobSettings, full string) string {
	batch := ", or a larger batch per step"
	if full != "" {
		batch = " (a larger batch would not fit: " + full + ")"
	}
	const graph = "launch fewer, larger kernels: capture the step in a CUDA graph (torch.compile(model, mode=\"reduce-overhead\"))"
	switch {
	case s == nil:
		return graph + batch + " (whether the model is compiled, and how, was not read; gpuwatch run reads it)"
	case s.Compiled == nil:
		return graph + batch + " (whether the model is compiled, and how, the hook did not read)"
	case *s.Compiled:
		// The mode it was compiled with is not read: one already in
		// reduce-overhead whose graphs torch skipped (dynamic shapes, a
		// CPU tensor in the step) must not be told to do what it does.
		return "the model is compiled, and no CUDA graph replays its step: with mode=\"reduce-overhead\", if it is not compiled so already (the mode is not read), CUDA graphs replay the step's launches at once; where it is, torch skipped the graphs (TORCH_LOGS=cudagraphs says why: dynamic shapes, a CPU tensor in the step)" + batch
	}
	return graph + batch
}

// memFull says how full the GPU's memory is where it is at least
// memFullShare in use ("138GiB of 141GiB in use, torch.cuda.mem_get_info");
// "" where it has room or was not read.
func memFull(g gpuIn) string {
	used, total, from := gpuMemory(g)
	if total <= 0 || used < memFullShare*total {
		return ""
	}
	return fmt.Sprintf("%s of %s in use, %s", sample.FormatBytes(used), sample.FormatBytes(total), from)
}

// launchBoundByUtil is the cause without GPM: the training thread near a
// full core while the GPU runs no kernel for a share of the time
// (utilization below AccelBusyPct) and the loop does not wait for input:
// the gaps are the host's launches. Its bound is the gaps closed.
func launchBoundByUtil(in *causeIn, g gpuIn, loop level) (Cause, bool) {
	w, th := in.w, in.w.th
	util := w.gpuUtil
	// Hysteresis on the GPU's idle share, not on utilization: held, the
	// cause leaves once the idle share falls under CauseLeaveRatio of its
	// threshold (utilization past 92.5 %), never at 100 %.
	if !util.ok || util.v <= 0 || util.v >= 100 || !in.atLeast("launch_bound", 100-util.v, 100-th.AccelBusyPct) || w.waitShare.ok && w.waitShare.v >= th.WaitShareModerate {
		return Cause{}, false
	}
	if s := g.settings; s != nil && s.CUDAGraphs != nil && *s.CUDAGraphs {
		return Cause{}, false
	}
	c := Cause{
		Evidence: fmt.Sprintf("%s while the GPU runs a kernel %.0f %% of the time and the loop does not wait for input: the host launches kernels as fast as it can (SM activity not read: %s)", hostPathWords(w, loop), util.v, g.noGPMWords()),
		Fix:      launchFix(g.settings, memFull(g)),
		Bound:    stepBound(g, 100/util.v),
		BoundWhy: fmt.Sprintf("a CUDA graph, the launch gaps closed: a kernel running 100 %% of the time over %.0f %%", util.v)}
	if b, why, ok := waitsProfiled(g, "host", "the GPU idles between kernels while the host works (not in a sync)", "the GPU idles between kernels"); ok {
		c.Bound, c.BoundWhy = b, "a CUDA graph, "+why+": the gaps closed"
	}
	withBatch(g, &c)
	return c, true
}
