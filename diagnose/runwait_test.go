package diagnose

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// hookFrames are frames of a 2-worker loop timed by the hook: the loop
// waits 60 % of its time at 10 batches/s, the workers use 0.5 CPU each,
// and their threads' run delay share is delay (nil: not read).
func hookFrames(delay *float64) []sample.Frame {
	var out []sample.Frame
	t0 := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	for i := range 12 {
		two, pid := 2, 100
		wait, step := 0.6, 40.0
		f := sample.Frame{Time: t0.Add(time.Duration(i) * time.Second), IntervalSec: 1,
			CPU: &sample.CPU{BusyPct: 60, Cores: []sample.Core{{ID: 0, BusyPct: 60}, {ID: 1, BusyPct: 60}, {ID: 2, BusyPct: 60}, {ID: 3, BusyPct: 60}}},
			Loader: &sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", BatchesPerSec: 10, SamplesPerSec: 320, WaitShare: &wait,
				StepMeanMs: &step, Workers: &two, Prefetch: &two, PID: &pid, WorkerPIDs: []int{200, 300}, WorkersRunDelayShare: delay},
			Procs: &sample.Procs{FocusPID: 100, List: []sample.Proc{{PID: 100, CPUPct: 40}, {PID: 200, PPID: 100, CPUPct: 50}, {PID: 300, PPID: 100, CPUPct: 50}}}}
		out = append(out, f)
	}
	return out
}

// TestWorkersWaitingForACPUAreNotWaitingOnStorage: the workers' wall time
// per batch beyond their CPU was all called storage; with their run delay
// read, the part spent waiting for a CPU is said as such, and the model's
// throughput at the measured configuration does not change.
func TestWorkersWaitingForACPUAreNotWaitingOnStorage(t *testing.T) {
	before, ok := Model(hookFrames(nil))
	if !ok {
		t.Fatal("no model from the frames")
	}
	share := 0.5 // as long waiting for a CPU as on one
	after, ok := Model(hookFrames(&share))
	if !ok {
		t.Fatal("no model from the frames")
	}
	// A worker's batch: 2 workers ÷ 10 batches/s = 200 ms, 100 ms of it CPU
	// (0.5 CPU ÷ 10 batches/s ÷ … per worker: 1 CPU ÷ 10 batches/s).
	if before.CPUWaitSec != 0 || math.Abs(before.IOSec+before.CPUSec-0.2) > 1e-9 {
		t.Fatalf("without run delay: io %v cpu %v wait %v", before.IOSec, before.CPUSec, before.CPUWaitSec)
	}
	if math.Abs(after.CPUWaitSec-after.CPUSec) > 1e-9 || math.Abs(after.IOSec+after.CPUSec+after.CPUWaitSec-0.2) > 1e-9 || after.IOSec >= before.IOSec {
		t.Fatalf("with run delay 0.5: io %v cpu %v wait for a CPU %v", after.IOSec, after.CPUSec, after.CPUWaitSec)
	}
	pb, _ := before.Predict(before.Knobs)
	pa, _ := after.Predict(after.Knobs)
	if math.Abs(pb.SamplesPerSec-pa.SamplesPerSec) > 1e-6 {
		t.Fatalf("the measured configuration's prediction moved: %v → %v", pb.SamplesPerSec, pa.SamplesPerSec)
	}
	why := workersWhy(after, 2, 3, LimitWorkers)
	if !strings.Contains(why, "waiting for a CPU") || strings.Contains(why, "waiting on storage,") {
		t.Fatalf("the worker's time is said as %q", why)
	}
	// Held in RAM, the wait for a CPU stays: the cache's gain is smaller.
	cache := after.Knobs
	cache.Cache = true
	pc, _ := after.Predict(cache)
	cacheBefore := before.Knobs
	cacheBefore.Cache = true
	pcb, _ := before.Predict(cacheBefore)
	if pc.SamplesPerSec > pcb.SamplesPerSec+1e-9 {
		t.Fatalf("caching predicted more with the CPU wait known (%v) than without (%v)", pc.SamplesPerSec, pcb.SamplesPerSec)
	}
}

