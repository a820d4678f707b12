package sample

import "slices"

// Role is what a thread (or a rank) does in the training job, in a word
// or two, as every view and the diagnosis name it. Computed once per frame (AssignRoles)
// and drawn as computed: the verdict and the dashboard never disagree on
// which thread is the loop.
type Role string

// The roles. A thread with none of them has the empty Role.
const (
	RoleLoop   Role = "loop"   // runs the training loop
	RoleWorker Role = "worker" // a thread of a DataLoader worker process
	RoleMain   Role = "main"   // a process's main thread that is not the loop
)

// A rank's roles in a job of several (diagnose.Thresholds.RankRole
// assigns them, from the verdict's straggler).
const (
	RoleStraggler  Role = "straggler"           // the rank the verdict names as holding the others back
	RoleInputBound Role = "input-bound"         // waits for its own input past the starved share
	RoleAllReduce  Role = "waits in all-reduce" // its step well past the straggler's: it waits for it
	RoleOK         Role = "ok"
)

// LoopThread is the thread that runs the training loop: the one the loader
// names (the Python hook and the embedded loader's inline loop do), else,
// for a loader with no workers, the training process's main thread (a
// Python training loop runs there). tid is 0 when unknown; pid is the
// training process's, 0 when unknown.
func (l *Loader) LoopThread() (pid, tid int) {
	if l == nil {
		return 0, 0
	}
	if l.PID != nil {
		pid = *l.PID
	}
	switch {
	case l.LoopTID != nil:
		return pid, *l.LoopTID
	case pid != 0 && l.Workers != nil && *l.Workers == 0:
		return pid, pid
	}
	return pid, 0
}

// RoleOf is t's role in a job whose loader is l (nil: no loader).
func RoleOf(t Thread, l *Loader) Role {
	_, loop := l.LoopThread()
	var workers []int
	if l != nil {
		workers = l.WorkerPIDs
	}
	switch {
	case loop != 0 && t.TID == loop:
		return RoleLoop
	case slices.Contains(workers, t.PID):
		return RoleWorker
	case t.TID == t.PID:
		return RoleMain
	}
	return ""
}

// AssignRoles sets every thread's Role from the frame's loader. The
// Sampler calls it on each frame it assembles, and the recording reader
// on frames recorded before roles were stored.
//
// It also derives the loader's WorkersRunDelayShare from the worker
// threads, so that a recording's is recomputed too, never taken from the
// file; and the loop's copies' share of their GPU's PCIe link (copyLink).
func (f *Frame) AssignRoles() {
	f.ownDerived()
	f.copyLink()
	f.markTF32()
	f.deriveMFU()
	defer f.accelLessRunDelay()
	if f.Procs == nil {
		return
	}
	for i := range f.Procs.Threads {
		f.Procs.Threads[i].Role = RoleOf(f.Procs.Threads[i], f.Loader)
	}
	if f.Loader != nil {
		f.Loader.WorkersRunDelayShare = workersRunDelayShare(f.Procs.Threads)
	}
}

// ownDerived gives f copies of its own of what AssignRoles writes into
// (the loader, its payload's copy figures, its settings, the virtual
// accelerator): a loader's reading may be handed to several frames while
// a slow read is under way (probes/endpoint), and each frame's derived figures are its
// own, written once from the reading as it came, never over the ones an
// earlier frame — held by the dashboard, the diagnoser or the e key's
// hour, read on other goroutines — shows.
func (f *Frame) ownDerived() {
	if l := f.Loader; l != nil {
		own := *l
		if p := own.Payload; p != nil {
			pc := *p
			if c := pc.Copy; c != nil {
				cc := *c
				pc.Copy = &cc
			}
			own.Payload = &pc
		}
		if s := own.Settings; s != nil {
			// markTF32 writes the frame's own reading: frames of one
			// slow endpoint read share the loader's (a review: a later
			// frame on another GPU flipped an earlier one's, a race).
			sc := *s
			own.Settings = &sc
		}
		f.Loader = &own
	}
	if a := f.Accel; a != nil {
		own := *a
		f.Accel = &own
	}
}

// accelLessRunDelay (issue 56): the virtual accelerator's busy share is
// the loop's step time over wall time (or its time not waiting for a
// batch, sampled), and a step is wall time: it counts the time the loop
// thread sat runnable without a CPU — throttled at its cgroup's quota
// (a throttled task stays queued, so its run delay grows), or behind
// other threads on saturated cores. An accelerator idles through that
// time, so it is taken off, at most the whole step. Run delay that fell
// in the loop's wait for a batch (a wakeup that waited for a CPU) is
// taken off too: the busy share errs low, never high. A recording made
// before StepPct was kept has its BusyPct taken as the step's.
func (f *Frame) accelLessRunDelay() {
	a := f.Accel
	if a == nil {
		return
	}
	if a.StepPct == nil {
		s := a.BusyPct
		a.StepPct = &s
	}
	a.BusyPct, a.LoopRunDelayPct = *a.StepPct, nil
	_, tid := f.Loader.LoopThread()
	if tid == 0 || f.Procs == nil {
		return
	}
	for _, t := range f.Procs.Threads {
		if t.TID == tid && t.RunDelayMsPerSec != nil {
			d := min(max(*t.RunDelayMsPerSec/10, 0), *a.StepPct)
			a.BusyPct, a.LoopRunDelayPct = *a.StepPct-d, &d
			return
		}
	}
}

// workersRunDelayShare is, over the worker threads whose run delay was
// read, run delay ÷ (CPU time + run delay): how much of the time they
// wanted a CPU they waited for one (schedstat,
// Documentation/scheduler/sched-stats.rst). Nil when none was read or
// they neither ran nor waited.
func workersRunDelayShare(threads []Thread) *float64 {
	cpu, delay, n := 0.0, 0.0, 0
	for _, t := range threads {
		if t.Role != RoleWorker || t.RunDelayMsPerSec == nil {
			continue
		}
		cpu += t.CPUPct / 100
		delay += *t.RunDelayMsPerSec / 1000
		n++
	}
	if n == 0 || cpu+delay <= 0 {
		return nil
	}
	s := delay / (cpu + delay)
	return &s
}

// copyLink sets the loop's copy rate's share of the PCIe link of the GPU
// it copies to: the GPU that lists the loader's process, else the only
// GPU. CUDA's index (HostCopy.Device) is not NVML's under
// CUDA_VISIBLE_DEVICES, so it is not used to match. Unset when no GPU is
// known to be the one, or its link was not read.
func (f *Frame) copyLink() {
	l := f.Loader
	if l == nil || l.Payload == nil || l.Payload.Copy == nil {
		return
	}
	c := l.Payload.Copy
	c.Link, c.LinkBytesPerSec, c.LinkShare = "", nil, nil
	var g *GPU
	if l.PID != nil {
		for i := range f.GPUs {
			for _, p := range f.GPUs[i].Processes {
				if p.PID == *l.PID {
					g = &f.GPUs[i]
				}
			}
		}
	}
	if g == nil && len(f.GPUs) == 1 {
		g = &f.GPUs[0]
	}
	if g == nil || g.PCIeLinkBytesPerSec == nil || *g.PCIeLinkBytesPerSec <= 0 {
		return
	}
	c.Link, c.LinkBytesPerSec = g.PCIeLink, g.PCIeLinkBytesPerSec
	if c.BytesPerSec != nil {
		share := *c.BytesPerSec / *g.PCIeLinkBytesPerSec
		c.LinkShare = &share
	}
}
