package diagnose

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// gpu_underused/host-idle on a GPU without GPM (an A100, or GPM not
// read): the GPU runs a kernel 12 % of the time, the input keeps up, a
// bf16 conv model in NCHW. The GPU is not the limit, yet gpuBound() lets
// the GPU-bound causes run, and channels_last — "the GPU is the limit"
// — is named with "practice: 22–30 % faster" and no bound; naming a
// cause drops the situation's own practice (larger batch, CUDA graphs,
// fewer syncs). A fix that only speeds kernels can gain at most
// 1/(1 − 0.12) = 1.14× here.
// A GPU 12 % busy while the input keeps up: no kernel fix gains more than
// 1.14×, so none is named, and the host side's practice stays.
func TestHostIdleDoesNotAdviseKernelFixes(t *testing.T) {
	st := bf16Settings()
	st.HasConv, st.ConvChannelsLast = ptr(true), ptr(false)
	frames := gpuBoundFrames(1, 0, 1, 1, 60, st)
	for i := range frames {
		frames[i].GPUs[0].UtilPct = ptr(12.0)
		frames[i].GPUs[0].UtilSamples = &sample.UtilSamples{N: 6, Min: 11, Mean: 12, Max: 13, P5: 11, P95: 13}
		frames[i].GPUs[0].GPM = nil // GPM missing
	}
	v := Classify(frames, DefaultThresholds())
	if v.Kind != GPUUnderused {
		t.Fatalf("kind %s", v.Kind)
	}
	if c := causeOf(v, "channels_last"); c != nil && (c.Bound == nil || c.Bound.Gain > 1/(1-0.12)+1e-9) {
		t.Errorf("host-idle names channels_last, bound %+v: %s", c.Bound, c.BoundWhy)
	}
	if all := strings.Join(v.Advice, "\n"); !strings.Contains(all, "CUDA graphs") && !strings.Contains(all, "larger batch") {
		t.Errorf("the host-side practice is gone: %q", v.Advice)
	}
}
