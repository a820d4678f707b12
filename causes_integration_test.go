//go:build integration

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// batteryRun is one run of a loop of python/examples/causes_battery.py
// under `gpuwatch run --once`: the loop's own measurements, gpuwatch's
// settled verdict, and its stage shares (means over the recorded frames
// that timed the workers' stages).
type batteryRun struct {
	own struct {
		SamplesPerSec float64 `json:"samples_per_sec"`
		WaitShare     float64 `json:"wait_share"`
		GetitemShare  float64 `json:"getitem_share"`
		CollateShare  float64 `json:"collate_share"`
	}
	verdict struct {
		Kind      string `json:"kind"`
		Advice    []string
		Predicted *struct {
			Gain float64 `json:"gain"`
		} `json:"predicted"`
		Changes []struct{ Knob, From, To string } `json:"changes"`
		Causes  []struct {
			ID       string `json:"id"`
			Evidence string `json:"evidence"`
			Bound    *struct {
				K           float64 `json:"k"`
				Samples     float64 `json:"samples_per_sec"`
				FreeGain    float64 `json:"free_gain"`
				FreeSamples float64 `json:"free_samples_per_sec"`
			} `json:"bound"`
		} `json:"causes"`
	}
	getitem, collate, handover float64 // gpuwatch's, of a worker's time
	frames                     int
}

// runBattery runs one loop (fixed or not) under gpuwatch run --once.
func runBattery(t *testing.T, py, loop string, fix bool) batteryRun {
	t.Helper()
	dir := t.TempDir()
	truth, rec := filepath.Join(dir, "truth.json"), filepath.Join(dir, "rec.jsonl")
	args := []string{"run", "--json", "--once", "--record", rec, "--", py, filepath.Join("python", "examples", "causes_battery.py"),
		"--loop", loop, "--seconds", "60", "--warmup", "1.5", "--step-ms", "2", "--out", truth, "--images", filepath.Join(os.TempDir(), "gpuwatch-battery-jpeg")}
	if fix {
		args = append(args, "--fix")
	}
	cmd := exec.Command(binary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
			t.Fatalf("%v: %s", err, stderr.String())
		}
	}
	var r batteryRun
	b, err := os.ReadFile(truth)
	if err != nil || json.Unmarshal(b, &r.own) != nil || r.own.SamplesPerSec <= 0 {
		t.Fatalf("the loop wrote no truth (%v): %s", err, stderr.String())
	}
	var sum struct {
		Verdict json.RawMessage `json:"verdict"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil || json.Unmarshal(sum.Verdict, &r.verdict) != nil {
		t.Fatalf("no summary (%v): %s", err, stdout.String())
	}
	r.stageShares(t, rec)
	return r
}

// stageShares reads gpuwatch's stage shares off the recording.
func (r *batteryRun) stageShares(t *testing.T, rec string) {
	f, err := os.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var g, c, h []float64
	for sc.Scan() {
		var line struct { // a frame line is the frame itself, with its type
			Type   string `json:"type"`
			Loader *struct {
				Stages *struct {
					GetitemShare  *float64 `json:"getitem_share"`
					CollateShare  *float64 `json:"collate_share"`
					HandoverShare *float64 `json:"handover_share"`
				} `json:"stages"`
			} `json:"loader"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Type != "frame" || line.Loader == nil {
			continue
		}
		if s := line.Loader.Stages; s != nil && s.GetitemShare != nil && s.CollateShare != nil && s.HandoverShare != nil {
			g, c, h = append(g, *s.GetitemShare), append(c, *s.CollateShare), append(h, *s.HandoverShare)
		}
	}
	r.getitem, r.collate, r.handover, r.frames = mean(g), mean(c), mean(h), len(g)
}

