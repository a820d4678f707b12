package diagnose

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// withSyncSteps gives each frame's loader the hook's count of the steps it
// counted host syncs in, and no sites: a count of none.
func withSyncSteps(frames []sample.Frame, steps uint64) []sample.Frame {
	for i := range frames {
		l := *frames[i].Loader
		l.SyncSteps, l.Syncs = &steps, nil
		frames[i].Loader = &l
	}
	return frames
}

// TestGPUAdviceFollowsWhatWasMeasured (issue 51: advice without its
// evidence is a defect): "a larger batch fits" is not said beside SMs 91 %
// active (batch_headroom's 80 %), and is said under it and without GPM
// (utilization says nothing of the SMs); where the hook counted the
// step's host syncs and found none worth naming (host_sync names them,
// with their lines, where there are) only the syncs it does not count
// are spoken of, and "sync less" where nothing counted them;
// gpu_underused says where the step's GPU time goes where the hook
// recorded it.
func TestGPUAdviceFollowsWhatWasMeasured(t *testing.T) {
	has := func(v Verdict, s string) bool { return strings.Contains(strings.Join(v.Advice, "\n"), s) }
	busy := Classify(withMemory(gpuBoundFrames(91, 20, 20, 20, 60, bf16Settings()), 32, 30<<30, 141<<30), DefaultThresholds())
	if busy.Kind != Healthy || has(busy, "larger batch") {
		t.Errorf("SMs 91 %%, 30 of 141 GiB: %s %q", busy.Kind, busy.Advice)
	}
	room := Classify(withMemory(gpuBoundFrames(65, 20, 20, 20, 60, bf16Settings()), 32, 85<<30, 141<<30), DefaultThresholds())
	if room.Kind != Healthy || !has(room, "a larger batch fits") {
		t.Errorf("SMs 65 %%, 85 of 141 GiB: %s %q", room.Kind, room.Advice)
	}
	// Without GPM nothing says how full the SMs are (utilization 97 %
	// reads so while one small kernel runs): the memory's room is said.
	if v := Classify(withMemory(noGPM(97, 60, bf16Settings()), 32, 10<<30, 80<<30), DefaultThresholds()); !has(v, "a larger batch fits: 10GiB of 80GiB") {
		t.Errorf("no GPM, 10 of 80 GiB: %s %q", v.Kind, v.Advice)
	}

	full := func() []sample.Frame {
		return withMemory(gpuBoundFrames(20, 5, 10, 10, 10, bf16Settings()), 32, 120<<30, 141<<30)
	}
	if v := Classify(full(), DefaultThresholds()); v.Kind != GPUUnderused || !has(v, underusedSyncs) {
		t.Errorf("syncs not counted: %s %q", v.Kind, v.Advice)
	}
	if v := Classify(withSyncSteps(full(), 24), DefaultThresholds()); v.Kind != GPUUnderused || has(v, underusedSyncs) || !has(v, uncountedSyncs) {
		t.Errorf("24 steps counted, no syncs: %s %q", v.Kind, v.Advice)
	}
	// What it says the hook counts is every call it counts.
	for _, c := range sample.HostSyncCalls {
		if w := sample.HostSyncWords(c); !strings.Contains(uncountedSyncs, w) {
			t.Errorf("%q: the calls the hook counts leave out %s", uncountedSyncs, w)
		}
	}

	// gpu_underused says where the step's GPU time goes where the hook
	// recorded it, as healthy does.
	prof := withProfile(full(), "cuda", 0.07, 0.03, sample.GPUTimePart{Category: "matmul", Precision: "bf16", SecondsPerStep: 0.07})
	if v := Classify(prof, DefaultThresholds()); v.Kind != GPUUnderused || !has(v, "GPU time per step (5 steps, profiled): matmul bf16 70 %") {
		t.Errorf("underused, profiled: %s %q", v.Kind, v.Advice)
	}

	// A GPU running a kernel 40 % of the time while the input keeps up is
	// underused, not healthy; without a loader's wait share nothing says
	// the input keeps up, and healthy's line says the same of syncs.
	low := func() []sample.Frame { return noGPM(40, 10, bf16Settings()) }
	if v := Classify(low(), DefaultThresholds()); v.Kind != GPUUnderused || !has(v, underusedSyncs) {
		t.Errorf("a GPU 40 %% busy, syncs not counted: %s %q", v.Kind, v.Advice)
	}
	if v := Classify(withSyncSteps(low(), 24), DefaultThresholds()); v.Kind != GPUUnderused || has(v, underusedSyncs) || !has(v, "a sync it does not count (.to(\"cpu\")") {
		t.Errorf("a GPU 40 %% busy, 24 steps counted, no syncs: %s %q", v.Kind, v.Advice)
	}
	noWait := func() []sample.Frame {
		frames := low()
		for i := range frames {
			l := *frames[i].Loader
			l.WaitShare = nil
			frames[i].Loader = &l
		}
		return frames
	}
	// Nor is it healthy (a review: "healthy: the GPU is 0 % busy" where
	// the wait share was not said): underused, saying the wait is unread.
	if v := Classify(noWait(), DefaultThresholds()); v.Kind != GPUUnderused || v.Severity != Warning || !has(v, underusedSyncs) || has(v, underusedTimeTheWait) ||
		!strings.Contains(v.Evidence[0].Text, "whether the training loop waits for input is not read (its loader does not say)") {
		t.Errorf("a GPU 40 %% busy, no wait share: %s %s %+v %q", v.Kind, v.Severity, v.Evidence, v.Advice)
	}
}

