package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestSweepGridIsCountedBeforeItIsBuilt: a knob given twice has its lists
// merged, repeats (1, 01) count once, and a grid over --max-runs is
// refused from the list lengths alone: a 16.7 M-point grid once took 6 GB
// before anything ran.
func TestSweepGridIsCountedBeforeItIsBuilt(t *testing.T) {
	cmdline := []string{"--", "sh", "-c", "echo {num_workers:1} {prefetch_factor:2}"}
	var out, errb bytes.Buffer
	code := Run(append([]string{"sweep", "--grid", "num_workers=1,1,01", "--grid", "num_workers=2", "--max-runs", "1"}, cmdline...), &out, &errb)
	if code != ExitUsage || !strings.Contains(errb.String(), "the grid has 2 configurations, more than --max-runs 1 (at --run-for 20s each, about 40s, plus each start and stop)") {
		t.Fatalf("exit %d, stderr %q: want the merged list 1, 2 counted as 2 configurations, and the wall time they would take", code, errb.String())
	}
	// A misspelt knob is named as one, not as a placeholder missing.
	out.Reset()
	errb.Reset()
	code = Run(append([]string{"sweep", "--grid", "num_worker=1,2"}, cmdline...), &out, &errb)
	if code != ExitUsage || !strings.Contains(errb.String(), "--grid num_worker: not a knob gpuwatch sets (num_workers, ") {
		t.Fatalf("exit %d, stderr %q: want num_worker named as no knob", code, errb.String())
	}
	for knob, want := range map[string]string{
		"workers": "--grid workers: a command's knobs are the DataLoader's keywords: num_workers (--workers is the embedded loader's flag)",
		"cache":   "--grid cache: only the embedded loader has it (its --cache)",
	} {
		errb.Reset()
		if code = Run(append([]string{"sweep", "--grid", knob + "=1,2"}, cmdline...), &out, &errb); code != ExitUsage || !strings.Contains(errb.String(), want) {
			t.Errorf("--grid %s: exit %d, stderr %q: want %q", knob, code, errb.String(), want)
		}
	}
	var nw, pf []string
	for i := range 4096 {
		nw, pf = append(nw, strconv.Itoa(i)), append(pf, "0"+strconv.Itoa(i+1)) // 01 is 1
	}
	big := "num_workers=" + strings.Join(nw, ",")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out.Reset()
	errb.Reset()
	code = Run(append([]string{"sweep", "--grid", big, "--grid", "prefetch_factor=" + strings.Join(pf, ",")}, cmdline...), &out, &errb)
	runtime.ReadMemStats(&after)
	if code != ExitUsage || !strings.Contains(errb.String(), "the grid has 16777216 configurations, more than --max-runs 256 (at --run-for 20s each, about 11 years,") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("refusing the grid allocated %d MiB", grew>>20)
	}
}

// TestSweepFailedConfigurationsAreRows: a configuration whose command
// fails is a row with its exit status and last line, and the sweep goes
// on to the next; when none could be measured the sweep fails (1), after
// the table and --out.
func TestSweepFailedConfigurationsAreRows(t *testing.T) {
	outFile := filepath.Join(t.TempDir(), "sweep.json")
	var out, errb bytes.Buffer
	code := Run([]string{"sweep", "--grid", "num_workers=1,2", "--run-for", "1s", "--warmup", "0s", "-n", "100ms", "--out", outFile,
		"--logs", t.TempDir(), "--", "sh", "-c", "echo starting; echo boom {num_workers:1}; exit 3"}, &out, &errb)
	if code != ExitFailure || !strings.Contains(errb.String(), "no configuration could be measured") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	for _, want := range []string{"failed: num_workers=1: exited with status 3: boom 1", "failed: num_workers=2: exited with status 3: boom 2"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the table lacks %q:\n%s", want, out.String())
		}
	}
	var res struct {
		Results []struct {
			Failed     string `json:"failed"`
			ExitStatus *int   `json:"exit_status"`
		}
	}
	b, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil || len(res.Results) != 2 || res.Results[1].ExitStatus == nil || *res.Results[1].ExitStatus != 3 {
		t.Fatalf("--out: %v %s", err, b)
	}
}

// TestADashWithNoCommandIsRefused: "tune --" and "sweep --" ran the
// embedded loader, as if no command had been meant (a user's review).
func TestADashWithNoCommandIsRefused(t *testing.T) {
	for _, sub := range []string{"tune", "sweep"} {
		var out, errb bytes.Buffer
		for _, argv := range [][]string{{sub, "--"}, {sub, "--", " "}} {
			errb.Reset()
			if code := Run(argv, &out, &errb); code != ExitUsage || !strings.Contains(errb.String(), "-- with no command after it") {
				t.Errorf("%q: exit %d, stderr %q: want a usage error naming the missing command", argv, code, errb.String())
			}
		}
	}
}
