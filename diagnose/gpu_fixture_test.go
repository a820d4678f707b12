package diagnose

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestH100SampledStarvedRecorded replays `gpuwatch record` on a real H100
// (stop 47; testdata/gpu): python/examples/train_gpu.py, unmodified and not
// started by gpuwatch (its loop sampled), 2 workers spending 2 ms of CPU a
// sample on 16 cores, an MLP step of about 20 ms on the GPU. Its own
// figures: wait 0.93, 910 samples/s; with 12 workers and light samples
// the same step reaches 13,744 samples/s. NVML's readings are real ones:
// the verdict is gpu_starved, the GPU is read (its utilization, its PCIe
// 5.0 x16 link), and the advice raises num_workers with a relative gain.
func TestH100SampledStarvedRecorded(t *testing.T) {
	lines := readRecording(t, filepath.Join("testdata", "gpu", "h100-sampled-starved.jsonl"))
	segs := replay(lines, DefaultThresholds())
	if len(segs) != 1 || len(segs[0].verdicts) < 15 {
		t.Fatalf("want one run of ≥ 15 frames, have %d segments", len(segs))
	}
	s := segs[0]
	// Its first 5 frames are the job's start (CUDA's set-up, the model
	// built, the first epoch's workers not yet forked: its main thread
	// pegged): nothing sampled can tell that from num_workers=0, and
	// nothing says num_workers=0 as a fact.
	if from := s.stableFrom(GPUStarved); from < 0 || from > 8 {
		t.Fatalf("settles on gpu_starved from frame %d", from)
	}
	for i, v := range s.verdicts {
		if c := claims(v); strings.Contains(c, "the loader has no workers") {
			t.Errorf("frame %d (%s) claims no workers as a fact: %q", i, v.Kind, c)
		}
	}
	last := s.verdicts[len(s.verdicts)-1]
	if len(last.Changes) == 0 || last.Changes[0].Knob != "num_workers" || last.Predicted == nil || last.Predicted.Gain < 4 || last.Predicted.SamplesPerSec != 0 {
		t.Fatalf("changes %+v predicted %+v advice %q: want num_workers raised, a relative gain of several ×", last.Changes, last.Predicted, last.Advice)
	}
	if !strings.Contains(strings.Join(texts(last.Evidence), "\n"), "only 2 loader workers for 16 cores") {
		t.Errorf("evidence %q", texts(last.Evidence))
	}
	var f *sample.Frame
	for i := len(lines) - 1; f == nil && i >= 0; i-- {
		if lines[i].Type == "frame" {
			f = &lines[i].Frame
		}
	}
	if f == nil || len(f.GPUs) != 1 || f.GPUs[0].UtilPct == nil || f.GPUs[0].PCIeLink != "PCIe 5.0 x16" || f.GPUs[0].GPM == nil {
		t.Fatalf("the H100's NVML readings: %+v", f.GPUs)
	}
}

// TestH200BF16MLPRecorded replays `gpuwatch run --once --record` on a real
// H200 (this session's device run; testdata/gpu/h200-mlp-bf16.jsonl):
// python/examples/gpu_bound.py --model mlp --precision bf16, an 8-layer
// 4096-wide MLP at batch 4096 in bf16 autocast, its input free. Its own
// clock: 676,823 samples/s (the same MLP in fp32 read 64,770: 10.5×, and
// gpuwatch's tensor_idle bound on the fp32 run was 14.8×). The hook read
// its settings (autocast bf16) and counted its FLOPs: the verdict is
// healthy, names no GPU cause, advises no mixed precision, and says how
// much of the GPU the step uses — SM and tensor activity from GPM, the
// bf16 rate against the H200's dense peak, and MFU.
func TestH200BF16MLPRecorded(t *testing.T) {
	lines := readRecording(t, filepath.Join("testdata", "gpu", "h200-mlp-bf16.jsonl"))
	for i := range lines {
		lines[i].Frame.AssignRoles() // MFU is derived, as recording.Read derives it
	}
	segs := replay(lines, DefaultThresholds())
	if len(segs) != 1 || len(segs[0].verdicts) < 10 {
		t.Fatalf("want one run of ≥ 10 frames, have %d segments", len(segs))
	}
	last := segs[0].verdicts[len(segs[0].verdicts)-1]
	all := strings.Join(last.Advice, "\n")
	if last.Kind != Healthy || len(last.Causes) != 0 || strings.Contains(all, "mixed precision") || strings.Contains(all, "autocast") {
		t.Fatalf("%s causes %+v advice %q", last.Kind, last.Causes, last.Advice)
	}
	for _, want := range []string{"its SMs are active", "its tensor cores", "TFLOPS of the H200 SXM's 990 dense", "MFU"} {
		if !strings.Contains(all, want) {
			t.Errorf("advice %q lacks %q", all, want)
		}
	}
	t.Logf("%q", last.Advice)
}

