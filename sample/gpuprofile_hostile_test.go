package sample

import "testing"

// A hook's profile over HTTP with no wall step, no steps before and a GPU
// that neither worked nor waited (busy 0, idle 0: each within the
// endpoint's 0–2^20) makes whole() 0; Summary's "left out" test then reads
// 0 >= 0 and dereferences the nil BeforeStepSeconds.
// A profile with no time in it says so, without a panic.
func TestSummaryOfAZeroStepProfileDoesNotPanic(t *testing.T) {
	zero := 0.0
	g := &GPUProfile{State: GPUProfileDone, Device: "cuda", Steps: 5,
		BusySecondsPerStep: &zero, IdleSecondsPerStep: &zero,
		Parts: []GPUTimePart{{Category: "matmul", Precision: "bf16", SecondsPerStep: 0.01}}}
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Summary panicked: %v", r)
		}
	}()
	if s := g.Summary(); s == "" {
		t.Error("no summary")
	}
}
