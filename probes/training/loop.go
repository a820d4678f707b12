package training

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/probes/host"

	"github.com/gpuwatch/gpuwatch/internal/bg"
	"github.com/gpuwatch/gpuwatch/sample"
)

// The sampled wait of a loop nobody instrumented (docs/architecture.md, "A
// job nobody instrumented"). A DataLoader's training loop runs on the
// CPython process's main thread; when it waits for its next batch it is
// blocked on the workers' result queue — poll or a read on a worker's pipe
// or socket, or, with pin_memory, a futex while the pin-memory thread
// fetches. Sampling that thread's state, wchan and (where permitted)
// syscall from /proc at 50 Hz gives the share of its time spent waiting,
// with nothing stopped: unlike a ptrace-based stack sampler, reading these
// files never pauses the process.

// loopClass is what one sample saw the loop doing.
type loopClass uint8

const (
	loopStep    loopClass = iota // stepping: running, or blocked elsewhere (a sleep, the GPU)
	loopWait                     // blocked on the workers' result queue
	loopLoad                     // inline loading: running, or reading, on the loop's own thread
	loopUnknown                  // unreadable, or stopped (a debugger)
	numLoopClasses
)

// queueWchans are the kernel functions a thread blocks in while it waits on
// a pipe or a socket, directly or through poll/select/epoll.
var queueWchans = []string{"poll_schedule_timeout", "do_sys_poll", "do_select", "core_sys_select", "ep_poll",
	"unix_stream_read_generic", "unix_stream_data_wait", "unix_dgram_recvmsg", "pipe_read", "pipe_wait", "sk_wait_data", "wait_woken"}

func queueWait(wchan string) bool {
	for _, w := range queueWchans {
		if strings.HasPrefix(wchan, w) {
			return true
		}
	}
	return false
}

func futexWait(wchan string) bool { return strings.Contains(wchan, "futex") }

// loopSample is one reading of the loop's thread.
type loopSample struct {
	state   byte
	wchan   string // "" when unreadable
	syscall string // the blocked syscall's name, "" when unknown
	fdKind  string // for a read: "pipe", "socket", "file", ""
}

// classifyLoop says what a sample shows the loop doing. With workers, a
// wait on a pipe or socket (the result queue) is the wait for a batch, and
// so is a futex when a pin-memory thread fetches for the loop; anything
// else is the step. Without workers the loop loads inline: running, or
// waiting on a disk, a pipe or a socket, is loading; a sleep, a futex or
// the GPU is the step.
func classifyLoop(s loopSample, workers int, pinThread bool) loopClass {
	switch s.state {
	case 'R':
		if workers == 0 {
			return loopLoad
		}
		return loopStep
	case 'D':
		if workers == 0 {
			return loopLoad
		}
		return loopStep
	case 'S':
	default:
		return loopUnknown // stopped, traced, zombie, or unreadable
	}
	queue, futex := false, false
	switch s.syscall {
	case "poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2", "recvfrom", "recvmsg":
		queue = true
	case "read":
		queue = s.fdKind == "pipe" || s.fdKind == "socket"
		if s.fdKind == "file" && workers == 0 {
			return loopLoad
		}
	case "futex":
		futex = true
	case "nanosleep", "clock_nanosleep", "ioctl", "sched_yield":
		return loopStep
	case "":
		queue, futex = queueWait(s.wchan), futexWait(s.wchan)
	}
	switch {
	case queue && workers == 0:
		return loopLoad // inline loading waits on a socket or pipe (remote storage)
	case queue:
		return loopWait
	case futex && workers > 0 && pinThread:
		return loopWait
	}
	return loopStep
}

