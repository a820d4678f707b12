//go:build integration

package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/gpuwatch/gpuwatch/internal/pprofsum"
)

// python is the interpreter for the hook's tests: $GPUWATCH_PYTHON, else
// Debian's /usr/bin/python3 (the one python3-torch installs into).
func python(t *testing.T, needTorch bool) string {
	t.Helper()
	py := os.Getenv("GPUWATCH_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	check := "import sys; assert sys.version_info >= (3, 9)"
	if needTorch {
		check += "; import torch"
	}
	if out, err := exec.Command(py, "-c", check).CombinedOutput(); err != nil {
		want := "Python ≥ 3.9"
		if needTorch {
			want += " with torch: apt-get install python3-torch"
		}
		msg := py + " cannot run the hook's tests (wants " + want + "): " + strings.TrimSpace(string(out))
		if os.Getenv("GPUWATCH_REQUIRE_PYTHON") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return py
}

// TestPythonHookProfileIsRealPprof takes a profile with the hook's pure-
// Python encoder from a process whose one busy thread runs a known
// function, and reads it with google/pprof's parser, with gpuwatch's
// summary and with `go tool pprof`.
func TestPythonHookProfileIsRealPprof(t *testing.T) {
	py := python(t, false)
	out := filepath.Join(t.TempDir(), "py.pprof")
	script := `
import sys, threading
sys.path.insert(0, "python")
import gpuwatch_hook

def crunch(stop):
    x = 0
    while not stop.is_set():
        for i in range(10000):
            x = (x * 31 + i) & 0xFFFFFFFF

stop = threading.Event()
t = threading.Thread(target=crunch, args=(stop,), name="crunch")
t.start()
data = gpuwatch_hook.take_profile(2.0)
stop.set()
t.join()
open(sys.argv[1], "wb").write(data)
`
	if b, err := exec.Command(py, "-c", script, out).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.ParseData(data)
	if err != nil {
		t.Fatalf("google/pprof cannot parse it: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("not a valid profile: %v", err)
	}
	if p.SampleType[1].Type != "cpu" || p.SampleType[1].Unit != "nanoseconds" || p.DurationNanos < 2e9 {
		t.Fatalf("sample types %v, duration %d", p.SampleType, p.DurationNanos)
	}
	sum, err := pprofsum.SummarizeProfile(data, 5)
	if err != nil {
		t.Fatalf("gpuwatch cannot summarize it: %v", err)
	}
	if len(sum.Top) == 0 || sum.Top[0].Name != "__main__.crunch" || sum.Top[0].Flat < 0.9 {
		t.Fatalf("top functions %+v: want __main__.crunch with ≥ 90 %% flat", sum.Top)
	}
	// At least half a core for the two seconds: the thread spun the whole time.
	if sum.CPUSec < 1 {
		t.Fatalf("%.2f s of CPU in 2 s of a spinning thread", sum.CPUSec)
	}
	top, err := exec.Command("go", "tool", "pprof", "-top", out).CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^\s+\S+s\s+(9\d\.\d+|100)%.*__main__\.crunch$`).Match(top) {
		t.Fatalf("go tool pprof -top: %v\n%s", err, top)
	}
}

// TestPythonHookOnARealDataLoader runs a real PyTorch training loop on the
// CPU (python/examples/train_cpu.py) with the hook, attaches gpuwatch
// headless, and checks the verdict a user of this machine should read, with
// the machine's own threading and with OpenBLAS held to one thread:
//
//   - num_workers=0 and a heavy __getitem__ is single_core_maxed, whatever
//     the training process's compute pools do with the other core (Debian's
//     OpenBLAS pthread build keeps a pool thread spinning there);
//   - light samples and a heavy step (width 2048) with 2 workers is
//     healthy: the step, on the loop's thread, is the busy part;
//   - a lighter step (width 1024) depends on the machine: where OpenBLAS's
//     pool takes most of a core beside the loop and the workers fall
//     behind (the loop waits 30 % or more), the verdict is cpu_saturated,
//     citing the training process's compute threads; where the loop waits
//     15 % or less (the reference BLAS, or a pool that leaves the workers
//     enough), it is healthy. The test asserts the verdict that the job's
//     own wait share calls for, frame by frame, not one machine's outcome.
func TestPythonHookOnARealDataLoader(t *testing.T) {
	py := python(t, true)
	blas, _ := filepath.EvalSymlinks("/usr/lib/x86_64-linux-gnu/libblas.so.3")
	t.Logf("libblas.so.3 is %s", blas)
	heavyGetitem := []string{"--workers", "0", "--getitem-work", "20000", "--hidden", "64"}
	heavyStep := []string{"--workers", "2", "--getitem-work", "0", "--hidden", "2048"}
	// The profile of the Python process names the culprit: one of the
	// profiles within the window does (the first may cover the loop's
	// start; CI once saw a first profile 75 % in collate_tensor_fn).
	profileNames := func(l attachLine) bool {
		for _, f := range l.Profile.Top {
			if strings.HasSuffix(f.Name, "Synthetic.__getitem__") {
				return true
			}
		}
		return false
	}
	type testCase struct {
		name     string
		args     []string
		env      []string
		verdict  string
		evidence string // in the first evidence line
		workers  int
		profiled func(l attachLine) bool // what the profile must show, where set
		// expect, when set, is the verdict and evidence a frame calls for
		// by what the job did (ok false: undecided, wait for another).
		expect func(l attachLine) (verdict, evidence string, ok bool)
	}
	cases := []testCase{
		{"num_workers=0, heavy __getitem__, default threads", heavyGetitem, nil, "single_core_maxed", "the training loop, runs at", 0, profileNames, nil},
		{"num_workers=0, heavy __getitem__, OPENBLAS_NUM_THREADS=1", heavyGetitem, []string{"OPENBLAS_NUM_THREADS=1"}, "single_core_maxed", "the training loop, runs at", 0, profileNames, nil},
		{"light samples, heavy step, default threads", heavyStep, nil, "healthy", "busy", 2, nil, nil},
		{"light samples, heavy step, OPENBLAS_NUM_THREADS=1", heavyStep, []string{"OPENBLAS_NUM_THREADS=1"}, "healthy", "busy", 2, nil, nil},
	}
	lighter := []string{"--workers", "2", "--getitem-work", "0", "--hidden", "1024"}
	// byWait judges by the job's wait over the last 5 frames (the median, as
	// the verdict's window does; one frame's wait swings 0.13–0.25 on this
	// loop): ≥ 0.3, the workers fall behind a CPU the compute pool holds,
	// cpu_saturated citing it; 0.2–0.3, input-bound by the documented rule
	// (wait ≥ 20 %): gpu_starved or cpu_saturated; ≤ 0.15, healthy. In
	// between, near 0.2 where hysteresis decides, any of those three (a
	// run whose wait stayed there for the whole 75 s failed CI with no
	// frame judged; any other kind still fails).
	var waits []float64
	byWait := func(l attachLine) (string, string, bool) {
		if l.Loader == nil || l.Loader.WaitShare == nil {
			return "", "", false
		}
		waits = append(waits, *l.Loader.WaitShare)
		if len(waits) < 5 {
			return "", "", false
		}
		last := slices.Clone(waits[len(waits)-5:])
		slices.Sort(last)
		switch w := last[2]; {
		case w >= 0.3:
			return "cpu_saturated", "compute threads of the training process use", true
		case w >= 0.22:
			if k := l.Verdict.Kind; k == "gpu_starved" || k == "cpu_saturated" {
				return k, "", true
			}
			return "gpu_starved", "", true
		case w <= 0.15:
			return "healthy", "busy", true
		}
		switch k := l.Verdict.Kind; k {
		case "healthy", "gpu_starved", "cpu_saturated":
			return k, "", true
		}
		return "gpu_starved", "", true // a kind no wait here calls for: not matched
	}
	cases = append(cases, testCase{name: "lighter step, the machine's BLAS", args: lighter, verdict: "the job's", evidence: "", workers: 2, expect: byWait})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			train := exec.Command(py, append([]string{"python/examples/train_cpu.py", "--port", "0", "--seconds", "120"}, c.args...)...)
			train.Env = append(os.Environ(), c.env...)
			stderr, err := train.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := train.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = train.Process.Kill(); _ = train.Wait() })
			r := bufio.NewReader(stderr)
			first, err := r.ReadString('\n')
			m := regexp.MustCompile(`serving (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(first)
			if err != nil || m == nil {
				t.Fatalf("the hook's first line %q (%v)", first, err)
			}
			go func() { _, _ = r.WriteTo(os.Stderr) }()
			promtoolCheck(t, m[1]+"/metrics")

			// Default profile settings: the first profile (5 s) comes at start.
			_, ch := startJSON(t, "attach", m[1], "--headless", "--json", "--duration", "90s")
			var seen []string
			t.Cleanup(func() {
				if t.Failed() && len(seen) > 0 {
					t.Logf("verdicts seen (last 8): %q", seen[max(0, len(seen)-8):])
				}
			})
			l := await(t, ch, "the "+c.verdict+" verdict led by "+strconv.Quote(c.evidence)+" and a profile (naming Synthetic.__getitem__ where the case says so)", 75*time.Second, func(l attachLine) bool {
				if l.Verdict == nil || len(l.Verdict.Evidence) == 0 {
					return false
				}
				want, evidence := c.verdict, c.evidence
				if c.expect != nil {
					var ok bool
					if want, evidence, ok = c.expect(l); !ok {
						return false
					}
				}
				wait := "?"
				if l.Loader != nil && l.Loader.WaitShare != nil {
					wait = strconv.FormatFloat(*l.Loader.WaitShare, 'f', 2, 64)
				}
				seen = append(seen, "wait "+wait+": "+l.Verdict.Kind+": "+l.Verdict.Evidence[0].Text)
				return l.Verdict.Kind == want && strings.Contains(l.Verdict.Evidence[0].Text, evidence) && l.Profile != nil && len(l.Profile.Top) > 0 &&
					(c.profiled == nil || c.profiled(l))
			})
			if l.Procs == nil || l.Procs.FocusPID != train.Process.Pid {
				t.Fatalf("process focus %+v, training process %d", l.Procs, train.Process.Pid)
			}
			if l.Loader == nil || l.Loader.Workers == nil || *l.Loader.Workers != c.workers || l.Loader.Batches == 0 {
				t.Fatalf("loader %+v: want %d workers and batches", l.Loader, c.workers)
			}
			if l.Loader.LoopTID == nil || *l.Loader.LoopTID != train.Process.Pid {
				t.Errorf("loop thread %v: want the training process's main thread %d", l.Loader.LoopTID, train.Process.Pid)
			}
			t.Logf("%s after %d batches, wait %.2f: %s; secondary %+v", l.Verdict.Kind, l.Loader.Batches, deref(l.Loader.WaitShare), l.Verdict.Evidence[0].Text, l.Verdict.Secondary)
		})
	}
}

// TestDistributedStragglerRank runs a real two-rank torch.distributed job
// (gloo on the CPU, ranks launched directly with RANK, WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT) with the hook on each rank; rank 1 loads
// its batches in the training process with a heavy __getitem__. One
// gpuwatch attached to both ranks must name rank 1 as the straggler, with
// rank 0 waiting in the all-reduce; and plain gpuwatch must find both
// ranks by discovery, with no URL given.
func TestDistributedStragglerRank(t *testing.T) {
	py := python(t, true)
	runtime := t.TempDir() // the ranks announce themselves here
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+runtime)
	master := freePort(t)
	_, masterPort, _ := net.SplitHostPort(master)
	urls := make([]string, 2)
	var quiet atomic.Bool // the ranks' last words, as the test kills them, are noise
	type served struct {
		rank int
		url  string
	}
	serving := make(chan served, 2)
	serveLine := regexp.MustCompile(`gpuwatch_hook: serving (http://127\.0\.0\.1:\d+)`)
	for r := range 2 {
		// Port 0: each hook takes a free port and says which (a port picked
		// here and closed could be taken by another process before the hook
		// binds it: CI once saw "port 42215 … is in use").
		rank := exec.Command(py, "python/examples/train_ddp.py", "--slow-rank", "1", "--getitem-work", "20000", "--seconds", "170", "--port", "0")
		rank.Env = append(env, "RANK="+strconv.Itoa(r), "LOCAL_RANK="+strconv.Itoa(r), "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+masterPort)
		stderr, err := rank.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := rank.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rank.Process.Kill(); _ = rank.Wait() })
		rd := bufio.NewReader(stderr)
		go func() {
			// The hook's line comes once the process group is up (both ranks).
			for {
				line, err := rd.ReadString('\n')
				if err != nil {
					return
				}
				switch m := serveLine.FindStringSubmatch(line); {
				case m != nil:
					serving <- served{r, m[1]}
				case !quiet.Load():
					fmt.Fprintf(os.Stderr, "rank %d: %s", r, line)
				}
			}
		}()
	}
	t.Cleanup(func() { quiet.Store(true) }) // runs before the kills above
	// Importing torch and forming the process group take a while on a
	// fresh machine: attach once both hooks serve.
	deadline := time.After(120 * time.Second)
	for range 2 {
		select {
		case s := <-serving:
			urls[s.rank] = s.url
		case <-deadline:
			t.Fatal("the ranks' hooks did not start serving within 120 s")
		}
	}
	straggler := func(l attachLine) bool {
		v := l.Verdict
		return v != nil && v.Straggler != nil && *v.Straggler == 1 && len(v.Evidence) > 0 &&
			strings.HasPrefix(v.Evidence[0].Text, "rank 1 waits") && strings.Contains(v.Evidence[0].Text, "rank 0 waits in the all-reduce") &&
			len(l.Ranks) == 2 && l.Ranks[0].Connected && l.Ranks[1].Connected && l.Ranks[1].Pacing
	}
	var seen []string
	watch := func(l attachLine) bool {
		if l.Verdict != nil && len(l.Verdict.Evidence) > 0 {
			seen = append(seen, l.Verdict.Kind+": "+l.Verdict.Evidence[0].Text)
		}
		return straggler(l)
	}
	t.Cleanup(func() {
		if t.Failed() && len(seen) > 0 {
			t.Logf("verdicts seen (last 6): %q", seen[max(0, len(seen)-6):])
		}
	})

	// Attached to both ranks by URL (the ranks may still be starting).
	cmd := exec.Command(binary(t), "attach", urls[0], urls[1], "--headless", "--json", "--duration", "100s")
	cmd.Env = env
	_, out := startCmd(t, cmd)
	l := await(t, lines(t, out), "rank 1 named the straggler", 90*time.Second, watch)
	t.Logf("attach: %s: %s", l.Verdict.Kind, l.Verdict.Evidence[0].Text)
	if w0, w1 := *l.Ranks[0].WaitShare, *l.Ranks[1].WaitShare; w1 < 2*w0 {
		t.Errorf("rank waits %.2f and %.2f: the straggler must wait far more", w0, w1)
	}
	if l.Procs == nil || l.Procs.FocusPID != l.Ranks[1].PID {
		t.Errorf("the process view must follow the straggler (pid %d): %+v", l.Ranks[1].PID, l.Procs)
	}

	// Discovered: plain gpuwatch, no URL.
	seen = nil
	cmd = exec.Command(binary(t), "--headless", "--json", "--duration", "60s")
	cmd.Env = env
	_, out = startCmd(t, cmd)
	l = await(t, lines(t, out), "both ranks discovered and rank 1 named", 50*time.Second, watch)
	found := map[string]bool{l.Ranks[0].URL: true, l.Ranks[1].URL: true}
	if !found[urls[0]] || !found[urls[1]] {
		t.Errorf("discovered %+v, want %v", l.Ranks, urls)
	}
	t.Logf("discovered: %s: %s", l.Verdict.Kind, l.Verdict.Evidence[0].Text)
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
