package diagnose

import (
	"fmt"

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
	})
}

func healthyAdvice(in adviceIn) ([]string, bool) {
	w, th := in.w, in.th
	a := []string{"the accelerator is the limit: try mixed precision (bf16/fp16)"}
	if w.gpuMemTot > 0 && w.gpuMemUsed < th.GPUMemRoomShare*w.gpuMemTot {
		a = append(a, fmt.Sprintf("a larger batch fits: %s of %s GPU memory in use", sample.FormatBytes(w.gpuMemUsed), sample.FormatBytes(w.gpuMemTot)))
	}
	if in.d.moderate && !in.modeled {
		a = append(a, fmt.Sprintf("the loop still waits %.0f %% of the time: one or two more workers would remove it", 100*w.waitShare.v))
	}
	if acc, real := w.accel(); real && acc.v < th.GPULowPct {
		a = append(a, fmt.Sprintf("the GPU is %.0f %% busy: a larger batch or fewer host syncs (.item(), .cpu()) keep it busier", acc.v))
	}
	return a, false
}
