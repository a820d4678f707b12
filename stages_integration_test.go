//go:build integration

package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// stagesLoop is a real DataLoader loop with 2 workers that measures its
// own stages: each sample sleeps (a read) and burns CPU (a decode) inside
// __getitem__, collate_fn sleeps and stacks, and each batch carries what
// its samples and its collate took, measured inside, to the training
// process, which writes the shares at the end.
const stagesLoop = `
import json, sys, time
import torch
from torch.utils.data import DataLoader, Dataset

class DS(Dataset):
    def __len__(self): return 100000
    def __getitem__(self, i):
        t = time.perf_counter()
        time.sleep(0.004)
        x = 0
        while time.perf_counter() - t < 0.006:
            x += 1
        return torch.full((16,), float(i)), time.perf_counter() - t

def collate(samples):
    t = time.perf_counter()
    time.sleep(0.008)
    x = torch.stack([s[0] for s in samples])
    return x, torch.tensor([sum(s[1] for s in samples), time.perf_counter() - t], dtype=torch.float64)

loader = DataLoader(DS(), batch_size=4, num_workers=2, collate_fn=collate)
own = torch.zeros(2, dtype=torch.float64)
end = time.monotonic() + float(sys.argv[2])
for x, t in loader:
    own += t
    time.sleep(0.005)
    if time.monotonic() > end:
        break
json.dump({"getitem_share": float(own[0] / own.sum()), "collate_share": float(own[1] / own.sum())}, open(sys.argv[1], "w"))
`

// TestRunStageSharesMatchTheLoopsOwn: `gpuwatch run --json` on an
// unmodified DataLoader loop publishes stage shares within 0.10 of the
// shares the loop measures of itself, a hand-over and a take, and what a
// batch holds (a looser check on a loaded 2-core machine: means over the
// frames that timed stages).
func TestRunStageSharesMatchTheLoopsOwn(t *testing.T) {
	py := python(t, true)
	dir := t.TempDir()
	script, truth := filepath.Join(dir, "loop.py"), filepath.Join(dir, "truth.json")
	if err := os.WriteFile(script, []byte(stagesLoop), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t), "run", "--json", "--", py, script, truth, "12")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	var own struct {
		GetitemShare float64 `json:"getitem_share"`
		CollateShare float64 `json:"collate_share"`
	}
	b, err := os.ReadFile(truth)
	if err != nil {
		t.Fatalf("the loop wrote no truth: %v (%s)", err, stderr.String())
	}
	if err := json.Unmarshal(b, &own); err != nil {
		t.Fatal(err)
	}
	var getitem, collate, handover, take, runDelay []float64
	var payload *struct {
		BytesPerBatch float64 `json:"bytes_per_batch"`
		Tensors       []struct {
			DType string  `json:"dtype"`
			Shape []int64 `json:"shape"`
		} `json:"tensors"`
	}
	for _, line := range bytes.Split(stdout.Bytes(), []byte("\n")) {
		var f struct {
			Type   string `json:"type"`
			Loader *struct {
				Stages *struct {
					GetitemShare  *float64 `json:"getitem_share"`
					CollateShare  *float64 `json:"collate_share"`
					HandoverShare *float64 `json:"handover_share"`
					TakeMs        *float64 `json:"take_ms"`
				} `json:"stages"`
				Payload  json.RawMessage `json:"payload"`
				RunDelay *float64        `json:"workers_run_delay_share"`
			} `json:"loader"`
		}
		if len(line) == 0 || json.Unmarshal(line, &f) != nil || f.Type != "frame" || f.Loader == nil {
			continue
		}
		if s := f.Loader.Stages; s != nil && s.GetitemShare != nil && s.CollateShare != nil && s.HandoverShare != nil && s.TakeMs != nil {
			getitem, collate = append(getitem, *s.GetitemShare), append(collate, *s.CollateShare)
			handover, take = append(handover, *s.HandoverShare), append(take, *s.TakeMs)
		}
		if f.Loader.RunDelay != nil {
			runDelay = append(runDelay, *f.Loader.RunDelay)
		}
		if len(f.Loader.Payload) > 0 {
			_ = json.Unmarshal(f.Loader.Payload, &payload)
		}
	}
	if len(getitem) < 5 {
		t.Fatalf("%d frames with the workers' stages, want ≥ 5:\n%s", len(getitem), stdout.String())
	}
	g, c := mean(getitem), mean(collate)
	t.Logf("the loop's own: getitem %.3f collate %.3f; gpuwatch's (mean of %d frames): getitem %.3f collate %.3f hand-over %.3f take %.2f ms; workers' run delay %.2f (%d frames)",
		own.GetitemShare, own.CollateShare, len(getitem), g, c, mean(handover), mean(take), mean(runDelay), len(runDelay))
	if math.Abs(g-own.GetitemShare) > 0.10 || math.Abs(c-own.CollateShare) > 0.10 {
		t.Errorf("stage shares getitem %.3f collate %.3f, the loop's own %.3f %.3f: more than 0.10 apart", g, c, own.GetitemShare, own.CollateShare)
	}
	if payload == nil || payload.BytesPerBatch != 4*16*4+2*8 || len(payload.Tensors) != 2 || payload.Tensors[0].DType != "float32" {
		t.Errorf("payload %+v, want 4×16 float32 and 2 float64 per batch", payload)
	}
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
