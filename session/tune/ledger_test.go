package tune

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/session/predlog"
)

// scripted are Trials whose runs measure what they are told: the
// num_workers setting's samples/s, and a change to the next with the
// model's prediction for it.
type scripted struct {
	measured  map[string]float64 // num_workers → samples/s
	predicted map[string]float64 // num_workers → what the model predicts for it
	next      map[string]string  // num_workers → the change's value
	others    map[string]float64 // num_workers → the cores the rest of the box took during its run (none: unread)
}

func (sc scripted) Settle(_ context.Context, s Setting, _ time.Duration) (TuneStep, error) {
	w := s["num_workers"]
	st := TuneStep{Measured: diagnose.Prediction{SamplesPerSec: sc.measured[w], WaitShare: 0.5}, Verdict: diagnose.GPUStarved, Settled: true}
	if c, ok := sc.others[w]; ok {
		st.OthersCores = &c
	}
	if to, ok := sc.next[w]; ok {
		st.Changes = []diagnose.Change{{Knob: "num_workers", Flag: "num_workers", From: w, To: to}}
		st.Next = &diagnose.Prediction{SamplesPerSec: sc.predicted[to]}
	}
	return st, nil
}

func (scripted) Sweep(context.Context, Setting) (SweepResult, error) { return SweepResult{}, nil }

func (scripted) Apply(s Setting, cs []diagnose.Change) (Setting, []diagnose.Change, error) {
	return Setting{"num_workers": cs[0].To}, nil, nil
}

func (scripted) Describe(s Setting) string { return "train.py --workers " + s["num_workers"] }

