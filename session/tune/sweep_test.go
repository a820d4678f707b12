package tune

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
)

// listTrials measures each configuration as its table says: a rate, a
// failure, or the user's Ctrl-C (the context is cancelled mid-run).
type listTrials struct {
	rate   map[string]float64
	fail   map[string]error
	cancel map[string]context.CancelFunc
	others map[string]float64 // the cores the rest of the box took during its run (none: unread)
}

func (l listTrials) Sweep(ctx context.Context, s Setting) (SweepResult, error) {
	w := s["num_workers"]
	if c, ok := l.cancel[w]; ok {
		c()
		return SweepResult{Knobs: s, SamplesPerSec: 1}, nil // a partial measurement
	}
	if err, ok := l.fail[w]; ok {
		return SweepResult{}, err
	}
	r := SweepResult{Knobs: s, SamplesPerSec: l.rate[w], cores: 2}
	if c, ok := l.others[w]; ok {
		r.OthersCores = &c
	}
	return r, nil
}
func (listTrials) Settle(context.Context, Setting, time.Duration) (TuneStep, error) {
	return TuneStep{}, errors.New("not a tune")
}
func (listTrials) Apply(s Setting, cs []diagnose.Change) (Setting, []diagnose.Change, error) {
	return s, cs, nil
}
func (listTrials) Describe(s Setting) string { return KnobsLine(s) }

// TestSweepGoesOnPastAFailureAndKeepsRowsOnInterrupt: a failed
// configuration is a row with its status and last line, the rows after it
// are measured, and the best is chosen among the measured; a Ctrl-C keeps
// what was measured before it.
func TestSweepGoesOnPastAFailureAndKeepsRowsOnInterrupt(t *testing.T) {
	grid := Grid(Setting{"num_workers": "1"}, []string{"num_workers"}, [][]string{{"1", "2", "4", "8"}})
	fail := &TrialFailed{How: "exited with status 2", Exited: true, Code: 2, Tail: []string{"Traceback", "CUDA out of memory"}}
	rs, err := Sweep(context.Background(), listTrials{rate: map[string]float64{"1": 100, "4": 300, "8": 200}, fail: map[string]error{"2": fail}}, grid, io.Discard)
	if err != nil || len(rs) != 4 {
		t.Fatalf("%d rows, %v: want 4", len(rs), err)
	}
	if r := rs[1]; r.Failed != "exited with status 2: CUDA out of memory" || r.ExitStatus == nil || *r.ExitStatus != 2 || r.Best {
		t.Fatalf("the failed row: %+v", r)
	}
	if !rs[2].Best {
		t.Fatalf("the best should be num_workers=4: %+v", rs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rs, err = Sweep(ctx, listTrials{rate: map[string]float64{"1": 100, "2": 150}, cancel: map[string]context.CancelFunc{"4": cancel}}, grid, io.Discard)
	if !errors.Is(err, ErrSweepInterrupted) || len(rs) != 2 || !rs[1].Best {
		t.Fatalf("interrupted at the third: %d rows (%+v), %v; want the first two, marked", len(rs), rs, err)
	}
}

// TestASweepRowTheRestOfTheBoxDisturbedSaysSo: a configuration measured
// while the processes outside the job took a quarter of a core more than
// during the quietest one is marked, in JSON and in the table (?), with
// by how much; a smaller rise, or a row whose figure was not read, is not.
func TestASweepRowTheRestOfTheBoxDisturbedSaysSo(t *testing.T) {
	grid := Grid(Setting{"num_workers": "1"}, []string{"num_workers"}, [][]string{{"1", "2", "4", "8"}})
	lt := listTrials{rate: map[string]float64{"1": 100, "2": 180, "4": 210, "8": 200},
		others: map[string]float64{"1": 0.1, "2": 0.3, "4": 0.9}}
	rs, err := Sweep(context.Background(), lt, grid, io.Discard)
	if err != nil || len(rs) != 4 {
		t.Fatalf("%d rows, %v", len(rs), err)
	}
	const want = "processes outside the job took 0.9 cores during this run against 0.1 during the quietest (num_workers=1)"
	if !strings.HasPrefix(rs[2].Disturbed, want) {
		t.Fatalf("num_workers=4 (others 0.1 → 0.9): %q", rs[2].Disturbed)
	}
	for _, i := range []int{0, 1, 3} { // the quietest; a rise of 0.2; unread
		if rs[i].Disturbed != "" {
			t.Errorf("row %d disturbed: %q", i, rs[i].Disturbed)
		}
	}
	var b bytes.Buffer
	PrintSweep(&b, "sweep", rs)
	if !strings.Contains(b.String(), "? disturbed: num_workers=4: "+want) || !strings.Contains(b.String(), "*~?") {
		t.Fatalf("table:\n%s", b.String())
	}
	b.Reset()
	if err := WriteSweepJSON(&b, Setting{}, rs, 0); err != nil || !strings.Contains(b.String(), `"disturbed": "`+want) {
		t.Fatalf("JSON (%v):\n%s", err, b.String())
	}
}
