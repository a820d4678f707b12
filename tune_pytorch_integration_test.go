//go:build integration

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/session/tune"
)

// pytorchTuneLoops are real DataLoader loops (dataloader_bench.py) with a
// placeholder for the knob that matters: three a knob can fix, two no knob
// fixes. grid is the sweep that tune must come close to; where the knob has
// more than two values it leaves out the loop's own, which tune's first run
// measured (18 s of CI each).
var pytorchTuneLoops = []struct {
	name string
	args []string
	fix  bool
	grid []string
}{
	{"samples wait on storage, one worker", []string{"--workers", "{num_workers:1}", "--cost", "0", "--io", "0.002", "--step", "0.005"}, true,
		[]string{"num_workers=2,4,6"}},
	{"short epochs, a costly worker start, not persistent", []string{"--workers", "2", "--persistent", "{persistent_workers:false}", "--epoch-batches", "10", "--worker-start", "1", "--cost", "0.0005", "--step", "0.03"}, true,
		[]string{"persistent_workers=false,true"}},
	{"inline loading, CPU-heavy samples", []string{"--workers", "{num_workers:0}", "--cost", "0.004", "--step", "0.03"}, true,
		[]string{"num_workers=1,2,4"}},
	{"CPU-bound on every core", []string{"--workers", "{num_workers:3}", "--cost", "0.004", "--step", "0.005"}, false, nil},
	{"healthy: the step is the limit", []string{"--workers", "{num_workers:2}", "--cost", "0.0005", "--step", "0.03"}, false, nil},
}

// gainFloor is the least gain an advised change must bring to a loop that
// waited this share of its time: half of what removing the whole wait
// would give (1 ÷ (1 − wait)), 1.5× at most. The loops are built to wait
// half their time or more, but their CPU work per sample is a count of
// iterations calibrated once (benchRate): a calibration on a busy CI box
// read 2.3× too slow a rate, the inline loop then waited 32 % where it
// waits 51 %, and no change could have gained 1.5× (1.40× measured, its
// range's promise 1.48×).
func gainFloor(wait float64) float64 {
	if wait >= 1 {
		return 1.5
	}
	return min(1.5, 1+0.5*wait/(1-wait))
}