// TestKnobAdviceOnlyForWhatTheLoaderSaid: the catalogue's boolean knobs
// are advised as a change only where the loader said they are off, as a
// condition where it did not say (the sampled view reads no knobs), never
// where they are on; persistent workers are never advised without
// workers (torch refuses persistent_workers at num_workers=0).
func TestKnobAdviceOnlyForWhatTheLoaderSaid(t *testing.T) {
	pf, pn := sample.KnobPersistent.Flag, sample.KnobPin.Flag
	gpu := level{v: 90, ok: true}
	for _, c := range []struct {
		name          string
		workers       int
		suggest       int
		knobs         map[string]string
		want, notWant []string
	}{
		{"unknown", 2, 4, nil, []string{"if persistent_workers is not set", "if pin_memory is not set"}, []string{"\nset ", "set persistent_workers", "set pin_memory"}},
		{"off", 2, 4, map[string]string{pf: "false", pn: "false"}, []string{"set persistent_workers=True", "set pin_memory=True"}, []string{"if persistent_workers", "if pin_memory"}},
		{"on", 2, 4, map[string]string{pf: "true", pn: "true"}, nil, []string{"persistent_workers", "pin_memory"}},
		{"no workers, none to add", 0, 0, map[string]string{pf: "false", pn: "true"}, nil, []string{"persistent_workers"}},
		{"one worker to suggest", -1, 1, nil, []string{"up to 1 worker leave"}, []string{"1 workers"}},
	} {
		w := &window{workers: c.workers, knobs: c.knobs, gpuUtil: gpu}
		a := "\n" + strings.Join(catalogKnobs(w, c.suggest, 2, 1), "\n")
		for _, s := range c.want {
			if !strings.Contains(a, s) {
				t.Errorf("%s: %q lacks %q", c.name, a, s)
			}
		}
		for _, s := range c.notWant {
			if strings.Contains(a, s) {
				t.Errorf("%s: %q says %q", c.name, a, s)
			}
		}
	}
}