// TestStepsWaitingForACPUOthersHoldAreNoAccelerator replays a real run
// (testdata/contended, gpuwatch run on the 2-core VM): a 2-worker image
// loop with a 10 ms sleep for its step, beside a process spinning on a
// core. Its loop waits 7 % for input, so it read healthy, "the
// accelerator is the limit", at 14–44 % busy: its steps were its thread
// waiting for a CPU. It is cpu_saturated, the CPU taken by the process
// outside the job, with that advice alone.
func TestStepsWaitingForACPUOthersHoldAreNoAccelerator(t *testing.T) {
	lines := readRecording(t, filepath.Join("testdata", "contended", "images-beside-a-busy-process.jsonl"))
	segs := replay(lines, DefaultThresholds())
	if len(segs) != 1 {
		t.Fatalf("%d segments", len(segs))
	}
	s := segs[0]
	if from := s.stableFrom(CPUSaturated); from < 0 || from > 10 {
		t.Fatalf("settles on cpu_saturated from frame %d: %v", from, kinds(s.verdicts))
	}
	last := s.verdicts[len(s.verdicts)-1]
	ev, advice := strings.Join(texts(last.Evidence), "\n"), strings.Join(last.Advice, "\n")
	for _, want := range []string{"its thread waiting for a CPU", "the loop waits for a CPU, not for input", "processes outside the job used"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence %q lacks %q", ev, want)
		}
	}
	if !strings.Contains(advice, "give the job its own CPUs") || strings.Contains(advice, "the accelerator is the limit") || len(last.Secondary) != 0 {
		t.Errorf("advice %q, secondary %+v", advice, last.Secondary)
	}
}

func kinds(vs []Verdict) []Kind {
	out := make([]Kind, len(vs))
	for i, v := range vs {
		out[i] = v.Kind
	}
	return out
}

// TestReadersQueuedForACPUKeepTheIdleCores: workers that mostly wait on
// storage (5 % of a core each) and were queued a third of the few
// moments they wanted a CPU can still have the cores that read idle
// beside them: the model's CPUs are not held to what they used (the
// causes battery's sshfs readers were held to the half CPU of the
// floor beside 1.5 idle cores). Workers that mostly want a CPU are held
// to what they used (TestWorkersWaitingForACPUAreNotWaitingOnStorage's
// frames).
func TestReadersQueuedForACPUKeepTheIdleCores(t *testing.T) {
	share := 1.0 / 3
	frames := hookFrames(&share)
	for i := range frames {
		f := &frames[i]
		f.CPU.BusyPct = 20
		f.Procs.List = []sample.Proc{{PID: 100, CPUPct: 40}, {PID: 200, PPID: 100, CPUPct: 5}, {PID: 300, PPID: 100, CPUPct: 5}}
	}
	p, ok := Model(frames)
	if !ok {
		t.Fatal("no model from the frames")
	}
	if p.IOSec <= p.CPUSec+p.CPUWaitSec {
		t.Fatalf("not readers: io %v cpu %v wait for a CPU %v", p.IOSec, p.CPUSec, p.CPUWaitSec)
	}
	// 4 cores, 0.8 of them busy, 0.4 the loop's, 0.1 the workers':
	// 3.6 − the loop's share of its step.
	if p.CPUs < 3 {
		t.Fatalf("the readers' CPUs: %v, want the idle cores (above 3 of 4)", p.CPUs)
	}
	cpuBound := hookFrames(&share)
	q, ok := Model(cpuBound)
	if !ok {
		t.Fatal("no model from the CPU-bound frames")
	}
	if q.CPUs > 1+1e-9 {
		t.Fatalf("CPU-bound workers queued for a CPU: CPUs %v, want what they used (1)", q.CPUs)
	}
}