// TestTuneAndSweepOnPyTorch runs gpuwatch tune over each loop, a real
// PyTorch DataLoader on Debian's torch: where a knob can fix it, applying
// the first advice gains at least gainFloor (1.5× at half the time waiting) and lands within 30 % of its
// predicted range (rangeErrPct), and tune reaches at least 90 % of the best point of a sweep
// over the knob in at most 3 runs (or runs that point itself), judged on
// a second look at the two side by side where the first falls short;
// where none can, no change is advised.
// It logs the table of before / predicted / after for docs/diagnosis.md.
func TestTuneAndSweepOnPyTorch(t *testing.T) {
	py := python(t, true)
	bin := binary(t)
	rate := benchRate(t, py)
	var table strings.Builder
	fmt.Fprintf(&table, "| loop | before | wait | change | predicted | after | gain | error | tune runs | sweep best |\n|---|---:|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, loop := range pytorchTuneLoops {
		t.Run(loop.name, func(t *testing.T) {
			args := append([]string{"--rate", rate}, loop.args...) // every run of the loop does the same work per sample
			argv := append([]string{"tune", "--json", "--runs", "3", "--", py, "python/examples/dataloader_bench.py", "--seconds", "300"}, args...)
			cmd := exec.Command(bin, argv...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			steps, res := readTuneLines(t, out)
			first := steps[0]
			for _, c := range first.Changes {
				if c.Flag != c.Knob {
					t.Errorf("change %+v: want PyTorch's name as the flag", c)
				}
			}
			row := fmt.Sprintf("| %s | %.0f | %.0f %% |", loop.name, first.Measured.SamplesPerSec, 100*first.Measured.WaitShare)
			if !loop.fix {
				if len(first.Changes) > 0 {
					t.Errorf("no knob fixes it, yet %+v was advised (%s: %s)", first.Changes, first.Verdict, first.Evidence)
				}
				fmt.Fprintf(&table, "%s none: %s | | | | | %d | |\n", row, strings.SplitN(strings.Join(first.Advice, ""), ":", 2)[0], len(steps))
				return
			}
			if len(steps) < 2 {
				t.Fatalf("waits %.0f %% and a knob fixes it, yet tune stopped after one run: %s (%s)", 100*first.Measured.WaitShare, res.Why, first.Evidence)
			}
			second := steps[1]
			gain := second.Measured.SamplesPerSec / first.Measured.SamplesPerSec
			errPct := rangeErrPct(second.Measured.SamplesPerSec, second.Predicted)
			change := ""
			for _, c := range first.Changes {
				change += fmt.Sprintf("`%s=%s` ", c.Knob, c.To)
			}
			if floor := gainFloor(first.Measured.WaitShare); gain < floor {
				t.Errorf("gain %.2f× after %s, want ≥ %.2f× (%.0f %% wait)", gain, change, floor, 100*first.Measured.WaitShare)
			}
			if errPct < -30 || errPct > 30 {
				t.Errorf("measured %.0f samples/s, predicted %s: %+.0f %%, want within 30 %% of the range", second.Measured.SamplesPerSec, predictedRange(second.Predicted), errPct)
			}
			// The sweep over the knob: tune's best must reach 90 % of its best.
			sweep := func(grid []string) []tune.SweepResult {
				sargv := []string{"sweep", "--json", "--run-for", "14s", "--warmup", "4s"}
				for _, g := range grid {
					sargv = append(sargv, "--grid", g)
				}
				sargv = append(append(sargv, "--", py, "python/examples/dataloader_bench.py", "--seconds", "300"), args...)
				scmd := exec.Command(bin, sargv...)
				scmd.Stderr = os.Stderr
				sout, err := scmd.Output()
				if err != nil {
					t.Fatalf("sweep: %v", err)
				}
				var sw struct{ Results []tune.SweepResult }
				if err := json.Unmarshal(sout, &sw); err != nil {
					t.Fatalf("sweep JSON: %v\n%s", err, sout)
				}
				return sw.Results
			}
			knob := first.Changes[0].Knob
			results := sweep(loop.grid)
			bestSweep, bestAt, points := 0.0, "", len(results)
			for _, r := range results {
				if r.SamplesPerSec > bestSweep {
					bestSweep, bestAt = r.SamplesPerSec, r.Knobs[knob]
				}
			}
			if !slices.ContainsFunc(results, func(r tune.SweepResult) bool { return r.Knobs[knob] == first.Changes[0].From }) {
				// The loop as it is, the point the grid leaves out: tune's first run.
				points++
				if first.Measured.SamplesPerSec > bestSweep {
					bestSweep, bestAt = first.Measured.SamplesPerSec, first.Changes[0].From
				}
			}
			bestTune, tuneAt, runs := 0.0, "", ""
			for _, s := range steps {
				runs += fmt.Sprintf(" %s=%s: %.0f;", knob, s.Knobs[knob], s.Measured.SamplesPerSec)
				if s.Measured.SamplesPerSec > bestTune {
					bestTune, tuneAt = s.Measured.SamplesPerSec, s.Knobs[knob]
				}
			}
			t.Logf("tune's runs:%s the sweep's best %.0f at %s=%s", runs, bestSweep, knob, bestAt)
			if bestTune < 0.9*bestSweep && tuneAt != bestAt {
				// A second look at the two settings, side by side, and the
				// faster run of each judged: runs minutes apart on a shared
				// machine differ by 10–15 % (CI: 4 workers swept at 1297
				// samples/s where tune's 3 and 4 read 1130 and less).
				for _, r := range sweep([]string{knob + "=" + tuneAt + "," + bestAt}) {
					switch r.Knobs[knob] {
					case tuneAt:
						bestTune = max(bestTune, r.SamplesPerSec)
					case bestAt:
						bestSweep = max(bestSweep, r.SamplesPerSec)
					}
				}
				t.Logf("a second look: tune's best %.0f at %s=%s, the sweep's %.0f at %s=%s", bestTune, knob, tuneAt, bestSweep, knob, bestAt)
			}
			// Tune that ran the sweep's best setting reached it, whatever
			// its run of it read.
			if bestTune < 0.9*bestSweep && tuneAt != bestAt || len(steps) > 3 {
				t.Errorf("tune reached %.0f samples/s in %d runs; the sweep's best is %.0f (%d points)", bestTune, len(steps), bestSweep, points)
			}
			fmt.Fprintf(&table, "%s %s| %s | %.0f | %.2f× | %+.0f %% | %d | %.0f of %d |\n", row, change, predictedRange(second.Predicted),
				second.Measured.SamplesPerSec, gain, errPct, len(steps), bestSweep, points)
		})
	}
	t.Logf("tune on PyTorch loops:\n%s", table.String())
}

// benchRate is dataloader_bench.py's work loop's rate on this machine,
// calibrated once: each run calibrating its own made the inline loop's
// samples cost up to 1.7× more in one run than in the run compared with
// it (CI: 157 samples/s inline, then 128 with a worker predicted 261;
// 93–125 inline on the same machine alone).
func benchRate(t *testing.T, py string) string {
	t.Helper()
	out, err := exec.Command(py, "python/examples/dataloader_bench.py", "--print-rate").Output()
	if err != nil {
		t.Fatalf("calibrating dataloader_bench.py: %v", err)
	}
	rate := strings.TrimSpace(string(out))
	t.Logf("dataloader_bench.py's work loop: %s iterations a CPU second", rate)
	return rate
}

// TestTuneStopsAtTheCeilingOnPyTorch runs gpuwatch tune --ceiling over a
// real PyTorch DataLoader loop (dataloader_bench.py, Debian's torch) whose
// one worker waits on storage (15 ms a sample, a sleep standing for
// network storage: 240 ms a batch of 16) and cannot keep up with a 100 ms
// step; num_workers can. The step is long beside the loop's own cost of
// taking each batch from the workers (unpickling, the shared-memory
// handoff: 1.5–2 ms measured here), which the ceiling leaves out and no
// knob removes: with a 10 ms step, 3 and 4 workers both stopped at 87 %.
// The ceiling is measured once, in an extra run; the first run is well
// under 95 % of it, and tune reaches at least 95 % in at most 3 runs and
// stops there, saying the input pipeline has nothing left to give.
func TestTuneStopsAtTheCeilingOnPyTorch(t *testing.T) {
	py := python(t, true)
	argv := []string{"tune", "--json", "--runs", "3", "--run-for", "30s", "--ceiling=3s", "--", py, "python/examples/dataloader_bench.py", "--seconds", "300",
		"--workers", "{num_workers:1}", "--batch", "16", "--cost", "0", "--io", "0.015", "--step", "0.1"}
	cmd := exec.Command(binary(t), argv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "gpuwatch: --ceiling: ceiling ") {
		t.Errorf("the ceiling measured is not said on stderr: %q", stderr.String())
	}
	steps, res := readTuneLines(t, out)
	var shares []string
	for _, s := range steps {
		if s.CeilingShare == nil {
			t.Fatalf("run %d carries no share of the ceiling:\n%s", s.Step, out)
		}
		shares = append(shares, fmt.Sprintf("run %d %s: %.0f samples/s, %.0f %% of the ceiling", s.Step, tune.KnobsLine(s.Knobs), s.Measured.SamplesPerSec, 100**s.CeilingShare))
	}
	t.Logf("%s; stopped: %s", strings.Join(shares, "; "), res.Why)
	if first := *steps[0].CeilingShare; first >= 0.8 {
		t.Errorf("the first run, one worker, is already at %.0f %% of the ceiling: the loop does not test tune", 100*first)
	}
	last := steps[len(steps)-1]
	if len(steps) > 3 || *last.CeilingShare < tune.CeilingEnough {
		t.Errorf("tune ended at %.0f %% of the ceiling after %d runs, want ≥ %.0f %% in at most 3", 100**last.CeilingShare, len(steps), 100*tune.CeilingEnough)
	}
	if !strings.HasPrefix(res.Why, "nothing left to gain in the input pipeline") {
		t.Errorf("tune stopped because %q, want nothing left to gain in the input pipeline", res.Why)
	}
}

// readTuneLines reads tune --json's output: its steps, then its result.
func readTuneLines(t *testing.T, out []byte) ([]tune.TuneStep, tune.TuneResult) {
	t.Helper()
	var steps []tune.TuneStep
	var res tune.TuneResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var typ struct{ Type string }
		_ = json.Unmarshal(sc.Bytes(), &typ)
		var err error
		switch typ.Type {
		case "step":
			var s tune.TuneStep
			err = json.Unmarshal(sc.Bytes(), &s)
			steps = append(steps, s)
		case "result":
			err = json.Unmarshal(sc.Bytes(), &res)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(steps) == 0 || res.Type != "result" {
		t.Fatalf("no steps or no result:\n%s", out)
	}
	return steps, res
}