// LoopOptions configure the loop sampler.
type LoopOptions struct {
	Proc string // procfs root
	// Hz is samples per second (default and least 50: it costs about 0.6 %
	// of a core on a 2-core VM, BenchmarkLoopSamplerCPU).
	Hz int
	// Root is the process tree to find the training process in (0: the
	// host's busiest training process); asked at every scan.
	Root func() int
	// Covered says a loader speaking the protocol (the hook, gpuwatch
	// run) reports this process: the sampler then stands back.
	Covered func(pid int) bool
	// Hooked: the processes carry gpuwatch run's hook, which reports a
	// Python process from its DataLoader's first batch on (Covered). A
	// Python process sampled before that has not started its loop: its
	// want of worker processes is not num_workers=0 (its DataLoader has
	// not started them yet), and its running is no loading.
	Hooked bool
	// Serves says the hook announced process pid (its DataLoader has
	// iterated), whether gpuwatch reads it now or not: a Hooked process it
	// announced is sampled as a running loop (nil: none announced).
	Serves func(pid int) bool
	// Scan is how often the training process and its workers are looked
	// for again (default 2 s).
	Scan time.Duration
	// Find lists the training processes in root's tree (0: the host's),
	// busiest first (default: a TrainingFinder on Proc).
	Find func(root int) []TrainingProcess
	// Table is the Proc probe's reading of the same Proc root, for the
	// default finder (nil: it reads /proc itself).
	Table *host.ProcTable
}

// Loop is the probe for a loop nobody instrumented: it samples the
// training process's main thread on its own goroutine (started by Start,
// stopped and waited for by Close) and publishes the wait share as the
// frame's loader, with the process's roles: its worker processes and its
// loop thread.
type Loop struct {
	opt    LoopOptions
	finder *TrainingFinder

	mu        sync.Mutex
	target    *TrainingProcess // nil: none found, or covered
	hidden    int              // the finder's Hidden at the last scan
	counts    [numLoopClasses]int
	woke      float64 // of counts[loopStep], the share that was a woken wait for a CPU (wakeCredit)
	pinThread bool
	sysDenied bool
	wchanNone bool
	gpu       bool          // the process maps CUDA: a running inline loop may be syncing with the GPU
	restarted int           // no worker now, but this many in the last generation of workers known to restart (workerLives.restarting)
	restarts  bool          // its workers restart (workerLives.restarting)
	lives     workerLives   // the processes' workers as the looks saw them (the sampling goroutine's own)
	g         *bg.Group     // the sampling goroutine; nil before Start
	stopped   atomic.Bool   // read each sample: cheaper than a select at 50–100 Hz
	wake      chan struct{} // closed at the end: an idle wait ends at once
}

// NewLoop returns the loop sampler.
func NewLoop(opt LoopOptions) *Loop {
	if opt.Proc == "" {
		opt.Proc = "/proc"
	}
	if opt.Hz < 50 {
		opt.Hz = 50
	}
	if opt.Scan <= 0 {
		opt.Scan = 2 * time.Second
	}
	if opt.Root == nil {
		opt.Root = func() int { return 0 }
	}
	l := &Loop{opt: opt, finder: NewTrainingFinder(opt.Proc, opt.Table), wake: make(chan struct{}), lives: workerLives{}}
	if l.opt.Find == nil {
		l.opt.Find = l.finder.Find
	}
	return l
}

// Name implements Probe.
func (l *Loop) Name() string { return "loop" }

// Hidden is how many busy processes the last scan could not read
// (another user's): where no training process was found, one may be among
// them.
func (l *Loop) Hidden() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hidden
}

// Target is the training process sampled now, if any.
func (l *Loop) Target() (TrainingProcess, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.target == nil {
		return TrainingProcess{}, false
	}
	return *l.target, true
}

// restartMemory is how long a process's workers that restart stand for
// its worker count while none is seen: a DataLoader without persistent
// workers ends them at each epoch's end and starts new ones, so a look
// between two epochs finds none (a job with 2 such workers read "only 0
// loader workers", and was advised num_workers 0 → 2). shortLife is the
// longest a generation of workers lives for them to count as restarting
// (the hook's rule is epochs under 10 frames: diagnose's
// markShortLivedWorkers): a validation DataLoader's workers, gone when
// a num_workers=0 training loop resumes, live longer.
const (
	restartMemory = 30 * time.Second
	shortLife     = 10 * time.Second
)