// TestStartUpIsNotJudged replays both real H200 runs through their
// start: gpuwatch run's grace (Target.Starting) holds frames with no
// loader yet (the interpreter importing torch, its main thread at a full
// core), frames where the sampler sees no first batch, and a first
// reading of the hook whose rates need a second. None of them is the
// job's loop: each is shown as warming up, never single_core_maxed or a
// starved GPU, and a verdict held from before the grace is not kept on.
// The loop's own frames are judged without them: the MLP's (its GPU 100 %
// busy, its loop waiting 1 %) are never a problem.
func TestStartUpIsNotJudged(t *testing.T) {
	for _, name := range []string{"h200-mlp-bf16.jsonl", "h200-starved-then-ceiling.jsonl"} {
		t.Run(name, func(t *testing.T) {
			lines := readRecording(t, filepath.Join("testdata", "gpu", name))
			d := NewDiagnoser(DefaultThresholds())
			starting, after := 0, 0
			for i := range lines {
				if lines[i].Type != "frame" {
					continue
				}
				f := &lines[i].Frame
				f.AssignRoles()
				v := d.Observe(f)
				if f.Target == nil || !f.Target.Starting {
					// The loop's first frames are judged on their own:
					// no frame of the start is in their window.
					if after++; after <= 15 && v.Kind.Problem() && name == "h200-mlp-bf16.jsonl" {
						t.Errorf("%s, frame %d after the start: shown %s: %q", f.Time.Format("15:04:05"), after, v.Kind, claims(v))
					}
					continue
				}
				starting++
				if v.Kind != WarmingUp {
					t.Errorf("%s (starting, loader %v): shown %s: %q", f.Time.Format("15:04:05"), f.Loader != nil, v.Kind, claims(v))
				}
			}
			if starting < 5 {
				t.Fatalf("%d frames in the start-up grace, want the recording's ≥ 5", starting)
			}
		})
	}
}

// TestTheRateIsAtTheJobsOwnDtype: the real H200 MLP's frames with the
// settings of a job in fp32 with TF32 on (autocast off, the float32
// precision "high"): the rate is set against TF32's dense peak, never
// bf16's (it read "at bf16 ≈ 595 TFLOPS of … 990", past TF32's 495), and
// with no settings at all it is the range from TF32's rate to bf16's.
func TestTheRateIsAtTheJobsOwnDtype(t *testing.T) {
	off := false
	for _, c := range []struct {
		name       string
		settings   func(*sample.JobSettings) *sample.JobSettings
		want, none string
	}{
		{"tf32", func(s *sample.JobSettings) *sample.JobSettings {
			s.Autocast, s.AutocastDtype, s.Float32MatmulPrecision = &off, "", "high"
			return s
		}, "at tf32 ≈", "at bf16"},
		{"not read", func(*sample.JobSettings) *sample.JobSettings { return nil }, "(tf32 to bf16: the step's dtype is not read)", "at bf16"},
	} {
		lines := readRecording(t, filepath.Join("testdata", "gpu", "h200-mlp-bf16.jsonl"))
		for i := range lines {
			if l := lines[i].Frame.Loader; l != nil && l.Settings != nil {
				s := *l.Settings
				l.Settings = c.settings(&s)
			}
			lines[i].Frame.AssignRoles()
		}
		segs := replay(lines, DefaultThresholds())
		last := segs[0].verdicts[len(segs[0].verdicts)-1]
		all := strings.Join(last.Advice, "\n")
		if !strings.Contains(all, c.want) || strings.Contains(all, c.none) {
			t.Errorf("%s: advice %q: want %q, not %q", c.name, all, c.want, c.none)
		}
	}
}
