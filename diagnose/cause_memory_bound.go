package diagnose

import (
	"fmt"
	"strings"
)

// memory_bound: the GPU is the limit, its DRAM bandwidth is busy and its
// tensor cores mostly idle: the step moves activations more than it
// computes (elementwise and normalization kernels, each a read and a write
// of DRAM). Not named where the model is compiled and autocast is on: both
// fixes are taken; a setting not read is advised as such (unlessOn).
func init() {
	registerCause(causeRule{id: "memory_bound", stages: []string{"step"}, gpu: true, find: memoryBoundCause})
}

func memoryBoundCause(in *causeIn) (Cause, bool) {
	g, ok := in.kernelBound()
	w, th := in.w, in.w.th
	if !ok || !w.gpu.dram.ok || !w.gpu.tensor.ok || !in.atLeast("memory_bound", w.gpu.dram.v, th.DRAMBusyPct) || w.gpu.tensor.v >= th.DRAMBoundTensorPct {
		return Cause{}, false
	}
	var compiled, autocast *bool // nil: not read
	hooked := g.settings != nil
	if s := g.settings; s != nil {
		compiled, autocast = s.Compiled, s.Autocast
	}
	var fixes []string
	if f, ok := unlessOn(compiled, "fuse the elementwise and normalization kernels: torch.compile(model) (each fused kernel reads and writes the activations once)", "the model is compiled", hooked); ok {
		fixes = append(fixes, f)
	}
	if f, ok := unlessOn(autocast, "halve the bytes each kernel moves: bf16 activations (torch.autocast(\"cuda\", dtype=torch.bfloat16))", "autocast is on", hooked); ok {
		fixes = append(fixes, f)
	}
	if len(fixes) == 0 { // both taken
		return Cause{}, false
	}
	fix := strings.Join(fixes, "; and ")
	c := Cause{
		Evidence: fmt.Sprintf("the GPU's DRAM bandwidth is %.0f %% busy while its tensor cores are %.0f %% active (GPM): the step moves memory more than it computes", w.gpu.dram.v, w.gpu.tensor.v),
		Fix:      fix,
		BoundWhy: "no bound from counters: the bytes a fusion saves need a profile of the step (gpuwatch run --gpu-profile)"}
	if p := g.profile; p != nil {
		if s := profiledShare(p, "elementwise", "normalization", "reduction"); s > 0 && s < 1 {
			c.Bound = stepBound(g, 1/(1-s))
			c.BoundWhy = fmt.Sprintf("elementwise, normalization and reduction kernels are %.0f %% of the GPU's time a step (its profile over %d steps): fused into what they feed, at most that time goes", 100*s, p.Steps)
		}
	}
	return c, true
}