// TestAGPUIdleWithTheWaitUnreadIsNotHealthy: a GPU running a kernel 30 %
// of the time where no loader says the loop's wait is underused, not
// healthy (a review read "healthy" of an H200 0–30 % busy), and says how
// to read the wait; a frame without utilization on a GPU that is not
// partitioned is not called MIG.
func TestAGPUIdleWithTheWaitUnreadIsNotHealthy(t *testing.T) {
	has := func(v Verdict, s string) bool { return strings.Contains(strings.Join(v.Advice, "\n"), s) }
	v := Classify(frames(10, func(i int, f *sample.Frame) {
		host(f, 20, 0, 1)
		gpus(f, 1, 30, 20, 40)
	}), DefaultThresholds())
	if v.Kind != GPUUnderused || v.Severity != Warning || !has(v, underusedTimeTheWait) || len(v.Evidence) == 0 ||
		!strings.Contains(v.Evidence[0].Text, "the GPU runs a kernel 30 % of the time, and whether the training loop waits for input is not read (no loader seen)") {
		t.Errorf("no loader, GPU 30 %%: %s %s %+v %q", v.Kind, v.Severity, v.Evidence, v.Advice)
	}
	// A loader that hands out no batch says why: not unread.
	if v := Classify(frames(10, func(i int, f *sample.Frame) {
		host(f, 20, 0, 1)
		gpus(f, 1, 30, 20, 40)
		f.Loader = &sample.Loader{Source: "http://127.0.0.1:1", Kind: "python"}
	}), DefaultThresholds()); v.Kind != GPUUnderused || len(v.Evidence) == 0 || !strings.Contains(v.Evidence[0].Text, "while the loader hands out no batch") {
		t.Errorf("a loader handing out nothing: %s %+v", v.Kind, v.Evidence)
	}
	// A sampled loop under gpuwatch run iterates no DataLoader the hook
	// times: it is not told to run under gpuwatch run.
	v = Classify(frames(10, func(i int, f *sample.Frame) {
		host(f, 20, 0, 1)
		gpus(f, 1, 30, 20, 40)
		f.Target = &sample.Target{PID: 100, Why: "gpuwatch run"}
		f.Loader = &sample.Loader{Source: "sampled", Sampled: &sample.SampledLoop{Samples: 40}}
	}), DefaultThresholds())
	if v.Kind != GPUUnderused || has(v, underusedTimeTheWait) || len(v.Evidence) == 0 || !strings.Contains(v.Evidence[0].Text, "the loop iterates no DataLoader gpuwatch run's hook times") {
		t.Errorf("sampled under run: %s %+v %q", v.Kind, v.Evidence, v.Advice)
	}
	// Under gpuwatch run, a command in which no process loaded the hook
	// (not Python, python -I): its wait is not read, and running it so
	// again would not read it.
	v = Classify(frames(10, func(i int, f *sample.Frame) {
		host(f, 20, 0, 1)
		gpus(f, 1, 30, 20, 40)
		f.Target = &sample.Target{PID: 100, Why: "gpuwatch run", NoHook: true}
		f.Loader = &sample.Loader{Source: "sampled", Sampled: &sample.SampledLoop{Samples: 40}}
	}), DefaultThresholds())
	if v.Kind != GPUUnderused || has(v, underusedTimeTheWait) || !has(v, underusedHookOut) || len(v.Evidence) == 0 ||
		!strings.Contains(v.Evidence[0].Text, "(no process of gpuwatch run's command loaded its hook)") {
		t.Errorf("run without the hook: %s %+v %q", v.Kind, v.Evidence, v.Advice)
	}
	// Busy, it is the limit: healthy as before.
	if v := Classify(frames(10, func(i int, f *sample.Frame) { host(f, 20, 0, 1); gpus(f, 1, 97, 95, 99) }), DefaultThresholds()); v.Kind != Healthy {
		t.Errorf("no loader, GPU 97 %%: %s", v.Kind)
	}
	// Not partitioned, partitioned, and another user's MIG GPU beside the
	// job's H200 (a review: the job's read as MIG instances).
	for _, mig := range []string{"none", "the job's", "another's"} {
		fs := frames(10, func(i int, f *sample.Frame) {
			host(f, 20, 0, 1)
			n := 1
			if mig == "another's" {
				n = 2
			}
			gpus(f, n, 0, 0, 0)
			g := &f.GPUs[n-1]
			g.UtilPct, g.UtilSamples = nil, nil
			g.GPM = &sample.GPM{SMActivityPct: f64(97)}
			m := &f.GPUs[0]
			if mig != "none" {
				m.UtilPct, m.UtilSamples = nil, nil
				m.Unavailable = map[string]string{"util_pct": "not available on MIG: NVML reports no utilization"}
				m.MIG = []sample.MIGDevice{{UUID: "MIG-a"}}
			}
			if mig == "another's" {
				f.JobGPUs, g.Job = "the job's process", true
				m.GPM = nil
			}
		})
		v := Classify(fs, DefaultThresholds())
		want := "the GPU (SM activity, GPM: its utilization not read) is 97 % busy"
		if mig == "the job's" {
			want = "the GPU's MIG instances (SM activity, GPM) is 97 % busy"
		}
		if len(v.Evidence) == 0 || !strings.Contains(v.Evidence[0].Text, want) {
			t.Errorf("MIG %v: %s %+v", mig, v.Kind, v.Evidence)
		}
	}
}

// TestWorkersThatRepeatEachOtherAreSaid: an IterableDataset's workers
// measured yielding the same samples (the hook's iterable_repeats) are
// said first, whatever the verdict, with how often each sample repeats;
// measured apart, nothing is said, not even the caution for more workers.
func TestWorkersThatRepeatEachOtherAreSaid(t *testing.T) {
	for _, repeats := range []bool{true, false} {
		v := Classify(frames(10, func(i int, f *sample.Frame) {
			host(f, 20, 0, 1)
			gpus(f, 1, 97, 95, 99)
			f.Loader = &sample.Loader{Source: "http://127.0.0.1:1", Kind: "python", Workers: ptr(2), BatchesPerSec: 100, SamplesPerSec: 3200,
				Batches: uint64(100 * (i + 1)), WaitShare: f64(0.01), IterableRepeats: &repeats}
		}), DefaultThresholds())
		said := strings.Join(v.Advice, "\n")
		if has := strings.Contains(said, "the DataLoader's workers yield the same samples"); has != repeats ||
			repeats && (!strings.HasPrefix(said, "the DataLoader's workers") || !strings.Contains(said, "each sample 2 times")) {
			t.Errorf("repeats %v: %s, advice %q", repeats, v.Kind, v.Advice)
		}
	}
}
