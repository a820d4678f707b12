package tune

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
)

// stepTrials is a loop whose rate is 300 samples/s per worker, each run's
// verdict asking for one worker more.
type stepTrials struct{ runs int }

func (s *stepTrials) Settle(_ context.Context, cfg Setting, _ time.Duration) (TuneStep, error) {
	s.runs++
	n, _ := strconv.Atoi(cfg["num_workers"])
	return TuneStep{Measured: diagnose.Prediction{SamplesPerSec: 300 * float64(n), WaitShare: 0.5}, Verdict: diagnose.GPUStarved, Settled: true,
		Changes: []diagnose.Change{{Knob: "num_workers", Flag: "num_workers", From: cfg["num_workers"], To: strconv.Itoa(n + 1)}}}, nil
}
func (s *stepTrials) Sweep(context.Context, Setting) (SweepResult, error) { return SweepResult{}, nil }
func (s *stepTrials) Apply(cfg Setting, cs []diagnose.Change) (Setting, []diagnose.Change, error) {
	return Setting{"num_workers": cs[0].To}, nil, nil
}
func (s *stepTrials) Describe(cfg Setting) string { return "train.py --workers " + cfg["num_workers"] }

// TestTuneStopsAtTheCeiling: each run's share of the ceiling is shown and
// tune stops at the first run at ≥ 95 % of it (900 of 940 samples/s:
// 3 runs), where without a ceiling it goes on until --runs.
func TestTuneStopsAtTheCeiling(t *testing.T) {
	tr := &stepTrials{}
	var steps []TuneStep
	res, err := Tune(context.Background(), TuneOptions{RunFor: time.Second, Runs: 6, Ceiling: 940}, tr, Setting{"num_workers": "1"}, func(s TuneStep) error {
		steps = append(steps, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 3 || tr.runs != 3 || !strings.HasPrefix(res.Why, "nothing left to gain in the input pipeline: 96 % of the ceiling (940 samples/s") {
		t.Fatalf("%d runs, why %q", res.Steps, res.Why)
	}
	if steps[0].CeilingShare == nil || *steps[0].CeilingShare < 0.319 || *steps[0].CeilingShare > 0.32 {
		t.Fatalf("share %v", steps[0].CeilingShare)
	}
	if table := TuneTable(steps, res); !strings.Contains(table, "(96 % of the ceiling)") {
		t.Fatalf("%s", table)
	}
	if !strings.Contains(steps[1].String(), "64 % of the ceiling") {
		t.Fatalf("%s", steps[1].String())
	}
	tr = &stepTrials{}
	res, _ = Tune(context.Background(), TuneOptions{RunFor: time.Second, Runs: 6}, tr, Setting{"num_workers": "1"}, func(TuneStep) error { return nil })
	if res.Steps != 6 {
		t.Fatalf("without a ceiling: %d runs, %q", res.Steps, res.Why)
	}
}

// TestSweepMarksTheCheapestWithinTheCeiling: with a ceiling, each row
// shows its share of it and the cheapest mark goes to the fewest workers
// within 95 % of the ceiling — none when no configuration gets there.
func TestSweepMarksTheCheapestWithinTheCeiling(t *testing.T) {
	row := func(workers string, rate float64) SweepResult {
		return SweepResult{Knobs: Setting{"num_workers": workers}, SamplesPerSec: rate}
	}
	rs := []SweepResult{row("1", 400), row("2", 760), row("4", 990), row("8", 1000), {Knobs: Setting{"num_workers": "0"}, Failed: "exit 1"}}
	markBest(rs)
	if !rs[2].Cheapest { // within 95 % of the best, 1000
		t.Fatalf("before the ceiling: %+v", rs)
	}
	MarkCeiling(rs, 1050)
	if rs[2].Cheapest || !rs[3].Cheapest || rs[4].CeilingShare != nil {
		t.Fatalf("with a ceiling of 1050 the cheapest within 95 %% is 8 workers (997.5+): %+v", rs)
	}
	if got := *rs[0].CeilingShare; got < 0.380 || got > 0.382 {
		t.Errorf("share %v, want 400/1050", got)
	}
	var b strings.Builder
	PrintSweep(&b, "sweep", rs)
	for _, want := range []string{"400 (38 %)", "within 95 % of the ceiling (1,050 samples/s measured with input free)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
	MarkCeiling(rs, 2000)
	for _, r := range rs {
		if r.Cheapest {
			t.Fatalf("no configuration is within 95 %% of 2000, yet %+v is marked", r)
		}
	}
	b.Reset()
	PrintSweep(&b, "sweep", rs)
	if !strings.Contains(b.String(), "no configuration within 95 % of the ceiling: the best reaches 50 %: the input still costs the rest") {
		t.Errorf("the table does not say none reached the ceiling:\n%s", b.String())
	}
}

// TestTuneTableNamesAConfigurationItCouldNotSet: a command with no
// placeholder has its knobs as it sets them; the table says so rather
// than leave the column blank (a user's review).
func TestTuneTableNamesAConfigurationItCouldNotSet(t *testing.T) {
	steps := []TuneStep{{Step: 1, Verdict: diagnose.GPUStarved}}
	if table := TuneTable(steps, TuneResult{Best: 1, Steps: 1}); !strings.Contains(table, "gpu_starved        as the command sets them") {
		t.Fatalf("%s", table)
	}
}
