package endpoint

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
)

// TestStagesFromTheHooksPage reads the stage and payload series as the
// Python hook served them for a 2-worker DataLoader (captured into
// testdata: dict batches of float64 pixels, padded input_ids and labels).
func TestStagesFromTheHooksPage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "attach", "hook-stages-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := CountersFromMetrics(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"getitem", "collate", "handover", "take", "step"} {
		if got := c.Stages[s]; got.Batches != 8 || got.Seconds <= 0 {
			t.Errorf("stage %s: %+v", s, got)
		}
	}
	if _, ok := c.Stages["pin"]; ok {
		t.Error("pin was not timed (no pin_memory) yet is there")
	}
	if c.Stages["first_batch"].Batches != 1 {
		t.Errorf("first_batch %+v", c.Stages["first_batch"])
	}
	p := c.Payload
	if p == nil || p.Looked != 1 || p.Bytes != 12864 || p.Float64Bytes != 12288 || p.TokenSlots != 64 || p.PaddingSlots != 27 {
		t.Fatalf("payload %+v", p)
	}
	if len(p.Tensors) != 3 || p.Tensors[0].Path != "['pixels']" || p.Tensors[0].DType != "float64" ||
		fmt.Sprint(p.Tensors[0].Shape) != "[8 3 8 8]" || p.Tensors[0].Pinned == nil || *p.Tensors[0].Pinned {
		t.Fatalf("tensors %+v", p.Tensors)
	}
	if len(c.Dropped) != 0 {
		t.Fatalf("dropped %v", c.Dropped)
	}
}

