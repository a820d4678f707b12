//go:build integration

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// ceilingHead starts each ceiling loop: N samples in batches of B, and
// work(n), n turns of pure-Python arithmetic, with RATE its turns per CPU
// second (calibrated before any worker starts, so workers inherit it).
const ceilingHead = `
import json, os, sys, time, torch
from torch.utils.data import DataLoader, Dataset

def work(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) & 0xFFFF
    return x

def calibrate():
    best = 0.0
    for _ in range(3):
        t = time.thread_time()
        work(200000)
        best = max(best, 200000 / max(time.thread_time() - t, 1e-6))
    return best

RATE = calibrate()
`

// ceilingTail runs the loop the body defined (loader, step, N, B): it
// measures its own rate with its batches built ahead of time and held in
// memory (no loader, no workers) for 2 s before the real stream and 2 s
// after it, so that a drift of the machine's speed over the run (a shared
// VM's neighbours) weighs on the reference as on the ceiling between;
// counts the indices it receives; and prints both as a JSON line to
// stderr (the job's log).
const ceilingTail = `
def in_memory():
    held = [(torch.full((B, 64), float(k)), torch.arange(B)) for k in range(32)]
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 2.0:
        x, idx = held[n % len(held)]
        step(x)
        n += 1
    return n * B / (time.perf_counter() - t0)

before = in_memory()
seen = []
for x, idx in loader:
    step(x)
    seen.extend(int(i) for i in idx)
after = in_memory()

first, got, repeats = [], set(), set()
for i in seen:
    (repeats.add(i) if i in got else first.append(i))
    got.add(i)
print("CEILING-LOOP " + json.dumps({"memory": (before + after) / 2, "before": before, "after": after, "whole": first == list(range(N)), "repeated": len(repeats), "seen": len(seen)}), file=sys.stderr, flush=True)
time.sleep(1.5)  # the hook serves its figures a little longer
`

// clockStep is a step of a fixed 2 ms of the loop's own time, by the clock.
const clockStep = `
STEP = 0.002
def step(x):
    t = time.perf_counter()
    x.sum()
    while time.perf_counter() - t < STEP:
        pass
`

// ceilingLoops are real DataLoader loops, each bound by its input in its
// own way. The body defines N, B, loader and step; argv[1] is a directory
// of its own.
var ceilingLoops = []struct {
	name string
	body string
	// apartFromStep: the ceiling must differ from the rate the hook's
	// step while starving implies (B ÷ step) by more than this share.
	apartFromStep float64
}{
	{"workers-bound: each sample sleeps in a worker", `
N, B = 3200, 16
class Slow(Dataset):
    def __len__(self):
        return N
    def __getitem__(self, i):
        time.sleep(0.004)
        return torch.full((64,), float(i)), i
` + clockStep + `
loader = DataLoader(Slow(), batch_size=B, num_workers=2, shuffle=False)
`, 0},
	// Each sample reads its own file from disk. The file is in the page
	// cache, so the read itself is fast: a 4 ms sleep before each read
	// stands for the latency of network storage (a remote file system or
	// object store), which is what bounds such a loop.
	{"storage-bound: each sample reads a file, 4 ms latency per read", `
N, B = 3200, 16
for i in range(N):
    with open(os.path.join(sys.argv[1], "%d.bin" % i), "wb") as f:
        f.write(torch.full((64,), float(i)).numpy().tobytes())
os.sync()  # written back now, not by the kernel's flusher while measured
class Files(Dataset):
    def __len__(self):
        return N
    def __getitem__(self, i):
        time.sleep(0.004)  # the storage's latency per read
        with open(os.path.join(sys.argv[1], "%d.bin" % i), "rb") as f:
            x = torch.frombuffer(bytearray(f.read()), dtype=torch.float32)
        return x, i
` + clockStep + `
loader = DataLoader(Files(), batch_size=B, num_workers=2, shuffle=False)
`, 0},
	// num_workers=0: each sample costs 1 ms of CPU in the training
	// process itself, between the loop's steps.
	{"inline: the training process loads each sample (num_workers=0)", `
N, B = 4800, 16
class Inline(Dataset):
    def __len__(self):
        return N
    def __getitem__(self, i):
        work(int(0.001 * RATE))
        return torch.full((64,), float(i)), i
` + clockStep + `
loader = DataLoader(Inline(), batch_size=B, num_workers=0, shuffle=False)
`, 0},
	// Four CPU-bound workers on a machine of two cores (CI's) or more
	// than the machine has: they take the training process's CPU, and
	// its step, 4 ms of CPU, takes longer by the clock while they run.
	// The step is counted on its thread's CPU clock, not in turns of
	// work: a shared VM's speed drifts by ±30 % within seconds (measured
	// on the dev box), which would move a fixed amount of work, while the
	// CPU time a step needs stays put; only losing the CPU stretches it.
	// The step while starving then understates the loop's speed with its
	// input free; the replay (the workers idle once their prefetch is
	// full) measures it.
	{"workers take the loop's CPU: CPU-bound workers, more than the cores", `
N, B = 9600, 16
W = max(4, 2 * (os.cpu_count() or 1))
class Heavy(Dataset):
    def __len__(self):
        return N
    def __getitem__(self, i):
        work(int(0.001 * RATE))
        return torch.full((64,), float(i)), i
STEP_CPU = 0.004
def step(x):
    x.sum()
    t = time.thread_time()
    while time.thread_time() - t < STEP_CPU:
        pass
loader = DataLoader(Heavy(), batch_size=B, num_workers=W, shuffle=False)
`, 0.15},
}

