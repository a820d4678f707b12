package sample

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestCheckBoundsTheCeiling: a recorded frame's ceiling goes through
// Check's ranges (a NaN or negative figure dropped, a long reason cut),
// and an unmeasured ceiling gives no input cost.
func TestCheckBoundsTheCeiling(t *testing.T) {
	nan, neg, ok := math.NaN(), -2.0, 900.0
	f := Frame{Loader: &Loader{SamplesPerSec: 300, Ceiling: &Ceiling{State: CeilingDone, Reason: strings.Repeat("x", 5000),
		SamplesPerSec: &ok, StepMs: &nan, StarvingStepMs: &neg}}}
	notes := f.Check()
	c := f.Loader.Ceiling
	if c.StepMs != nil || c.StarvingStepMs != nil || len(c.Reason) > checkMaxString+len("…") || len(notes) != 3 {
		t.Fatalf("%+v %q", c, notes)
	}
	if cost, now, got := f.Loader.InputCost(); !got || now != 300 || math.Abs(cost-2.0/3) > 1e-9 {
		t.Fatalf("cost %v now %v", cost, now)
	}
	b, _ := json.Marshal(f.Loader)
	if !strings.Contains(string(b), `"ceiling":{"state":"done"`) {
		t.Fatalf("json %s", b)
	}
	f.Loader.Ceiling.State = CeilingReplaying
	if _, _, got := f.Loader.InputCost(); got {
		t.Fatal("a ceiling being measured gave an input cost")
	}
	if _, _, got := (&Loader{}).InputCost(); got {
		t.Fatal("no ceiling gave an input cost")
	}
}
