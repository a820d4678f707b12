package diagnose

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// An 8-GPU node whose job's GPUs were not told: the job's GPU runs a
// kernel 40 % of the time, seven others idle. host-idle judges the
// busiest (40 % < 50 %) but its evidence and threshold line carry the
// mean over all eight (5 %): "the GPU runs a kernel 5 % of the time".
// host-idle is judged on the busiest GPU, and says that one's figure.
func TestHostIdleSaysTheBusiestGPUItJudged(t *testing.T) {
	frames := gpuBoundFrames(1, 0, 1, 1, 60, fp32Settings())
	for i := range frames {
		frames[i].GPUs[0].UtilPct = ptr(40.0)
		frames[i].GPUs[0].UtilSamples = &sample.UtilSamples{N: 6, Min: 39, Mean: 40, Max: 41, P5: 39, P95: 41}
		for j := 1; j < 8; j++ {
			frames[i].GPUs = append(frames[i].GPUs, sample.GPU{Index: j, Name: "NVIDIA H200", Vendor: "nvidia", UtilPct: ptr(0.0), Peak: h200Peak,
				GPM: &sample.GPM{SMActivityPct: ptr(0.0), TensorActivityPct: ptr(0.0)}})
		}
	}
	v := Classify(frames, DefaultThresholds())
	if v.Kind != GPUUnderused || len(v.Evidence) == 0 {
		t.Fatalf("%s %+v", v.Kind, v.Evidence)
	}
	if e := v.Evidence[0]; !strings.Contains(e.Text, "40 %") {
		t.Errorf("evidence %q (value %v): the GPU it judged ran a kernel 40 %% of the time", e.Text, e.Value)
	}
}
