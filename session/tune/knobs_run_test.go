package tune

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestACommandsRowSaysOnlyTheKnobsItKnows (a hostile user's review): a
// sweep of a command's num_workers alone wrote "prefetch": 0 and
// "persistent": false beside a script's prefetch_factor=4. The grid's
// knobs are the row's; the others are what the loader said it runs with,
// and absent where it said nothing.
func TestACommandsRowSaysOnlyTheKnobsItKnows(t *testing.T) {
	grid := Setting{sample.KnobWorkers.Name: "2"}
	said := []sample.Frame{
		{Loader: &sample.Loader{Workers: probes.Ptr(2), Prefetch: probes.Ptr(4), Knobs: map[string]string{sample.KnobPersistent.Flag: "true"}}},
		{}, // a last frame with no loader part
	}
	row := func(frames []sample.Frame) string {
		r := SweepResult{Knobs: grid}
		r.Workers, r.Prefetch, r.Persistent = knobsRun(grid, frames)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	got := row(said)
	for _, want := range []string{`"workers":2`, `"prefetch":4`, `"persistent":true`} {
		if !strings.Contains(got, want) {
			t.Errorf("the loader said prefetch 4, persistent: %s lacks %s", got, want)
		}
	}
	got = row(nil)
	if !strings.Contains(got, `"workers":2`) || strings.Contains(got, `"prefetch"`) || strings.Contains(got, `"persistent"`) {
		t.Errorf("nothing said of prefetch or persistent: %s", got)
	}
	if w := workersOf(SweepResult{Knobs: Setting{}, Workers: probes.Ptr(3)}); w != 3 {
		t.Errorf("workers for the cheapest's order: %d, want the loader's 3", w)
	}
}
