package diagnose

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestPredictionIsARange (issue 52 item 1): a prediction is a range whose
// low side, the point, has the added workers contend (cpuContention on
// their CPU, by the box's occupancy; the Universal Scalability Law's σ,
// ioContention, on their storage wait) and whose high side has no
// contention beyond what was
// measured; with no worker added the two are one. The two
// measured cases fall inside their ranges: the H200 box's 2 → 15 CPU-bound
// workers (2,698 samples/s measured, 3,626 once promised) and the
// battery's sshfs loop, 2 → 8 readers of small files 2 ms away (2.36×,
// 2.01× and 1.93× measured, 4.00× once promised).
func TestPredictionIsARange(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a/b-1) < 1e-9 }
	if c := contended(0.18, 8, 2); !near(c, (1+0.18*7)/(1+0.18)) {
		t.Errorf("contended(0.18, 8, 2) = %v", c)
	}
	if contended(0.15, 2, 8) != 1 || contended(0.15, 4, 4) != 1 || contended(0, 16, 1) != 1 {
		t.Error("fewer or as many workers as measured, or no contention, must cost nothing more")
	}
	if c := contended(0.03, 4, 0); !near(c, 1.09) {
		t.Errorf("from loading inline (one reader) to 4 workers: %v, want 1.09", c)
	}

	p, ok := Model(h200Starved())
	if !ok {
		t.Fatal("no model of the H200 job")
	}
	same, _ := p.Predict(p.Knobs)
	if same.SamplesPerSec != same.HighSamplesPerSec || same.Gain != same.HighGain {
		t.Errorf("the configuration measured: range %+v, want one figure", same)
	}
	k := p.Knobs
	k.Workers = 15
	pr, limit := p.Predict(k)
	if pr.Limit != limit.String() || pr.SamplesPerSec >= pr.HighSamplesPerSec || pr.Gain >= pr.HighGain {
		t.Fatalf("2 → 15 CPU-bound workers: %+v (%s), want a range with its point below its high side", pr, limit)
	}
	if pr.SamplesPerSec > 2698 || pr.HighSamplesPerSec < 2698 || 2698 > 1.15*pr.SamplesPerSec {
		t.Errorf("2 → 15 workers on the H200 box: %.0f–%.0f samples/s, measured 2,698: want it inside, and within 15 %% of the point",
			pr.SamplesPerSec, pr.HighSamplesPerSec)
	}
	t.Logf("H200, 2 → 15 workers: %.0f–%.0f samples/s (measured 2,698), limited by %s", pr.SamplesPerSec, pr.HighSamplesPerSec, pr.Limit)

	// Readers waiting on a network mount: 2 workers, a batch 1.37 s of
	// waiting and 31 ms of CPU, a 3 ms step, on 2 cores barely busy.
	files := &Pipeline{BatchSize: 128, StepSec: 0.003, IOSec: 1.34, CPUSec: 0.031, CPUs: 1.5, Knobs: Knobs{Workers: 2, Prefetch: 2},
		CPUContention: cpuContention, IOContention: ioContention}
	files.Measured = Prediction{SamplesPerSec: 187, WaitShare: 0.99, Gain: 1}
	k = files.Knobs
	k.Workers = 8
	pr, limit = files.Predict(k)
	for _, got := range []float64{2.36, 2.01, 1.93} {
		if limit != LimitWorkers || math.Abs(got/pr.Gain-1) > 0.15 || pr.HighGain < got {
			t.Errorf("2 → 8 readers of a network mount: %.2f–%.2f× (%s), measured %.2f×: want it under the high side, within 15 %% of the point", pr.Gain, pr.HighGain, limit, got)
		}
	}
	line := changeLine([]Change{{Knob: "num_workers", From: "2", To: "8"}}, pr, files.Measured)
	if !strings.Contains(line, "–") || !strings.HasSuffix(line, "; then limited by the workers") {
		t.Errorf("the advice line %q: want the range and the limit next", line)
	}
	t.Logf("%s", line)
}

