//go:build integration

package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/session/tune"
)

// TestAdviceAppliedDeliversWhatItPredicts runs the real embedded loader on
// eight configurations, each limited by something else, takes the settled
// verdict's changes, applies them (gpuwatch tune), and measures again.
// Where the loop waited at least half its time and a knob can fix it, the
// changes must gain 1.5× (1.3× for a second CPU-bound worker on 2 cores:
// on CI's 2-vCPU VMs both busy run each 15–39 % slower, and 1 → 2
// workers measured 1.41–1.60×) and land within 30 % of their predicted range
// (rangeErrPct: from its point to its high side, else from the nearer
// side). Where
// no knob can, no more workers may be advised. It prints the table.
func TestAdviceAppliedDeliversWhatItPredicts(t *testing.T) {
	dir := t.TempDir()
	data := func(name, size string) []string {
		return []string{"--dataset", filepath.Join(dir, name), "--dataset-size", size, "--sample-size", "16KiB", "--batch-size", "32"}
	}
	cases := []struct {
		name  string
		knobs []string
		fix   bool    // a knob can fix it
		gain  float64 // the least gain the fix must bring on 2 CPUs, where not 1.5
	}{
		{"inline loading (num_workers=0)", append(data("a", "32MiB"), "--workers", "0", "--decode-cost", "1ms", "--step-time", "5ms"), true, 0},
		{"too few workers for read latency", append(data("a", "32MiB"), "--workers", "1", "--read-latency", "3ms", "--decode-cost", "20us", "--step-time", "20ms", "--persistent"), true, 0},
		{"too few workers for the CPU work", append(data("a", "32MiB"), "--workers", "1", "--decode-cost", "600us", "--step-time", "10ms", "--persistent"), true, 1.3},
		{"worker start-up every epoch", append(data("a", "32MiB"), "--workers", "2", "--worker-start", "300ms", "--batches", "16", "--decode-cost", "200us", "--step-time", "20ms"), true, 0},
		{"a bandwidth-capped link", append(data("a", "32MiB"), "--workers", "4", "--read-bandwidth", "6MB/s", "--decode-cost", "20us", "--step-time", "10ms", "--persistent"), true, 0},
		{"CPU-bound on the job's CPUs", append(data("a", "32MiB"), "--workers", "2", "--decode-cost", "2ms", "--step-time", "5ms", "--persistent"), false, 0},
		{"a saturated disk read at random", []string{"--scenario", "io-bound"}, true, 0},
		{"healthy: the step is the limit", append(data("a", "32MiB"), "--workers", "2", "--decode-cost", "50us", "--step-time", "60ms", "--persistent"), false, 0},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-36s %10s %6s %-40s %10s %10s %6s %6s\n", "configuration", "before/s", "wait", "changes", "predicted", "after/s", "gain", "error")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A run the rest of the box disturbed (tune says so: others
			// took more CPU than while the prediction was measured) does
			// not test the prediction: tune runs again, three times at most.
			var steps []tune.TuneStep
			for try := 1; ; try++ {
				steps = tuneSteps(t, c.knobs)
				if len(steps) < 2 || steps[1].Disturbed == "" {
					break
				}
				if try == 3 {
					t.Fatalf("each of 3 tries was disturbed, the last: %s", steps[1].Disturbed)
				}
				t.Logf("try %d disturbed: %s", try, steps[1].Disturbed)
			}
			first := steps[0]
			changes := ""
			for _, ch := range first.Changes {
				changes += fmt.Sprintf("%s=%s ", ch.Flag, ch.To)
				if !c.fix && ch.Flag == "--workers" && ch.To > ch.From {
					t.Errorf("more workers advised where no knob can help: %+v (%s)", ch, first.Evidence)
				}
			}
			row := fmt.Sprintf("%-36s %10.0f %5.0f%% %-40s", c.name, first.Measured.SamplesPerSec, 100*first.Measured.WaitShare, changes)
			if len(steps) < 2 {
				fmt.Fprintf(&table, "%s %10s %10s\n", row, "-", "-")
				if c.fix && first.Measured.WaitShare >= 0.5 {
					t.Errorf("waits %.0f %% and a knob can fix it, yet no change was advised (%s: %s)", 100*first.Measured.WaitShare, first.Verdict, first.Evidence)
				}
				return
			}
			second := steps[1]
			gain := second.Measured.SamplesPerSec / first.Measured.SamplesPerSec
			errPct := rangeErrPct(second.Measured.SamplesPerSec, second.Predicted)
			fmt.Fprintf(&table, "%s %10s %10.0f %5.2f× %+5.0f%%\n", row, predictedRange(second.Predicted), second.Measured.SamplesPerSec, gain, errPct)
			if c.fix && first.Measured.WaitShare >= 0.5 {
				least := 1.5
				if runtime.NumCPU() <= 2 {
					least = cmp.Or(c.gain, least)
				}
				if gain < least {
					t.Errorf("gain %.2f× after %s, want ≥ %.1f×", gain, changes, least)
				}
				if errPct < -30 || errPct > 30 {
					t.Errorf("measured %.0f samples/s, predicted %s: %+.0f %%, want within 30 %% of the range", second.Measured.SamplesPerSec, predictedRange(second.Predicted), errPct)
				}
			}
		})
	}
	t.Logf("advice applied, predicted vs measured:\n%s", table.String())
}

// tuneSteps runs `gpuwatch tune` with knobs for two runs and returns its
// steps.
func tuneSteps(t *testing.T, knobs []string) []tune.TuneStep {
	t.Helper()
	args := append([]string{"tune", "--json", "--runs", "2", "--run-for", "20s"}, knobs...)
	out, err := exec.Command(binary(t), args...).Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var steps []tune.TuneStep
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		var s tune.TuneStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		if s.Type == "step" { // the last line is the result
			steps = append(steps, s)
		}
	}
	if len(steps) == 0 {
		t.Fatal("no step")
	}
	return steps
}

// rangeErrPct is how far a measured rate falls outside a predicted range,
// in % of the nearest side: 0 inside it (from the point, its low side, to
// its high side), negative below the point, positive above the high side.
func rangeErrPct(measured float64, p *diagnose.Prediction) float64 {
	high := max(p.HighSamplesPerSec, p.SamplesPerSec)
	switch {
	case measured < p.SamplesPerSec:
		return 100 * (measured/p.SamplesPerSec - 1)
	case measured > high:
		return 100 * (measured/high - 1)
	}
	return 0
}

// predictedRange is a prediction's range as a table shows it: "990–1345",
// or one figure.
func predictedRange(p *diagnose.Prediction) string {
	if high := p.HighSamplesPerSec; fmt.Sprintf("%.0f", high) != fmt.Sprintf("%.0f", p.SamplesPerSec) && high > p.SamplesPerSec {
		return fmt.Sprintf("%.0f–%.0f", p.SamplesPerSec, high)
	}
	return fmt.Sprintf("%.0f", p.SamplesPerSec)
}
