package diagnose

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// claims is every line of v that could say num_workers=0 or name the
// single-core trap.
func claims(v Verdict) string {
	return strings.Join(append(texts(v.Evidence), v.Advice...), " | ")
}

// TestBeforeTheFirstBatchNoWorkerCountIsClaimed (issue 39): while a
// script under gpuwatch run builds its dataset, its main thread pegged
// and no worker process started yet, the verdict says the loop has not
// started, not single_core_maxed with "num_workers=0"; a pegged thread
// without any loader does not say num_workers=0 either; once the first
// batch comes, the hook's worker count is the one used.
func TestBeforeTheFirstBatchNoWorkerCountIsClaimed(t *testing.T) {
	building := frames(10, func(_ int, f *sample.Frame) {
		host(f, 8, 0, 1)
		thread(f, 100) // the dataset's build
		f.Loader = &sample.Loader{Source: "sampled: pid 100's main thread", PID: iptr(100), LoopTID: iptr(100),
			Sampled: &sample.SampledLoop{Samples: 50, Hz: 50, Read: "state, wchan, syscall", BeforeFirstBatch: true}}
		f.Target = &sample.Target{PID: 100, Why: "gpuwatch run", Starting: true}
	})
	v := Classify(building, DefaultThresholds())
	if v.Kind != WarmingUp || strings.Contains(claims(v), "num_workers=0") || !strings.Contains(claims(v), "first batch") {
		t.Fatalf("before the first batch: %s %q, want warming_up saying the loop has not had its first batch", v.Kind, claims(v))
	}
	// Past run's start-up grace, a process that never iterated a
	// DataLoader is judged by its threads, still with no num_workers=0.
	for i := range building {
		building[i].Target.Starting = false
	}
	if v := Classify(building, DefaultThresholds()); v.Kind == WarmingUp || strings.Contains(claims(v), "num_workers=0") {
		t.Fatalf("past the start-up grace: %s %q, want its threads judged with no worker count claimed", v.Kind, claims(v))
	}

	noLoader := frames(10, func(_ int, f *sample.Frame) {
		host(f, 8, 0, 1)
		thread(f, 100)
	})
	if v := Classify(noLoader, DefaultThresholds()); strings.Contains(claims(v), "num_workers=0") {
		t.Fatalf("no loader: %s %q: a worker count nobody gave is no num_workers=0", v.Kind, claims(v))
	}

	looping := frames(10, func(_ int, f *sample.Frame) {
		host(f, 8, 0, 1)
		hookLoop(f, 30, 0.6, 10, 2, 190, nil)
	})
	v = Classify(looping, DefaultThresholds())
	if v.Kind == WarmingUp || strings.Contains(claims(v), "num_workers=0") {
		t.Fatalf("after the first batch: %s %q, want a verdict on the loop with its 2 workers", v.Kind, claims(v))
	}
}

// TestTheEmbeddedLoaderStartingIsNotIdle (a review): the demo's next
// scenario starts its loader anew, and before its first batch the
// verdict read "Idle: nothing is running". It waits for that batch; an
// embedded loader that has handed out batches and stopped is idle.
func TestTheEmbeddedLoaderStartingIsNotIdle(t *testing.T) {
	starting := frames(10, func(_ int, f *sample.Frame) {
		host(f, 2, 0, 1)
		f.Loader = &sample.Loader{Source: "embedded", Kind: "embedded"}
		f.Accel = &sample.VirtualAccel{BusyPct: 0}
	})
	if v := Classify(starting, DefaultThresholds()); v.Kind != WarmingUp || !strings.Contains(claims(v), "not handed out its first batch") {
		t.Fatalf("starting: %s %q", v.Kind, claims(v))
	}
	for i := range starting {
		starting[i].Loader.Batches = 500
	}
	if v := Classify(starting, DefaultThresholds()); v.Kind != Idle {
		t.Fatalf("stopped after 500 batches: %s %q", v.Kind, claims(v))
	}
}

// TestWarmingUpIsSinceItsStart: before the loop's first batch the window
// starts over each frame, and warming_up's since moved with it ("since
// 10:03:11", "since 10:03:12", … of one verdict; a review): it is since
// the warm-up began.
func TestWarmingUpIsSinceItsStart(t *testing.T) {
	d := NewDiagnoser(DefaultThresholds())
	for i, f := range frames(8, func(i int, f *sample.Frame) {
		host(f, 10, 0, 1)
		f.Target = &sample.Target{PID: 100, Why: "gpuwatch run", Starting: true}
	}) {
		if v := d.Observe(&f); v.Kind != WarmingUp || !v.Since.Equal(t0) {
			t.Fatalf("frame %d: %s since %s, want warming_up since %s", i, v.Kind, v.Since.Format("15:04:05"), t0.Format("15:04:05"))
		}
	}
}