// TestCPUContentionFollowsTheBoxsOccupancy: a worker's CPU a batch grows
// with how much of the box is busy, not with the worker count (issue 52:
// the worker-count law fit on 16 cores allowed a second CPU-bound worker
// on the 2-core VM 3 %, where it took 15–39 % more CPU a batch, and CI's
// tune table read −25 %). The same second worker on 16 cores barely
// contends, a worker mostly waiting on storage adds little unless the
// data moves to RAM, and a job pinned to 2 cores of 64 contends on its 2.
func TestCPUContentionFollowsTheBoxsOccupancy(t *testing.T) {
	// gpuwatch's own loader, the tune table's "too few workers for the
	// CPU work": 1 worker decoding 32 samples at 600 µs each (21.4 ms of
	// CPU a batch), a 10 ms step, 1,497 samples/s on 2 cores 1.15 busy.
	vm := &Pipeline{BatchSize: 32, StepSec: 0.010, CPUSec: 0.0214, CPUs: 1.85, Knobs: Knobs{Workers: 1, Prefetch: 2},
		BoxCPUs: 2, BusyCPUs: 1.15, CPUContention: cpuContention, IOContention: ioContention}
	vm.Measured = Prediction{SamplesPerSec: 1497, WaitShare: 0.5, Gain: 1}
	factor := func(p *Pipeline, n int) float64 {
		return p.cpuContended(cpuContention, n, p.IOSec+p.CPUWaitSec, p.CPUSec)
	}
	if c := factor(vm, 2); c < 1.12 {
		t.Errorf("a second CPU-bound worker filling 2 cores: ×%.3f a batch's CPU, want ≥ 1.12", c)
	}
	pr, _ := vm.Predict(Knobs{Workers: 2, Prefetch: 2})
	for _, got := range []float64{2173, 2227} { // tune on the VM, 2026-12-02
		if e := got/pr.SamplesPerSec - 1; e < -0.15 || got > pr.HighSamplesPerSec {
			t.Errorf("1 → 2 workers on 2 cores: %.0f–%.0f samples/s, measured %.0f (%+.0f %% of the point): want within 15 %% under it, not above the high side",
				pr.SamplesPerSec, pr.HighSamplesPerSec, got, 100*e)
		}
	}

	big := *vm
	big.BoxCPUs, big.CPUs = 16, 14.85
	if c := factor(&big, 2); c > 1.05 {
		t.Errorf("a second worker on 16 cores 1.15 busy: ×%.3f, want ≤ 1.05", c)
	}
	reader := *vm
	reader.CPUSec, reader.IOSec, reader.BusyCPUs = 0.010, 0.090, 0.3 // on a CPU 10 % of its time
	if c := factor(&reader, 2); c > 1.03 {
		t.Errorf("a second worker mostly waiting on storage: ×%.3f a batch's CPU, want ≤ 1.03", c)
	}
	reader.BoxCPUs, reader.CPUs = 8, 7.7
	if c, cached := reader.cpuContended(cpuContention, 8, 0, reader.CPUSec), factor(&reader, 8); c < 1.3 || cached > 1.1 {
		t.Errorf("1 → 8 readers on 8 cores: ×%.3f with the data in RAM (CPU-bound), ×%.3f waiting on storage: want ≥ 1.3 and ≤ 1.1", c, cached)
	}
	pinned := *vm
	pinned.BoxCPUs = 0 // set by occupancy from a window below
	w := &window{cores: 64, job: &sample.Job{AllowedCPUs: 2, CPUCapacityCores: 2}}
	w.cpuBusy = level{v: 4, ok: true} // 2.6 of 64 cores
	w.jobUsed = level{v: 1.15, ok: true}
	occupancy(w, &pinned)
	if pinned.BoxCPUs != 2 || pinned.BusyCPUs != 1.15 || factor(&pinned, 2) != factor(vm, 2) {
		t.Errorf("a job pinned to 2 of 64 cores: box %v busy %v, ×%.3f: want its 2 cores, 1.15 busy, ×%.3f", pinned.BoxCPUs, pinned.BusyCPUs, factor(&pinned, 2), factor(vm, 2))
	}
	unread := *vm
	unread.BoxCPUs, unread.BusyCPUs = 0, 0
	if c := factor(&unread, 2); c < 1.1 || c > 1+cpuContention {
		t.Errorf("the box's occupancy unread: ×%.3f, want the workers' CPUs filled from the one measured (≥ 1.1, ≤ %.2f)", c, 1+cpuContention)
	}
	if c := (&Pipeline{Knobs: Knobs{Workers: 1}}).cpuContended(cpuContention, 2, 0, 0.01); c != 1+cpuContention {
		t.Errorf("no CPUs known at all: ×%v, want ×%.2f", c, 1+cpuContention)
	}
	for _, busy := range []float64{-1, math.NaN()} {
		odd := *vm
		odd.BusyCPUs = busy
		if c := factor(&odd, 2); math.IsNaN(c) || c < 1 || c > 1+cpuContention {
			t.Errorf("busy %v: ×%v", busy, c)
		}
	}
	if factor(vm, 1) != 1 || vm.cpuContended(0, 4, 0, vm.CPUSec) != 1 {
		t.Error("no worker added, or no contention, must cost nothing more")
	}
	t.Logf("2 cores, 1 → 2 workers: %.0f–%.0f samples/s (measured 2,173 and 2,227)", pr.SamplesPerSec, pr.HighSamplesPerSec)
}

