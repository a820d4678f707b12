package diagnose

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// hookLoop is a PyTorch loader seen through the hook: batches, step and
// wait, no read/decode split; its workers' CPU comes from /proc.
func hookLoop(f *sample.Frame, bps, wait, stepMs float64, workers int, workerCPU float64, knobs map[string]string) {
	pid, tid := 100, 100
	f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", BatchesPerSec: bps, SamplesPerSec: 8 * bps, Batches: 100,
		WaitShare: f64(wait), StepMeanMs: f64(stepMs), Workers: iptr(workers), PID: &pid, LoopTID: &tid, Knobs: knobs}
	var ws []int
	list := []sample.Proc{{PID: 100, Name: "python3", CPUPct: 10}}
	for i := 0; i < workers; i++ {
		ws = append(ws, 200+i)
		list = append(list, sample.Proc{PID: 200 + i, PPID: 100, Name: "python3", CPUPct: workerCPU / float64(workers)})
	}
	f.Loader.WorkerPIDs = ws
	f.Procs = &sample.Procs{FocusPID: 100, List: list, Threads: []sample.Thread{{TID: 100, PID: 100, Name: "python3", CPUPct: 10}}}
	f.Accel = &sample.VirtualAccel{BusyPct: 100 * (1 - wait), Basis: "test"}
}

// TestModelOfAPyTorchLoader: the model reads a loader that times only its
// loop. One worker whose batches wait on storage (its CPU small, the loop
// waiting 69 %) gets num_workers raised in PyTorch's name, with a gain
// the arithmetic gives; a loader whose workers keep batches ready (a full
// queue) gets no change, and the advice names the loop's own time.
func TestModelOfAPyTorchLoader(t *testing.T) {
	storage := frames(10, func(_ int, f *sample.Frame) {
		host(f, 8, 0, 1)
		hookLoop(f, 58, 0.69, 5.3, 1, 4, map[string]string{"persistent": "false", "pin": "false"})
	})
	v := Classify(storage, DefaultThresholds())
	if v.Kind != GPUStarved || len(v.Changes) == 0 || v.Changes[0].Knob != "num_workers" || v.Changes[0].Flag != "num_workers" || v.Predicted == nil {
		t.Fatalf("%s: changes %+v predicted %+v", v.Kind, v.Changes, v.Predicted)
	}
	// A worker takes 1/58 s a batch; 1/0.0053 = 189 batches/s is the step's
	// limit: 4 workers reach it (3 give 174), the range's high side. Its
	// low side has the 3 workers added contend for the storage: 16.55 ms
	// waiting × 1.54 (ioContention) and 0.69 ms of CPU × 1.004 (three
	// workers 4 % on a CPU add 0.12 of 16 CPUs to the 1.28 busy:
	// cpuContended), 4 ÷ 26.2 ms = 152 batches/s, 1,219 samples/s:
	// the step is the limit 4 workers were chosen for, the workers the
	// one they meet if they contend.
	if v.Changes[0].To != "4" || v.Predicted.HighSamplesPerSec < 1400 || v.Predicted.HighSamplesPerSec > 1520 ||
		v.Predicted.SamplesPerSec < 1205 || v.Predicted.SamplesPerSec > 1235 ||
		v.Predicted.Limit != LimitStep.String() || v.Predicted.ContendedLimit != LimitWorkers.String() ||
		!strings.HasSuffix(v.Changes[0].Why, "; 4 keep up with the step") {
		t.Errorf("change %+v predicted %+v: want num_workers 4, ≈ 1,219–1,510 samples/s, limited by the step (the workers if they contend)", v.Changes[0], v.Predicted)
	}
	ready := frames(10, func(_ int, f *sample.Frame) {
		host(f, 40, 0, 2)
		hookLoop(f, 150, 0.25, 5, 2, 30, map[string]string{"persistent": "true", "pin": "false"})
		f.Loader.Prefetch, f.Loader.QueueDepth = iptr(2), f64(4)
	})
	v = Classify(ready, DefaultThresholds())
	if len(v.Changes) > 0 || len(v.Advice) == 0 || !strings.Contains(v.Advice[0], "loop's own time per batch is the limit") {
		t.Fatalf("%s: changes %+v advice %q: a full queue means the workers keep up", v.Kind, v.Changes, v.Advice)
	}
}