// TestWorkersRestartedEveryShortEpochGetNoCount: workers that restart
// every epoch, epochs of half a second, live too short for /proc to read
// their CPU (1 % each, read): their time is not taken for a wait on
// storage to add workers against (2 → 4 workers decoding JPEGs in RAM
// on 2 busy cores were promised 1,175 samples/s and gave 448; here
// 2 → 16 for "185ms waiting on storage, 1.9ms of CPU"). No num_workers
// change is advised, and the advice says why. With epochs of 100 s the
// same figures are read whole, and the counts are weighed. Made
// persistent, their CPU is read: that change is advised (tune measures
// it), and the loop faster waits no more than it was measured to; not to
// a job judged healthy.
func TestWorkersRestartedEveryShortEpochGetNoCount(t *testing.T) {
	frames := func(batches int) []sample.Frame {
		fs := hookFrames(nil)
		for i := range fs {
			l, stall, step := fs[i].Loader, 20.0, 5.0
			l.BatchesPerEpoch, l.EpochStallMs, l.StepMeanMs = &batches, &stall, &step
			l.Knobs = map[string]string{sample.KnobPersistent.Flag: "false"}
			fs[i].CPU.BusyPct = 90
			fs[i].Procs.List = []sample.Proc{{PID: 100, CPUPct: 40}, {PID: 200, PPID: 100, CPUPct: 1}, {PID: 300, PPID: 100, CPUPct: 1}}
		}
		return fs
	}
	short, ok := Model(frames(3))
	if !ok || !short.WorkersCPUMissed {
		t.Fatalf("epochs of 3 batches at 10 a second: the workers' CPU not marked missed (%v)", ok)
	}
	v := Classify(frames(3), DefaultThresholds())
	for _, c := range v.Changes {
		if c.Knob == "num_workers" {
			t.Errorf("a worker count advised on CPU /proc missed: %+v (advice %q)", v.Changes, v.Advice)
		}
	}
	// Persistence is advised, for what it reads (tune measures it next: a
	// user's review found tune stopped there), with why no count is.
	if len(v.Changes) != 1 || v.Changes[0].Knob != "persistent_workers" || !strings.Contains(strings.Join(v.Advice, "\n"), "no worker count is weighed: the workers restart every epoch") {
		t.Errorf("changes %+v, advice %q: want persistent_workers alone, and why no count is weighed", v.Changes, v.Advice)
	}
	if a := v.Advice[0]; !strings.Contains(a, "persistent_workers false → true") || !strings.Contains(a, "wait 60 % → ") || strings.Contains(a, "→ 9") {
		t.Errorf("advice %q: want the change with a wait no higher than the 60 %% measured", a)
	}
	// Judged healthy (the step the limit, the loop waiting 2 %), the job
	// is not told to make its workers persistent for what that reads: its
	// input is not its limit (a review).
	healthy := frames(3)
	for i := range healthy {
		wait, step := 0.02, 98.0
		healthy[i].Loader.WaitShare, healthy[i].Loader.StepMeanMs = &wait, &step
	}
	if v := Classify(healthy, DefaultThresholds()); v.Kind != Healthy || len(v.Changes) > 0 {
		t.Errorf("a healthy job with short epochs: %s, changes %+v (advice %q): want healthy, and no change", v.Kind, v.Changes, v.Advice)
	}
	long, ok := Model(frames(1000))
	if !ok || long.WorkersCPUMissed {
		t.Fatalf("epochs of 100 s: the workers' CPU marked missed (%v)", ok)
	}
}

