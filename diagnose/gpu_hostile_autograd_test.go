package diagnose

import (
	"fmt"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// nn.DataParallel on an 8-GPU box: one process, autograd's device
// threads pt_autograd_0..7 each launch their own GPU's backward at the
// same time (not in turns with each other). The loop's thread at 40 % and
// eight autograd threads at 12 % each: no thread is near a core, yet
// hostPath sums them to 136 %, capped to 100 %, and launch_bound says
// the host's one launch path runs a full core.
// One process driving eight GPUs runs eight pt_autograd_N threads side by
// side: the launch path is the loop's thread and the busiest of them, not
// their sum.
func TestParallelAutogradThreadsAreNotOneLaunchPath(t *testing.T) {
	frames := gpuBoundFrames(1, 0, 1, 1, 40, fp32Settings())
	for i := range frames {
		p := frames[i].Procs
		p.List[0].CPUPct = 40 + 8*12
		for d := range 8 {
			p.Threads = append(p.Threads, sample.Thread{PID: 100, TID: 101 + d, Name: fmt.Sprintf("pt_autograd_%d", d), CPUPct: 12})
		}
	}
	v := Classify(frames, DefaultThresholds())
	if c := causeOf(v, "launch_bound"); c != nil {
		t.Errorf("launch_bound from threads that run side by side: %s", c.Evidence)
	}
}
