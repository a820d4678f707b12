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
	used, total, from := gpuMemory(g)
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
	s := g.settings
	batch := "the batch"
	if s != nil && s.BatchSize != nil && *s.BatchSize > 0 {
		batch = fmt.Sprintf("the batch of %d", *s.BatchSize)
	}
	// The memory's room is total ÷ used at least: the weights and the
	// optimizer's state, part of what is used, do not grow with the batch
	// (60 GiB used of 141, 59 of them weights and state, leave room for
	// 80 times the batch, not 2.35). So it bounds no gain: a review
	// found a 2.35× bound a larger batch could beat.
	room := total / used
	c := Cause{
		Evidence: fmt.Sprintf("%s uses %s of the GPU's %s (%s) while "+what+": each kernel has room for more of the batch",
			batch, sample.FormatBytes(used), sample.FormatBytes(total), from, fill.v),
		Fix: fmt.Sprintf("a larger batch per step: at least about %.0f× fits in memory, more where the weights and optimizer state hold much of it (scale the learning rate with it, or keep the optimizer's batch by gradient accumulation)", room),
	}
	noRoom := fmt.Sprintf("the memory's room (at least %.1f×) bounds nothing: the weights and optimizer state do not grow with the batch", room)
	if k, why, ok := batchCeiling(g); ok {
		c.Bound, c.BoundWhy = stepBound(g, k), "per sample: "+why+"; "+noRoom
	} else {
		c.BoundWhy = "none: SM activity does not bound a larger batch (it also fills each SM), no pipe's activity or MFU was read, and " + noRoom
	}
	return c, true
}

// memFullShare is the share of the GPU's memory in use past which no
// larger batch is advised (launch_bound's second fix): 90 %, the room an
// allocator's fragmentation and a step's peak leave little of.
const memFullShare = 0.9

// gpuMemory is the GPU's memory as the step has it: torch.cuda.mem_get_info
// where the hook read it, else NVML's figure for the judged GPU (its own,
// never the box's sum); total 0 where neither was read.
func gpuMemory(g gpuIn) (used, total float64, from string) {
	from = "NVML"
	if mi := g.mig; mi != nil {
		// On MIG the instance's memory is the job's: the GPU's is every
		// instance's (a review: "3.2GiB of 140GiB" of a 1g.18gb slice).
		if mi.MemUsedBytes != nil && mi.MemTotalBytes != nil {
			used, total, from = float64(*mi.MemUsedBytes), float64(*mi.MemTotalBytes), "NVML, its MIG instance"
		}
	} else if gp := g.gpu; gp != nil && gp.MemUsedBytes != nil && gp.MemTotalBytes != nil {
		used, total = float64(*gp.MemUsedBytes), float64(*gp.MemTotalBytes)
	}
	s := g.settings
	if s != nil && s.GPUMemFreeBytes != nil && s.GPUMemTotalBytes != nil && *s.GPUMemTotalBytes > 0 && *s.GPUMemFreeBytes <= *s.GPUMemTotalBytes {
		used, total, from = float64(*s.GPUMemTotalBytes-*s.GPUMemFreeBytes), float64(*s.GPUMemTotalBytes), "torch.cuda.mem_get_info"
	}
	return used, total, from
}
