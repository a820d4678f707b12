//go:build integration

package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
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
		Kind     string `json:"kind"`
		Evidence []struct {
			Text   string `json:"text"`
			Metric string `json:"metric"`
		} `json:"evidence"`
		Advice    []string
		Predicted *struct {
			Gain    float64 `json:"gain"`
			Samples float64 `json:"samples_per_sec"`
			High    float64 `json:"high_samples_per_sec"`
			Limit   string  `json:"limit"`
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
	files                      string // the last frame's looks at the processes' files
	profile                    string // the last frame's CPU profile, in brief
	cpu                        string // the last frame's CPUs and the workers' use of them, in brief
	rec                        string // where the recording was kept (GPUWATCH_BATTERY_KEEP), else ""
}

// runBattery runs one loop (fixed or not) under gpuwatch run --once,
// gpuwatch and the job inside the cgroups of procs where there are any,
// with the loop's extra arguments.
func runBattery(t *testing.T, py string, procs []string, loop string, fix bool, extra ...string) batteryRun {
	t.Helper()
	dir := t.TempDir()
	truth, rec := filepath.Join(dir, "truth.json"), filepath.Join(dir, "rec.jsonl")
	args := []string{"run", "--json", "--once", "--record", rec, "--", py, filepath.Join("python", "examples", "causes_battery.py"),
		"--loop", loop, "--seconds", "60", "--warmup", "1.5", "--step-ms", "2", "--out", truth}
	if fix {
		args = append(args, "--fix")
	}
	args = append(args, extra...)
	cmd := exec.Command(binary(t), args...)
	if len(procs) > 0 { // a shell enters the cgroups and execs gpuwatch: the job starts inside them
		cmd = exec.Command("sh", append([]string{"-c", `for f in $PROCS; do echo $$ > "$f" || exit 1; done; exec "$0" "$@"`, binary(t)}, args...)...)
		cmd.Env = append(os.Environ(), "PROCS="+strings.Join(procs, " "))
	}
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
	if keep := os.Getenv("GPUWATCH_BATTERY_KEEP"); keep != "" { // scripts/causes-battery.sh: a failed run's recording, to replay
		r.rec = filepath.Join(keep, fmt.Sprintf("%s-%s-%d.jsonl", loop, map[bool]string{false: "unfixed", true: "fixed"}[fix], time.Now().UnixNano()))
		if b, err := os.ReadFile(rec); err == nil {
			_ = os.WriteFile(r.rec, b, 0o600)
		}
	}
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
			Type  string `json:"type"`
			Procs *struct {
				List []struct {
					PID   int             `json:"pid"`
					Files json.RawMessage `json:"files"`
				} `json:"list"`
				Threads []struct {
					Role     string   `json:"role"`
					CPUPct   float64  `json:"cpu_pct"`
					RunDelay *float64 `json:"run_delay_ms_per_sec"`
				} `json:"threads"`
			} `json:"procs"`
			CPU *struct {
				BusyPct float64 `json:"busy_pct"`
			} `json:"cpu"`
			Profile *struct {
				TakenAt      string          `json:"taken_at"`
				Samples      int64           `json:"samples"`
				WorkersShare float64         `json:"workers_share"`
				Workers      json.RawMessage `json:"workers"`
				Error        string          `json:"error"`
			} `json:"profile"`
			Loader *struct {
				WorkersRunDelay *float64 `json:"workers_run_delay_share"`
				Stages          *struct {
					GetitemShare  *float64 `json:"getitem_share"`
					CollateShare  *float64 `json:"collate_share"`
					HandoverShare *float64 `json:"handover_share"`
				} `json:"stages"`
			} `json:"loader"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Type != "frame" || line.Loader == nil {
			continue
		}
		if line.Procs != nil {
			var fs []string
			for _, p := range line.Procs.List {
				if len(p.Files) > 0 {
					fs = append(fs, fmt.Sprintf("%d: %s", p.PID, p.Files))
				}
			}
			if len(fs) > 0 {
				r.files = strings.Join(fs, "; ")
			}
		}
		if line.CPU != nil && line.Procs != nil {
			r.cpu = fmt.Sprintf("cores %.0f %% busy; ", line.CPU.BusyPct)
			for _, th := range line.Procs.Threads {
				if th.Role == "worker" || th.Role == "loop" {
					r.cpu += fmt.Sprintf("%s %.0f %% (run delay %s) ", th.Role, th.CPUPct, fmtPtr(th.RunDelay))
				}
			}
			r.cpu += "; the workers' run delay share " + fmtPtr(line.Loader.WorkersRunDelay)
		}
		if p := line.Profile; p != nil {
			r.profile = fmt.Sprintf("taken %s, %d samples, workers' share %.2f, workers %s, error %q", p.TakenAt, p.Samples, p.WorkersShare, p.Workers, p.Error)
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
// two runs on a shared machine differ by); on the CPU-saturated loops no
// knob is promised ≥ 1.2×, and on the others a num_workers promised
// ≥ 1.2× is applied and must gain ≥ 1.05×. The mmap loop runs in a memory
// cgroup of 1 GiB with a 3 GiB file whose pages it drops first (a dataset
// that outgrows the page cache): it must read io_bound, led by the
// workers' page faults, and its fix must not. The files loop reads one
// 16 KiB file per sample over sshfs (networkMount: a real SFTP server
// 2 ms away, each file read once before the runs: warmMount) and must be
// named small_files on fuse.sshfs. About 5
// minutes on 2 cores.
func TestCausesBattery(t *testing.T) {
	py := python(t, true)
	data := t.TempDir()
	for _, tc := range []struct {
		loop, cause string
		noKnob      bool // CPU-saturated: more workers cannot help
		needs       string
		memory      string // the memory cgroup's limit, where the loop needs one
		network     bool   // its files on network storage (sshfs, a 2 ms round trip)
	}{
		{"float64", "float64", true, "", "", false},
		{"padding", "padding", false, "", "", false},
		{"timeseries", "convert", false, "", "", false},
		{"images", "handover", true, "import PIL", "", false},
		{"mmap", "random_reads", false, "", "1073741824", false},
		{"files", "small_files", false, "", "", true},
		// The text loop (the tokenize cause) is back in CI's list (issue
		// 58): scripts/causes-battery.sh passed it 10 of 10 once CPU-bound
		// workers on saturated CPUs count as the limit however much of
		// their periods their stages fill (docs/diagnosis.md).
		{"text", "tokenize", true, "", "", false},
	} {
		t.Run(tc.loop, func(t *testing.T) {
			// The loops' data (JPEGs, the mapped file, the small files) in
			// the test's own folder, written once for the loop's four runs.
			extra := []string{"--images", filepath.Join(data, "jpeg"), "--data", filepath.Join(data, "mmap.bin")}
			if tc.needs != "" {
				if out, err := exec.Command(py, "-c", tc.needs).CombinedOutput(); err != nil {
					msg := fmt.Sprintf("%s: %s (apt-get install python3-pil python3-torchvision)", tc.needs, strings.TrimSpace(string(out)))
					if os.Getenv("GPUWATCH_REQUIRE_PYTHON") != "" {
						t.Fatal(msg) // CI installs them: a skip there would hide the loop
					}
					t.Skip(msg)
				}
			}
			var procs []string
			if tc.memory != "" {
				procs = v1Cgroup(t, "gpuwatch-battery-"+tc.loop, map[string]map[string]string{"memory": {"memory.limit_in_bytes": tc.memory}})
			}
			if tc.network {
				src := filepath.Join(data, "files")
				if out, err := exec.Command(py, filepath.Join("python", "examples", "causes_battery.py"), "--loop", tc.loop, "--make-only", "--files", src).CombinedOutput(); err != nil {
					t.Fatalf("the files: %v: %s", err, out)
				}
				mnt := networkMount(t, src, time.Millisecond)
				warmMount(t, filepath.Join(mnt, "files"))
				extra = append(extra, "--files", mnt)
			}
			// Each side twice, interleaved, and the faster run of each
			// judged: other users of a shared machine only slow a run
			// down, and the bound is the faster unfixed run's. The second
			// pair is skipped where the first decides with room to spare
			// (decisive): a faster unfixed run only lowers the gain and
			// raises the free bound, a faster fixed one the reverse, and
			// neither could move a figure that far. The mmap loop's pair
			// must also read as judgeMmap wants (mmapFaults).
			un, fx := runBattery(t, py, procs, tc.loop, false, extra...), runBattery(t, py, procs, tc.loop, true, extra...)
			if !decisive(tc.cause, un, fx) || tc.loop == "mmap" && len(mmapFaults(un, fx)) > 0 {
				if u := runBattery(t, py, procs, tc.loop, false, extra...); u.own.SamplesPerSec > un.own.SamplesPerSec {
					un = u
				}
				if f := runBattery(t, py, procs, tc.loop, true, extra...); f.own.SamplesPerSec > fx.own.SamplesPerSec {
					fx = f
				}
			}
			judgeBattery(t, tc.cause, tc.noKnob, un, fx)
			switch tc.loop {
			case "mmap":
				judgeMmap(t, un, fx)
			case "files":
				judgeFiles(t, un)
			}
			if p := un.verdict.Predicted; !tc.noKnob && p != nil && p.Gain >= 1.2 {
				judgeKnob(t, py, procs, tc.loop, un, extra...)
			}
		})
	}
}

// warmLimit is the most warmMount waits: about 7 s on the 2-core VM.
const warmLimit = 2 * time.Minute

// warmMount reads every file under dir once, 16 at a time. A file's
// first read through sshfs costs more than its later ones: on the 2-core
// VM (2026-12-03) the loop's first run on a fresh mount read 196–202
// samples/s with 2 workers and 276–303 with 8 (1.5×), and the runs after
// it 218–232 and 680–768 as ever more of the files had been read (3.3×
// once all had). Measured first, the unfixed run was the coldest and the
// knob applied after it the warmer. Warmed, the small files read as a
// second epoch finds them, in every run (the fix's shards are not
// warmed: a few large files, read from start to end). A mount that has
// not answered every read within warmLimit fails the test (the hung
// reads end when the test's cleanup unmounts it).
func warmMount(t *testing.T, dir string) {
	t.Helper()
	start := time.Now()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	paths := make(chan string)
	errs := make(chan error, 16)
	for range 16 {
		go func() {
			var first error
			for p := range paths {
				if _, err := os.ReadFile(p); err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	go func() {
		for _, n := range names {
			paths <- filepath.Join(dir, n.Name())
		}
		close(paths)
	}()
	limit := time.NewTimer(warmLimit)
	defer limit.Stop()
	for range 16 {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("warming the mount: %v", err)
			}
		case <-limit.C:
			t.Fatalf("warming the mount: %d files not all read after %s: the mount stopped answering", len(names), warmLimit)
		}
	}
	t.Logf("the mount warmed: %d files read in %s", len(names), time.Since(start).Round(time.Millisecond))
}

// decisive says one pair of runs decides the loop by a wide margin: the
// cause named with a bound, the fix gaining ≥ 2× (the judge wants 1.3×)
// and staying under 0.8 of the free bound (the judge allows 1.1), the
// stage shares within 0.05 (0.10).
func decisive(cause string, un, fx batteryRun) bool {
	for _, c := range un.verdict.Causes {
		if c.ID != cause || c.Bound == nil {
			continue
		}
		gain := fx.own.SamplesPerSec / un.own.SamplesPerSec
		sum := un.getitem + un.collate
		return sum > 0 && un.frames >= 3 && gain >= 2 && fx.own.SamplesPerSec <= 0.8*c.Bound.FreeSamples &&
			math.Abs(un.getitem/sum-un.own.GetitemShare) <= 0.05
	}
	return false
}

// judgeMmap: random reads of a mapped file read io_bound, led by the
// workers' page faults; read in blocks, they do not.
func judgeMmap(t *testing.T, un, fx batteryRun) {
	t.Helper()
	for _, f := range mmapFaults(un, fx) {
		t.Error(f)
	}
}

// mmapFaults is what judgeMmap finds wrong with a pair of runs. A pair
// with any is not decisive: the fixed loop reads its 3 GiB in blocks from
// the disk, and a run the disk held back reads io_bound as it should
// (tasks stalled on I/O 37–65 % of the time, its rate 13,178–14,420
// samples/s against 20,000 in the others: 2026-12-03); the faster of two
// is judged, as for the rates.
func mmapFaults(un, fx batteryRun) []string {
	lead := func(r batteryRun) (metric, text string) {
		if len(r.verdict.Evidence) == 0 {
			return "", ""
		}
		return r.verdict.Evidence[0].Metric, r.verdict.Evidence[0].Text
	}
	var out []string
	m, text := lead(un)
	if un.verdict.Kind != "io_bound" || m != mmapMetric || !strings.Contains(text, "loader workers take") {
		out = append(out, fmt.Sprintf("random: %s led by %s (%q), want io_bound led by the workers' faults", un.verdict.Kind, m, text))
	}
	if m, text := lead(fx); m == mmapMetric || fx.verdict.Kind == "io_bound" || fx.verdict.Kind == "memory_pressure" {
		out = append(out, fmt.Sprintf("blocks: %s led by %s (%q), want neither the mmap mechanism nor memory pressure", fx.verdict.Kind, m, text))
	}
	return out
}

// judgeFiles: the small files are named on network storage, by their
// file system.
func judgeFiles(t *testing.T, un batteryRun) {
	t.Helper()
	for _, c := range un.verdict.Causes {
		if c.ID == "small_files" && !strings.Contains(c.Evidence, "on network storage (fuse.sshfs at ") {
			t.Errorf("small_files evidence %q: want network storage, fuse.sshfs", c.Evidence)
		}
	}
}

// judgeKnob applies a num_workers the unfixed run promised ≥ 1.2× for:
// it must gain ≥ 1.05× (issue 39: no knob is promised ≥ 1.2× where
// applying it gains less), and the prediction's point, the range's low
// side, must not be more than maxOverPromise above what it gives (issue
// 52: a promise 34–73 % above what happened). The point's error is
// logged either way: below the rate by design where the workers added
// contended less than the low side assumes (docs/diagnosis.md, "The
// range"). The faster of two runs is judged.
func judgeKnob(t *testing.T, py string, procs []string, loop string, un batteryRun, extra ...string) {
	t.Helper()
	for _, c := range un.verdict.Changes {
		if c.Knob != "num_workers" {
			t.Logf("not applied (the battery's loops set num_workers only): %+v, promised %.2f×", c, un.verdict.Predicted.Gain)
			continue
		}
		best := 0.0
		for range 2 {
			best = max(best, runBattery(t, py, procs, loop, false, append([]string{"--workers", c.To}, extra...)...).own.SamplesPerSec)
		}
		gain := best / un.own.SamplesPerSec
		p := un.verdict.Predicted
		// The measured rate against the range, as tune's tables give it
		// (rangeErrPct: 0 inside it), beside the point against the rate.
		t.Logf("num_workers %s → %s, promised %.2f× (%.0f–%.0f samples/s, then limited by %s): %.0f samples/s, %.2f×; the point %+.0f %% of it; measured against the range %+.0f %%",
			c.From, c.To, p.Gain, p.Samples, p.High, p.Limit, best, gain, 100*(p.Samples/best-1),
			rangeErrPct(best, &diagnose.Prediction{SamplesPerSec: p.Samples, HighSamplesPerSec: p.High}))
		if gain < 1.05 {
			t.Errorf("num_workers %s → %s was promised %.2f× and gains %.2f×", c.From, c.To, un.verdict.Predicted.Gain, gain)
		}
		if len(un.verdict.Changes) == 1 && p.Samples > 0 && p.Samples > (1+maxOverPromise)*best { // the prediction is for every change: judged where this is all of them
			t.Errorf("num_workers %s → %s was promised %.0f samples/s and gives %.0f: %+.0f %%, beyond +%.0f %%", c.From, c.To, p.Samples, best, 100*(p.Samples/best-1), 100*maxOverPromise)
		}
	}
}

// maxOverPromise is how far a knob's point may run above the rate the
// knob gives: issue 52's ±15 %.
const maxOverPromise = 0.15

func judgeBattery(t *testing.T, cause string, noKnob bool, un, fx batteryRun) {
	t.Helper()
	var found bool
	var free, k, atK float64
	for _, c := range un.verdict.Causes {
		if c.ID == cause && c.Bound != nil {
			found, free, k, atK = true, c.Bound.FreeSamples, c.Bound.K, c.Bound.Samples
			t.Logf("%s: %s", c.ID, c.Evidence)
		}
	}
	gain := fx.own.SamplesPerSec / un.own.SamplesPerSec
	sum := un.getitem + un.collate
	g := un.getitem / sum
	t.Logf("own: %.0f samples/s, wait %.2f, getitem %.3f collate %.3f; gpuwatch (%d frames): getitem %.3f collate %.3f hand-over %.3f (getitem of the two: %.3f); %s; fix: %.0f samples/s, %.2f×; bound %.0f samples/s (%.2f×) at k=%.2g, free %.0f samples/s (%.2f×)",
		un.own.SamplesPerSec, un.own.WaitShare, un.own.GetitemShare, un.own.CollateShare, un.frames, un.getitem, un.collate, un.handover, g,
		un.verdict.Kind, fx.own.SamplesPerSec, gain, atK, atK/un.own.SamplesPerSec, k, free, free/un.own.SamplesPerSec)
	if un.files != "" {
		t.Logf("the looks at the files, last frame: %s", un.files)
	}
	t.Logf("the CPU profile, last frame: %s", cmp.Or(un.profile, "none"))
	if !found {
		t.Logf("the CPUs, last frame: %s", cmp.Or(un.cpu, "not read"))
		if un.rec != "" {
			t.Logf("the recording: %s", un.rec)
		}
		for _, e := range un.verdict.Evidence {
			t.Logf("evidence: %s", e.Text)
		}
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

// fmtPtr is *v for a log line, "nil" for none.
func fmtPtr(v *float64) string {
	if v == nil {
		return "nil"
	}
	return strconv.FormatFloat(*v, 'g', 3, 64)
}
