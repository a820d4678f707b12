package diagnose

import "github.com/gpuwatch/gpuwatch/sample"

// signal names a metric a window takes the median of. Each frame adds its
// value, when it has one, to the signal's levels (signals.add); the window
// then takes every signal's median into the field medianOf names. A frame
// that lacks a metric adds nothing: its level is missing, never zero.
type signal int

const (
	sigGPUUtil        signal = iota // the mean utilization over the judged GPUs
	sigGPUUtilMax                   // the busiest judged GPU's utilization
	sigGPUP5                        // their mean p5 within the interval
	sigGPUP95                       // their mean p95
	sigSMActivity                   // GPM SM activity (MIG)
	sigTensorActivity               // GPM tensor activity, any precision
	sigTensorHMMA                   // GPM tensor activity of HMMA (tf32, bf16, fp16)
	sigDRAMBW                       // GPM DRAM bandwidth, % of the peak
	sigFP32Activity                 // GPM FP32 pipe activity
	sigPCIeRx                       // the busiest judged GPU's PCIe RX share of its link
	sigVirtualBusy                  // the virtual accelerator's busy %
	sigVirtualStep                  // its step share before the loop thread's run delay is taken off
	sigVirtualDelay                 // the loop thread's run delay taken off it, % of wall time

	sigWaitShare     // the loop's share of time waiting for a batch
	sigBatchesPerSec // instrumented loaders only (a sampled loop has no rates)
	sigSamplesPerSec
	sigBytesPerSec
	sigStepMs        // the mean step
	sigLoaderCPU     // % of a core: its workers', else its process's
	sigReadSecPerSec // summed over workers
	sigDecodeSecPerSec
	sigQueueDepth      // batches ready when the loop asked
	sigWorkersRunDelay // the workers' share of their CPU-wanting time waiting for one
	sigWorkerStageSec  // a worker's wall time per batch, from its timed stages (getitem + collate + hand-over)
	sigWorkerMakeSec   // of it, making the batch (getitem + collate): what loading inline spends
	sigLoopTakeSec     // the loop thread's CPU time taking a batch from a worker (the take stage)

	sigCPUBusy
	sigIowait
	sigRunQueue
	sigHottestCore
	sigHottestThread // the thread the one-thread rules judge (pegCandidate)
	sigDiskBusy      // the busiest device
	sigPSICPU
	sigPSIIO
	sigPSIMem
	sigSwapPages // in + out, pages per second
	sigMajFaults // host-wide, per second

	sigLoopPct     // the training loop's thread, % of a core
	sigLoopHottest // 1 where the loop's thread was the busiest thread
	sigComputePct  // the training process's other threads
	sigAutogradPct // of them, autograd's device threads (pt_autograd_N)
	sigWorkersPct  // its worker processes
	sigSpinPct     // its compute threads that spin, % of a core
	sigSpinThreads // how many spin

	sigJobUsed      // cores the job's cgroup used
	sigJobThrottle  // share of its periods throttled
	sigRunDelay     // ms per second the key thread waited for a CPU
	sigLoopRunDelay // the same, where the key thread is the loop's own
	sigOthersCores  // cores used outside the watched tree

	sigTreeMajFaults // the watched tree's major faults per second
	sigTreeDiskRead  // bytes/s its faults and reads took from the disk
	sigTreeReadCalls // bytes/s its read calls returned
	sigFileRefaults  // host file refaults per second

	numSignals
)

// signals holds every signal's values over a window.
type signals [numSignals]levels

func (s *signals) add(k signal, v float64) { s[k].add(v) }

// addIf adds *v when the frame has it.
func (s *signals) addIf(k signal, v *float64) {
	if v != nil {
		s[k].add(*v)
	}
}

