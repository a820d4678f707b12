package diagnose

import (
	"math"
	"strings"
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
	// A loader with workers the tree does not list (restarted, gone
	// between readings): its CPU is not all read, nor is what is left
	// others' (a sweep on an idle box read 1.5 cores of "others").
	short := []sample.Frame{frame(60, 0, 20), frame(60, 0, 20), frame(60, 0, 20)}
	for i := range short {
		short[i].Loader = &sample.Loader{WorkerPIDs: []int{7, 8}}
	}
	if c, ok := OthersCores(short); ok {
		t.Fatalf("others %.2f cores read beside workers the tree misses", c)
	}
}

// TestCachingReplacesTheReadsCPUWithACopy: held in RAM, a batch no longer
// costs its reads' CPU (the io-bound preset's O_DIRECT path: 8.9 of its
// 9 ms) but a copy of its bytes (8 MiB at ramCopyBytesPerSec, about
// 1.2 ms): the step becomes the limit, not the CPUs as when the reads'
// CPU was kept (+64 % and +95 % measured over such promises).
func TestCachingReplacesTheReadsCPUWithACopy(t *testing.T) {
	p := &Pipeline{BatchSize: 64, StepSec: 0.002, IOSec: 0.2, CPUSec: 0.009, ReadCPUSec: 0.0089, CPUs: 1.8,
		BytesPerBatch: 8 << 20, Knobs: Knobs{Workers: 16, Persistent: true}, Measured: Prediction{SamplesPerSec: 3700}}
	cached, limit := p.Predict(Knobs{Workers: 16, Persistent: true, Cache: true})
	if limit != LimitStep || math.Abs(cached.SamplesPerSec-64/0.002) > 1 {
		t.Fatalf("cached: %.0f samples/s limited by %v, want the step's 32000", cached.SamplesPerSec, limit)
	}
	// The CPUs the copy leaves: 1.8 ÷ (0.1 ms + 8 MiB ÷ 7 GB/s).
	p.StepSec = 0.0001
	cached, limit = p.Predict(Knobs{Workers: 16, Persistent: true, Cache: true})
	want := 64 * 1.8 / (0.0001 + float64(8<<20)/ramCopyBytesPerSec)
	if limit != LimitCPU || math.Abs(cached.HighSamplesPerSec-want) > 1 {
		t.Fatalf("cached, a short step: %.0f samples/s limited by %v, want the CPUs' %.0f", cached.HighSamplesPerSec, limit, want)
	}
}

// TestReadCPUIsWhatTheDecodeLeaves: the reads' CPU is the loader's CPU
// less the decode's, whose queueing for a core is counted among the
// workers decoding, not those blocked in a read: 10 workers on 2 cores,
// 60 ms of read wait and 10 ms of decode a batch at 100 batches/s decode
// one worker's worth (no queue), so of 11 ms of CPU 1 ms is the reads'
// (counting all 7 busy workers as queueing made it 8.1). Loading from RAM
// already, or with bytes unknown, nothing is the reads'.
func TestReadCPUIsWhatTheDecodeLeaves(t *testing.T) {
	w := &window{cores: 2}
	if got := readCPU(w, 0.011, 0.010, 100, 1<<20, false); math.Abs(got-0.001) > 1e-9 {
		t.Fatalf("reads' CPU %.4f s a batch, want 0.001", got)
	}
	// Decoding beyond the cores: 300 batches/s × 10 ms is 3 workers'
	// decode on 2 cores, each batch's 10 ms is 6.7 ms of CPU.
	if got := readCPU(w, 0.008, 0.010, 300, 1<<20, false); math.Abs(got-(0.008-0.010/1.5)) > 1e-9 {
		t.Fatalf("reads' CPU %.4f s a batch with the decode queueing, want %.4f", got, 0.008-0.010/1.5)
	}
	if got := readCPU(w, 0.011, 0.010, 100, 1<<20, true); got != 0 {
		t.Fatalf("cached already: %.4f", got)
	}
	if got := readCPU(w, 0.011, 0.010, 100, 0, false); got != 0 {
		t.Fatalf("bytes unknown: %.4f", got)
	}
}

// TestNoKnobHelpsSpeaksOfWorkersOnlyWhereThereAreSome: a loop loading
// inline whose model keeps up with the step is not told about "the
// workers' measured time per batch" (a user's review: num_workers=0).
func TestNoKnobHelpsSpeaksOfWorkersOnlyWhereThereAreSome(t *testing.T) {
	th := DefaultThresholds()
	p := &Pipeline{Measured: Prediction{WaitShare: 0.08}}
	if s := noKnobHelps(p, planned{limit: LimitStep}, th); strings.Contains(s, "workers") || !strings.Contains(s, "8 % wait") {
		t.Errorf("inline: %q", s)
	}
	p.Knobs.Workers = 2
	if s := noKnobHelps(p, planned{limit: LimitStep}, th); !strings.Contains(s, "the workers' measured time per batch") {
		t.Errorf("2 workers: %q", s)
	}
}