// TestSampledWorkersThatComeAndGoGetNoCount: an uninstrumented loop whose
// two workers the sampler found gone between epochs (WorkersRestart)
// waits 60 % on them, their CPU read as 2 % each: no worker count is
// weighed on that, and the advice says why (a job with 2 such workers was
// advised 2 → 4 and gave 0.77×). The same frames with the workers always
// there are weighed.
func TestSampledWorkersThatComeAndGoGetNoCount(t *testing.T) {
	window := func(restart bool) []sample.Frame {
		return frames(12, func(_ int, f *sample.Frame) {
			host(f, 20, 0, 1)
			f.Procs = &sample.Procs{FocusPID: 100, List: []sample.Proc{{PID: 100, Name: "python", CPUPct: 30}, {PID: 200, PPID: 100, CPUPct: 2}, {PID: 300, PPID: 100, CPUPct: 2}},
				Threads: []sample.Thread{{TID: 100, PID: 100, Name: "python", CPUPct: 30}}}
			f.Loader = &sample.Loader{Source: "sampled: pid 100's main thread", PID: iptr(100), LoopTID: iptr(100), Workers: iptr(2), WorkerPIDs: []int{200, 300},
				WaitShare: f64(0.6), Sampled: &sample.SampledLoop{Samples: 50, Hz: 50, Read: "state, wchan, syscall", WorkersRestart: restart}}
		})
	}
	weighed := Classify(window(false), DefaultThresholds())
	if len(weighed.Changes) == 0 || weighed.Changes[0].Knob != "num_workers" {
		t.Fatalf("workers always there: changes %+v, advice %q; want a worker count weighed", weighed.Changes, weighed.Advice)
	}
	v := Classify(window(true), DefaultThresholds())
	for _, c := range v.Changes {
		if c.Knob == "num_workers" {
			t.Errorf("a worker count advised for workers that come and go: %+v", v.Changes)
		}
	}
	if !strings.Contains(strings.Join(v.Advice, "\n"), "no worker count is weighed: the workers restart every epoch") {
		t.Errorf("advice %q: want why no count is weighed", v.Advice)
	}
}

// TestBetweenEpochsTheProcessIsNotItsWorkers: a sampled frame between two
// epochs of workers that restart has their count and no PIDs; the
// process's own CPU is not read as theirs (it was: 97 %).
func TestBetweenEpochsTheProcessIsNotItsWorkers(t *testing.T) {
	f := sample.Frame{Procs: &sample.Procs{FocusPID: 100, List: []sample.Proc{{PID: 100, CPUPct: 97}}},
		Loader: &sample.Loader{PID: iptr(100), Workers: iptr(2), Sampled: &sample.SampledLoop{WorkersRestart: true}}}
	if v, ok := loaderCPU(&f); ok {
		t.Fatalf("the workers' CPU read as %v %% between epochs", v)
	}
	f.Loader.Sampled.WorkersRestart = false // the embedded loader's goroutines: its process's CPU is theirs
	if v, ok := loaderCPU(&f); !ok || v != 97 {
		t.Fatalf("a loader without worker processes: %v, %v", v, ok)
	}
}

// TestALoopCrowdedByItsOwnWorkersIsCPUSaturated (a hostile user's
// review): two augmenting workers and their loop on 2 cores, nothing else
// running, read healthy ("the accelerator is 25 % busy … the accelerator
// is the limit") while the loop thread waited 67 % of its step for a CPU.
// With every core busy and no process outside the job holding them, the
// rule cpu_saturated/own holds; where others hold them, taken's does and
// own's does not; with the cores not all busy, neither.
func TestALoopCrowdedByItsOwnWorkersIsCPUSaturated(t *testing.T) {
	th := DefaultThresholds()
	w := &window{th: th, virtualDelay: level{v: 67, n: 1, ok: true}, virtualStep: level{v: 93, n: 1, ok: true},
		runDelay: level{v: 620, n: 1, ok: true}, othersCores: level{v: 0.05, n: 1, ok: true}}
	f := &facts{w: w, th: th, accel: level{v: 25, n: 1, ok: true}, cpuSat: true,
		cpu: []Evidence{{Metric: "cpu.busy_pct", Text: "all 2 cores are 100 % busy (≥ 90 %)"}}}
	d, ok := ownRule(f)
	if !ok || len(d.evidence) < 2 || !strings.Contains(d.evidence[0].Text, "waiting for a CPU that the job's own processes hold") {
		t.Fatalf("own: %v %+v", ok, d.evidence)
	}
	if _, ok := takenRule(f); ok {
		t.Error("taken holds with no process outside the job")
	}
	w.othersCores = level{v: 0.9, n: 1, ok: true}
	if _, ok := ownRule(f); ok {
		t.Error("own holds where processes outside the job hold 0.9 cores (taken's case)")
	}
	if _, ok := takenRule(f); !ok {
		t.Error("taken does not hold beside 0.9 cores of others")
	}
	w.othersCores, f.cpuSat = level{v: 0.05, n: 1, ok: true}, false
	if _, ok := ownRule(f); ok {
		t.Error("own holds with the cores not all busy")
	}
}