// TestTuneKeepsItsPredictionErrors: each step that had a prediction is
// appended to the ledger with the change that made it; once three steps
// on this host ran 25 % high, the result says so, and the table prints
// it. A ledger that cannot write says so once and tune goes on.
func TestTuneKeepsItsPredictionErrors(t *testing.T) {
	sc := scripted{
		measured:  map[string]float64{"1": 400, "2": 800, "4": 1200, "8": 1600},
		predicted: map[string]float64{"2": 1000, "4": 1500, "8": 2000},
		next:      map[string]string{"1": "2", "2": "4", "4": "8"},
	}
	path := filepath.Join(t.TempDir(), "gpuwatch", "predictions.jsonl")
	var warn bytes.Buffer
	l := &Ledger{Path: path, Host: "box", Loader: predlog.LoaderJob, Warn: &warn, Now: time.Now}
	o := TuneOptions{RunFor: time.Second, Runs: 4, Ledger: l}
	var steps []TuneStep
	res, err := Tune(context.Background(), o, sc, Setting{"num_workers": "1"}, func(s TuneStep) error { steps = append(steps, s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	rs, err := predlog.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].Change != "num_workers 1 → 2" || rs[0].Predicted != 1000 || rs[0].Measured != 800 || rs[2].Host != "box" {
		t.Fatalf("records %+v", rs)
	}
	const said = "predictions on this box have run 25 % above what was measured (median of 3 tune steps)"
	if res.Bias != said || !strings.Contains(TuneTable(steps, res), "note: "+said) {
		t.Fatalf("result's bias %q, table\n%s", res.Bias, TuneTable(steps, res))
	}
	if warn.Len() > 0 {
		t.Fatalf("warned %q", warn.String())
	}
	// A file that cannot be written: said once, tune goes on.
	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	l = &Ledger{Path: filepath.Join(blocked, "gpuwatch", "predictions.jsonl"), Host: "box", Loader: predlog.LoaderJob, Warn: &warn, Now: time.Now}
	o.Ledger = l
	res, err = Tune(context.Background(), o, sc, Setting{"num_workers": "1"}, func(TuneStep) error { return nil })
	if err != nil || res.Steps != 4 {
		t.Fatalf("tune stopped: %v after %d steps", err, res.Steps)
	}
	if n := strings.Count(warn.String(), "not kept"); n != 1 || res.Bias != "" {
		t.Fatalf("warned %d times: %q; bias %q", n, warn.String(), res.Bias)
	}
}

// TestARunTheRestOfTheBoxDisturbedIsNotKept: a step measured while the
// processes outside the job took a quarter of a core more than during the
// run that predicted it says so, in JSON and in words, and is not kept in
// the ledger; a smaller rise, a fall, or an unread figure disturbs nothing.
func TestARunTheRestOfTheBoxDisturbedIsNotKept(t *testing.T) {
	sc := scripted{
		measured:  map[string]float64{"1": 400, "2": 600, "4": 1000, "8": 1300},
		predicted: map[string]float64{"2": 800, "4": 1100, "8": 1400},
		next:      map[string]string{"1": "2", "2": "4", "4": "8"},
		others:    map[string]float64{"1": 0.1, "2": 0.5, "4": 0.2, "8": 0.4},
	}
	path := filepath.Join(t.TempDir(), "predictions.jsonl")
	o := TuneOptions{RunFor: time.Second, Runs: 4, Ledger: &Ledger{Path: path, Host: "box", Loader: predlog.LoaderJob, Now: time.Now}}
	var steps []TuneStep
	if _, err := Tune(context.Background(), o, sc, Setting{"num_workers": "1"}, func(s TuneStep) error { steps = append(steps, s); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(steps) != 4 {
		t.Fatalf("%d steps", len(steps))
	}
	const want = "processes outside the job took 0.5 cores during this run against 0.1 during run 1"
	if !strings.HasPrefix(steps[1].Disturbed, want) || !strings.Contains(steps[1].String(), "disturbed: "+want) {
		t.Fatalf("run 2 (others 0.1 → 0.5): %q\n%s", steps[1].Disturbed, steps[1])
	}
	for _, i := range []int{0, 2, 3} { // the first; a fall (0.5 → 0.2); a rise of 0.2
		if steps[i].Disturbed != "" {
			t.Errorf("run %d disturbed: %q", i+1, steps[i].Disturbed)
		}
	}
	rs, err := predlog.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Change != "num_workers 2 → 4" || rs[1].Change != "num_workers 4 → 8" {
		t.Fatalf("kept %+v, want runs 3 and 4 only", rs)
	}
	// A disturbed step that gained nothing does not end tune: its
	// measurement says nothing of the change.
	flat := scripted{
		measured:  map[string]float64{"1": 400, "2": 400, "4": 1000},
		predicted: map[string]float64{"2": 800, "4": 1100},
		next:      map[string]string{"1": "2", "2": "4"},
		others:    map[string]float64{"1": 0.1, "2": 0.6, "4": 0.6},
	}
	res, err := Tune(context.Background(), TuneOptions{RunFor: time.Second, Runs: 3}, flat, Setting{"num_workers": "1"}, func(TuneStep) error { return nil })
	if err != nil || res.Steps != 3 {
		t.Fatalf("tune stopped after %d steps (%q): %v", res.Steps, res.Why, err)
	}
	// A fall disturbs a prediction the CPUs limit: the others' cores
	// were counted out of what the workers could get.
	// were counted out of what the workers could get, and the run beat
	// it; a run that fell short even so keeps its error.
	beat := TuneStep{OthersCores: ptr(0.1), Measured: diagnose.Prediction{SamplesPerSec: 1562}}
	short := TuneStep{OthersCores: ptr(0.1), Measured: diagnose.Prediction{SamplesPerSec: 900}}
	cpuBound := TuneStep{Step: 1, OthersCores: ptr(0.9), Next: &diagnose.Prediction{SamplesPerSec: 1058, Limit: diagnose.LimitCPU.String()}}
	if d := disturbed(cpuBound, beat); !strings.Contains(d, "the run had CPUs the prediction did not count") {
		t.Fatalf("others 0.9 → 0.1 under a CPU-limited prediction it beat: %q", d)
	}
	if d := disturbed(cpuBound, short); d != "" {
		t.Fatalf("others 0.9 → 0.1 under a CPU-limited prediction it fell short of: %q", d)
	}
	cpuBound.Next.Limit, cpuBound.Next.ContendedLimit = diagnose.LimitStep.String(), diagnose.LimitCPU.String()
	if d := disturbed(cpuBound, beat); d == "" {
		t.Fatal("others 0.9 → 0.1 under a prediction the CPUs limit on its low side: not disturbed")
	}
	cpuBound.Next.ContendedLimit = ""
	if d := disturbed(cpuBound, beat); d != "" {
		t.Fatalf("others 0.9 → 0.1 under a prediction the step limits: %q", d)
	}
	// Unread on either side: nothing said.
	if d := disturbed(TuneStep{Step: 1}, TuneStep{OthersCores: steps[1].OthersCores}); d != "" {
		t.Fatalf("disturbed with the first unread: %q", d)
	}
}

// cancelling is scripted whose run with num_workers at is cut short by
// Ctrl-C: its Settle cancels the context and returns what a cut-short run
// gives (no frames, an error).
type cancelling struct {
	scripted
	at     string
	cancel context.CancelFunc
}

func (c cancelling) Settle(ctx context.Context, s Setting, d time.Duration) (TuneStep, error) {
	if s["num_workers"] == c.at {
		c.cancel()
		return TuneStep{}, errors.New("the command ran no DataLoader within 1m0s")
	}
	return c.scripted.Settle(ctx, s, d)
}

// TestCtrlCEndsTuneWithTheRunsMeasured: Ctrl-C during run 3 ends tune
// with ErrTuneInterrupted and the two runs measured (the best of them
// named); the run cut short is neither a step nor kept in the ledger,
// and its failure (no frames) is not blamed on the command.
func TestCtrlCEndsTuneWithTheRunsMeasured(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := cancelling{scripted: scripted{
		measured:  map[string]float64{"1": 400, "2": 700},
		predicted: map[string]float64{"2": 750, "4": 1100},
		next:      map[string]string{"1": "2", "2": "4"},
	}, at: "4", cancel: cancel}
	path := filepath.Join(t.TempDir(), "predictions.jsonl")
	o := TuneOptions{RunFor: time.Second, Runs: 5, Ledger: &Ledger{Path: path, Host: "box", Loader: predlog.LoaderJob, Now: time.Now}}
	var steps []TuneStep
	res, err := Tune(ctx, o, c, Setting{"num_workers": "1"}, func(s TuneStep) error { steps = append(steps, s); return nil })
	if !errors.Is(err, ErrTuneInterrupted) || len(steps) != 2 || res.Best != 2 || res.Why != "interrupted during run 3: 2 measured" || res.Type != "result" {
		t.Fatalf("%d steps, result %+v, %v", len(steps), res, err)
	}
	rs, err := predlog.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Change != "num_workers 1 → 2" {
		t.Fatalf("kept %+v, want run 2 only", rs)
	}
}

func ptr(v float64) *float64 { return &v }