// workerLife is what the looks have seen of one process's workers.
type workerLife struct {
	pids     []int     // the generation at the last look that found some; nil once a look found none
	count    int       // how many the last generation seen was
	at, born time.Time // that look, and the first look that found that generation
	bornSeen bool      // a look before born found none, or others: its life is measured (the first generation's is not)
	ended    time.Time // the last time a short-lived generation was seen ended (zero: never)
}

// workerLives are the processes' workers as the looks have seen them, by
// PID (the target may move between ranks and back), pruned of those not
// seen for restartMemory. The sampling goroutine's own.
type workerLives map[int]*workerLife

// restarting is how many workers t stands for where a look finds none
// (0 where it finds some, or where its workers are not known to
// restart), and whether they restart: a generation of its workers was
// seen to end (a look found none, or a look found only new PIDs) after
// living under shortLife, within restartMemory.
func (ls workerLives) restarting(t *TrainingProcess, now time.Time) (int, bool) {
	for pid, l := range ls {
		if now.Sub(l.at) >= restartMemory && pid != t.PID {
			delete(ls, pid)
		}
	}
	l := ls[t.PID]
	if l == nil {
		if len(t.Workers) == 0 {
			return 0, false
		}
		l = &workerLife{pids: slices.Clone(t.Workers), count: len(t.Workers), at: now, born: now}
		ls[t.PID] = l
		return 0, false
	}
	recent := func() bool { return !l.ended.IsZero() && now.Sub(l.ended) < restartMemory }
	if len(t.Workers) == 0 {
		if len(l.pids) > 0 { // the generation seen last has ended
			if l.bornSeen && now.Sub(l.born) < shortLife { // dead by now: it lived less than that
				l.ended = now
			}
			l.pids = nil
		}
		if recent() && now.Sub(l.at) < restartMemory {
			return l.count, true
		}
		return 0, false
	}
	if len(l.pids) == 0 || disjoint(l.pids, t.Workers) { // a new generation
		if len(l.pids) > 0 && l.bornSeen && now.Sub(l.born) < shortLife {
			l.ended = now
		}
		l.born, l.bornSeen = now, true
	}
	l.pids, l.count, l.at = slices.Clone(t.Workers), len(t.Workers), now
	return 0, recent()
}

// disjoint says a and b share no PID.
func disjoint(a, b []int) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// Collect implements Probe: the samples since the last Collect become the
// frame's loader.
func (l *Loop) Collect(_ context.Context, f *sample.Frame) error {
	l.mu.Lock()
	t, counts, woke, pin, denied, noWchan, gpu, restarted, restarts := l.target, l.counts, l.woke, l.pinThread, l.sysDenied, l.wchanNone, l.gpu, l.restarted, l.restarts
	l.counts, l.woke = [numLoopClasses]int{}, 0
	l.mu.Unlock()
	if t == nil {
		return nil
	}
	workers := max(len(t.Workers), restarted)
	ld := &sample.Loader{
		Source: fmt.Sprintf("sampled: pid %d's main thread", t.PID), Workers: &workers, WorkerPIDs: t.Workers,
		PID: probes.Ptr(t.PID), LoopTID: probes.Ptr(t.PID),
		Sampled: &sample.SampledLoop{Samples: counts[loopWait] + counts[loopStep] + counts[loopLoad] + counts[loopUnknown], Hz: float64(l.opt.Hz),
			Inline: workers == 0, Command: t.Command, Why: t.Why, Read: "state, wchan, syscall"},
	}
	sl := ld.Sampled
	var missing []string
	switch {
	case noWchan && denied:
		sl.Read, missing = "state", append(missing, "wchan and syscall: not permitted (another user's process: run gpuwatch as that user, or as root)")
	case denied:
		sl.Read = "state, wchan"
		missing = append(missing, "syscall: not permitted (Yama ptrace_scope 1 allows it for gpuwatch's own children and root); wchan tells the waits apart")
	}
	if !t.Python {
		missing = append(missing, "not CPython: its loop is taken to run on the main thread")
	}
	if workers > 0 && pin {
		sl.Read += "; a pin-memory thread fetches for the loop"
	}
	inlineGPU := workers == 0 && gpu
	if inlineGPU {
		missing = append(missing, "loading inline on a GPU process: a running loop may be waiting on the GPU, so its wait is not split")
	}
	if l.opt.Hooked && t.Python && (l.opt.Serves == nil || !l.opt.Serves(t.PID)) {
		// run's hook reports this process from its first batch on: until
		// then its loop has not started, whatever its main thread does
		// (imports, building the dataset), and no worker process is no
		// num_workers=0.
		ld.Workers, sl.Inline, sl.BeforeFirstBatch = nil, false, true
		sl.Missing = "its DataLoader has had no batch yet: gpuwatch run's hook times the loop from its first batch (a loop without a DataLoader is not timed)"
		f.Loader = ld
		return nil
	}
	if restarts {
		sl.WorkersRestart = true
		sl.Read += fmt.Sprintf("; its %d workers come and go (persistent_workers=False): a generation of them lived under %s, within the last %s", workers, shortLife, restartMemory)
	}
	missing = append(missing, "exact waits, batch rates and knobs: gpuwatch run -- CMD, or the hook (import gpuwatch_hook)")
	sl.Missing = strings.Join(missing, "; ")
	waiting, stepping := counts[loopWait]+counts[loopLoad], counts[loopStep]
	if n := waiting + stepping; n >= max(5, l.opt.Hz/10) && !inlineGPU {
		ws := (float64(waiting) + woke) / float64(n)
		ld.WaitShare = &ws
		f.Accel = &sample.VirtualAccel{BusyPct: 100 * (1 - ws), Basis: "the loop's time not waiting for a batch, sampled"}
	}
	f.Loader = ld
	return nil
}