// medianOf is where each signal's median goes.
var medianOf = [numSignals]func(*window) *level{
	sigGPUUtil:        func(w *window) *level { return &w.gpuUtil },
	sigGPUUtilMax:     func(w *window) *level { return &w.gpuUtilMax },
	sigGPUP5:          func(w *window) *level { return &w.gpuP5 },
	sigGPUP95:         func(w *window) *level { return &w.gpuP95 },
	sigSMActivity:     func(w *window) *level { return &w.smActivity },
	sigTensorActivity: func(w *window) *level { return &w.gpu.tensor },
	sigTensorHMMA:     func(w *window) *level { return &w.gpu.hmma },
	sigDRAMBW:         func(w *window) *level { return &w.gpu.dram },
	sigFP32Activity:   func(w *window) *level { return &w.gpu.fp32 },
	sigPCIeRx:         func(w *window) *level { return &w.pcieRx },
	sigVirtualBusy:    func(w *window) *level { return &w.virtualBusy },
	sigVirtualStep:    func(w *window) *level { return &w.virtualStep },
	sigVirtualDelay:   func(w *window) *level { return &w.virtualDelay },

	sigWaitShare:       func(w *window) *level { return &w.waitShare },
	sigBatchesPerSec:   func(w *window) *level { return &w.batchesPerSec },
	sigSamplesPerSec:   func(w *window) *level { return &w.samplesPerSec },
	sigBytesPerSec:     func(w *window) *level { return &w.bytesPerSec },
	sigStepMs:          func(w *window) *level { return &w.stepMs },
	sigLoaderCPU:       func(w *window) *level { return &w.loaderCPU },
	sigReadSecPerSec:   func(w *window) *level { return &w.readSec },
	sigDecodeSecPerSec: func(w *window) *level { return &w.decodeSec },
	sigQueueDepth:      func(w *window) *level { return &w.queueDepth },
	sigWorkersRunDelay: func(w *window) *level { return &w.workersRunDelay },
	sigWorkerStageSec:  func(w *window) *level { return &w.workerStageSec },
	sigWorkerMakeSec:   func(w *window) *level { return &w.workerMakeSec },
	sigLoopTakeSec:     func(w *window) *level { return &w.loopTakeSec },

	sigCPUBusy:       func(w *window) *level { return &w.cpuBusy },
	sigIowait:        func(w *window) *level { return &w.iowait },
	sigRunQueue:      func(w *window) *level { return &w.runQueue },
	sigHottestCore:   func(w *window) *level { return &w.hottestCore },
	sigHottestThread: func(w *window) *level { return &w.hottestThread },
	sigDiskBusy:      func(w *window) *level { return &w.diskBusy },
	sigPSICPU:        func(w *window) *level { return &w.psiCPU },
	sigPSIIO:         func(w *window) *level { return &w.psiIO },
	sigPSIMem:        func(w *window) *level { return &w.psiMem },
	sigSwapPages:     func(w *window) *level { return &w.swapPages },
	sigMajFaults:     func(w *window) *level { return &w.majFaults },

	sigLoopPct:     func(w *window) *level { return &w.roles.loopPct },
	sigLoopHottest: func(w *window) *level { return &w.roles.loopHottest },
	sigComputePct:  func(w *window) *level { return &w.roles.computePct },
	sigAutogradPct: func(w *window) *level { return &w.roles.autogradPct },
	sigWorkersPct:  func(w *window) *level { return &w.roles.workersPct },
	sigSpinPct:     func(w *window) *level { return &w.spinPct },
	sigSpinThreads: func(w *window) *level { return &w.spinThreads },

	sigJobUsed:      func(w *window) *level { return &w.jobUsed },
	sigJobThrottle:  func(w *window) *level { return &w.jobThrottle },
	sigRunDelay:     func(w *window) *level { return &w.runDelay },
	sigLoopRunDelay: func(w *window) *level { return &w.loopRunDelay },
	sigOthersCores:  func(w *window) *level { return &w.othersCores },

	sigTreeMajFaults: func(w *window) *level { return &w.paging.majFaults },
	sigTreeDiskRead:  func(w *window) *level { return &w.paging.diskRead },
	sigTreeReadCalls: func(w *window) *level { return &w.paging.readCalls },
	sigFileRefaults:  func(w *window) *level { return &w.paging.refaults },
}

// newSignals returns room for n frames of every signal, in one allocation.
func newSignals(n int) *signals {
	s := new(signals)
	backing := make([]float64, int(numSignals)*n)
	for k := range s {
		s[k].vals = backing[k*n : k*n : (k+1)*n]
	}
	return s
}