// TestCoresHeldByOthersAreNotThePreprocessings (a hostile user's review):
// beside two `yes`, a loader whose workers sleep on reads, its job using 5
// % of a core, was told "preprocessing needs more than the 2 cores here:
// do it once and cache". With processes outside the job holding at least
// half of the busy cores, cpu_saturated/others holds and says so; with the
// job itself filling them, it does not (the cores rule's case).
func TestCoresHeldByOthersAreNotThePreprocessings(t *testing.T) {
	th := DefaultThresholds()
	w := &window{th: th, cores: 2, cpuBusy: level{v: 100, n: 1, ok: true}, othersCores: level{v: 1.95, n: 1, ok: true}}
	f := &facts{w: w, th: th, cpuSat: true, cpu: []Evidence{{Metric: "cpu.busy_pct"}}, wait: []Evidence{{Metric: "loader.wait_share"}}}
	d, ok := othersRule(f)
	if !ok || d.evidence[0].Metric != "others.cores" || d.evidence[0].Text != "processes outside the job use 1.9 of the 2.0 busy cores" {
		t.Fatalf("others: %v %+v", ok, d.evidence)
	}
	a, last := saturatedAdvice(adviceIn{w: w, cores: 2, d: decision{kind: CPUSaturated, variant: cpuOthers}})
	if !last || len(a) != 1 || !strings.HasPrefix(a[0], "give the job its own CPUs") {
		t.Errorf("advice %q (last %v)", a, last)
	}
	w.othersCores = level{v: 0.6, n: 1, ok: true} // the job's own work fills most of the cores
	if _, ok := othersRule(f); ok {
		t.Error("others holds where the job uses 1.4 of the 2 busy cores")
	}
	// The job's own CPU not all read: workers that live too short for
	// /proc (a review: a DataLoader built every epoch read as "processes
	// outside the job use 1.9 of the 1.9 busy cores"), or more workers
	// than the tree lists.
	w.othersCores, w.workersCPUMissed = level{v: 1.95, n: 1, ok: true}, true
	if _, ok := othersRule(f); ok {
		t.Error("others holds with the workers' CPU missed")
	}
	w.workersCPUMissed, w.treeShort = false, true
	if _, ok := othersRule(f); ok {
		t.Error("others holds with workers the tree does not list")
	}
	w.treeShort, f.wait = false, nil
	if _, ok := othersRule(f); ok {
		t.Error("others holds with the loop not waiting for input (taken's case)")
	}
}

// TestOwnCoresFilledByComputeThreadsAreTheirs (a review): an MLP trained
// on the CPU at torch.set_num_threads(8) beside 2 workers on 2 cores, its
// compute threads using 1 core and its workers 0.07, was told to cache
// its preprocessing: where the compute threads use more than the workers
// the advice is to leave the workers cores; where the workers use more,
// preprocessing's.
func TestOwnCoresFilledByComputeThreadsAreTheirs(t *testing.T) {
	w := &window{workers: 2, cores: 2}
	w.roles.computePct, w.roles.workersPct = level{v: 100, n: 1, ok: true}, level{v: 7, n: 1, ok: true}
	in := adviceIn{w: w, cores: 2, d: decision{kind: CPUSaturated, variant: cpuOwn}}
	if a, _ := saturatedAdvice(in); len(a) != 1 || !strings.HasPrefix(a[0], "leave cores for the workers: torch.set_num_threads(") {
		t.Errorf("compute threads fill the cores: %q", a)
	}
	w.roles.computePct, w.roles.workersPct = level{v: 10, n: 1, ok: true}, level{v: 150, n: 1, ok: true}
	if a, _ := saturatedAdvice(in); len(a) == 0 || !strings.HasPrefix(a[0], "preprocessing needs more than") {
		t.Errorf("workers fill the cores: %q", a)
	}
}

