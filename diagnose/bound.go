package diagnose

import (
	"math"

	"github.com/gpuwatch/gpuwatch/sample"
)

// stageTimes are one batch's measured stage times over a window (seconds,
// medians of the frames that timed them), with the rates they came at: the
// pipeline model's view of where each batch's time goes (docs/diagnosis.md,
// "Causes and their bounds").
type stageTimes struct {
	th                         Thresholds // the causes' thresholds (Thresholds.HandoverShare …)
	getitem, collate, handover float64    // a worker's wall time per batch
	take, pin, step            float64    // the training process's, per batch
	inline                     bool       // getitem and collate ran in the loop (num_workers=0)
	workers                    int
	rate                       float64 // batches per second measured (the window's mean)
	batch                      float64 // samples per batch
	wait                       float64 // the loop's wait share
	contended                  bool    // the workers wait for a CPU: the job's CPU is shared
	cpuBound                   bool    // the workers' busy time is CPU (or a wait for one), not storage
	cpu                        float64 // the workers' CPU per batch, with their waits for one (cpuKnown)
	cpuKnown                   bool
	loopCPUWait                float64 // the loop's wait for a CPU per batch (its own thread's run delay), where read
	loopCPUWaitKnown           bool
	ownWait                    bool // the loop's wait is its own, batches ready (the model's OverheadSec): its whole period is the loop's
	ok                         bool
}

// loopFreed is the most the loop's time per batch (l) can shrink by the
// CPU others give back: its own wait for a CPU taken off (l ÷ (l − that
// wait)); unbounded where that wait was not read (the loop's thread not
// found among those listed), or where it is all of l. Only the loop
// thread's wait is read: a step whose time is other threads' CPU (the
// compute pool, the pin-memory thread) is capped as if it were not. A
// step that sleeps or waits on the accelerator is not made faster by a
// free CPU: the mmap loop's recording with its CPUs read busy had its
// free bound raised 6.4× by its workers' faults freed
// (TestABusyBoxDoesNotFreeTheLoopsStep).
func (s *stageTimes) loopFreed(l float64) float64 {
	if !s.loopCPUWaitKnown {
		return math.Inf(1)
	}
	return l / max(l-s.loopCPUWait, 1e-9)
}

// worker is a worker's wall time per batch (getitem + collate + hand-over).
func (s *stageTimes) worker() float64 { return s.getitem + s.collate + s.handover }

// workersBusy says the workers' timed stages fill the batch period
// (busyWorkerShare of n workers ÷ the rate): they are the limit. Loading
// inline, the loop's own wait is the loading. A wait that is the loop's
// own (ownWait: each worker done when asked) is no worker's.
func (s *stageTimes) workersBusy() bool {
	if s.inline || s.workers == 0 {
		return true
	}
	return !s.ownWait && s.worker()*s.rate >= busyWorkerShare*float64(s.workers)
}

// loop is the training loop's own time per batch: its step and taking
// each batch (the pin-memory thread counted with it: an upper bound on
// what removing it gains). It is never less than what the measured rate
// and wait leave the loop, and where the wait is its own (batches ready
// when it asked: the model's OverheadSec), the whole batch period is.
func (s *stageTimes) loop() float64 {
	own := (1 - s.wait) / s.rate
	if s.ownWait {
		own = 1 / s.rate
	}
	return max(own, s.step+s.take+s.pin)
}

// stageCut is a change to the stages: how many seconds per batch it takes
// off each side of the pipeline (the workers', the loop's).
type stageCut struct{ worker, loop float64 }

// scaled is the cut when the stages cost k× less instead of nothing.
func (c stageCut) scaled(k float64) stageCut {
	if k <= 1 {
		return stageCut{}
	}
	f := 1 - 1/k
	return stageCut{worker: c.worker * f, loop: c.loop * f}
}

// Bound is what a fix can gain at most, from the measured stage times:
// the throughput if the stages it touches cost K× less, and if they cost
// nothing (Free). The model takes the stages' time off the side of the
// pipeline that pays it — a worker's time per batch, or the loop's — and
// the throughput is the smaller of the two sides' rates; where the workers
// wait for a CPU they share with the loop, time freed on either side
// counts for both. It is an upper bound: applying the fix never beats the
// free figure (issue 39, item 4).
type Bound struct {
	K             float64 `json:"k"`
	SamplesPerSec float64 `json:"samples_per_sec,omitempty"`
	Gain          float64 `json:"gain"`
	FreeSamples   float64 `json:"free_samples_per_sec,omitempty"`
	FreeGain      float64 `json:"free_gain"`
}