// ceilingRun is what one loop under gpuwatch run --ceiling gave: the
// ceiling the frames carried, the verdict's line on it, and the loop's
// own report.
type ceilingRun struct {
	c        *sample.Ceiling
	evidence string
	memory   float64 // the mean of before and after
	before   float64
	after    float64
	whole    bool
	repeated int
	seen     int
}

// runCeilingLoop runs script under gpuwatch run --ceiling=3s and reads
// the frames and the job's log.
func runCeilingLoop(t *testing.T, py, script, dir string) ceilingRun {
	t.Helper()
	log := filepath.Join(dir, "job.log")
	cmd := exec.Command(binary(t), "run", "--json", "--interval", "500ms", "--profile-every", "0", "--job-log", log, "--ceiling=3s", "--", py, script, dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		jl, _ := os.ReadFile(log)
		t.Fatalf("gpuwatch run: %v\nstderr: %s\njob: %s", err, stderr.String(), jl)
	}
	if !strings.Contains(stderr.String(), "gpuwatch: --ceiling: once the loop is warm it trains on repeated batches for 3s to measure its rate with input free") {
		t.Errorf("no notice on stderr: %q", stderr.String())
	}
	var r ceilingRun
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l struct {
			Loader  *sample.Loader `json:"loader"`
			Verdict struct {
				Evidence []struct {
					Text string `json:"text"`
				} `json:"evidence"`
			} `json:"verdict"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		if l.Loader != nil && l.Loader.Ceiling.Measured() {
			r.c = l.Loader.Ceiling
		}
		for _, e := range l.Verdict.Evidence {
			if strings.HasPrefix(e.Text, "with its input free the loop took") {
				r.evidence = e.Text
			}
		}
	}
	jl, _ := os.ReadFile(log)
	_, line, ok := strings.Cut(string(jl), "CEILING-LOOP ")
	var loop struct {
		Memory, Before, After float64
		Whole                 bool
		Repeated, Seen        int
	}
	if !ok || json.Unmarshal([]byte(strings.SplitN(line, "\n", 2)[0]), &loop) != nil {
		t.Fatalf("the loop did not report: %s", jl)
	}
	if r.c == nil {
		t.Fatalf("no frame carried a measured ceiling; job: %s", jl)
	}
	r.memory, r.before, r.after, r.whole, r.repeated, r.seen = loop.Memory, loop.Before, loop.After, loop.Whole, loop.Repeated, loop.Seen
	return r
}

// TestCeilingMeasuredOnARealLoop runs each of ceilingLoops, real
// DataLoader loops (Debian's torch), under gpuwatch run --ceiling=3s and
// holds the ceiling the hook measured, as the frames carry it, against
// the rate the same loop reaches with its batches held in memory (the
// mean of its runs before and after the real stream): within ±10 %. The loop received every index of its real stream once, in
// order; the only repeats are of the batches kept (at most 32 × 16
// indices). Where the loop's workers take its CPU, the ceiling is also
// more than 15 % away from the rate its step while starving implies:
// the figure a step-derived estimate would have given.
func TestCeilingMeasuredOnARealLoop(t *testing.T) {
	py := python(t, true)
	for _, loop := range ceilingLoops {
		t.Run(loop.name, func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, "loop.py")
			if err := os.WriteFile(script, []byte(ceilingHead+loop.body+ceilingTail), 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r := runCeilingLoop(t, py, script, dir)
			c := r.c
			ratio := *c.SamplesPerSec / r.memory
			// The rate the step while starving implies: B samples a step.
			fromStep := 0.0
			if c.StarvingStepMs != nil && *c.StarvingStepMs > 0 && c.BeforeSamplesPerSec != nil && c.BeforeBatchesPerSec != nil && *c.BeforeBatchesPerSec > 0 {
				fromStep = *c.BeforeSamplesPerSec / *c.BeforeBatchesPerSec * 1000 / *c.StarvingStepMs
			}
			t.Logf("ceiling %.0f samples/s (step %.2f ms, starving %.2f ms, before %.0f samples/s, %d batches kept, replay %.2f s); in memory %.0f samples/s (%.0f before, %.0f after): ratio %.3f; from the starving step %.0f samples/s: ceiling/that %.3f; evidence %q; %d indices seen, %d repeated; %.1f s in all",
				*c.SamplesPerSec, deref(c.StepMs), deref(c.StarvingStepMs), deref(c.BeforeSamplesPerSec), derefInt(c.KeptBatches), deref(c.MeasuredSeconds), r.memory, r.before, r.after, ratio, fromStep, *c.SamplesPerSec/fromStep, r.evidence, r.seen, r.repeated, time.Since(start).Seconds())
			if ratio < 0.9 || ratio > 1.1 {
				t.Errorf("the ceiling is %.0f samples/s, the loop in memory %.0f: not within ±10 %%", *c.SamplesPerSec, r.memory)
			}
			if loop.apartFromStep > 0 {
				if fromStep <= 0 {
					t.Errorf("no step while starving to compare with: %+v", c)
				} else if d := *c.SamplesPerSec/fromStep - 1; d < loop.apartFromStep && d > -loop.apartFromStep {
					t.Errorf("the ceiling is %.0f samples/s, the starving step implies %.0f: %+.0f %%, want more than %.0f %% apart", *c.SamplesPerSec, fromStep, 100*d, 100*loop.apartFromStep)
				}
			}
			if !r.whole || r.repeated > 32*16 || r.repeated == 0 {
				t.Errorf("the real stream: whole %v, %d indices repeated (want the kept batches' only, at most 512)", r.whole, r.repeated)
			}
			if r.evidence == "" {
				t.Error("no verdict said the ceiling")
			}
		})
	}
}

func derefInt(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
