package diagnose

import (
	"fmt"

	"github.com/gpuwatch/gpuwatch/sample"
)

// batch_headroom: the GPU is the limit but its SMs (GPM) or its time
// (utilization) are not filled, and the step uses under half the GPU's
// memory: each kernel could take more of the batch. Read from the hook's
// batch size and torch.cuda.mem_get_info where it ran, else the GPU's
// memory as NVML reads it.
func init() {
	registerCause(causeRule{id: "batch_headroom", stages: []string{"step"}, gpu: true, find: batchHeadroomCause,
		supersedes: "a larger batch fits"})
}

func batchHeadroomCause(in *causeIn) (Cause, bool) {
	g, ok := in.gpuBound()
	w := in.w
	if !ok {
		return Cause{}, false
	}
	var used, total float64
	from := "NVML"
	if gp := g.gpu; gp != nil && gp.MemUsedBytes != nil && gp.MemTotalBytes != nil {
		used, total = float64(*gp.MemUsedBytes), float64(*gp.MemTotalBytes) // the judged GPU's own, never the box's sum
	}
	s := g.settings
	if s != nil && s.GPUMemFreeBytes != nil && s.GPUMemTotalBytes != nil && *s.GPUMemTotalBytes > 0 && *s.GPUMemFreeBytes <= *s.GPUMemTotalBytes {
		used, total, from = float64(*s.GPUMemTotalBytes-*s.GPUMemFreeBytes), float64(*s.GPUMemTotalBytes), "torch.cuda.mem_get_info"
	}
	if total <= 0 || used <= 0 || !in.below("batch_headroom", used/total, w.th.BatchRoomShare) {
		return Cause{}, false
	}
	fill, what := w.smActivity, "its SMs are %.0f %% active (GPM)"
	if !fill.ok {
		fill, what = w.gpuUtil, "it runs a kernel %.0f %% of the time"
	}
	if !fill.ok || fill.v <= 0 || fill.v >= w.th.BatchFullPct {
		return Cause{}, false
	}
	batch := "the batch"
	if s != nil && s.BatchSize != nil && *s.BatchSize > 0 {
		batch = fmt.Sprintf("the batch of %d", *s.BatchSize)
	}
	room := total / used
	c := Cause{
		Evidence: fmt.Sprintf("%s uses %s of the GPU's %s (%s) while "+what+": each kernel has room for more of the batch",
			batch, sample.FormatBytes(used), sample.FormatBytes(total), from, fill.v),
		Fix: fmt.Sprintf("a larger batch per step: up to about %.0f× fits in memory (scale the learning rate with it, or keep the optimizer's batch by gradient accumulation)", room),
	}
	// The per-sample gain is no more than the batch memory allows (a
	// step on a larger batch is never faster than on this one), nor than
	// the busiest pipe or MFU allows (batchCeiling).
	gain := room
	c.BoundWhy = fmt.Sprintf("per sample: no more than the %.1f× batch memory allows (the model's weights and optimizer state do not grow with it)", room)
	if k, why, ok := batchCeiling(g); ok && k < gain {
		gain, c.BoundWhy = k, "per sample: "+why+fmt.Sprintf(" (and the batch memory allows %.1f×)", room)
	} else if !ok {
		c.BoundWhy += "; SM activity does not bound a larger batch (it also fills each SM), and no pipe's activity or MFU was read"
	}
	c.Bound = stepBound(g, gain)
	return c, true
}