// TestCausesBattery (issue 39, item 5): each real loop of the battery,
// watched by `gpuwatch run --once`, is named by its real cause; gpuwatch's
// stage shares are within 0.10 of the loop's own (the loop times
// __getitem__ and collate_fn; the hand-over it cannot time, so gpuwatch's
// shares are compared of those two stages); the fix, applied, gains
// ≥ 1.3× and does not beat the cause's free bound (by more than the 10 %
// two runs on a shared machine differ by); and on the CPU-saturated
// loops no knob is promised ≥ 1.2×. About 3 minutes on 2 cores.
func TestCausesBattery(t *testing.T) {
	py := python(t, true)
	for _, tc := range []struct {
		loop, cause string
		noKnob      bool // CPU-saturated: more workers cannot help
		needs       string
	}{
		{"float64", "float64", true, ""},
		{"padding", "padding", false, ""},
		{"timeseries", "getitem", false, ""},
		{"images", "handover", true, "import PIL"},
		// Not yet "text" (causes_battery.py --loop text, the tokenize
		// cause): since --once waits for the first profile it named
		// tokenize in 5 of 6 judged runs on the 2-core VM; in the sixth (a
		// clean-clone CI run) the workers did not read as CPU-bound, no
		// cause was named and one more worker was advised.
	} {
		t.Run(tc.loop, func(t *testing.T) {
			if tc.needs != "" {
				if out, err := exec.Command(py, "-c", tc.needs).CombinedOutput(); err != nil {
					msg := fmt.Sprintf("%s: %s (apt-get install python3-pil python3-torchvision)", tc.needs, strings.TrimSpace(string(out)))
					if os.Getenv("GPUWATCH_REQUIRE_PYTHON") != "" {
						t.Fatal(msg) // CI installs them: a skip there would hide the loop
					}
					t.Skip(msg)
				}
			}
			// Each side twice, interleaved, and the faster run of each
			// judged: other users of a shared machine only slow a run
			// down, and the bound is the faster unfixed run's.
			un, fx := runBattery(t, py, tc.loop, false), runBattery(t, py, tc.loop, true)
			if u := runBattery(t, py, tc.loop, false); u.own.SamplesPerSec > un.own.SamplesPerSec {
				un = u
			}
			if f := runBattery(t, py, tc.loop, true); f.own.SamplesPerSec > fx.own.SamplesPerSec {
				fx = f
			}
			judgeBattery(t, tc.cause, tc.noKnob, un, fx)
		})
	}
}

func judgeBattery(t *testing.T, cause string, noKnob bool, un, fx batteryRun) {
	t.Helper()
	var found bool
	var free, k, atK float64
	for _, c := range un.verdict.Causes {
		if c.ID == cause && c.Bound != nil {
			found, free, k, atK = true, c.Bound.FreeSamples, c.Bound.K, c.Bound.Samples
		}
	}
	gain := fx.own.SamplesPerSec / un.own.SamplesPerSec
	sum := un.getitem + un.collate
	g := un.getitem / sum
	t.Logf("own: %.0f samples/s, wait %.2f, getitem %.3f collate %.3f; gpuwatch (%d frames): getitem %.3f collate %.3f hand-over %.3f (getitem of the two: %.3f); %s; fix: %.0f samples/s, %.2f×; bound %.0f samples/s (%.2f×) at k=%.2g, free %.0f samples/s (%.2f×)",
		un.own.SamplesPerSec, un.own.WaitShare, un.own.GetitemShare, un.own.CollateShare, un.frames, un.getitem, un.collate, un.handover, g,
		un.verdict.Kind, fx.own.SamplesPerSec, gain, atK, atK/un.own.SamplesPerSec, k, free, free/un.own.SamplesPerSec)
	if !found {
		t.Fatalf("the cause %q is not named with a bound: %+v %q", cause, un.verdict.Causes, un.verdict.Advice)
	}
	if un.frames < 3 || math.Abs(g-un.own.GetitemShare) > 0.10 {
		t.Errorf("gpuwatch's getitem share %.3f (of getitem and collate, %d frames), the loop's own %.3f: more than 0.10 apart", g, un.frames, un.own.GetitemShare)
	}
	if gain < 1.3 {
		t.Errorf("the fix gains %.2f×, want ≥ 1.3×", gain)
	}
	if fx.own.SamplesPerSec > 1.10*free {
		t.Errorf("the fix reached %.0f samples/s, beyond the free bound %.0f", fx.own.SamplesPerSec, free)
	}
	if p := un.verdict.Predicted; noKnob && p != nil && p.Gain >= 1.2 {
		t.Errorf("a knob promised %.2f× on a CPU-saturated loop: %+v", p.Gain, un.verdict.Changes)
	}
}
