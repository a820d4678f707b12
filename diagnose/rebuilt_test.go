package diagnose

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestANewDataLoaderEveryEpochIsToldToBuildItOnce (a hostile user's
// review): persistent_workers keeps workers across one DataLoader's
// epochs only, and a script that builds a new one every epoch was told
// "persistent_workers false → true" as if that alone kept them. Where the
// hook saw a new DataLoader every epoch, the change says to build it once
// with persistent workers, and the catalogue's line says it even where
// persistent_workers is already True (it keeps nothing there).
func TestANewDataLoaderEveryEpochIsToldToBuildItOnce(t *testing.T) {
	p := &Pipeline{EpochStallSec: 0.4, BatchesPerEpoch: 50, Knobs: Knobs{Workers: 2}}
	to := candidate{k: Knobs{Workers: 2, Persistent: true}}
	for _, rebuilt := range []bool{false, true} {
		p.NewLoaderEveryEpoch = rebuilt
		cs := changesTo(p, to)
		line := changeLine(cs, Prediction{SamplesPerSec: 200}, Prediction{SamplesPerSec: 100})
		if got := strings.Contains(line, "persistent_workers false → true (with the DataLoader built once, before the epoch loop)"); got != rebuilt {
			t.Errorf("a new DataLoader every epoch %v: the advice line %q", rebuilt, line)
		}
	}
	w := &window{workers: 2, knobs: map[string]string{sample.KnobPersistent.Flag: "true"}, newLoaderEveryEpoch: true}
	a := strings.Join(catalogKnobs(w, 4, 2, 1), "\n")
	if !strings.Contains(a, "build the DataLoader once, before the epoch loop, with persistent_workers=True") {
		t.Errorf("persistent_workers=True on a new DataLoader every epoch: %q", a)
	}
}

// TestPersistentWorkersOnANewDataLoaderEveryEpochKeepNothing (a hostile
// user's review): a script that sets persistent_workers=True on a
// DataLoader it builds every epoch, its workers taking 0.4 s to start,
// was told "the loader keeps up with the step: no loader knob raises
// throughput" while its loop waited 83 %, then "move augmentations to the
// GPU". Its workers restart as if the knob were off: the change is the
// DataLoader built once, keeping the knob, and cpu_saturated says the
// start-up's share instead of preprocessing's catalogue.
func TestPersistentWorkersOnANewDataLoaderEveryEpochKeepNothing(t *testing.T) {
	w := &window{workers: 2, batchesPerEpoch: 4, epochStallMs: 428, newLoaderEveryEpoch: true,
		knobs: map[string]string{sample.KnobPersistent.Flag: "true"}, meanBatchesPerSec: level{v: 7.5, n: 1, ok: true}}
	k := knobsOf(w)
	if k.Persistent || !k.knownPersistent {
		t.Fatalf("knobs %+v: want the workers read as restarting (persistent false, known)", k)
	}
	p := &Pipeline{EpochStallSec: 0.428, BatchesPerEpoch: 4, NewLoaderEveryEpoch: true, Knobs: k}
	if !p.restarts() {
		t.Fatal("the pipeline does not restart every epoch")
	}
	line := changeLine(changesTo(p, candidate{k: Knobs{Workers: 2, Persistent: true}}), Prediction{SamplesPerSec: 770}, Prediction{SamplesPerSec: 121})
	if !strings.HasPrefix(line, "the DataLoader built once, before the epoch loop, keeping persistent_workers true: ") {
		t.Errorf("the change: %q", line)
	}
	if r := w.restartShare(); r < 0.8 || r > 0.81 {
		t.Errorf("restart share %.3f, want 0.428 s of a 4/7.5 s epoch", r)
	}
	a, _ := saturatedAdvice(adviceIn{w: w, cores: 2})
	if len(a) != 1 || !strings.HasPrefix(a[0], "the workers start anew every epoch: 428ms before each epoch's first batch, 80 % of the loop's time") {
		t.Errorf("cpu_saturated's advice: %q", a)
	}
	w.newLoaderEveryEpoch = false // the knob on, one DataLoader: the workers persist
	if k := knobsOf(w); !k.Persistent || w.restartShare() != 0 {
		t.Errorf("persistent workers on one DataLoader: knobs %+v, restart share %g", k, w.restartShare())
	}
}

// TestChangeWords: every view says a change as the advice line does; a
// knob already set whose change is the code around it is never "true →
// true" (a review: the dashboard said so).
func TestChangeWords(t *testing.T) {
	for _, c := range []struct {
		c    Change
		want string
	}{
		{Change{Knob: "num_workers", From: "2", To: "8"}, "num_workers 2 → 8"},
		{Change{Knob: "persistent_workers", From: "false", To: "true", With: "the DataLoader built once, before the epoch loop"}, "persistent_workers false → true (with the DataLoader built once, before the epoch loop)"},
		{Change{Knob: "persistent_workers", From: "true", To: "true", With: "the DataLoader built once, before the epoch loop"}, "the DataLoader built once, before the epoch loop, keeping persistent_workers true"},
	} {
		if got := c.c.Words(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.c, got, c.want)
		}
	}
}
