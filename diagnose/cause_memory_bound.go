package diagnose

import (
	"fmt"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
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
	if g.settings.CastDtype() != "" { // the weights cast to 16 bits: so are the activations
		on := true
		autocast = &on
	}
	if f, ok := unlessOn(autocast, "halve the bytes each kernel moves: bf16 activations (torch.autocast(\"cuda\", dtype=torch.bfloat16))", "autocast is on", hooked); ok {
		fixes = append(fixes, f)
	}
	if len(fixes) == 0 { // both taken
		return Cause{}, false
	}
	fuse, bf16 := compiled == nil || !*compiled, autocast == nil || !*autocast // their fixes advised
	fix := strings.Join(fixes, "; and ")
	c := Cause{
		Evidence: fmt.Sprintf("the GPU's DRAM bandwidth is %.0f %% busy while its tensor cores are %.0f %% active (GPM): the step moves memory more than it computes", w.gpu.dram.v, w.gpu.tensor.v),
		Fix:      fix,
		BoundWhy: "no bound from counters: the bytes a fusion saves need a profile of the step (gpuwatch run --gpu-profile)"}
	if p := g.profile; p != nil {
		c.Bound, c.BoundWhy = memoryBoundBound(g, p, fuse, bf16)
	}
	return c, true
}

// memoryBoundBound is Amdahl's over the kernels the fixes advised speed
// up: the elementwise, normalization and reduction kernels fused into
// what they feed where compiling is advised (at most their time goes),
// else at most twice as fast on bf16's half the bytes; and, where bf16
// autocast is advised, the fp32 and TF32 matmuls and convs at bf16's
// dense peak (a review: the fusion's share alone, 1.43×, was no bound for
// a step whose TF32 matmuls were 60 % of its time and autocast was
// advised too; the next, that a compiled model's bound still fused).
func memoryBoundBound(g gpuIn, p *sample.GPUProfile, fuse, bf16 bool) (*Bound, string) {
	s := profiledShare(p, "elementwise", "normalization", "reduction")
	why := fmt.Sprintf("elementwise, normalization and reduction kernels are %.0f %% of the GPU's time a step (its profile over %d steps): fused into what they feed, at most that time goes", 100*s, p.Steps)
	rest := 1 - s
	if !fuse { // compiled already: bf16 alone halves their bytes
		why = fmt.Sprintf("elementwise, normalization and reduction kernels are %.0f %% of the GPU's time a step (its profile over %d steps): in bf16 at most twice as fast (half the bytes)", 100*s, p.Steps)
		rest = 1 - s/2
	}
	if bf16 {
		for _, dt := range []string{sample.DtypeFP32, sample.DtypeTF32} {
			m := matmulShare(p, dt)
			if m <= 0 {
				continue
			}
			r, ok := bf16Over(g.gpu, dt)
			if !ok {
				return nil, fmt.Sprintf("no bound: %s matmuls and convs are %.0f %% of the GPU's time a step, and no dense bf16 and %s peaks are known for this GPU to say how much faster bf16 runs them", dt, 100*m, dt)
			}
			m = min(m, rest)
			rest -= m - m/r
			why += fmt.Sprintf("; its %s matmuls and convs (%.0f %%) at most %.2f× faster in bf16 (the dense peaks)", dt, 100*m, r)
		}
	}
	if s <= 0 && rest >= 1 || rest <= 0 {
		return nil, "no bound from the step's profile: it shows none of the kernels the fixes speed up, or only them"
	}
	gain := 1 / rest
	return stepBound(g, gain), why + fmt.Sprintf(": the step at most %.2f× faster", gain)
}

// matmulShare is the share of the GPU's time a step in matmuls and convs
// of precision dt.
func matmulShare(p *sample.GPUProfile, dt string) float64 {
	mm, _ := p.Share("matmul", dt)
	cv, _ := p.Share("conv", dt)
	return min(1, mm+cv)
}

// bf16Over is the GPU's dense bf16 peak over its dense dt one.
func bf16Over(g *sample.GPU, dt string) (float64, bool) {
	if g == nil || g.Peak == nil {
		return 0, false
	}
	hi, lo := g.Peak.DenseTFLOPS[sample.DtypeBF16], g.Peak.DenseTFLOPS[dt]
	if !(hi > 0) || !(lo > 0) || !(hi/lo >= 1) || !(hi/lo <= maxPeakRatio) {
		return 0, false
	}
	return hi / lo, true
}
