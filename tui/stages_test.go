package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestLoaderPanelShowsTheStagesAndTheBatch: one bar of where a worker's
// time per batch goes, the loop's own stages, what a batch holds, and its
// copy to the GPU.
func TestLoaderPanelShowsTheStagesAndTheBatch(t *testing.T) {
	yes := false
	m := synthetic(4, func(i int, f *sample.Frame) {
		hostParts(f, 4, func(c int) float64 { return 50 }, 1)
		f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", Batches: 100, BatchesPerSec: 10, SamplesPerSec: 320,
			WaitShare: f64(0.7), StepMeanMs: f64(12), Workers: iptr(2),
			Stages: &sample.LoaderStages{GetitemMs: f64(30), CollateMs: f64(8), HandoverMs: f64(2), TakeMs: f64(0.4), StepMs: f64(12),
				GetitemShare: f64(0.75), CollateShare: f64(0.2), HandoverShare: f64(0.05)},
			Payload: &sample.BatchPayload{BatchesLooked: 9, BytesPerBatch: 19.7e6, BytesPerSec: f64(197e6), Float64Share: f64(0.99),
				PaddingShare: f64(0.78), PinnedShare: f64(0), Tensors: []sample.PayloadTensor{{Path: "[0]", DType: "float64", Shape: []int64{32, 3, 160, 160}, Bytes: 19660800, Pinned: &yes}},
				Copy: &sample.HostCopy{BatchesCopied: 4, BytesPerBatch: 19.7e6, HostMsPerBatch: 7.2, DeviceMsPerBatch: f64(7.4), BytesPerSec: f64(2.66e9)}}}
	})
	m.w, m.h = 160, 50
	out := ansi.Strip(m.Render())
	for _, want := range []string{ // pieces: the panel wraps its lines
		"stages workers ▕" + strings.Repeat("█", 15) + strings.Repeat("▓", 4) + "▒▏ getitem 75% · collate 20% · hand-over 5%",
		"40ms a batch │ loop: take 0.4ms · step 12ms",
		"batch 19M · 188M/s · float64 99% of its bytes · padding 78% of its tokens",
		"pinned 0% · [0] float64 32×3×160×160",
		"copy to the GPU 19MiB a batch: the loop 7.2ms in the copy, the GPU 7.4ms,", "2.5GiB/s; pageable, blocking",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

// A loop stuck for a batch: the loader panel says how long it has waited;
// a wait under a second (between two batches) is not said.
func TestLoaderPanelSaysAWaitUnderWay(t *testing.T) {
	for _, c := range []struct {
		ms   float64
		want bool
	}{{12500, true}, {300, false}} {
		m := synthetic(4, func(i int, f *sample.Frame) {
			hostParts(f, 4, func(c int) float64 { return 5 }, 1)
			f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", Batches: 100,
				WaitShare: f64(1), Workers: iptr(2), WaitingMs: f64(c.ms)}
		})
		m.w, m.h = 160, 50
		out := ansi.Strip(m.Render())
		if got := strings.Contains(out, "waiting 12s for a batch"); got != c.want || strings.Contains(out, "waiting 300ms") {
			t.Errorf("waiting %g ms: said %v, want %v\n%s", c.ms, got, c.want, out)
		}
	}
}