// Start implements Starter: it starts sampling on a goroutine of its own
// until ctx ends or Close. Call it once.
func (l *Loop) Start(ctx context.Context) {
	l.g = bg.New(ctx)
	context.AfterFunc(l.g.Context(), func() {
		l.stopped.Store(true)
		close(l.wake)
	})
	l.g.Go(func(context.Context) { l.run() })
}

// Close stops the sampling goroutine and waits for it.
func (l *Loop) Close() error {
	if l.g != nil {
		l.g.Close()
	}
	return nil
}

// thread is the open files of the sampled thread, read with pread.
type loopThread struct {
	pid                     int
	stat, wchan, sys, sched int // descriptors; -1 when not open
	buf                     []byte
	// The run-queue delay and the time run (schedstat, ns) and the time at
	// the last sample; whether the thread was waiting for a batch since,
	// and the time it has run since that wait (wakeCredit).
	delay, exec uint64
	at          time.Time
	waiting     bool
	ranSince    uint64
}

func (t *loopThread) close() {
	for _, fd := range []int{t.stat, t.wchan, t.sys, t.sched} {
		if fd >= 0 {
			syscall.Close(fd)
		}
	}
	t.stat, t.wchan, t.sys, t.sched = -1, -1, -1, -1
}

func (l *Loop) open(pid int) *loopThread {
	dir := l.opt.Proc + "/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/"
	t := &loopThread{pid: pid, stat: -1, wchan: -1, sys: -1, sched: -1, buf: make([]byte, 1024)}
	t.stat, _ = openRO(dir + "stat")
	t.sched, _ = openRO(dir + "schedstat")
	t.wchan, _ = openRO(dir + "wchan")
	var err error
	if t.sys, err = openRO(dir + "syscall"); err != nil {
		l.sysDenied = true
	}
	l.wchanNone = t.wchan < 0
	return t
}

func openRO(path string) (int, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	return fd, nil
}

func preadAll(fd int, buf []byte) ([]byte, bool) {
	if fd < 0 {
		return nil, false
	}
	n, err := syscall.Pread(fd, buf, 0)
	if err != nil || n <= 0 {
		return nil, false
	}
	return buf[:n], true
}