// medians sets every signal's median in w.
func (s *signals) medians(w *window) {
	for k := range s {
		*medianOf[k](w) = s[k].median()
	}
}

// addFrameSignals adds the signals a frame states directly.
func (s *signals) addFrameSignals(f *sample.Frame) {
	if u, ok := f.GPUUtilMax(); ok {
		s.add(sigGPUUtilMax, u)
	}
	if u, ok := f.GPUUtil(); ok {
		s.add(sigGPUUtil, u)
	}
	// GPM's signals are the loop's own GPU's where the frame places the
	// loop on one (sample.Frame.LoopGPU): on a box of mixed GPUs whose
	// job's GPUs were not told, another GPU's activity is not the step's
	// (a review: an A100 step without GPM was judged by an idle H200's
	// counters). Else their mean over the judged GPUs.
	// On MIG, the instance's that lists the loop's process: the GPU's
	// own is the mean of every instance's SM activity, other users'
	// included (a review).
	loop, mig := f.LoopPlace()
	var gpm *sample.GPM
	if loop != nil {
		gpm = loop.GPM
		if mig != nil {
			gpm = mig.GPM
		}
		if gpm != nil {
			s.addIf(sigSMActivity, gpm.SMActivityPct)
		}
	} else if a, ok := f.GPUSMActivity(); ok {
		s.add(sigSMActivity, a)
	}
	for _, g := range gpmSignals {
		if loop != nil {
			if gpm != nil {
				s.addIf(g.sig, g.pick(gpm))
			}
		} else if v, ok := f.GPUGPM(g.pick); ok {
			s.add(g.sig, v)
		}
	}
	if p5, p95, ok := f.GPUBand(); ok {
		s.add(sigGPUP5, p5)
		s.add(sigGPUP95, p95)
	}
	if a := f.Accel; a != nil {
		s.add(sigVirtualBusy, a.BusyPct)
		s.addIf(sigVirtualStep, a.StepPct)
		s.addIf(sigVirtualDelay, a.LoopRunDelayPct)
	}
	if c := f.CPU; c != nil {
		s.add(sigCPUBusy, c.BusyPct)
		s.add(sigIowait, c.IowaitPct)
		s.add(sigRunQueue, float64(c.ProcsRunning))
		hot := 0.0
		for j := range c.Cores { // by index: a Core is 40 bytes
			hot = max(hot, c.Cores[j].BusyPct)
		}
		if len(c.Cores) > 0 {
			s.add(sigHottestCore, hot)
		}
	}
	if d, ok := f.BusiestDisk(); ok {
		s.add(sigDiskBusy, d.BusyPct)
	}
	if p := f.PSI; p != nil {
		s.addPressure(sigPSICPU, p.CPU)
		s.addPressure(sigPSIIO, p.IO)
		s.addPressure(sigPSIMem, p.Memory)
	}
	if m := f.Mem; m != nil {
		if m.SwapInPagesPerSec != nil && m.SwapOutPagesPerSec != nil {
			s.add(sigSwapPages, *m.SwapInPagesPerSec+*m.SwapOutPagesPerSec)
		}
		s.addIf(sigMajFaults, m.MajorFaultsPerSec)
		s.addIf(sigFileRefaults, m.FileRefaultsPerSec)
	}
}

// gpmSignals are the GPM readings the GPU-bound causes read.
// A slice, not a map: every frame of every window ranges over it.
var gpmSignals = [...]struct {
	sig  signal
	pick func(*sample.GPM) *float64
}{
	{sigTensorActivity, func(m *sample.GPM) *float64 { return m.TensorActivityPct }},
	{sigTensorHMMA, func(m *sample.GPM) *float64 { return m.TensorHMMAActivityPct }},
	{sigDRAMBW, func(m *sample.GPM) *float64 { return m.DRAMBWUtilPct }},
	{sigFP32Activity, func(m *sample.GPM) *float64 { return m.FP32ActivityPct }},
}

func (s *signals) addPressure(k signal, p *sample.Pressure) {
	if v, ok := p.Some(); ok {
		s.add(k, v)
	}
}