// TestNoWorkerAdvisedWhoseContendedPromiseIsUnderTheBar: where the CPUs
// are the limit, a change is advised only if its point (the promise, with
// the added workers contending) clears MinPredictedGain; its high side is
// not enough. The tune table's "CPU-bound on the job's CPUs" (2 workers
// decoding 82 ms a batch on 2 cores 90 % busy) once measured 680
// samples/s and was advised a third worker for 745–770.
func TestNoWorkerAdvisedWhoseContendedPromiseIsUnderTheBar(t *testing.T) {
	p := &Pipeline{BatchSize: 32, StepSec: 0.005, CPUSec: 0.082, IOSec: 0.0098, CPUs: 2, Knobs: Knobs{Workers: 2, Prefetch: 2},
		BoxCPUs: 2, BusyCPUs: 1.8, CPUContention: cpuContention, IOContention: ioContention}
	p.Measured = Prediction{SamplesPerSec: 690, WaitShare: 0.6, Gain: 1}
	pr, limit := p.Predict(Knobs{Workers: 3, Prefetch: 2})
	if limit != LimitCPU || pr.HighSamplesPerSec < MinPredictedGain*690 || pr.SamplesPerSec >= MinPredictedGain*690 {
		t.Fatalf("2 → 3 workers: %.0f–%.0f samples/s (%s): the case wants a high side over the bar and a point under it", pr.SamplesPerSec, pr.HighSamplesPerSec, limit)
	}
	if ch, got, _ := split(plan(p, 2, true)); len(ch) > 0 {
		t.Errorf("advised %+v for %.0f–%.0f samples/s from 690: the CPUs are the limit, and the promise is under %.0f %% more", ch, got.SamplesPerSec, got.HighSamplesPerSec, 100*(MinPredictedGain-1))
	}
	// A sampled loop (rates unknown: times in its step, gains only): the
	// same case, the same answer.
	rel := *p
	rel.Relative, rel.StepSec, rel.CPUSec, rel.IOSec = true, 1, p.CPUSec/p.StepSec, p.IOSec/p.StepSec
	rel.Measured = Prediction{WaitShare: 1 - 690.0/32*p.StepSec, Gain: 1}
	if ch, got, _ := split(plan(&rel, 2, true)); len(ch) > 0 {
		t.Errorf("sampled: advised %+v for %.2f–%.2f×: the promise is under %.0f %% more", ch, got.Gain, got.HighGain, 100*(MinPredictedGain-1))
	}
	// The CPUs the limit only on the low side (the workers on the high):
	// the added workers still contend for certain.
	low := *p
	low.CPUSec, low.IOSec, low.CPUs, low.BusyCPUs, low.IOContention = 0.060, 0.030, 2.02, 1.6, 0 // an emulated link
	low.Measured = Prediction{SamplesPerSec: 32 * 29.5, WaitShare: 0.5, Gain: 1}
	if pr, limit := low.Predict(Knobs{Workers: 3, Prefetch: 2}); limit != LimitWorkers || pr.ContendedLimit != LimitCPU.String() ||
		pr.SamplesPerSec >= MinPredictedGain*low.Measured.SamplesPerSec || pr.HighSamplesPerSec < MinPredictedGain*low.Measured.SamplesPerSec {
		t.Fatalf("2 → 3 workers: %+v (%s): the case wants the CPUs the low side's limit only, its high side over the bar and its point under it", pr, limit)
	}
	if ch, got, _ := split(plan(&low, 2, true)); len(ch) > 0 {
		t.Errorf("advised %+v for %.0f–%.0f samples/s: the CPUs are the low side's limit, and the promise is under the bar", ch, got.SamplesPerSec, got.HighSamplesPerSec)
	}
	// The same change where storage, not the CPUs, holds it: advised on
	// its high side (contention there is unknown).
	io := *p
	io.CPUSec, io.IOSec, io.CPUs, io.BusyCPUs = 0.004, 0.088, 2, 0.3
	io.Measured = Prediction{SamplesPerSec: 690, WaitShare: 0.6, Gain: 1}
	if ch, _, _ := split(plan(&io, 2, true)); len(ch) == 0 {
		t.Error("readers waiting on storage: no change advised")
	}
}

