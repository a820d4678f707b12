package diagnose

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// withSyncs gives every frame's loader the hook's host syncs.
func withSyncs(frames []sample.Frame, s ...sample.HostSync) []sample.Frame {
	for i := range frames {
		l := *frames[i].Loader
		l.Syncs = s
		frames[i].Loader = &l
	}
	return frames
}

// TestHostSyncNamesTheLine (issue 51 item 3): a GPU-bound step with
// loss.item() at train.py:87 every step names host_sync with the line, the
// host's wait and the fix, and no bound (bound_why says why); a value
// logged every 10 steps, a job whose input is the limit, or no count name
// nothing.
func TestHostSyncNamesTheLine(t *testing.T) {
	wait := 0.0041
	frames := withSyncs(gpuBoundFrames(90, 30, 20, 20, 60, bf16Settings()),
		sample.HostSync{Site: "train.py:87", Call: "item", PerStep: 1, SecondsPerStep: &wait},
		sample.HostSync{Site: "train.py:90", Call: "repr", PerStep: 1},
		sample.HostSync{Site: "train.py:95", Call: "tolist", PerStep: 0.1})
	v := Classify(frames, DefaultThresholds())
	c := causeOf(v, "host_sync")
	if c == nil {
		t.Fatalf("%s: causes %+v advice %q", v.Kind, v.Causes, v.Advice)
	}
	for _, want := range []string{"train.py:87 tensor.item() syncs every step", "4.1ms a step", "train.py:90 print(tensor)", "2.1 host syncs a step in all"} {
		if !strings.Contains(c.Evidence, want) {
			t.Errorf("evidence %q lacks %q", c.Evidence, want)
		}
	}
	if strings.Contains(c.Evidence, "train.py:95 tensor.tolist()") {
		t.Errorf("a sync every 10 steps named as a site: %q", c.Evidence)
	}
	if !strings.Contains(c.Fix, "every N steps") || !strings.Contains(c.Fix, ".item() once per log interval") {
		t.Errorf("fix %q", c.Fix)
	}
	if c.Bound != nil || !strings.Contains(c.BoundWhy, "no bound") {
		t.Errorf("bound %+v (%s)", c.Bound, c.BoundWhy)
	}
	if !strings.Contains(strings.Join(v.Advice, "\n"), c.Evidence) {
		t.Errorf("advice lacks the cause: %q", v.Advice)
	}

	sync := withSyncs(gpuBoundFrames(90, 30, 20, 20, 60, bf16Settings()), sample.HostSync{Site: "bench.py:12", Call: "synchronize", PerStep: 2})
	if c := causeOf(Classify(sync, DefaultThresholds()), "host_sync"); c == nil || !strings.Contains(c.Evidence, "torch.cuda.synchronize() syncs 2 times a step") ||
		!strings.HasPrefix(c.Fix, "take torch.cuda.synchronize() out of the step") {
		t.Errorf("synchronize: %+v", c)
	}

	logged := withSyncs(gpuBoundFrames(90, 30, 20, 20, 60, bf16Settings()), sample.HostSync{Site: "train.py:87", Call: "item", PerStep: 0.1})
	if c := causeOf(Classify(logged, DefaultThresholds()), "host_sync"); c != nil {
		t.Errorf("logged every 10 steps: %+v", c)
	}
	if c := causeOf(Classify(gpuBoundFrames(90, 30, 20, 20, 60, bf16Settings()), DefaultThresholds()), "host_sync"); c != nil {
		t.Errorf("no count: %+v", c)
	}
	starved := withSyncs(classifiedFrames(getitemLoop), sample.HostSync{Site: "train.py:87", Call: "item", PerStep: 1})
	if v := Classify(starved, DefaultThresholds()); causeOf(v, "host_sync") != nil {
		t.Errorf("input-bound (%s): %+v", v.Kind, v.Causes)
	}
}

func classifiedFrames(c loopCase) []sample.Frame { return c.frames() }

// TestTheGradScalersSyncIsNotToldToMoveToALogInterval: GradScaler's own
// check of the gradients (an .item() inside scaler.step(), named
// grad_scaler by the hook) is not advised "call .item() once per log
// interval", which the job cannot do: a job in bf16 is told it needs no
// GradScaler; one in fp16 (or whose precision was not read) that bf16
// needs none.
func TestTheGradScalersSyncIsNotToldToMoveToALogInterval(t *testing.T) {
	sync := sample.HostSync{Site: "train.py:101", Call: "grad_scaler", PerStep: 1}
	fp16 := bf16Settings()
	fp16.AutocastDtype = "float16"
	for name, c := range map[string]struct {
		st   *sample.JobSettings
		want string
	}{
		"bf16":     {bf16Settings(), "autocast is in bfloat16 already: bf16 needs no loss scaling: drop the GradScaler"},
		"fp16":     {fp16, "autocast to bfloat16 instead where the GPU has it"},
		"not read": {nil, "autocast to bfloat16 instead where the GPU has it"},
		"V100":     {fp16, "the V100 SXM2 has no bf16: a fused optimizer takes the GradScaler's inf/NaN check on the GPU"},
	} {
		frames := gpuBoundFrames(90, 30, 20, 20, 60, c.st)
		if name == "V100" { // a review: a GPU without bf16 was told to autocast to it
			for i := range frames {
				frames[i].GPUs[0].Name = "Tesla V100-SXM2-16GB"
				frames[i].GPUs[0].Peak = &sample.GPUPeak{Model: "V100 SXM2", DenseTFLOPS: map[string]float64{"fp64": 7.8, "fp32": 15.7, "fp16": 125}, NoTF32: true}
			}
		}
		v := Classify(withSyncs(frames, sync), DefaultThresholds())
		h := causeOf(v, "host_sync")
		if h == nil {
			t.Errorf("%s: not named: %+v", name, v.Causes)
			continue
		}
		if !strings.Contains(h.Fix, c.want) || strings.Contains(h.Fix, "once per log interval") || name == "V100" && strings.Contains(h.Fix, "autocast to bfloat16") || !strings.Contains(h.Evidence, "train.py:101 scaler.step() (torch's GradScaler") {
			t.Errorf("%s: %+v", name, h)
		}
	}
}
