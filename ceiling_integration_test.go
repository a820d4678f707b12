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

// ceilingLoop is a DataLoader loop bound by its workers (each sample
// sleeps in __getitem__; the step is a fixed 2 ms of the loop's own
// time). It counts the indices it receives, then measures its own rate
// with its batches built ahead of time and held in memory, and prints
// both as a JSON line to stderr (the job's log).
const ceilingLoop = `
import json, sys, time, torch
from torch.utils.data import DataLoader, Dataset
N, B, STEP = 3200, 16, 0.002

class Slow(Dataset):
    def __len__(self):
        return N
    def __getitem__(self, i):
        time.sleep(0.004)
        return torch.full((64,), float(i)), i

def step(x):
    t = time.perf_counter()
    x.sum()
    while time.perf_counter() - t < STEP:
        pass

seen = []
for x, idx in DataLoader(Slow(), batch_size=B, num_workers=2, shuffle=False):
    step(x)
    seen.extend(int(i) for i in idx)

held = [(torch.full((B, 64), float(k)), torch.arange(B)) for k in range(32)]
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < 2.0:
    x, idx = held[n % len(held)]
    step(x)
    n += 1
memory = n * B / (time.perf_counter() - t0)

first, got, repeats = [], set(), set()
for i in seen:
    (repeats.add(i) if i in got else first.append(i))
    got.add(i)
print("CEILING-LOOP " + json.dumps({"memory": memory, "whole": first == list(range(N)), "repeated": len(repeats), "seen": len(seen)}), file=sys.stderr, flush=True)
time.sleep(1.5)  # the hook serves its figures a little longer
`

// TestCeilingMeasuredOnARealLoop runs a workers-bound DataLoader loop
// under gpuwatch run --ceiling=3s (Debian's torch) and holds the ceiling
// the hook measured, as the frames carry it, against the rate the same
// loop reaches with its batches held in memory: within ±10 %. The loop
// received every index of its real stream once, in order; the only
// repeats are of the batches kept (at most 32 × 16 indices).
func TestCeilingMeasuredOnARealLoop(t *testing.T) {
	py := python(t, true)
	dir := t.TempDir()
	script := filepath.Join(dir, "loop.py")
	if err := os.WriteFile(script, []byte(ceilingLoop), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "job.log")
	cmd := exec.Command(binary(t), "run", "--json", "--interval", "500ms", "--profile-every", "0", "--job-log", log, "--ceiling=3s", "--", py, script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		jl, _ := os.ReadFile(log)
		t.Fatalf("gpuwatch run: %v\nstderr: %s\njob: %s", err, stderr.String(), jl)
	}
	if !strings.Contains(stderr.String(), "gpuwatch: --ceiling: once the loop is warm it trains on repeated batches for 3s to measure its rate with input free") {
		t.Errorf("no notice on stderr: %q", stderr.String())
	}
	var c *sample.Ceiling
	var evidence string
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
			c = l.Loader.Ceiling
		}
		for _, e := range l.Verdict.Evidence {
			if strings.HasPrefix(e.Text, "with its input free the loop took") {
				evidence = e.Text
			}
		}
	}
	jl, _ := os.ReadFile(log)
	_, line, ok := strings.Cut(string(jl), "CEILING-LOOP ")
	var loop struct {
		Memory         float64
		Whole          bool
		Repeated, Seen int
	}
	if !ok || json.Unmarshal([]byte(strings.SplitN(line, "\n", 2)[0]), &loop) != nil {
		t.Fatalf("the loop did not report: %s", jl)
	}
	if c == nil {
		t.Fatalf("no frame carried a measured ceiling; job: %s", jl)
	}
	ratio := *c.SamplesPerSec / loop.Memory
	t.Logf("ceiling %.0f samples/s (step %.2f ms, starving %.2f ms, before %.0f samples/s, %d batches kept, replay %.2f s); in memory %.0f samples/s: ratio %.3f; evidence %q; %d indices seen, %d repeated; %.1f s in all",
		*c.SamplesPerSec, deref(c.StepMs), deref(c.StarvingStepMs), deref(c.BeforeSamplesPerSec), derefInt(c.KeptBatches), deref(c.MeasuredSeconds), loop.Memory, ratio, evidence, loop.Seen, loop.Repeated, time.Since(start).Seconds())
	if ratio < 0.9 || ratio > 1.1 {
		t.Errorf("the ceiling is %.0f samples/s, the loop in memory %.0f: not within ±10 %%", *c.SamplesPerSec, loop.Memory)
	}
	if !loop.Whole || loop.Repeated > 32*16 || loop.Repeated == 0 {
		t.Errorf("the real stream: whole %v, %d indices repeated (want the kept batches' only, at most 512)", loop.Whole, loop.Repeated)
	}
	if evidence == "" {
		t.Error("no verdict said the ceiling")
	}
}

func derefInt(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