// rateAfter is the batches per second the model gives after the cut.
func (s *stageTimes) rateAfter(c stageCut) float64 {
	r := s.rate
	if s.inline || s.workers == 0 {
		// Loading inline: one thread does it all, one batch after another:
		// the measured period less the cut, and never less than the timed
		// stages the cut leaves (the step among them). The period and the
		// stages are a mean and medians: without the floor a free
		// __getitem__ left a period shorter than the step itself.
		t := 1 / r
		left := max(s.getitem+s.collate-c.worker, 0) + max(s.step+s.take+s.pin-c.loop, 0)
		return 1 / max(t-c.worker-c.loop, left, 1e-9)
	}
	w, l := s.worker(), s.loop()
	gw := w / max(w-c.worker, 1e-9)
	gl := l / max(l-c.loop, 1e-9)
	if s.contended {
		// The workers and the loop share the CPUs: time freed on either
		// side is CPU the other can have. Of the workers' time only its
		// CPU is (their CPU per batch, with their waits for one, where
		// read): a worker's wait on storage freed gives the loop nothing.
		wc, cut := w, c.worker
		if s.cpuKnown && s.cpu > 0 && s.cpu < w {
			wc, cut = s.cpu, c.worker*s.cpu/w
		}
		shared := (wc + l) / max(wc+l-cut-c.loop, 1e-9)
		gw, gl = max(gw, shared), max(gl, min(shared, s.loopFreed(l)))
	}
	// The workers deliver at least what was measured, and with their
	// stage times, as many batches as they can make side by side.
	workersCap := max(r, float64(s.workers)/w)
	loopCap := max(r, 1/l)
	return max(r, min(workersCap*gw, loopCap*gl))
}

// bound is the fix's bound for a cut, at k× less and free.
func (s *stageTimes) bound(c stageCut, k float64) *Bound { return s.boundFree(c, k, c) }

// boundFree is the fix's bound where what the fix can take away at most
// (free) is not the whole of the stages k applies to (c): padding takes
// away only the padded share, and the hand-over's fix also takes work out
// of a stage the hook cannot split (the conversion to float inside
// __getitem__, which the workers' profiles will tell from the decode).
func (s *stageTimes) boundFree(c stageCut, k float64, free stageCut) *Bound {
	if !s.ok || s.rate <= 0 {
		return nil
	}
	// The k figure's gain is over the model's own rate for the stages as
	// measured, so that a model that sees more headroom than the loop got
	// does not count it as the fix's. The free figure is an upper bound:
	// its gain is over the smaller of that and the measured rate, so that
	// no error of the model's lowers it. With workers the model's rate is
	// never under the measured one, and the free figure is the model's
	// own; the mmap loop's was 9 % under it as a gain over the model's
	// (19,272 against 21,116 samples/s), and its fix ran 20,160
	// (TestMmapFreeBoundHoldsOverItsFix).
	base := s.rateAfter(stageCut{})
	gk, gf := s.rateAfter(c.scaled(k))/base, s.rateAfter(free)/min(base, s.rate)
	return &Bound{K: k, SamplesPerSec: gk * s.rate * s.batch, Gain: gk, FreeSamples: gf * s.rate * s.batch, FreeGain: gf}
}