// TestInlineAgainWhereTakingABatchCostsMoreThanMakingIt (a review): an
// IterableDataset of short token rows at 2 workers, its loop 888 µs
// taking each batch against a worker's 763 µs making one (a step of 481
// µs), gave 21,774 samples/s, and 38–40k with none; tune said no knob
// helps. num_workers 2 → 0 is advised, its high side without the
// workers' waits for a CPU and their pickling; where taking a batch is
// cheap it is not.
func TestInlineAgainWhereTakingABatchCostsMoreThanMakingIt(t *testing.T) {
	// (fillWorkers reads no wait for a CPU where it reads the loop's own
	// wait: CPUWaitSec is 0 beside OverheadSec.)
	p := &Pipeline{BatchSize: 32, StepSec: 0.000481, CPUSec: 0.000600, OverheadSec: 0.000888, CPUs: 1, LoopCPUs: 1,
		Knobs: Knobs{Workers: 2, Prefetch: 2}, Kind: "python", HandOverShare: inlineHandOver, CPUContention: cpuContention, IOContention: ioContention}
	p.Measured = Prediction{SamplesPerSec: 21774, WaitShare: 0.65, Gain: 1}
	ch, got, limit := split(plan(p, 2, true))
	if len(ch) != 1 || ch[0].From != "2" || ch[0].To != "0" || limit != LimitInline || !strings.Contains(ch[0].Why, "taking each batch from a worker costs the loop 888µs") {
		t.Fatalf("advised %+v (%s)", ch, limit)
	}
	// High side: 32 / (481 µs + 600 µs ÷ 1.14) = 31,768 samples/s; the
	// point keeps the workers' own figures: 32 / (481 + 600 µs) = 29,602.
	if math.Abs(got.HighSamplesPerSec-31768) > 10 || math.Abs(got.SamplesPerSec-29602) > 10 {
		t.Errorf("2 → 0: %.0f–%.0f samples/s", got.SamplesPerSec, got.HighSamplesPerSec)
	}
	// Back at 0 workers the model cannot see that cost: a change to
	// workers says so where a batch is made this fast.
	inline := &Pipeline{BatchSize: 32, StepSec: 0.000263, CPUSec: 0.000470, CPUs: 1, LoopCPUs: 1, Knobs: Knobs{Workers: 0}, Kind: "python",
		HandOverShare: inlineHandOver, CPUContention: cpuContention, IOContention: ioContention}
	inline.Measured = Prediction{SamplesPerSec: 32 / 0.000733, WaitShare: 0.64, Gain: 1}
	if ch, _, _ := split(plan(inline, 2, true)); len(ch) == 0 || !strings.Contains(ch[0].Why, "is not measured inline") {
		t.Errorf("0 → workers: %+v", ch)
	}
	cheap := *p
	cheap.OverheadSec = 0.00005
	cheap.Measured = Prediction{SamplesPerSec: 32 / (0.000481 + 0.00005), WaitShare: 0.09, Gain: 1}
	if ch, _, _ := split(plan(&cheap, 2, true)); slices.ContainsFunc(ch, func(c Change) bool { return c.To == "0" }) {
		t.Errorf("taking a batch costs 50µs: advised %+v", ch)
	}
}