// sampledLoop is a loop nobody instrumented: its wait sampled, its roles
// from the process tree, no rates.
func sampledLoop(f *sample.Frame, wait float64, workers int, workerCPU float64) {
	hookLoop(f, 0, wait, 0, workers, workerCPU, nil)
	l := f.Loader
	l.Source, l.Kind, l.BatchesPerSec, l.SamplesPerSec, l.Batches, l.StepMeanMs = "sampled: pid 100's main thread", "", 0, 0, 0, nil
	l.Sampled = &sample.SampledLoop{Samples: 50, Hz: 50, Read: "state, wchan"}
}

// TestModelOfASampledLoop: the H100 case — 2 workers of CPU-heavy samples
// on 16 cores, the loop waiting 98 % — gets more workers with a relative
// prediction (a gain), not "more workers cannot help" (its rates are
// unknown, not zero).
func TestModelOfASampledLoop(t *testing.T) {
	fs := frames(10, func(_ int, f *sample.Frame) {
		host(f, 14, 0, 3)
		sampledLoop(f, 0.98, 2, 200)
		gpus(f, 1, 1, 0, 2)
	})
	v := Classify(fs, DefaultThresholds())
	if v.Kind != GPUStarved {
		t.Fatalf("verdict %s: want gpu_starved", v.Kind)
	}
	if len(v.Changes) == 0 || v.Changes[0].Knob != "num_workers" || v.Predicted == nil || v.Predicted.Gain < 5 || v.Predicted.SamplesPerSec != 0 {
		t.Fatalf("changes %+v predicted %+v advice %q: want num_workers raised with a gain", v.Changes, v.Predicted, v.Advice)
	}
	if !strings.Contains(v.Advice[0], "× the throughput now") {
		t.Errorf("advice %q: want the gain in words", v.Advice[0])
	}
}

// TestIdleGPUWithASampledProcessIsIdle: on an idle GPU box, a sampled
// process whose wait could not be split (nothing waits, nothing loads)
// does not make the verdict "healthy: the GPU is 0 % busy".
func TestIdleGPUWithASampledProcessIsIdle(t *testing.T) {
	fs := frames(5, func(_ int, f *sample.Frame) {
		host(f, 1, 0, 1)
		sampledLoop(f, 0, 0, 0)
		f.Loader.WaitShare = nil
		f.Loader.Sampled.Inline = true
		f.Accel = nil
		gpus(f, 1, 0, 0, 0)
	})
	if v := Classify(fs, DefaultThresholds()); v.Kind != Idle {
		t.Fatalf("verdict %s (%q): want idle", v.Kind, texts(v.Evidence))
	}
}

// TestSampledStartLeftOutOfATimedWindow: gpuwatch run samples a job's
// loop until it reads its hook (imports and CUDA's set-up take seconds on
// a GPU box). Once the hook's readings come, those sampled frames are the
// job's start: on an H100 (gpuwatch run --ceiling, stop 47) one of them
// left in the window made the whole model relative, and the advice said
// "its step 1.0s, and 7.8s taking each batch" of a loop whose step was
// 19 ms.
func TestSampledStartLeftOutOfATimedWindow(t *testing.T) {
	fs := frames(10, func(i int, f *sample.Frame) {
		host(f, 14, 0, 3)
		gpus(f, 1, 10, 0, 20)
		if i < 2 {
			sampledLoop(f, 0.5, 2, 200)
			return
		}
		hookLoop(f, 3.5, 0.9, 24, 2, 200, map[string]string{"persistent": "false", "pin": "false"})
	})
	v := Classify(fs, DefaultThresholds())
	if v.Kind != GPUStarved || v.Predicted == nil || v.Predicted.SamplesPerSec == 0 {
		t.Fatalf("%s predicted %+v advice %q: want gpu_starved with rates, from the hook's frames", v.Kind, v.Predicted, v.Advice)
	}
	for _, m := range v.Missing {
		if strings.Contains(m, "sampled") {
			t.Errorf("missing %q: the window's newest loop is timed", m)
		}
	}
	// The newest reading sampled (the hook gone): the sampled model again.
	fs[9] = frames(10, func(_ int, f *sample.Frame) { host(f, 14, 0, 3); sampledLoop(f, 0.9, 2, 200) })[9]
	if v := Classify(fs, DefaultThresholds()); v.Predicted != nil && v.Predicted.SamplesPerSec != 0 {
		t.Errorf("predicted %+v: a sampled newest reading has no rates", v.Predicted)
	}
}