// TestSaturatedAdviceSaysOnlyWhatWasRead (a user's review, three
// defects): a TensorDataset in RAM, its worker's stages taking
// microseconds a batch beside another job that took the box, was told to
// cache its preprocessing and fit its scalers on a sample; workers forked
// anew every second, their CPU unread, were said to "get 0.0" and the
// training process told to cap threads it had capped; an idle pool thread
// at 0 % was cited as the crowding.
func TestSaturatedAdviceSaysOnlyWhatWasRead(t *testing.T) {
	th := DefaultThresholds()
	w := &window{th: th, workers: 1, cores: 2, workerStageSec: level{v: 0.0002, n: 1, ok: true}, batchesPerSec: level{v: 60, n: 1, ok: true}}
	w.roles.computePct, w.roles.workersPct = level{v: 10, n: 1, ok: true}, level{v: 150, n: 1, ok: true}
	a, _ := saturatedAdvice(adviceIn{w: w, cores: 2, d: decision{kind: CPUSaturated, variant: cpuOwn}})
	if all := strings.Join(a, "\n"); strings.Contains(all, "cache") || strings.Contains(all, "scalers") || !strings.Contains(all, "not preprocessing") {
		t.Errorf("loading in microseconds: %q", a)
	}
	w.workerStageSec = level{v: 0.03, n: 1, ok: true} // 1.8 cores of stages: preprocessing it is
	if a, _ := saturatedAdvice(adviceIn{w: w, cores: 2, d: decision{kind: CPUSaturated, variant: cpuOwn}}); len(a) == 0 || !strings.HasPrefix(a[0], "preprocessing needs more than") {
		t.Errorf("workers' stages fill the cores: %q", a)
	}

	c := &window{th: th, workers: 1, cores: 2}
	c.roles.loopPct, c.roles.computePct, c.roles.workersPct = level{v: 70, n: 1, ok: true}, level{v: 80, n: 1, ok: true}, level{v: 0, n: 1, ok: true}
	c.roles.haveCompute, c.roles.compute = true, sample.Thread{TID: 7, Name: "python3", CPUPct: 0}
	es, ok := crowdedOut(c, th)
	if !ok {
		t.Fatal("not crowded out")
	}
	for _, e := range es {
		if e.Metric == "procs.threads.cpu_pct" {
			t.Errorf("an idle pool thread cited: %q", e.Text)
		}
	}
	c.workersCPUMissed = true
	if es, ok := crowdedOut(c, th); ok {
		t.Errorf("workers' CPU unread, yet crowded out: %q", texts(es))
	}
	if a, _ := saturatedAdvice(adviceIn{w: c, cores: 2, d: decision{kind: CPUSaturated, variant: cpuOwn}}); strings.Contains(strings.Join(a, "\n"), "set_num_threads") {
		t.Errorf("workers' CPU unread, yet told to cap the compute threads: %q", a)
	}
}

// TestCappedThreadsAreNotToldToCap: the training process's compute
// threads fill the cores, but torch's intra-op pool is at one thread
// already (torch.set_num_threads(1), as the hook read it): the advice
// says so and caps BLAS's and OpenMP's own, not torch's again (a user's
// review).
func TestCappedThreadsAreNotToldToCap(t *testing.T) {
	w := &window{workers: 1, cores: 2}
	w.roles.computePct, w.roles.workersPct = level{v: 100, n: 1, ok: true}, level{v: 7, n: 1, ok: true}
	one := 1
	w.gpu.settings = &sample.JobSettings{IntraOpThreads: &one}
	a, _ := saturatedAdvice(adviceIn{w: w, cores: 2, d: decision{kind: CPUSaturated, variant: cpuOwn}})
	if all := strings.Join(a, "\n"); strings.Contains(all, "torch.set_num_threads(") || !strings.Contains(all, "has 1 thread already") || !strings.Contains(all, "OPENBLAS_NUM_THREADS=1") {
		t.Errorf("pool at 1 thread: %q", a)
	}
	four := 4
	w.gpu.settings.IntraOpThreads = &four
	if a, _ := saturatedAdvice(adviceIn{w: w, cores: 2, d: decision{kind: CPUSaturated, variant: cpuOwn}}); !strings.Contains(strings.Join(a, "\n"), "torch.set_num_threads(1)") {
		t.Errorf("pool at 4 threads: %q", a)
	}
}