// TestStagesFromAHostilePage: what no stage can be is left out and said;
// unknown stages are ignored; labels are cut and made printable; the
// tensor list is bounded.
func TestStagesFromAHostilePage(t *testing.T) {
	var page strings.Builder
	page.WriteString(`gpuwatch_loader_batches_total 3
gpuwatch_loader_stage_seconds_total{stage="getitem"} NaN
gpuwatch_loader_stage_batches_total{stage="getitem"} 3
gpuwatch_loader_stage_seconds_total{stage="collate"} 1
gpuwatch_loader_stage_seconds_total{stage="handover"} -1
gpuwatch_loader_stage_batches_total{stage="handover"} 3
gpuwatch_loader_stage_seconds_total{stage="take"} 0.5
gpuwatch_loader_stage_batches_total{stage="take"} 2
gpuwatch_loader_stage_seconds_total{stage="rm -rf"} 1
gpuwatch_loader_stage_batches_total{stage="rm -rf"} 1
gpuwatch_loader_batches_looked_total 2
gpuwatch_loader_batch_bytes_total 100
gpuwatch_loader_batch_float64_bytes_total 50
`)
	for i := range 40 {
		fmt.Fprintf(&page, "gpuwatch_loader_batch_tensor_bytes{index=\"%d\",path=\"\x1b[31m%s\",dtype=\"f\",shape=\"1x-2\"} 4\n", i, strings.Repeat("é", 100))
	}
	c, _, err := CountersFromMetrics([]byte(page.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Stages) != 1 || c.Stages["take"] != (StageCount{0.5, 2}) {
		t.Fatalf("stages %+v", c.Stages)
	}
	if len(c.Dropped) != 3 { // getitem NaN, collate without batches, handover negative
		t.Fatalf("dropped %q", c.Dropped)
	}
	if c.Payload == nil || len(c.Payload.Tensors) != maxPayloadTensors {
		t.Fatalf("payload %+v", c.Payload)
	}
	tt := c.Payload.Tensors[0]
	if strings.ContainsRune(tt.Path, 0x1b) || len(tt.Path) > 128 || tt.Shape != nil {
		t.Fatalf("tensor %+v", tt)
	}
	// Parts larger than the whole: no payload at all.
	c, _, _ = CountersFromMetrics([]byte("gpuwatch_loader_batches_total 1\ngpuwatch_loader_batches_looked_total 1\ngpuwatch_loader_batch_bytes_total 1\ngpuwatch_loader_batch_float64_bytes_total 2\n"))
	if c.Payload != nil || len(c.Dropped) != 1 {
		t.Fatalf("payload %+v dropped %v", c.Payload, c.Dropped)
	}
	// Stage series alone are no loader.
	if _, _, err := CountersFromMetrics([]byte("gpuwatch_loader_stage_seconds_total{stage=\"take\"} 1\ngpuwatch_loader_stage_batches_total{stage=\"take\"} 1\n")); err == nil {
		t.Fatal("a page of stage series only was taken for a loader")
	}
}

func stageCounters(n int, getitem, collate, handover float64, workers int) LoaderCounters {
	c := counters(n, 10*time.Millisecond, 20*time.Millisecond)
	c.Workers = &workers
	c.Stages = map[string]StageCount{"getitem": {getitem * float64(n), uint64(n)}, "collate": {collate * float64(n), uint64(n)}}
	if handover > 0 {
		c.Stages["handover"] = StageCount{handover * float64(n), uint64(n)}
	}
	return c
}

func isAbout(a *float64, b float64) bool { return a != nil && math.Abs(*a-b) < 1e-9 }

// TestLoaderStagesPerBatchAndShares: the interval's seconds per batch of
// each stage, and each worker stage's share of the workers' time.
func TestLoaderStagesPerBatchAndShares(t *testing.T) {
	src := &fakeLoader{c: stageCounters(10, 0.030, 0.006, 0.004, 2)}
	p := NewLoader(src)
	collectLoader(t, p, probetest.T0)
	src.c = stageCounters(30, 0.030, 0.006, 0.004, 2)
	src.c.Stages["getitem"] = StageCount{0.030*10 + 0.060*20, 30} // the new batches cost 60 ms
	l := collectLoader(t, p, probetest.T0.Add(time.Second)).Loader
	s := l.Stages
	if s == nil || !isAbout(s.GetitemMs, 60) || !isAbout(s.CollateMs, 6) || !isAbout(s.HandoverMs, 4) || s.TakeMs != nil || s.Inline {
		t.Fatalf("stages %+v", s)
	}
	if !isAbout(s.GetitemShare, 60.0/70) || !isAbout(s.CollateShare, 6.0/70) || !isAbout(s.HandoverShare, 4.0/70) {
		t.Fatalf("shares %v %v %v", *s.GetitemShare, *s.CollateShare, *s.HandoverShare)
	}
	// No batch over the next interval: no stage figures, not zeros.
	if l := collectLoader(t, p, probetest.T0.Add(2*time.Second)).Loader; l.Stages != nil {
		t.Fatalf("stages of an interval without batches: %+v", l.Stages)
	}
	// Inline (num_workers=0): no hand-over, and said.
	src = &fakeLoader{c: stageCounters(1, 0.01, 0.01, 0, 0)}
	p = NewLoader(src)
	collectLoader(t, p, probetest.T0)
	src.c = stageCounters(5, 0.01, 0.01, 0, 0)
	if s := collectLoader(t, p, probetest.T0.Add(time.Second)).Loader.Stages; s == nil || !s.Inline || !isAbout(s.GetitemShare, 0.5) || s.HandoverShare != nil {
		t.Fatalf("inline stages %+v", s)
	}
	// A restarted loader: counted from zero, never negative.
	src.c = stageCounters(2, 0.02, 0.01, 0, 0)
	if s := collectLoader(t, p, probetest.T0.Add(2*time.Second)).Loader.Stages; s == nil || !isAbout(s.GetitemMs, 20) {
		t.Fatalf("after a restart %+v", s)
	}
}

// TestBatchPayloadOverTheInterval: bytes per batch and per second, the
// float64, pinned and padding shares over the interval's looks, and over
// every look when the interval had none.
func TestBatchPayloadOverTheInterval(t *testing.T) {
	prev := &PayloadCounters{Looked: 2, Bytes: 2000, Float64Bytes: 0, TokenSlots: 100, PaddingSlots: 10}
	cur := &PayloadCounters{Looked: 4, Bytes: 6000, Float64Bytes: 3000, PinnedBytes: 1000, TokenSlots: 200, PaddingSlots: 60}
	p := batchPayload(prev, cur, 10)
	if p.BatchesLooked != 4 || p.BytesPerBatch != 2000 || !isAbout(p.BytesPerSec, 20000) || !isAbout(p.Float64Share, 0.75) ||
		!isAbout(p.PinnedShare, 0.25) || !isAbout(p.PaddingShare, 0.5) {
		t.Fatalf("payload %+v", p)
	}
	p = batchPayload(cur, cur, 0)
	if p.BytesPerBatch != 1500 || p.BytesPerSec != nil || !isAbout(p.PaddingShare, 0.3) {
		t.Fatalf("payload without a look in the interval %+v", p)
	}
	if batchPayload(nil, &PayloadCounters{}, 1) != nil || batchPayload(nil, nil, 1) != nil {
		t.Fatal("a payload from no look")
	}
	if p := batchPayload(nil, &PayloadCounters{Looked: 1}, 1); p.Float64Share != nil || p.PaddingShare != nil {
		t.Fatalf("shares of nothing %+v", p)
	}
}

// TestCopyFromTheHooksPage reads the loop's copies to the GPU (the hook's
// gpuwatch_loader_h2d_* series) and their figures over an interval; parts
// larger than the whole, or seconds that are none, drop the copy and say
// so.
func TestCopyFromTheHooksPage(t *testing.T) {
	page := func(pinned, hostSec string) []byte {
		return []byte(`gpuwatch_loader_batches_total 40
gpuwatch_loader_batches_looked_total 10
gpuwatch_loader_batch_bytes_total 10485760
gpuwatch_loader_h2d_batches_total 8
gpuwatch_loader_h2d_copies_total 16
gpuwatch_loader_h2d_bytes_total 8388608
gpuwatch_loader_h2d_pinned_bytes_total ` + pinned + `
gpuwatch_loader_h2d_non_blocking_bytes_total 0
gpuwatch_loader_h2d_host_seconds_total ` + hostSec + `
gpuwatch_loader_h2d_device_seconds_total 0.004
gpuwatch_loader_h2d_device_bytes_total 4194304
gpuwatch_loader_h2d_device 0
`)
	}
	c, _, err := CountersFromMetrics(page("8388608", "0.008"))
	if err != nil {
		t.Fatal(err)
	}
	k := c.Payload.Copy
	if k == nil || k.Batches != 8 || k.Bytes != 8<<20 || k.PinnedBytes != 8<<20 || k.DeviceBytes != 4<<20 || k.HostSeconds != 0.008 || k.Device == nil || *k.Device != 0 {
		t.Fatalf("copy %+v", k)
	}
	h := hostCopy(nil, k)
	// 1 MiB a batch; 1 ms of the loop each; the GPU's 4 ms for 4 MiB: 1 ms a MiB, 1000 MiB/s.
	if h.BytesPerBatch != 1<<20 || !isAbout(&h.HostMsPerBatch, 1) || !isAbout(h.DeviceMsPerBatch, 1) || !isAbout(h.BytesPerSec, 1000<<20) ||
		h.PinnedShare != 1 || h.NonBlockingShare != 0 {
		t.Fatalf("copy figures %+v", h)
	}
	later := *k
	later.Batches, later.Bytes, later.PinnedBytes, later.HostSeconds = 10, 10<<20, 8<<20, 0.012
	if h := hostCopy(k, &later); h.BatchesCopied != 10 || h.BytesPerBatch != 1<<20 || !isAbout(&h.HostMsPerBatch, 2) || h.PinnedShare != 0 || h.DeviceMsPerBatch != nil {
		t.Fatalf("the interval's two pageable copies: %+v", h)
	}
	// An absent pinned or non_blocking series is no figure, not 0 (which
	// was "all pageable", and pin_memory advised).
	for _, name := range []string{"gpuwatch_loader_h2d_pinned_bytes_total", "gpuwatch_loader_h2d_non_blocking_bytes_total"} {
		var kept []string
		for _, l := range strings.Split(string(page("8388608", "0.008")), "\n") {
			if !strings.HasPrefix(l, name+" ") {
				kept = append(kept, l)
			}
		}
		c, _, err := CountersFromMetrics([]byte(strings.Join(kept, "\n")))
		if err != nil {
			t.Fatal(err)
		}
		if c.Payload.Copy != nil || len(c.Dropped) != 1 || !strings.Contains(c.Dropped[0], "h2d") {
			t.Errorf("without %s: copy %+v dropped %v", name, c.Payload.Copy, c.Dropped)
		}
	}
	for _, bad := range [][2]string{{"9999999999", "0.008"}, {"0", "NaN"}, {"0", "-1"}} {
		c, _, err := CountersFromMetrics(page(bad[0], bad[1]))
		if err != nil {
			t.Fatal(err)
		}
		if c.Payload.Copy != nil || len(c.Dropped) != 1 || !strings.Contains(c.Dropped[0], "h2d") {
			t.Errorf("pinned %s, host seconds %s: copy %+v dropped %v", bad[0], bad[1], c.Payload.Copy, c.Dropped)
		}
	}
}
