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
