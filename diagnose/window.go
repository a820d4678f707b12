package diagnose

import (
	"math"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// level is a metric's median over the frames of a window that had it.
// ok is false when no frame had it: a missing signal, never zero.
type level struct {
	v  float64
	n  int // frames that had it
	ok bool
}

// levels collects one metric's values over a window and takes the median.
type levels struct{ vals []float64 }

func (l *levels) add(v float64) { l.vals = append(l.vals, v) }

func (l *levels) median() level {
	n := len(l.vals)
	if n == 0 {
		return level{}
	}
	slices.Sort(l.vals)
	m := l.vals[n/2]
	if n%2 == 0 {
		m = (l.vals[n/2-1] + l.vals[n/2]) / 2
	}
	return level{v: m, n: n, ok: true}
}

// window is what Classify reads off the frames: medians of every signal,
// and the latest facts (names, counts) for evidence and advice.
type window struct {
	frames int
	cores  int
	shown  Kind // the kind the Diagnoser shows now (classify)

	gpuUtil, gpuP5, gpuP95 level // mean over the GPUs of each frame
	gpuUtilMax             level // the busiest judged GPU's, median
	gpus, gpusLost         int
	smActivity             level   // GPM SM activity of the judged GPUs, median
	gpu                    gpuStep // what the GPU-bound causes read (cause_gpu.go)
	pcieRx                 level   // the busiest judged GPU's PCIe RX share of its link, median
	pcieGPU                int
	pcieLink               string
	noUtilWhy              string // a live GPU's reason for no utilization
	mig                    bool   // a live GPU is partitioned (MIG devices listed)
	gpuMemUsed, gpuMemTot  float64
	virtualBusy            level
	virtualStep            level  // its step share, the loop thread's run delay not taken off
	virtualDelay           level  // that run delay, % of wall time (sample.VirtualAccel)
	accelBasis             string // how the virtual accelerator is measured

	haveLoader bool
	// underRun: the newest frame's job is gpuwatch run's command, whose
	// hook times a DataLoader's loop (a loop it samples iterates none).
	underRun bool
	// runNoHook: gpuwatch run's command, in which no process loaded the
	// hook (Target.NoHook).
	runNoHook bool
	// loaderDown is the newest frame's loader when it is attached and
	// does not answer (nil otherwise): its rates are unknown, and the
	// window cannot say the job is idle (issue 41, item 3).
	loaderDown *sample.Loader
	loaderKind string // "python", "go", "embedded", "" (the newest)
	// The loader's means over the window, time-weighted: a loader whose
	// epochs are shorter than a frame (a start-up stall, then a burst of
	// batches) has medians that say little; its model reads these.
	meanBatchesPerSec, meanSamplesPerSec, meanWaitShare level
	sampled                                             *sample.SampledLoop // the newest, when the wait was sampled
	waitShare                                           level
	queueDepth                                          level // batches ready when the loop asked
	waiting                                             level // the newest frame's wait under way, seconds (0: not waiting)
	stepping                                            level // the newest frame's step under way, seconds (0: none)
	workerPIDs                                          []int // the newest frame's loader's workers
	batchesPerSec                                       level
	samplesPerSec                                       level
	stepMs                                              level // the mean step
	loaderCPU                                           level // the loader's CPU, % of a core: its workers, else its process
	workersCPUMissed                                    bool  // its workers live too short for /proc to read their CPU whole (markShortLivedWorkers; a sampled loop's SampledLoop.WorkersRestart)
	workersRunDelay                                     level // the workers' run delay ÷ (CPU + run delay), 0–1 (schedstat)
	workerStageSec                                      level // a worker's wall time per batch from its timed stages, seconds
	workerMakeSec                                       level // of it, getitem + collate: making the batch, no hand-over
	loopTakeSec                                         level // the loop thread's CPU time taking each batch (the take stage), seconds
	batchTensors                                        int   // the torch tensors of the newest batch the hook looked at; 0 unknown
	batchTensorsCut                                     bool  // that look listed sample.MaxPayloadTensors: the batch may hold more
	batchLooked                                         bool  // the hook looked at a batch
	knobs                                               map[string]string
	epochStallMs                                        float64
	epochGapMs                                          float64 // the loop's mean time between epochs (Loader.EpochGapMs), 0 unknown
	// betweenEpochsShare is the share of the window's time (its means')
	// the loop spent between epochs (Loader.BetweenEpochsSec), 0–1.
	betweenEpochsShare  float64
	newLoaderEveryEpoch bool // every epoch iterated a new DataLoader (Loader.NewLoaderEveryEpoch)
	splitsByWorker      bool // its IterableDataset asks get_worker_info (Loader.IterableSplitsByWorker)
	iterableRepeats     bool // its IterableDataset's workers yield the same samples, measured (Loader.IterableRepeats)
	iterableApart       bool // they yield different ones, measured
	batchesPerEpoch     int
	readSec, decodeSec  level // per wall second, summed over workers
	bytesPerSec         level
	workers, prefetch   int // -1 unknown

	cpuBusy, hottestCore, hottestThread level
	runQueue, iowait                    level
	threadName                          string
	threadTID                           int
	diskBusy                            level // the busiest device per frame
	diskName                            string
	diskReadBps                         float64 // the newest busiest device's reads, bytes/s
	psiCPU, psiIO, psiMem               level
	swapPages, majFaults                level
	memAvail                            float64

	means  loaderSums // the loader's sums over the window, for its means
	roles  roles      // the training process's CPU by thread role
	paging paging     // faults on mapped files
	// spinPct is the CPU (% of one core) of the training process's compute
	// threads that spin (an idle BLAS pool in sched_yield): busy, but no
	// work, and they yield to any thread that has some. spinThreads is
	// how many there are.
	spinPct, spinThreads level
	th                   Thresholds // what spinning is

	runDelay      level // ms per second the job's key thread waited for a CPU
	loopRunDelay  level // the same, where the key thread is the loop's own (the loader named it)
	delayedThread sample.Thread
	othersCores   level // cores used by processes outside the watched tree
	treeShort     bool  // a frame's loader named worker PIDs its tree did not list

	job                  *sample.Job // the newest reading of the job's cgroup
	jobUsed, jobThrottle level       // cores used; share of periods throttled
	jobUsedByTree        bool        // jobUsed is the watched tree's CPU: the cgroup counts none of its own
	jobMaxEvents         uint64      // memory.events max (v1: failcnt) over the window
	jobOOMKills          uint64      // oom_kill over the window
	jobSwapGrowth        float64     // bytes of swap the job gained over the window

	focusPID, treeProcs int
	unavailable         map[sample.Source]string
	// ranksSeen of worldSize: the newest frame's loader is a rank of a job
	// of worldSize ranks (its WORLD_SIZE) and gpuwatch sees ranksSeen of
	// them connected; 0, 0 where it says no world above one.
	ranksSeen, worldSize int
	// localRanks: of ranksSeen, those served on this node (a loopback
	// URL), at least 1: a change to the script is each one's.
	localRanks int
	profile    *sample.Profile // the newest profile summary, if attached
	files      fileReads       // the data files the loading was caught reading (files.go)
}

// read computes the window's signals (signals.go names them) and keeps
// the latest facts. It allocates a few small slices; a 60-frame window of
// a 256-core, 8-GPU machine takes well under 100 µs.
func read(frames []sample.Frame, th Thresholds) window {
	w := window{frames: len(frames), workers: -1, prefetch: -1, th: th}
	s := newSignals(len(frames))
	timed := newestLoopTimed(frames)
	var procSM level // the loop's process's SM utilization, summed over the frames that read it
	for i := range frames {
		f := &frames[i]
		s.addFrameSignals(f)
		if c := f.CPU; c != nil {
			w.cores = max(w.cores, len(c.Cores))
		}
		if t, ok := pegCandidate(f); ok {
			s.add(sigHottestThread, t.CPUPct)
			w.threadName, w.threadTID = t.Name, t.TID
		}
		if c, n, ok := spinningCompute(f, &w.th); ok {
			s.add(sigSpinPct, c)
			s.add(sigSpinThreads, n)
		}
		if p := f.Procs; p != nil {
			w.focusPID, w.treeProcs = p.FocusPID, len(p.List)
		}
		w.roles.add(f, s)
		w.paging.add(f, s)
		w.files.add(f)
		w.addJob(f.Job, f.Procs, s)
		w.addContention(f, s)
		if sh, g, link, ok := f.PCIeRxShare(); ok {
			s.add(sigPCIeRx, sh)
			w.pcieGPU, w.pcieLink = g, link
		}
		if a := f.Accel; a != nil {
			w.accelBasis = a.Basis
		}
		if l := f.Loader; l != nil && !(timed && l.Sampled != nil) {
			w.addLoader(f, l, s)
		}
		if d, ok := f.BusiestDisk(); ok {
			w.diskName, w.diskReadBps = d.Name, d.ReadBytesPerSec
		}
		if m := f.Mem; m != nil {
			w.memAvail = float64(m.AvailableBytes)
		}
		if p := f.PacingProfile(); p != nil && len(p.Categories) > 0 {
			w.profile = p
		}
		if l := f.Loader; l != nil {
			if p := processSM(f, l.PID); p.ok {
				procSM.v, procSM.n = procSM.v+p.v, procSM.n+1
			}
		}
		if i == len(frames)-1 {
			w.readGPUs(f)
			w.gpu.read(f)
			w.unavailable = f.Unavailable
			w.ranksSeen, w.worldSize = worldSeen(f)
			w.localRanks = localRanks(f, w.worldSize)
			w.underRun = f.Target != nil && f.Target.Why == "gpuwatch run" && !f.Target.NoHook
			w.runNoHook = f.Target != nil && f.Target.Why == "gpuwatch run" && f.Target.NoHook
		}
	}
	if procSM.n > 0 { // the window's mean: one interval NVML sampled nothing in reads 0
		w.gpu.procSM = level{v: procSM.v / float64(procSM.n), n: procSM.n, ok: true}
	}
	s.medians(&w)
	w.finishMeans()
	w.markShortLivedWorkers(frames)
	if w.jobUsedByTree && w.treeCPUMissed() {
		// The tree's CPU stood in for the cgroup's count, and it misses
		// the job's own workers: unread, not a use too low to saturate.
		w.jobUsed, w.jobUsedByTree = level{}, false
	}
	return w
}

// usedBy says where the job's CPU use came from, where not its cgroup's
// own count (jobUsedByTree); "" where it was.
func (w *window) usedBy() string {
	if w.jobUsedByTree {
		return " (its processes' CPU: its cgroup keeps no count of its own)"
	}
	return ""
}

// shortLivedFrames: workers that live fewer frames than this (restarted
// every epoch, epochs this short) have too much of their CPU missed by
// /proc to count workers on.
const shortLivedFrames = 10

// markShortLivedWorkers: a loader whose workers restart every epoch,
// epochs shorter than shortLivedFrames frames, has its workers' CPU
// marked as missed (workersCPUMissed). /proc gives a process's CPU
// between two readings, so a worker seen once, or that exited between
// two, has its CPU missed: a worker living half a second reads next to
// nothing, and its time per batch read as a wait on storage ("42ms
// waiting on storage, 0s of CPU" for JPEGs decoded in RAM: 2 → 4 workers
// on 2 busy cores were promised 1,175 samples/s, and gave 448).
func (w *window) markShortLivedWorkers(frames []sample.Frame) {
	if !w.loaderCPU.ok || w.workers <= 0 || w.batchesPerEpoch <= 0 || w.epochStallMs <= 0 || !w.meanBatchesPerSec.ok || w.meanBatchesPerSec.v <= 0 || len(frames) == 0 {
		return
	}
	if persistent, err := strconv.ParseBool(w.knobs[sample.KnobPersistent.Flag]); err != nil || persistent && !w.newLoaderEveryEpoch {
		return
	}
	var sec float64
	for i := range frames {
		sec += max(frames[i].IntervalSec, 0)
	}
	interval := sec / float64(len(frames))
	if !(interval > 0) {
		interval = 1
	}
	epoch := float64(w.batchesPerEpoch)/w.meanBatchesPerSec.v + w.epochStallMs/1000
	w.workersCPUMissed = w.workersCPUMissed || epoch < shortLivedFrames*interval
}

// treeCPUMissed says the watched tree's CPU, read from its processes,
// may miss its own work, so that what the host's busy cores hold beyond
// it (othersCores) is not others': workers that live too short for their
// CPU to be read (markShortLivedWorkers; a review read "processes outside
// the job use 1.9 of the 1.9 busy cores" of the job's own 1.68, its
// DataLoader built every epoch), or a loader with more workers than the
// tree lists.
func (w *window) treeCPUMissed() bool {
	return w.workersCPUMissed || w.treeShort
}

// restartShare is the share of an epoch's wall time that its workers'
// start-up takes (the stall before its first batch), where they start
// anew every epoch: persistent_workers off or not said, or on a
// DataLoader the script builds anew each epoch; 0 where they persist or
// nothing was measured.
func (w *window) restartShare() float64 {
	if w.workers <= 0 || w.batchesPerEpoch <= 0 || w.epochStallMs <= 0 || !w.meanBatchesPerSec.ok || w.meanBatchesPerSec.v <= 0 {
		return 0
	}
	if persistent, err := strconv.ParseBool(w.knobs[sample.KnobPersistent.Flag]); err == nil && persistent && !w.newLoaderEveryEpoch {
		return 0
	}
	epoch := float64(w.batchesPerEpoch) / w.meanBatchesPerSec.v // the mean rate pays each epoch's start-up
	return min(1, w.epochStallMs/1000/epoch)
}

// newestLoopTimed says the window's newest loader reading is timed by
// the hook (not sampled). Then the sampled readings before it are the
// job's start, read before its hook was (gpuwatch run, on a job whose
// imports and CUDA set-up take seconds): they are left out, or one such
// frame would make the whole window's model relative (sampledPipeline).
func newestLoopTimed(frames []sample.Frame) bool {
	for i := len(frames) - 1; i >= 0; i-- {
		if l := frames[i].Loader; l != nil {
			return l.Sampled == nil
		}
	}
	return false
}

// addJob adds a frame's job reading; events and swap are counted from the
// window's first reading to its last.
func (w *window) addJob(j *sample.Job, p *sample.Procs, s *signals) {
	if j == nil {
		return
	}
	s.addIf(sigJobUsed, j.CPUUsedCores)
	if j.CPUUsedCores == nil && j.CPUUsedWhy != "" && p != nil && p.FocusPID != 0 && len(p.List) > 0 {
		// The cgroup keeps no count of the job's own CPU (cgroup v1, the
		// job in the root of a cpuacct mounted apart): its processes'
		// CPU is its use, so a job throttled at its quota is still judged
		// on it (and never by the whole machine's count).
		s.add(sigJobUsed, treeCores(p))
		w.jobUsedByTree = true
	}
	s.addIf(sigJobThrottle, j.ThrottledPeriodsShare)
	if first := w.job; first != nil && first.Cgroup == j.Cgroup {
		if a, b := first.MemEvents, j.MemEvents; a != nil && b != nil {
			if b.Max >= a.Max {
				w.jobMaxEvents = b.Max - a.Max + w.jobMaxEvents
			}
			if b.OOMKill >= a.OOMKill {
				w.jobOOMKills = b.OOMKill - a.OOMKill + w.jobOOMKills
			}
		}
		if first.SwapUsedBytes != nil && j.SwapUsedBytes != nil {
			w.jobSwapGrowth += float64(*j.SwapUsedBytes) - float64(*first.SwapUsedBytes)
		}
	}
	w.job = j
}

// addContention adds a frame's CPU contention: how long the job's key
// thread (the training loop's, else its busiest) waited for a CPU, and the
// CPU that processes outside the watched tree used.
func (w *window) addContention(f *sample.Frame, s *signals) {
	p := f.Procs
	if p == nil || p.FocusPID == 0 {
		return
	}
	if l := f.Loader; l != nil && len(l.WorkerPIDs) > 0 && !listsAll(p.List, l.WorkerPIDs) {
		// The loader's worker processes are not all in the tree: its CPU is
		// not all read. (The embedded loader's workers are goroutines of
		// its own process and name no PIDs.)
		w.treeShort = true
	}
	if len(p.Threads) == 0 {
		return
	}
	t, loop := p.Threads[0], false
	if _, tid := loopThread(f.Loader); tid != 0 {
		for _, th := range p.Threads {
			if th.TID == tid {
				t, loop = th, true
			}
		}
	}
	if t.RunDelayMsPerSec != nil {
		s.add(sigRunDelay, *t.RunDelayMsPerSec)
		w.delayedThread = t
		if loop {
			s.add(sigLoopRunDelay, *t.RunDelayMsPerSec)
		}
	}
	if c := f.CPU; c != nil && len(c.Cores) > 0 {
		s.add(sigOthersCores, max(0, c.BusyPct/100*float64(len(c.Cores))-treeCores(p)))
	}
}

// listsAll says every PID of pids is in list.
func listsAll(list []sample.Proc, pids []int) bool {
	in := make(map[int]bool, len(list))
	for _, pr := range list {
		in[pr.PID] = true
	}
	for _, pid := range pids {
		if !in[pid] {
			return false
		}
	}
	return true
}

// treeCores is the cores the watched tree's processes used.
func treeCores(p *sample.Procs) float64 {
	tree := 0.0
	for _, pr := range p.List {
		tree += pr.CPUPct
	}
	return tree / 100
}

// confined says whether the job may use fewer CPUs than the host has:
// then CPU saturation is judged on the job's terms.
func (w *window) confined() bool {
	return w.job != nil && w.job.CPUCapacityCores > 0 && w.job.CPUCapacityCores < float64(w.cores)-0.01
}

// loaderCPU is the loader's CPU in a frame, % of a core: its worker
// processes' when it names them, else its process's (the embedded loader's
// workers are goroutines of it), else the watched tree's.
func loaderCPU(f *sample.Frame) (float64, bool) {
	l, p := f.Loader, f.Procs
	if l == nil || p == nil || len(p.List) == 0 {
		return 0, false
	}
	if l.Sampled != nil && l.Sampled.WorkersRestart && len(l.WorkerPIDs) == 0 {
		return 0, false // between two epochs: no worker to read, and the process's CPU is not theirs
	}
	sum, found := 0.0, false
	for _, pr := range p.List {
		switch {
		case len(l.WorkerPIDs) > 0:
			if slices.Contains(l.WorkerPIDs, pr.PID) {
				sum, found = sum+pr.CPUPct, true
			}
		case l.PID != nil:
			if pr.PID == *l.PID {
				sum, found = sum+pr.CPUPct, true
			}
		case p.FocusPID != 0:
			sum, found = sum+pr.CPUPct, true
		}
	}
	return sum, found
}

// loaderSums add up a loader's frames: seconds, batches, samples, and
// wait shares weighted by their batches.
type loaderSums struct{ sec, batches, samples, wait, waitBatches, between float64 }

// finish sets the window's means from the sums.
func (w *window) finishMeans() {
	m := w.means
	if m.sec <= 0 {
		return
	}
	w.meanBatchesPerSec = level{v: m.batches / m.sec, n: 1, ok: true}
	w.meanSamplesPerSec = level{v: m.samples / m.sec, n: 1, ok: true}
	w.betweenEpochsShare = m.between / m.sec
	if m.waitBatches > 0 {
		w.meanWaitShare = level{v: m.wait / m.waitBatches, n: 1, ok: true}
	}
}

// addLoader adds a frame's loader readings, and keeps its latest facts.
func (w *window) addLoader(f *sample.Frame, l *sample.Loader, s *signals) {
	w.haveLoader = true
	w.loaderKind = l.Kind
	if l.Kind == "" && l.Source == "embedded" { // recorded before loaders said their kind
		w.loaderKind = "embedded"
	}
	w.loaderDown = nil
	w.waiting, w.stepping = level{}, level{}
	if l.WaitingMs != nil {
		w.waiting = level{v: *l.WaitingMs / 1000, n: 1, ok: true}
	}
	if l.SteppingMs != nil {
		w.stepping = level{v: *l.SteppingMs / 1000, n: 1, ok: true}
	}
	w.workerPIDs = l.WorkerPIDs
	if l.Payload != nil && l.Payload.BatchesLooked > 0 {
		w.batchLooked = true
		w.batchTensors, w.batchTensorsCut = 0, len(l.Payload.Tensors) >= sample.MaxPayloadTensors
		for _, t := range l.Payload.Tensors {
			if t.Pinned != nil { // a torch tensor (a numpy array has none): shared by a file descriptor
				w.batchTensors++
			}
		}
	}
	if l.Sampled == nil && l.Down() {
		w.loaderDown = l
	}
	sec := f.IntervalSec
	if sec <= 0 {
		sec = 1
	}
	if !l.RatesUnknown() && !loaderStarting(l, sec) {
		m := &w.means
		m.sec += sec
		m.batches += l.BatchesPerSec * sec
		m.samples += l.SamplesPerSec * sec
		if l.BetweenEpochsSec != nil {
			m.between += min(sec, max(0, *l.BetweenEpochsSec))
		}
		if l.WaitShare != nil {
			m.wait += *l.WaitShare * l.BatchesPerSec * sec
			m.waitBatches += l.BatchesPerSec * sec
		}
	}
	if l.Sampled != nil {
		// Nobody instrumented the loop: its wait share was sampled, its
		// rates are unknown (not zero).
		w.sampled = l.Sampled
		w.workersCPUMissed = w.workersCPUMissed || l.Sampled.WorkersRestart
	} else if !l.RatesUnknown() { // a loader that does not answer has no rates
		s.add(sigBatchesPerSec, l.BatchesPerSec)
		s.add(sigSamplesPerSec, l.SamplesPerSec)
		if !l.BytesUnknown() {
			s.add(sigBytesPerSec, l.BytesPerSec)
		}
	}
	s.addIf(sigStepMs, l.StepMeanMs)
	if v, ok := loaderCPU(f); ok {
		s.add(sigLoaderCPU, v)
	}
	s.addIf(sigWorkersRunDelay, l.WorkersRunDelayShare)
	if st := l.Stages; st != nil && !st.Inline && st.GetitemMs != nil {
		s.add(sigWorkerStageSec, (*st.GetitemMs+deref(st.CollateMs)+deref(st.HandoverMs))/1000)
		s.add(sigWorkerMakeSec, (*st.GetitemMs+deref(st.CollateMs))/1000)
		if st.TakeMs != nil {
			s.add(sigLoopTakeSec, *st.TakeMs/1000)
		}
	}
	w.addDataLoader(l)
	s.addIf(sigWaitShare, l.WaitShare)
	s.addIf(sigQueueDepth, l.QueueDepth)
	s.addIf(sigReadSecPerSec, l.ReadSecPerSec)
	s.addIf(sigDecodeSecPerSec, l.DecodeSecPerSec)
	if l.Workers != nil {
		w.workers = *l.Workers
	}
	if l.Prefetch != nil {
		w.prefetch = *l.Prefetch
	}
}

// addDataLoader keeps the latest of what the loader says of its
// DataLoader: its knobs, its epochs, and whether its IterableDataset
// splits by worker.
func (w *window) addDataLoader(l *sample.Loader) {
	if l.Knobs != nil {
		w.knobs = l.Knobs
	}
	if l.EpochStallMs != nil {
		w.epochStallMs = *l.EpochStallMs
	}
	if l.EpochGapMs != nil {
		w.epochGapMs = *l.EpochGapMs
	}
	if l.NewLoaderEveryEpoch != nil {
		w.newLoaderEveryEpoch = *l.NewLoaderEveryEpoch
	}
	if l.IterableSplitsByWorker != nil {
		w.splitsByWorker = *l.IterableSplitsByWorker
	}
	if l.IterableRepeats != nil {
		w.iterableRepeats, w.iterableApart = *l.IterableRepeats, !*l.IterableRepeats
	}
	if l.BatchesPerEpoch != nil {
		w.batchesPerEpoch = *l.BatchesPerEpoch
	}
}

// pegCandidate is the thread the one-thread rules judge: the busiest
// thread, or — when the loader names its loop's thread — the loop's own.
// A worker's thread at 100 % is loading, as it should (fewer workers than
// needed is another rule), and the training process's other threads are
// compute pools (OpenBLAS, OpenMP, torch intra-op): neither is the loop
// pegged. ok is false without a thread list.
func pegCandidate(f *sample.Frame) (sample.Thread, bool) {
	p := f.Procs
	if p == nil || len(p.Threads) == 0 {
		return sample.Thread{}, false
	}
	pid, tid := loopThread(f.Loader)
	if tid == 0 {
		return p.Threads[0], true // sorted busiest first
	}
	for _, t := range p.Threads {
		if t.TID == tid {
			return t, true
		}
	}
	return sample.Thread{TID: tid, PID: pid}, true // not among the busiest: not pegged
}

// spinningCompute is the CPU (% of one core) and the number of the
// training process's compute threads that spin, when the loader names its
// loop's thread (else the threads' roles are unknown).
func spinningCompute(f *sample.Frame, th *Thresholds) (pct, n float64, ok bool) {
	p := f.Procs
	pid, tid := loopThread(f.Loader)
	if tid == 0 || p == nil {
		return 0, 0, false
	}
	for _, t := range p.Threads {
		if t.PID == pid && t.TID != tid && spinning(t, *th) {
			pct += t.CPUPct
			n++
		}
	}
	return pct, n, true
}

// add adds a frame's split of the training process's CPU, when it has one.
func (r *roles) add(f *sample.Frame, s *signals) {
	rr, ok := readRoles(f)
	if !ok {
		return
	}
	s.add(sigLoopPct, rr.loop.CPUPct)
	s.add(sigLoopHottest, b2f(rr.loopHottest))
	r.loopName, r.loopTID = rr.loop.Name, rr.loop.TID
	if rr.haveCompute {
		s.add(sigComputePct, rr.computePct)
	}
	s.add(sigAutogradPct, rr.autogradPct)
	if rr.haveWorker {
		s.add(sigWorkersPct, rr.workersPct)
	}
	r.compute, r.haveCompute = rr.compute, rr.haveTop
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// readGPUs takes the GPU count and memory from the window's last frame.
func (w *window) readGPUs(f *sample.Frame) {
	live := 0
	for i, g := range f.GPUs {
		if g.Lost {
			continue
		}
		live++
		// Of the GPUs judged only: another user's MIG GPU beside the
		// job's H200 made the job's read as MIG instances (a review).
		if !f.JudgedGPU(i) {
			continue
		}
		if r := g.Unavailable["util_pct"]; r != "" && g.UtilPct == nil {
			w.noUtilWhy = r
		}
		w.mig = w.mig || g.MIG != nil
		// The memory of the GPUs judged (the job's where told), not the
		// box's: a review read "131GiB of 282GiB in use" for a job whose
		// one GPU had 130 of 141 GiB in use.
		if g.MemUsedBytes != nil && g.MemTotalBytes != nil {
			w.gpuMemUsed += float64(*g.MemUsedBytes)
			w.gpuMemTot += float64(*g.MemTotalBytes)
		}
	}
	w.gpus, w.gpusLost = live, len(f.GPUs)-live
}

// accel is the accelerator signal the window has: a real GPU's utilization
// first, else the virtual accelerator of a watched loader.
func (w *window) accel() (busy level, real bool) {
	if w.gpuUtil.ok {
		return w.gpuUtil, true
	}
	if w.smActivity.ok {
		// MIG: no utilization, but GPM's SM activity of the instances.
		return w.smActivity, true
	}
	return w.virtualBusy, false
}

// missing lists what the window could not see, for the verdict.
func (w *window) missing() []string {
	var out []string
	if !w.gpuUtil.ok {
		if r := w.unavailable["gpu"]; r != "" {
			out = append(out, "gpu: "+r)
		} else if w.gpusLost > 0 {
			out = append(out, "gpu: lost")
		} else if w.mig && w.smActivity.ok && w.gpu.mig != nil {
			out = append(out, "gpu: utilization not available on MIG; the loop's instance's SM activity (GPM) stands in")
		} else if w.mig && w.smActivity.ok {
			out = append(out, "gpu: utilization not available on MIG; the instances' SM activity (GPM) stands in")
		} else if w.noUtilWhy != "" {
			out = append(out, "gpu: utilization "+w.noUtilWhy)
		} else {
			out = append(out, "gpu: no utilization reported")
		}
	}
	if !w.haveLoader {
		out = append(out, "loader: none watched (wait times unknown; `gpuwatch attach URL`, the Python hook, or `demo`)")
	}
	for k, r := range w.unavailable {
		switch {
		case k == sample.SourceCPU, k == sample.SourcePSI, k == sample.SourceDisk, k == sample.SourceMem, k == sample.SourceProc, strings.HasPrefix(string(k), "loader."):
			out = append(out, string(k)+": "+r)
		}
	}
	if s := w.sampled; s != nil && s.Missing != "" {
		out = append(out, "loader: sampled from the training process's main thread; "+s.Missing)
	}
	slices.Sort(out)
	return out
}

// deref is *v, or 0 when v is nil (a stage not timed).
func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// loaderStarting says a loader's frame holds its start: no batch yet,
// or its first batches (all it has counted came in this frame). The
// window's means leave such frames out, as the hook's epoch stall leaves
// out the first epoch: the time to the first batch is the job's own
// start-up (imports, the first workers starting), which no knob changes,
// and in a window of ModelFrames it would read as a slower loader.
// Frames that do not count their batches (Batches 0 with a rate) count.
func loaderStarting(l *sample.Loader, sec float64) bool {
	if l.Batches == 0 {
		return l.BatchesPerSec == 0
	}
	// All of its batches came in this frame (the rate is the counter's
	// delta over about the frame's interval).
	inFrame := l.BatchesPerSec * sec
	return math.Abs(float64(l.Batches)-inFrame) <= max(1, 0.05*inFrame)
}

// localRanks is how many of the job's ranks (world, as worldSeen) the
// frame has connected on this node, served on a loopback address (the
// hook's default; one attached by another host's address is not), at
// least 1 and at most world.
func localRanks(f *sample.Frame, world int) int {
	n := 0
	for _, r := range f.Ranks {
		if r.Connected && world > 1 && r.WorldSize != nil && *r.WorldSize == world && loopbackURL(r.URL) {
			n++
		}
	}
	// A rank watched alone (gpuwatch run on one rank's command) sees no
	// other; torchrun says how many share its node. Only of a loader on
	// this machine: another node's count says nothing of these cores.
	if l := f.Loader; l != nil && l.LocalWorldSize != nil && world > 1 && loopbackURL(l.Source) {
		n = max(n, *l.LocalWorldSize)
	}
	return max(min(n, world), 1)
}

// loopbackURL says u's host is this machine's loopback.
func loopbackURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	h := p.Hostname()
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.IsLoopback()
}

// worldSeen is how many ranks of the newest loader's job the frame sees
// connected, and the job's world size (its WORLD_SIZE); 0, 0 where the
// loader says no world above one.
func worldSeen(f *sample.Frame) (seen, world int) {
	l := f.Loader
	if l == nil || l.WorldSize == nil || *l.WorldSize <= 1 {
		return 0, 0
	}
	world = *l.WorldSize
	for _, r := range f.Ranks {
		if r.Connected && r.WorldSize != nil && *r.WorldSize == world {
			seen++
		}
	}
	return max(seen, 1), world // the loader shown is one of them
}
