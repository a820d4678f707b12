package diagnose

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// roles splits the training process's CPU by what its threads do, so a
// verdict can tell the loop's thread loading data (num_workers=0) from the
// process's own compute pools (OpenBLAS, OpenMP, MKL, torch intra-op) and
// from the loader's workers. Percentages are of one core (200 = two cores).
type roles struct {
	loopPct     level // the training loop's thread
	loopHottest level // 1 in frames where the loop's thread was the busiest thread, else 0
	computePct  level // the training process's other threads together
	// autogradPct is, of them, the busiest of autograd's device threads
	// (pt_autograd_N, one per GPU): on a GPU, loss.backward() hands the
	// backward's launches to such a thread while the loop's thread waits
	// for it, so the two take turns on the host's one path that launches
	// the step (launch_bound).
	autogradPct level
	workersPct  level // the worker processes together; only with worker PIDs
	loopName    string
	loopTID     int
	compute     sample.Thread // the busiest non-loop thread of the training process, latest frame
	haveCompute bool
}

// roleReading is one frame's split; ok is false when the frame cannot
// say which thread is the loop's.
type roleReading struct {
	loop                    sample.Thread
	loopHottest             bool
	computePct, workersPct  float64
	autogradPct             float64
	haveCompute, haveWorker bool
	compute                 sample.Thread
	haveTop                 bool
}

// loopThread is the thread that runs the training loop (see
// sample.Loader.LoopThread: the one rule the views use too).
func loopThread(l *sample.Loader) (pid, tid int) { return l.LoopThread() }

// readRoles reads one frame's split. The process and thread lists are the
// probe's (the focused tree, threads busiest first).
func readRoles(f *sample.Frame) (r roleReading, ok bool) {
	pid, tid := loopThread(f.Loader)
	p := f.Procs
	if tid == 0 || p == nil || len(p.Threads) == 0 {
		return r, false
	}
	i := slices.IndexFunc(p.Threads, func(t sample.Thread) bool { return t.TID == tid })
	if i < 0 {
		// Not among the busiest threads: it is not what pegs a core.
		r.loop = sample.Thread{TID: tid, PID: pid}
	} else {
		r.loop = p.Threads[i]
	}
	r.loopHottest = i == 0
	for _, t := range p.Threads {
		if t.PID == pid && t.TID != tid && !r.haveTop {
			r.compute, r.haveTop = t, true // busiest first: the first one
		}
		if t.PID == pid && t.TID != tid && strings.HasPrefix(t.Name, "pt_autograd_") {
			// One device thread per GPU: several (DataParallel, one
			// process driving many GPUs) run side by side, not in turn
			// with each other, so the busiest is the one on the path. A
			// thread not listed is not among the busy ones.
			r.autogradPct = max(r.autogradPct, t.CPUPct)
		}
	}
	// The training process's CPU less its loop thread is its other threads.
	for _, pr := range p.List {
		if pr.PID == pid {
			r.computePct, r.haveCompute = max(0, pr.CPUPct-r.loop.CPUPct), true
		}
	}
	if ws := f.Loader.WorkerPIDs; len(ws) > 0 {
		for _, pr := range p.List {
			if slices.Contains(ws, pr.PID) {
				r.workersPct += pr.CPUPct
			}
		}
		r.haveWorker = true
	}
	return r, true
}

// describeCompute names the busiest compute thread for evidence: its name
// and TID, and whether it spins (mostly system time).
func (r *roles) describeCompute(th Thresholds) string {
	t := r.compute
	s := fmt.Sprintf("thread %s (tid %d) of the training process runs at %.0f %% of a core", t.Name, t.TID, t.CPUPct)
	if spinning(t, th) {
		s += fmt.Sprintf(", %.0f %% of it system time: it spins (an idle BLAS/OpenMP pool in sched_yield)", 100*t.SystemPct/t.CPUPct)
	} else {
		s += " (a compute pool: OpenBLAS, OpenMP, MKL or torch intra-op)"
	}
	return s
}

// spinning says a busy thread's CPU is mostly system time.
func spinning(t sample.Thread, th Thresholds) bool {
	return t.CPUPct >= 20 && t.SystemPct >= th.SpinSystemShare*t.CPUPct
}