// TestACPUStepContendsWithTheWorkersAdded (a review): a CPU-only job
// (the hook read its forward on the CPU) loading inline, 0 → 1 worker on
// 2 cores, was promised its step-bound high side as the point: 1,244,
// 1,386 and 1,149 samples/s against 1,043, 1,133 and 954 measured
// (−16 to −18 %), its step 28 ms alone and 30–32 ms beside the worker.
// The low side slows the step by the factor the workers' CPU takes.
func TestACPUStepContendsWithTheWorkersAdded(t *testing.T) {
	p := &Pipeline{BatchSize: 32, StepSec: 0.023, CPUSec: 0.012, CPUs: 1, LoopCPUs: 1, BoxCPUs: 2, BusyCPUs: 1,
		Knobs: Knobs{Workers: 0}, Kind: "python", HandOverShare: inlineHandOver, CPUContention: cpuContention, IOContention: ioContention, StepOnCPU: true}
	p.Measured = Prediction{SamplesPerSec: 32 / 0.035, WaitShare: 0.34, Gain: 1}
	pr, limit := p.Predict(Knobs{Workers: 1, Prefetch: 2})
	// u₀ = 1/2, u = 2/2: (1 + 0.5) ÷ (1 + 0.25) = 1.2 on the step.
	if limit != LimitStep || math.Abs(pr.HighSamplesPerSec-32/0.023) > 1 || math.Abs(pr.SamplesPerSec-32/(0.023*1.2)) > 1 {
		t.Errorf("0 → 1: %.0f–%.0f samples/s (%s)", pr.SamplesPerSec, pr.HighSamplesPerSec, limit)
	}
	p.StepOnCPU = false // a GPU's step: the workers do not slow it
	if pr, _ := p.Predict(Knobs{Workers: 1, Prefetch: 2}); pr.SamplesPerSec != pr.HighSamplesPerSec {
		t.Errorf("GPU step: %.0f–%.0f samples/s", pr.SamplesPerSec, pr.HighSamplesPerSec)
	}
}