// readStages is the window's stage times: the median of each stage over
// the frames that timed it. ok is false without the workers' stages (or,
// inline, the loop's), or without a batch rate.
func readStages(frames []sample.Frame, w *window) stageTimes {
	var g, c, h, t, p, st levels
	s := stageTimes{workers: max(w.workers, 0), rate: w.meanBatchesPerSec.v, wait: w.meanWaitShare.v}
	for i := range frames {
		l := frames[i].Loader
		if l == nil || l.Stages == nil {
			continue
		}
		x := l.Stages
		s.inline = x.Inline
		for _, a := range []struct {
			l *levels
			v *float64
		}{{&g, x.GetitemMs}, {&c, x.CollateMs}, {&h, x.HandoverMs}, {&t, x.TakeMs}, {&p, x.PinMs}, {&st, x.StepMs}} {
			if a.v != nil {
				a.l.add(*a.v / 1000)
			}
		}
	}
	if w.loopRunDelay.ok && s.rate > 0 {
		s.loopCPUWait, s.loopCPUWaitKnown = w.loopRunDelay.v/1000/s.rate, true
	}
	gm, cm, hm := g.median(), c.median(), h.median()
	s.getitem, s.collate, s.handover = gm.v, cm.v, hm.v
	s.take, s.pin, s.step = t.median().v, p.median().v, st.median().v
	if s.step == 0 && w.stepMs.ok {
		s.step = w.stepMs.v / 1000
	}
	if w.meanSamplesPerSec.ok && s.rate > 0 {
		s.batch = w.meanSamplesPerSec.v / s.rate
	}
	s.ok = gm.ok && s.rate > 0 && s.worker() > 0 && s.wait < 1
	s.cpuBound = s.ok && cpuBound(w, &s)
	if s.ok && w.loaderCPU.ok {
		s.cpu, s.cpuKnown = loadingCPU(w)/s.rate, true
	}
	// The loop shares the CPUs with the workers where they wait for one,
	// where every core is busy, or where CPU-bound workers leave it at
	// most one core: its measured step and take then include waits for a
	// CPU that the fix gives back.
	s.contended = w.workersRunDelay.ok && w.workersRunDelay.v >= w.th.ContendedRunDelay ||
		w.cpuBusy.ok && w.cpuBusy.v >= w.th.CPUSaturatedPct ||
		s.cpuBound && w.cores > 0 && w.cores <= s.workers+1
	return s
}

// cpuBound says the loading's busy time is CPU, or a wait for a CPU
// (run delay), for at least cpuBoundShare of it: the workers' CPU from
// /proc against their timed stages (inline: the process's CPU against the
// loop's wait). Unknown CPU says no. Where every CPU the job may use is
// busy and nothing shows a wait on storage (no io_bound evidence, or the
// watched tree reads next to nothing — the host's I/O pressure is then
// another process's —, and no small files found opened), the loading's
// time off a CPU is a wait for one, whatever schedstat said (issue 58: the text loop, 2 tokenizing
// workers on 2 saturated cores, read 1.2 CPUs of their 2 busy and no wait
// for a CPU in one run of the battery, and was named no cause).
func cpuBound(w *window, s *stageTimes) bool {
	if !w.loaderCPU.ok {
		return false
	}
	cpu := loadingCPU(w)
	busy := s.worker() * s.rate
	if s.inline || s.workers == 0 {
		busy = s.wait
		if sp := w.spinPct; sp.ok {
			// Loading inline, the process's CPU is the loading's, less
			// its compute pool spinning idle: no work of anyone's (a
			// user's review: a __getitem__ sleeping 30 ms a batch, its
			// process at 1.2 cores of a spinning pool, was told to slice
			// tensors it sliced already). Not capped at the loop
			// thread's: a decode or transform on native threads (cv2,
			// intra-op) is the loading's too (a second review).
			cpu = max(0, cpu-sp.v/100)
		}
		if d := w.loopRunDelay; d.ok {
			// Loading inline, the loop's own waits for a CPU are read
			// (schedstat): its time off a CPU is such a wait only as far
			// as they say, however full the box (a user's review: a
			// __getitem__ sleeping beside another job's 1.1 cores was
			// read as waiting for a CPU).
			return cpu+d.v/1000 >= cpuBoundShare*busy
		}
	}
	if cpu >= cpuBoundShare*busy {
		return true
	}
	_, full := cpuEvidence(w, w.th)
	_, small := w.files.manySmall(w.th.SmallFileBytes)
	return full && !small && (len(ioEvidence(w, w.th)) == 0 || w.paging.readsNothing(w.th))
}

// loadingCPU is the loading's CPU in cores, with the time it waited for
// a CPU (its run delay) counted as CPU wanted.
func loadingCPU(w *window) float64 {
	cpu := w.loaderCPU.v / 100
	if r := w.workersRunDelay; r.ok && r.v < 1 {
		cpu /= 1 - r.v
	}
	return cpu
}

// workersFillCPUs says the workers want (their CPU, with their waits for
// one) at least busyWorkerShare of the CPUs they can have (workerCPUs:
// the job's, less the loop's and other processes'). False where their CPU
// or the batch rate is unknown.
func workersFillCPUs(w *window) bool {
	if !w.loaderCPU.ok || !w.batchesPerSec.ok || w.batchesPerSec.v <= 0 || w.workers <= 0 {
		return false
	}
	return loadingCPU(w) >= busyWorkerShare*workerCPUs(w, w.workers, w.loaderCPU.v/100/w.batchesPerSec.v)
}

// cpuBoundShare: loading whose busy time is this much CPU is CPU-bound.
const cpuBoundShare = 0.6
