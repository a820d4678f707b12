package diagnose

import "fmt"

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
	loop := w.roles.loopPct
	if !ok || !loop.ok || !in.atLeast("launch_bound", loop.v, th.LoopThreadPct) || !in.below("launch_bound", w.smActivity.v, th.SMActivityLowPct) {
		return Cause{}, false
	}
	s := g.settings
	if s != nil && s.CUDAGraphs != nil && *s.CUDAGraphs {
		return Cause{}, false
	}
	fix := "launch fewer, larger kernels: capture the step in a CUDA graph (torch.compile(model, mode=\"reduce-overhead\")), or a larger batch per step"
	if s != nil && s.Compiled != nil && *s.Compiled {
		fix = "the model is compiled: compile it with mode=\"reduce-overhead\" (CUDA graphs replay the step's launches at once), or a larger batch per step"
	}
	c := Cause{
		Evidence: fmt.Sprintf("the training thread runs %.0f %% of a core while the GPU's SMs are %.0f %% active (GPM): the host launches kernels too short to fill the GPU", loop.v, w.smActivity.v),
		Fix:      fix,
		BoundWhy: fmt.Sprintf("if the SMs were active every cycle: 100 %% over %.0f %%", w.smActivity.v)}
	if w.smActivity.v > 0 {
		c.Bound = stepBound(g, 100/w.smActivity.v)
	}
	return c, true
}