// read takes one sample of the thread; ok is false when it is gone.
func (l *Loop) read(t *loopThread) (loopSample, bool) {
	var s loopSample
	b, ok := preadAll(t.stat, t.buf)
	if !ok {
		return s, false
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 || end+2 >= len(b) {
		return s, false
	}
	s.state = b[end+2]
	if s.state != 'S' {
		return s, true
	}
	if b, ok := preadAll(t.wchan, t.buf); ok && !bytes.Equal(b, []byte("0")) {
		s.wchan = string(bytes.TrimSpace(b))
	}
	if b, ok := preadAll(t.sys, t.buf); ok {
		f := bytes.Fields(b)
		if len(f) >= 2 {
			if nr, err := strconv.Atoi(string(f[0])); err == nil {
				s.syscall = loopSyscalls[nr]
				if s.syscall == "read" {
					s.fdKind = l.fdKind(t.pid, f[1])
				}
			}
		}
	}
	return s, true
}

// fdKind says what a descriptor (hex, as /proc/PID/syscall prints it) is.
func (l *Loop) fdKind(pid int, hex []byte) string {
	fd, err := strconv.ParseUint(strings.TrimPrefix(string(hex), "0x"), 16, 32)
	if err != nil {
		return ""
	}
	target, err := os.Readlink(l.opt.Proc + "/" + strconv.Itoa(pid) + "/fd/" + strconv.FormatUint(fd, 10))
	switch {
	case err != nil:
		return ""
	case strings.HasPrefix(target, "pipe:"):
		return "pipe"
	case strings.HasPrefix(target, "socket:"):
		return "socket"
	case strings.HasPrefix(target, "/"):
		return "file"
	}
	return ""
}

// run samples on one locked OS thread that sleeps in the kernel between
// samples (clock_nanosleep to an absolute time): on a VM every wake-up is
// an exit to the hypervisor, and a Go timer's costs twice a raw sleep's
// (BenchmarkLoopSamplerCPU). Close is seen within one period.
func (l *Loop) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	period := time.Second / time.Duration(l.opt.Hz)
	var th *loopThread
	defer func() {
		if th != nil {
			th.close()
		}
	}()
	var next, nextScan time.Time
	var workers int
	var pin bool
	for !l.stopped.Load() {
		now := time.Now()
		if now.After(nextScan) {
			nextScan = now.Add(l.opt.Scan)
			t := l.scan()
			if th != nil && (t == nil || t.PID != th.pid) {
				th.close()
				th = nil
			}
			if t != nil && th == nil {
				l.mu.Lock()
				th = l.open(t.PID)
				l.mu.Unlock()
			}
			restarted, restarts := 0, false
			if t != nil {
				restarted, restarts = l.lives.restarting(t, now)
				workers, pin = max(len(t.Workers), restarted), l.pinMemoryThread(t.PID)
			}
			l.mu.Lock()
			l.target, l.pinThread, l.restarted, l.restarts = t, pin, restarted, restarts
			l.mu.Unlock()
		}
		if th != nil {
			if s, ok := l.read(th); ok {
				c := classifyLoop(s, workers, pin)
				w := wakeCredit(th, c, s.state, time.Now())
				l.mu.Lock()
				l.counts[c]++
				l.woke += w
				l.mu.Unlock()
			} else {
				nextScan = time.Time{} // gone: look again at once
			}
		}
		if th == nil {
			// No training process to sample: nothing to do until the next
			// scan (waking 100 times a second for nothing cost more CPU than
			// the rest of the sampling).
			idle := time.NewTimer(time.Until(nextScan))
			select {
			case <-idle.C:
			case <-l.wake:
			}
			idle.Stop()
			next = time.Time{}
			continue
		}
		next = next.Add(period)
		if now := time.Now(); next.Before(now) {
			next = now.Add(period) // fell behind (a long scan): skip, never burst
		}
		probes.SleepUntil(next)
	}
}

