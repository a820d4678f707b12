//go:build integration

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// gpuProfileLoop is a small CNN's training loop on the CPU (conv,
// batchnorm, relu, linear) over a DataLoader: about 4 s of steps.
const gpuProfileLoop = `
import time, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 30 * 30, 10))
opt = torch.optim.SGD(net.parameters(), lr=0.01)
data = TensorDataset(torch.randn(512, 3, 32, 32), torch.randint(0, 10, (512,)))
t0 = time.perf_counter()
while time.perf_counter() - t0 < 4:
    for x, y in DataLoader(data, batch_size=16):
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
time.sleep(1.5)  # the hook serves its figures a little longer
`

// TestGPUProfileOfACPUStep runs a real loop (Debian's CPU torch) under
// gpuwatch run --gpu-profile=3 and reads the frames' loader.gpu_profile:
// recorded (done) on the CPU, over 3 steps, with fp32 matmul and conv
// among its parts, the parts within the step, the cost said.
func TestGPUProfileOfACPUStep(t *testing.T) {
	py := python(t, true)
	dir := t.TempDir()
	script := filepath.Join(dir, "loop.py")
	if err := os.WriteFile(script, []byte(gpuProfileLoop), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "job.log")
	cmd := exec.Command(binary(t), "run", "--json", "--interval", "500ms", "--profile-every", "0", "--job-log", log, "--gpu-profile=3", "--", py, script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		jl, _ := os.ReadFile(log)
		t.Fatalf("gpuwatch run: %v\nstderr: %s\njob: %s", err, stderr.String(), jl)
	}
	if !strings.Contains(stderr.String(), "gpuwatch: --gpu-profile: from the loop's 10th batch the hook records 3 steps") {
		t.Errorf("no notice on stderr: %q", stderr.String())
	}
	var g *sample.GPUProfile
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l struct {
			Loader *sample.Loader `json:"loader"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Loader != nil && l.Loader.GPUProfile.Done() {
			g = l.Loader.GPUProfile
		}
	}
	if g == nil {
		jl, _ := os.ReadFile(log)
		t.Fatalf("no frame carried a done profile; job: %s", jl)
	}
	if g.Device != "cpu" || g.Steps != 3 || g.StepSeconds == nil || g.CostSeconds == nil || g.BusySecondsPerStep == nil {
		t.Fatalf("profile %+v", g)
	}
	for _, want := range [][2]string{{"matmul", "fp32"}, {"conv", "fp32"}, {"normalization", ""}} {
		if !slices.ContainsFunc(g.Parts, func(p sample.GPUTimePart) bool { return p.Category == want[0] && p.Precision == want[1] }) {
			t.Errorf("no %v in %+v", want, g.Parts)
		}
	}
	sum := 0.0
	for _, p := range g.Parts {
		sum += p.SecondsPerStep
	}
	if sum > *g.StepSeconds {
		t.Errorf("parts %g s a step, more than the step's %g s", sum, *g.StepSeconds)
	}
	t.Logf("%s", g.Summary())
}