// TestTheStepIsOnTheCPUWhereNothingElseRunsIt: the hook's reading of the
// forward's device decides; a sampled loop with no accelerator read is
// a CPU job too, as the hooked view of the same job says; a sampled loop
// beside a GPU, or gpuwatch's own loader's virtual step, is not.
func TestTheStepIsOnTheCPUWhereNothingElseRunsIt(t *testing.T) {
	util := level{v: 90, n: 3, ok: true}
	for _, c := range []struct {
		name string
		w    window
		want bool
	}{
		{"hooked, on the CPU", window{gpu: gpuStep{settings: &sample.JobSettings{Device: "cpu"}}}, true},
		{"hooked, on cuda", window{gpu: gpuStep{settings: &sample.JobSettings{Device: "cuda"}}}, false},
		{"sampled, no accelerator", window{sampled: &sample.SampledLoop{}}, true},
		{"sampled, its virtual accelerator alone", window{sampled: &sample.SampledLoop{}, virtualBusy: util}, true},
		{"sampled, a GPU read", window{sampled: &sample.SampledLoop{}, gpuUtil: util}, false},
		{"the embedded loader's virtual step", window{virtualBusy: util}, false},
	} {
		if got := stepOnCPU(&c.w); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

// TestInlineAgainWaitsTheTimedBatch (a review): 11 workers that keep up
// (batches ready when asked), the loop 4.4 ms taking each against a 3.8 ms
// step, each batch 2.5 ms of a worker's CPU in 69 ms of timed stages (a
// sleep per item): tune advised 11 → 0 for 2,612 samples/s and got 224.
// Inline, the loop waits the timed batch's sleeps too: no 0 is advised,
// and the model's rate for it is the step plus the 69 ms.
func TestInlineAgainWaitsTheTimedBatch(t *testing.T) {
	w := &window{th: DefaultThresholds(), workers: 11, cores: 2,
		workerStageSec: level{v: 0.069, ok: true}, workerMakeSec: level{v: 0.069, ok: true}, loaderCPU: level{v: 100 * 0.0025 * 52, ok: true},
		queueDepth: level{v: 22, ok: true}}
	p := &Pipeline{BatchSize: 16, StepSec: 0.0038, CPUs: 1.4, LoopCPUs: 1, Knobs: Knobs{Workers: 11, Prefetch: 2, Persistent: true},
		Kind: "python", HandOverShare: inlineHandOver, CPUContention: cpuContention, IOContention: ioContention}
	fillWorkers(p, w, 11, 52, 0.45, 1/52.0)
	if p.MakeSec != 0.069 || p.OverheadSec <= 0 || p.IOSec != 0 {
		t.Fatalf("workers that keep up: make %v, overhead %v, io %v", p.MakeSec, p.OverheadSec, p.IOSec)
	}
	p.Measured = Prediction{SamplesPerSec: 16 * 52, WaitShare: 0.45, Gain: 1}
	inline, _ := p.Predict(Knobs{Workers: 0})
	if want := 16 / (0.0038 + 0.069); math.Abs(inline.HighSamplesPerSec-want) > 1 {
		t.Errorf("inline: %.0f–%.0f samples/s, want at most %.0f", inline.SamplesPerSec, inline.HighSamplesPerSec, want)
	}
	if ch, _, _ := split(plan(p, 2, true)); slices.ContainsFunc(ch, func(c Change) bool { return c.To == "0" }) {
		t.Errorf("advised %+v", ch)
	}
	// Of the timed batch, the workers' wait for a CPU (their run delay,
	// 5/6 of their time here: 11 workers on 2 cores) is theirs, not the
	// inline loop's: 10 ms of CPU in 60 ms timed is 10 ms inline (a
	// review).
	w.workerStageSec, w.workerMakeSec, w.loaderCPU, w.workersRunDelay = level{v: 0.060, ok: true}, level{v: 0.060, ok: true}, level{v: 100 * 0.010 * 52, ok: true}, level{v: 5.0 / 6, ok: true}
	q := &Pipeline{BatchSize: 16, StepSec: 0.0038, CPUs: 1.4, LoopCPUs: 1, Knobs: p.Knobs, Kind: "python", HandOverShare: inlineHandOver, CPUContention: cpuContention, IOContention: ioContention}
	fillWorkers(q, w, 11, 52, 0.45, 1/52.0)
	if math.Abs(q.MakeSec-0.010) > 1e-9 {
		t.Errorf("crowded workers: make %v, want 10ms", q.MakeSec)
	}
}

// split is plan's answer as three values.
func split(pl planned) ([]Change, Prediction, Limit) {
	return pl.changes, pl.predicted, pl.limit
}

// TestTheCPULimitSaysWhyItsHighSideIsNotAdvised (a review): a loop
// loading inline beside a spinning pool, whose workers' CPUs hold any
// count to 148 batches/s on the range's high side (1.20× the 123 now)
// and about 131 at its point (1.06×), is advised nothing: plan weighs a
// CPU-bound change by its point. The advice said "more workers cannot
// help … at most 148 batches/s", which read as a contradiction; it says
// both sides and the bar. Where the high side is no gain either, the
// short form stays.
func TestTheCPULimitSaysWhyItsHighSideIsNotAdvised(t *testing.T) {
	p := &Pipeline{BatchSize: 255, StepSec: 0.0003, CPUSec: 0.0078, CPUs: 1.15, LoopCPUs: 0.05, LoopCPUSec: 0.0003, SpinCPUs: 0.5,
		BoxCPUs: 2, BusyCPUs: 2, Kind: "python", HandOverShare: inlineHandOver, CPUContention: cpuContention, IOContention: ioContention,
		StepOnCPU: true, TakeLooked: true, TakeTensors: 2}
	p.Measured = Prediction{SamplesPerSec: 255 / 0.0081, WaitShare: 0.96, Gain: 1}
	pl := plan(p, 2, true)
	if len(pl.changes) != 0 || pl.limit != LimitCPU {
		t.Fatalf("changes %+v (%s): want none, held by the CPUs", pl.changes, pl.limit)
	}
	s := noKnobHelps(p, pl, DefaultThresholds())
	for _, want := range []string{"cannot help enough", "at most 148 batches/s with no contention", "1.20× the 123 now", "about 131 (1.06×)", "must promise 10 %", "OPENBLAS_NUM_THREADS=1"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q: want it to say %q", s, want)
		}
	}
	p.CPUs = 1.0 // 130 batches/s at most: no gain on either side
	if s := noKnobHelps(p, pl, DefaultThresholds()); !strings.Contains(s, "cannot help: the 1.0 CPUs workers would have here are the limit (7.8ms of CPU per batch, at most 130 batches/s)") {
		t.Errorf("%q: want the short form", s)
	}
}

// TestAChangeTheCPUsDoNotHoldIsWeighedOnItsOwnTerms (a review): the best
// configuration, 2 workers, is held by the CPUs and weighed by its point,
// 58 batches/s against 54 now; 1 worker, held by the workers, gives 70–79
// and was never weighed: nothing was advised, and the CPU limit's words
// named a gain of 1.29× beside "cannot help". The planner falls back to
// the change that is worth it on its own terms.
func TestAChangeTheCPUsDoNotHoldIsWeighedOnItsOwnTerms(t *testing.T) {
	p := &Pipeline{BatchSize: 255, StepSec: 0.0077, CPUSec: 0.0126, CPUs: 1.11, LoopCPUs: 0.05, LoopCPUSec: 0.0003, SpinCPUs: 0.5,
		BoxCPUs: 1, BusyCPUs: 0.2, Kind: "python", HandOverShare: inlineHandOver, CPUContention: cpuContention, IOContention: ioContention,
		StepOnCPU: true, TakeLooked: true, TakeTensors: 2}
	p.Measured = Prediction{SamplesPerSec: 255 * 54, WaitShare: 0.5, Gain: 1}
	ch, pr, limit := split(plan(p, 1, true))
	if len(ch) != 1 || ch[0].To != "1" || limit != LimitWorkers || pr.Gain < MinPredictedGain {
		t.Fatalf("changes %+v, %+v (%s): want num_workers 0 → 1, held by the workers, a gain at its point", ch, pr, limit)
	}
}

// TestASlowLoopsCPULimitIsNotSaidAsZero: a loop of 0.4 batches/s (video,
// volumes) read "at most 0 batches/s … the 0 now".
func TestASlowLoopsCPULimitIsNotSaidAsZero(t *testing.T) {
	p := &Pipeline{BatchSize: 8, StepSec: 0.05, CPUSec: 2.5, CPUs: 1.0, BoxCPUs: 2, BusyCPUs: 2, Kind: "python", CPUContention: cpuContention}
	p.Measured = Prediction{SamplesPerSec: 8 * 0.38, WaitShare: 0.98, Gain: 1}
	s := p.cpuLimitWords(plan(p, 2, true))
	if strings.Contains(s, " 0 batches/s") || !strings.Contains(s, "at most 0.4 batches/s") {
		t.Errorf("%q: want the rate in tenths", s)
	}
	for v, want := range map[float64]string{148.4: "148", 3.26: "3.3", 0.384: "0.38", 0.0012: "0.0012"} {
		if got := perSec(v); got != want {
			t.Errorf("perSec(%g) = %q, want %q", v, got, want)
		}
	}
}

// TestWorkersAddedPayTheirStartEveryEpoch (a user's review): loading
// inline, an epoch of 13 batches, num_workers 0 → 1 was promised
// 643–754 samples/s from 542 and gave 561: every epoch waited 63 ms for
// the restarted worker's first batch, which the model, measuring the
// inline loop's 21 ms, did not count. Workers that do not persist pay a
// worker's start and its first batch each epoch on the range's low side;
// persistent ones do not.
func TestWorkersAddedPayTheirStartEveryEpoch(t *testing.T) {
	p := &Pipeline{BatchSize: 32, StepSec: 0.040, CPUSec: 0.018, CPUs: 1, BoxCPUs: 2, BusyCPUs: 1.2, Kind: "python",
		BatchesPerEpoch: 13, EpochStallSec: 0.021, HandOverShare: inlineHandOver, CPUContention: cpuContention, IOContention: ioContention,
		Knobs: Knobs{Workers: 0, knownPersistent: true}}
	p.Measured = Prediction{SamplesPerSec: 32 / 0.058, WaitShare: 0.31, Gain: 1}
	restart, _ := p.Predict(Knobs{Workers: 1, Prefetch: 2})
	kept, _ := p.Predict(Knobs{Workers: 1, Prefetch: 2, Persistent: true})
	// 13 batches take 13/rate + the stall: at least a worker's start and
	// one batch made, 45 + 18 ms.
	want := 13 / (13/(kept.SamplesPerSec/32) + workerStartSec + 0.018) * 32
	if restart.SamplesPerSec > want*1.02 || restart.SamplesPerSec >= kept.SamplesPerSec {
		t.Errorf("restarting %.0f, persistent %.0f samples/s: want about %.0f restarting", restart.SamplesPerSec, kept.SamplesPerSec, want)
	}
}

// TestPersistentWorkersAddedAreSaid (a review): loading inline with
// epochs of 5 batches, plan weighed persistent workers, whose start is
// paid once, as the best, and said only "num_workers 0 → 1": the
// persistence it counted on was never advised. It is said, and where the
// script builds its DataLoader every epoch, with the DataLoader built
// once.
func TestPersistentWorkersAddedAreSaid(t *testing.T) {
	p := &Pipeline{BatchSize: 32, StepSec: 0.040, CPUSec: 0.018, CPUs: 1, BoxCPUs: 2, BusyCPUs: 1.2, Kind: "python",
		BatchesPerEpoch: 5, EpochStallSec: 0.021, HandOverShare: inlineHandOver, CPUContention: cpuContention, IOContention: ioContention,
		Knobs: Knobs{Workers: 0, knownPersistent: true}}
	p.Measured = Prediction{SamplesPerSec: 32 / 0.058, WaitShare: 0.31, Gain: 1}
	pl := plan(p, 2, true)
	var words []string
	for _, c := range pl.changes {
		words = append(words, c.Words())
	}
	all := strings.Join(words, "; ")
	if !strings.Contains(all, "num_workers 0 → 1") || !strings.Contains(all, "persistent_workers false → true") {
		t.Fatalf("changes %q: want workers added and made persistent", all)
	}
	p.NewLoaderEveryEpoch = true
	pl = plan(p, 2, true)
	words = words[:0]
	for _, c := range pl.changes {
		words = append(words, c.Words())
	}
	if all := strings.Join(words, "; "); !strings.Contains(all, "persistent_workers false → true (with the DataLoader built once, before the epoch loop)") {
		t.Errorf("a DataLoader built every epoch: changes %q", all)
	}
}
