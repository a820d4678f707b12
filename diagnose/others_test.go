package diagnose

import (
	"math"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestOthersCoresLeavesOutInterruptsAndTheTree: the rest of the box is
// its busy CPUs less interrupts (which the job's own I/O raises) and less
// the watched tree's, the median over the frames; no frame with both is
// unread, not 0.
func TestOthersCoresLeavesOutInterruptsAndTheTree(t *testing.T) {
	frame := func(busy, irq float64, tree ...float64) sample.Frame {
		f := sample.Frame{CPU: &sample.CPU{Cores: make([]sample.Core, 2), BusyPct: busy, IRQPct: irq}, Procs: &sample.Procs{FocusPID: 1}}
		for i, c := range tree {
			f.Procs.List = append(f.Procs.List, sample.Proc{PID: i + 1, CPUPct: c})
		}
		return f
	}
	// 2 cores: 60 % busy is 1.2 cores, 10 % of it interrupts (0.2), the
	// tree 70 % of a core: 0.3 cores others.
	frames := []sample.Frame{frame(60, 10, 50, 20), frame(90, 0, 50), frame(30, 0, 80), {}}
	got, ok := OthersCores(frames)
	if !ok || math.Abs(got-0.3) > 1e-9 { // the median of 0.3, 1.3 and 0
		t.Fatalf("others %.3f cores (%v), want 0.3", got, ok)
	}
	if _, ok := OthersCores([]sample.Frame{{CPU: frames[0].CPU}, {Procs: frames[0].Procs}}); ok {
		t.Fatal("read from frames without both a CPU and a tree")
	}
}