// wakeCredit is the share of a step sample that was still the wait for a
// batch: once its batch has come, the woken loop thread waits runnable for
// a CPU, and /proc shows it running ('R') though the loop's own clock is
// still counting its wait (on a busy host the sampled wait read 0.08–0.15
// below the loop's own, issue 39). Of the interval since the last sample,
// the share the thread spent on the run queue (schedstat's run delay) is
// that wait, for a running sample that follows a wait, and for each next
// one while the thread was mostly queued over the interval before and had
// run less than wakeRunBudget since the wait when it began: taking the
// batch costs the loop little CPU, and a thread that has run longer is in
// its step, queued behind the workers. (Crediting those too, a loop whose
// own clock read 0.18 waiting, 2 workers filling the 2-core VM, was
// sampled at 0.38.)
func wakeCredit(t *loopThread, c loopClass, state byte, now time.Time) float64 {
	b, ok := preadAll(t.sched, t.buf)
	var delay, exec uint64
	if ok {
		if f := bytes.Fields(b); len(f) >= 2 {
			var okExec bool
			exec, okExec = parseUint(f[0])
			delay, ok = parseUint(f[1])
			ok = ok && okExec
		} else {
			ok = false
		}
	}
	credit := 0.0
	if ok && t.waiting && c == loopStep && state == 'R' && !t.at.IsZero() && delay >= t.delay && exec >= t.exec {
		if dt := now.Sub(t.at); dt > 0 {
			credit = min(1, float64(delay-t.delay)/float64(dt.Nanoseconds()))
		}
		t.ranSince += exec - t.exec
	}
	switch {
	case c == loopWait:
		t.waiting, t.ranSince = true, 0
	default:
		t.waiting = credit > 0.5 && t.ranSince < uint64(wakeRunBudget)
	}
	if ok {
		t.delay, t.exec, t.at = delay, exec, now
	} else {
		t.at = time.Time{}
	}
	return credit
}

// wakeRunBudget is the most CPU time a woken loop thread takes to receive
// its batch (unpickling a batch of tensors in shared memory takes well
// under a millisecond): past it, its time on the run queue is its step's.
const wakeRunBudget = 2 * time.Millisecond

func parseUint(b []byte) (uint64, bool) {
	v, err := strconv.ParseUint(string(b), 10, 64)
	return v, err == nil
}

// scan finds the training process to sample: the busiest in the tree.
func (l *Loop) scan() *TrainingProcess {
	found := l.opt.Find(l.opt.Root())
	if l.finder != nil {
		l.mu.Lock()
		l.hidden = l.finder.Hidden
		l.mu.Unlock()
	}
	for i := range found {
		t := found[i]
		if l.opt.Covered != nil && l.opt.Covered(t.PID) {
			continue
		}
		if p := l.finder.known[t.PID]; p != nil {
			l.mu.Lock()
			l.gpu = p.maps == "libcudart" || p.maps == "libcuda" || p.maps == "/dev/nvidia" || l.mapsCUDA(t.PID)
			l.mu.Unlock()
		}
		return &t
	}
	return nil
}

// mapsCUDA says whether a torch process has CUDA loaded too (it maps
// libtorch first, so the finder's mark says only that).
func (l *Loop) mapsCUDA(pid int) bool {
	f, err := probes.OpenRegular(l.opt.Proc + "/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 256<<10)
	for read := 0; read < host.MapsMaxBytes; {
		n, err := f.Read(b)
		read += n
		if bytes.Contains(b[:n], []byte("libcuda.so")) || bytes.Contains(b[:n], []byte("/dev/nvidia")) {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}

// pinMemoryThread says whether a thread of the process other than its
// main thread waits on a pipe or socket: torch's pin-memory thread, which
// takes batches from the workers and hands them to the loop through a
// queue (a futex for the loop).
func (l *Loop) pinMemoryThread(pid int) bool {
	dir := l.opt.Proc + "/" + strconv.Itoa(pid) + "/task"
	var tids []int
	_ = l.finder.r.ReadDirNames(dir, func(name []byte) {
		if tid, ok := probes.ParseUint(name); ok && int(tid) != pid && len(tids) < 256 {
			tids = append(tids, int(tid))
		}
	})
	for _, tid := range tids {
		b, err := l.finder.r.Read(dir + "/" + strconv.Itoa(tid) + "/wchan")
		if err == nil && queueWait(string(bytes.TrimSpace(b))) {
			return true
		}
	}
	return false
}
