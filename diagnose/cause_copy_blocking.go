package diagnose

import (
	"fmt"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// copy_blocking: the GPU is the limit, and the loop's copies of each
// batch to it hold the host: from pageable memory (the driver stages
// them through a pinned buffer, and the call returns only when done) or
// without non_blocking=True. The host then cannot queue the next kernels
// while the copy runs, and the GPU drains. Read from the hook's timing of
// the copies (loader.payload.copy); never advises what the job does.
func init() {
	registerCause(causeRule{id: "copy_blocking", stages: []string{"step"}, gpu: true, find: copyBlockingCause})
}

func copyBlockingCause(in *causeIn) (Cause, bool) {
	g, ok := in.gpuBound()
	w := in.w
	if !ok || in.pay == nil || in.pay.Copy == nil || !w.batchesPerSec.ok || w.batchesPerSec.v <= 0 {
		return Cause{}, false
	}
	c := in.pay.Copy
	pageable, blocking := c.PinnedShare < 0.995, c.NonBlockingShare < 0.995
	if !pageable && !blocking {
		return Cause{}, false
	}
	period := 1 / w.batchesPerSec.v
	host := c.HostMsPerBatch / 1000
	if !in.atLeast("copy_blocking", host/period, in.w.th.CopyStallShare) {
		return Cause{}, false
	}
	var how, fix []string
	if pageable {
		how = append(how, fmt.Sprintf("%.0f %% of the bytes from pageable memory", 100*(1-c.PinnedShare)))
		if w.knobs[sample.KnobPin.Flag] == "true" {
			// The DataLoader pins already: what reaches the copy is not
			// what it pinned (a batch type without pin_memory(), or
			// tensors made in the loop).
			fix = append(fix, "pin what the copy takes: the DataLoader has pin_memory=True, yet the bytes arrive pageable (give a custom batch type a pin_memory() method, or .pin_memory() the tensors the loop makes)")
		} else {
			fix = append(fix, "pin_memory=True in the DataLoader")
		}
	}
	if blocking {
		how = append(how, fmt.Sprintf("%.0f %% without non_blocking", 100*(1-c.NonBlockingShare)))
		fix = append(fix, ".to(device, non_blocking=True) for each tensor of the batch")
	}
	ev := fmt.Sprintf("the loop spends %s a batch in its copies to the GPU (%s of each %s batch period; %s, %s): the host waits there instead of queueing the next kernels",
		ms(host), pct(host/period), ms(period), sample.FormatBytes(c.BytesPerBatch)+" a batch", strings.Join(how, ", "))
	// The copy's own time on the GPU stays on the stream: only the host's
	// wait beyond it is given back.
	gpuSide := 0.0
	if c.DeviceMsPerBatch != nil {
		gpuSide = *c.DeviceMsPerBatch / 1000
	}
	out := Cause{Evidence: ev, Fix: strings.Join(fix, ", and ") + " (the copy then overlaps the step's kernels, and the host queues the next ones)"}
	if saved := host - gpuSide; saved > 0 && saved < period {
		gain := period / (period - saved)
		out.BoundWhy = fmt.Sprintf("the host's wait in the copy given back: %s a batch less the GPU's own %s for it, of a %s batch period", ms(host), ms(gpuSide), ms(period))
		if c.DeviceMsPerBatch == nil {
			out.BoundWhy = fmt.Sprintf("the host's wait in the copy given back: %s of a %s batch period (the copy's GPU time was not read)", ms(host), ms(period))
		}
		// A blocking copy waits for the kernels queued before it: much of
		// the host's wait there is the GPU at work, which overlapping the
		// copy does not give back. What it can give back is the time the
		// GPU runs no kernel.
		if busy, real := w.accel(); real && busy.ok && busy.v > 0 && gain > 100/min(busy.v, 100) {
			// The GPU's idle time is what the fix can give back: under
			// what the copies' share of the period names the cause at,
			// the cause is not named (a review: "at most 1.00×" beside a
			// GPU 100 % busy), with the same hysteresis as that share.
			if !in.atLeast("copy_blocking", 1-min(busy.v, 100)/100, in.w.th.CopyStallShare) {
				return Cause{}, false
			}
			gain = 100 / min(busy.v, 100)
			what := "NVML's utilization"
			if !w.gpuUtil.ok {
				what = "GPM's SM activity"
			}
			out.BoundWhy += fmt.Sprintf("; at most the GPU's idle time, for it runs a kernel %.0f %% of the time (%s): the host's wait is mostly the GPU's own work queued before the copy", busy.v, what)
		}
		out.Bound = stepBound(g, gain)
	} else {
		out.BoundWhy = "no bound: the copy's time on the GPU is as long as the host's wait for it (its bytes, not the wait, are the cost: send fewer, smaller dtypes)"
	}
	return out, true
}

// pct is a share as a whole percentage ("12 %").
func pct(share float64) string { return fmt.Sprintf("%.0f %%", 100*share) }
