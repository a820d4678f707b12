package diagnose

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// Pipeline is the model of a loader pipeline, measured from a window: what
// one batch costs each part, and what the job has. docs/diagnosis.md
// ("The pipeline model") works an example through.
type Pipeline struct {
	BatchSize float64 // samples per batch
	StepSec   float64 // the training step, per batch
	// IOSec is one worker's time per batch waiting on storage or the
	// network (no CPU), and CPUSec its CPU work per batch — both as if the
	// worker had a CPU to itself. CPUWaitSec is its time per batch ready
	// to run and waiting for a CPU (the workers' run delay, schedstat),
	// where it is known: it is neither, and holding the data in RAM does
	// not remove it.
	IOSec, CPUSec, CPUWaitSec float64
	// MakeSec is a batch's making in a worker, getitem and collate, less
	// the workers' wait for a CPU (0: untimed; no hand-over), kept where
	// IOSec is not (workers that keep up,
	// their wait not the loop's): the loop loading inline would spend it
	// all, the sleeps and remote waits among it (a review: 11 → 0 workers
	// was promised 2,612 samples/s from 2.5 ms of CPU a batch, and gave
	// 224; the batch took a worker 69 ms).
	MakeSec float64
	// CPUs the workers can use: the job's less what its training loop
	// takes.
	CPUs float64
	// BandwidthBytesPerSec is the storage limit seen: a link's (the
	// loader's read_bandwidth) or a saturated disk's rate; 0 when none is.
	BandwidthBytesPerSec float64
	BytesPerBatch        float64
	// ReadCPUSec is the part of CPUSec spent getting the bytes from
	// storage (read calls, O_DIRECT's I/O path, faulting a mapped
	// dataset's pages in): holding the dataset in RAM replaces it with a
	// copy from memory (BytesPerBatch ÷ ramCopyBytesPerSec).
	// ColdReadBytesPerSec is the rate the disk reads at now, for the one
	// read of the dataset that caching costs (0: BandwidthBytesPerSec).
	ReadCPUSec          float64
	ColdReadBytesPerSec float64
	// EpochStallSec is the time to an epoch's first batch (workers
	// restarting when not persistent); BatchesPerEpoch the epoch's length.
	EpochStallSec   float64
	BatchesPerEpoch float64
	// EpochGapSec is the loop's time between epochs (from an epoch's
	// end to the next one's start: validation, checkpoints), which every
	// epoch pays whatever the knobs: the steady rate has it taken out and
	// every prediction adds it back (a review: 3 s epochs, each followed
	// by 5 s of validation, were promised 1.8× from persistent workers
	// whose restart took 1.5 s an epoch, ≈ 1.2× at most). 0 where none
	// was seen, or where it could not be taken out of the window's rate.
	EpochGapSec float64
	// NewLoaderEveryEpoch: the script builds a new DataLoader every
	// epoch, so persistent workers need it built once (persistent_workers
	// keeps workers across one DataLoader's epochs only).
	NewLoaderEveryEpoch bool
	// The configuration measured.
	Knobs Knobs
	// Kind is the loader's ("python", "go", "embedded"): it names the
	// knobs in changes (num_workers=4 for PyTorch, --workers=4 for
	// gpuwatch's own loader).
	Kind string
	// Relative: the loop's rates are unknown (a sampled loop), so times are
	// in units of its step and predictions are gains and wait shares, not
	// samples/s.
	Relative bool
	// SpinCPUs is what the training process's spinning compute threads
	// (an idle OpenBLAS pool) keep from the workers, in CPUs.
	SpinCPUs float64
	// LoopCPUSec is the training loop's own thread's CPU per batch, as
	// measured (LoopCPUs of a core at the measured rate; CPUs counts that
	// much out). At a higher rate the loop needs more of it: Predict
	// reserves LoopCPUSec × rate for it (issue 52: 15 workers on a
	// 16-core H200 box left the training process no core of its own, its
	// step went from 25 to 41 ms, and the promise was 34 % high).
	LoopCPUSec, LoopCPUs float64
	// KeepCPUs is the least the training process keeps whatever its
	// measured use: one core beside a real GPU, whose launching thread,
	// CUDA's and the pin-memory thread's work grows with the rate; 0 for
	// a virtual accelerator.
	KeepCPUs float64
	// LocalRanks is the job's ranks on this node that a change to the
	// script changes alike (each adds the workers advised), where more
	// than one: CPUs is one rank's share, and KeepCPUs one core a rank,
	// a virtual accelerator's too. 0 for one.
	LocalRanks int
	// UsedCPUs is what the worker processes were seen to use (their CPU
	// from /proc): the CPUs they demonstrably have, whatever the box's
	// occupancy or KeepCPUs say (0 where not read).
	UsedCPUs float64
	// OverheadSec is the loop's wait per batch that is not the workers'
	// doing: batches were ready when it asked (taking them — unpickling,
	// the pin-memory handoff — is the wait). No loader knob removes it.
	OverheadSec float64
	// TakeTensors is the torch tensors a batch holds, from the hook's
	// last look at one (0 where none was looked at); TakeTensorsCut: the
	// look listed as many as a frame keeps, so the batch may hold more.
	// Loading inline, no batch is taken from a worker; what taking each
	// will cost the loop once there are workers is priced from them
	// (inlineTakeSec).
	TakeTensors    int
	TakeTensorsCut bool
	TakeLooked     bool // a batch was looked at
	// HandOverSec is a worker's time per batch handing it over to the
	// loop, read from the loop's wait with a batch ready beyond its timed
	// take (handsOver): in a worker's wall time per batch, neither
	// storage nor CPU.
	HandOverSec float64
	// CacheFits: the dataset (DatasetBytes, 0 when unknown) fits in RAM
	// with room to spare.
	CacheFits    bool
	DatasetBytes float64
	// CPUContention is the κ the range's low side assumes for the
	// workers' CPU (cpuContended: a batch's CPU grows with the share of
	// the box's CPUs busy), IOContention the σ for their storage wait
	// (contended): cpuContention and ioContention where contention is
	// unknown, IOContention 0 for the wait of gpuwatch's own loader on an
	// emulated link (a sleep per read, which nothing contends for).
	CPUContention, IOContention float64
	// BoxCPUs are the CPUs whose occupancy slows the workers' CPU work:
	// the box's cores, or the job's cpuset where it is confined to fewer
	// (a quota alone does not keep its workers from the box's other
	// cores); BusyCPUs how many of them the window saw busy. 0 where not
	// read (cpuContended then takes the workers' CPUs).
	BoxCPUs, BusyCPUs float64
	// HandOverShare is what the range's low side adds to a batch's CPU
	// when workers replace loading inline: what a PyTorch worker costs
	// per batch beyond loading inline (the hand-over to the loop, the
	// same __getitem__ slower in a worker process), which a loop without
	// workers cannot show (inlineHandOver; 0 for gpuwatch's own loaders,
	// whose workers are goroutines).
	HandOverShare float64
	// StepOnCPU: the hook read the model's forward on the CPU, so the
	// step is CPU work that workers added contend with, as theirs does
	// (the range's low side slows it by the same factor; a review: a
	// CPU job's 0 → 1 worker was promised its high side, 16–18 % over
	// what it gave, its step 28 ms alone and 30–32 ms beside a worker).
	StepOnCPU bool
	// WorkersCPUMissed: the workers restart every epoch and live too
	// short for /proc to read their CPU whole, so their time per batch
	// is not split into CPU and waiting, and no worker count is advised
	// (persistent workers first: then their CPU is read).
	WorkersCPUMissed bool
	// Measured is what the window saw.
	Measured Prediction
}

// Knobs are the loader settings the model can change.
type Knobs struct {
	Workers, Prefetch        int
	Persistent, Pin, Cache   bool
	knownPersistent, knownPC bool // persistent, pin and cache are known
	// persistentInVain: the script sets persistent_workers=True on a
	// DataLoader it builds anew every epoch, whose workers start anew
	// whatever it says: Persistent is false, as the workers behave.
	persistentInVain bool
}

// Prediction is a pipeline's throughput and the share of the training
// loop's time spent waiting for input. Gain is the throughput over the
// measured one; a relative prediction (a sampled loop, its rates unknown)
// has Gain and WaitShare only.
//
// A prediction is a range (issue 52): SamplesPerSec and Gain, the point,
// are its low side, with the workers added beyond those measured
// contending for the CPUs' caches and memory and for the storage
// (cpuContention, ioContention); HighSamplesPerSec and HighGain are the
// model with no contention beyond what was measured. Limit is what the
// configuration meets next (the high side's limit, the one the planner
// chose it for), ContendedLimit the low side's where that differs.
// docs/diagnosis.md ("The range") has the sources.
type Prediction struct {
	SamplesPerSec     float64 `json:"samples_per_sec,omitempty"`
	WaitShare         float64 `json:"wait_share"`
	Gain              float64 `json:"gain,omitempty"`
	HighSamplesPerSec float64 `json:"high_samples_per_sec,omitempty"`
	HighGain          float64 `json:"high_gain,omitempty"`
	Limit             string  `json:"limit,omitempty"`
	ContendedLimit    string  `json:"contended_limit,omitempty"`
}

// The contention coefficients of a prediction's low side.
//
// cpuContention is κ in a batch's CPU growing as 1 + κu with u the share
// of the box's CPUs busy (cpuContended): cores that share caches, memory
// bandwidth, SMT siblings or a host run slower the fuller the box. Fit
// to two boxes (docs/diagnosis.md, "The range"): the issue-52 H200 box
// (JPEG decode and torchvision transforms, 16 cores: 2 → 8, 12 and 15
// workers read κ 0.43, 0.52 and 0.38) and this project's 2-core VM
// (1 → 2 CPU-bound workers or processes from half the box busy: a
// second took 15–39 % more CPU a batch, κ 0.35 to 1.28; κ 0.5 allows
// it 20 %, so the worst of those runs fall under the point). The
// Universal Scalability Law in the worker count it replaces (σ 0.03, fit
// on the H200 box) allowed that second worker 3 %.
//
// ioContention is σ of the Universal Scalability Law (Gunther), X(n) ∝ n
// ÷ (1 + σ(n−1)), applied to a worker's storage wait as readers are
// added: fit to the causes battery's sshfs loop on the 2-core VM (2 → 8
// readers of 16 KiB files 2 ms away, three runs alone: 2.36×, 2.01× and
// 1.93×, σ 0.13, 0.19 and 0.21; their mean gain, 2.10×, is σ 0.18).
// Those runs' mounts warmed as they ran. Held apart, the same mount read
// 2.99× to 3.87× warm (six runs, 2026-12-03/04, every file read once
// first: σ 0.01 to 0.06) and 1.5× cold (a first run on a fresh mount,
// 2026-12-03: σ 0.39). σ 0.18 lies between: the warm mount's point
// 27–49 % under what it gave, the cold one's 45 % over. Where a box's own record says otherwise,
// tune's ledger says by how much (session/predlog).
const (
	cpuContention = 0.5
	ioContention  = 0.18
)

// inlineHandOver is HandOverShare for a PyTorch DataLoader: one worker's
// CPU per batch over the loop's own loading CPU per batch at
// num_workers=0, less one. Measured on this project's 2-core VM
// (2026-12-02) on testdata/inline/inline.py (32 samples of a Python loop
// each): 27.5 ms of loading CPU a batch inline, 31.3 ms in one worker
// (its __getitem__ 29.6 ms against 27.5 inline, collate 0.7, hand-over
// 0.5, the queue the rest): 0.14. The causes battery's inline loop (4 ms of CPU a sample)
// was promised 260 samples/s from 0 → 2 without it and gave 234.
const inlineHandOver = 0.14

// takeTensorSec and takeTensorFastSec price the loop's take of a batch
// from a PyTorch worker where none was measured (loading inline), per
// torch tensor of the batch (numpy arrays are pickled by value, about 18
// µs each, and not counted): torch shares each tensor's storage by a file
// descriptor that the loop fetches from the worker's resource-sharer
// thread and maps. Measured on this project's 2-core VM (2026-12-07,
// torch 1.13): one worker making batches of 1, 2, 4 and 8 small tensors
// cost the loop 652, 876, 1,805 and 3,449 µs a batch (325, 411, 851 and
// 1,658 µs of it CPU): 410 µs a tensor beside 158 µs a batch (a linear
// fit); tiny.py's batch of two tensors 828–930 µs; a worker whose collate
// runs Python for 300 µs a batch holds its GIL while the loop waits on its
// resource-sharer thread, 600–800 µs a tensor (a review). The issue-52
// H200 box's take stage read 355–420 µs of CPU a tensor. The range's low
// side pays the most seen, 800 µs; its high side the least, 340 µs
// (tiny.py's 828 µs for two, less the trip below); with pin_memory=True the
// pin-memory thread takes the batch beside the loop (only its GIL is in
// the loop's way), and the high side pays none. A batch of two tensors
// made in 83 µs inline had been promised 222–265k samples/s from 0 → 1
// worker against 144k measured; one worker gave 30.5k.
//
// Each batch also costs the loop a trip to the worker's queue whatever it
// holds: takeBatchSec and takeBatchFastSec, the most and least seen — the
// fit above's intercept (158 µs a batch, 75 µs of it CPU), a review's
// eight numpy arrays a batch (142 µs a batch), and a loop of numpy arrays
// 16 samples a batch whose take stage read 176–259 µs (2026-12-07; one
// worker had been promised 43–46k samples/s from 31k inline, and gave
// 27.9k).
const (
	takeTensorSec     = 800e-6
	takeTensorFastSec = 340e-6
	takeBatchSec      = 260e-6
	takeBatchFastSec  = 140e-6
)

// inlineTakeSec is what taking each batch from a worker would cost the
// loop of a PyTorch loader that loads inline: its batch's tensors at
// takeTensorSec (the range's low side) or takeTensorFastSec, and the trip
// takeBatchSec or takeBatchFastSec; 0 where no batch was looked at, for
// other loaders, and on the high side with pin_memory=True.
func (p *Pipeline) inlineTakeSec(low bool) float64 {
	if p.Kind != "python" || p.Knobs.Workers > 0 || !p.TakeLooked {
		return 0
	}
	if low {
		return takeBatchSec + float64(p.TakeTensors)*takeTensorSec
	}
	if p.Knobs.Pin {
		return 0
	}
	return takeBatchFastSec + float64(p.TakeTensors)*takeTensorFastSec
}

// ramCopyBytesPerSec is what one core copies from a dataset held in RAM:
// this project's 2-core VM copied 7.4 GB/s in 128 KiB pieces taken at
// random from 1 GiB (Go's copy; 2026-12-02). A loader reading from RAM
// pays that instead of its reads' CPU (ReadCPUSec).
const ramCopyBytesPerSec = 7e9

// Limit names what caps a configuration's throughput.
type Limit int

// The limits.
const (
	LimitStep      Limit = iota // the training step: the accelerator is the busy part
	LimitInline                 // loading inline, one batch after another (no workers)
	LimitWorkers                // too few workers for the time each batch takes
	LimitCPU                    // the CPUs the workers can use
	LimitBandwidth              // the storage link or disk
	LimitLoop                   // the loop's own time per batch: its step, and taking each batch
)

func (l Limit) String() string {
	return [...]string{"the step", "loading inline", "the workers", "the CPUs", "storage bandwidth", "the loop's own time per batch"}[l]
}

// Predict is the model: throughput is the smallest of the step rate,
// workers ÷ batch time, CPUs ÷ CPU work per batch and bandwidth ÷ bytes
// per batch (with no workers, loading and stepping add up instead);
// workers that restart every epoch add their start-up to each epoch.
// Prefetch absorbs jitter but raises none of these limits. The point is
// the low side of the range (contended), the high side has no contention
// beyond what was measured; the limit returned is the high side's.
func (p *Pipeline) Predict(k Knobs) (Prediction, Limit) {
	low, contended := p.predict(k, p.CPUContention, p.IOContention, p.HandOverShare, true)
	high, limit := p.predict(k, 0, 0, 0, false)
	low.HighSamplesPerSec, low.HighGain = max(high.SamplesPerSec, low.SamplesPerSec), max(high.Gain, low.Gain)
	if low.Gain > 0 || low.SamplesPerSec > 0 {
		low.Limit = limit.String()
		if contended != limit {
			low.ContendedLimit = contended.String()
		}
	}
	return low, limit
}

// waitAt is the loop's wait for input at rate batches per second with
// this step: the time beside the step, and, faster than measured with a
// step no shorter, no more than it was measured to wait (the step alone,
// short of the loop's time per batch, read a loop measured waiting 60 %
// as waiting 95 % after a change predicted faster; a user's review).
func (p *Pipeline) waitAt(rate, step float64) float64 {
	wait := max(0, 1-rate*step)
	if m := p.measuredRate(); m > 0 && rate >= m && !p.Relative && p.Measured.WaitShare > 0 {
		wait = min(wait, p.Measured.WaitShare)
	}
	return wait
}

// epochStall is the time to an epoch's first batch that workers which do
// not persist pay every epoch: as measured where workers restart now;
// where none does (loading inline, whose first batch's wait is the loop
// making it, or workers that persist), at least the first batch, made by
// one worker while the loop waits (perBatch, a worker's time for one),
// and on the low side a worker's start before it (workerStartSec). A
// user's review: num_workers 0 → 1 on an epoch of 13 batches was
// promised 643–754 samples/s from 542 and gave 561; each epoch waited
// 63 ms for its restarted worker's first batch, 21 ms inline.
func (p *Pipeline) epochStall(perBatch float64, low bool) float64 {
	if p.Knobs.Workers > 0 && !p.Knobs.Persistent {
		return p.EpochStallSec
	}
	if low {
		return perBatch + workerStartSec
	}
	return perBatch
}

// workerStartSec is a DataLoader worker's start before it makes its first
// batch: the fork of the training process and torch's set-up in the
// child. On the 2-core VM (torch 1.13, an ImageFolder of 400 JPEGs,
// 2026-12-07) an epoch's first batch came 63 ms after the epoch began,
// 18 ms of it the batch: 45 ms.
const workerStartSec = 0.045

// contended is the factor by which a time per batch grows with n workers
// against the n0 measured, at contention σ: (1 + σ(n−1)) ÷ (1 + σ(n0−1)),
// never below 1 (fewer workers are not assumed faster than measured).
func contended(sigma float64, n, n0 int) float64 {
	n0 = max(n0, 1) // loading inline is one reader
	if n <= n0 || sigma <= 0 {
		return 1
	}
	return (1 + sigma*float64(n-1)) / (1 + sigma*float64(n0-1))
}

// cpuContended is the factor by which a batch's CPU grows with n workers
// against those measured, at contention κ: (1 + κu) ÷ (1 + κu₀), u₀ the
// share of the box's CPUs the window saw busy and u that share with each
// worker added busy its share of the time on a CPU (cpu of io + cpu per
// batch, as the configuration predicted has them: from RAM a reader
// becomes CPU-bound), at most the whole box; never below 1. With the
// box's occupancy unread, the box is the workers' CPUs and only the
// measured workers and the loop were busy on it.
func (p *Pipeline) cpuContended(kappa float64, n int, io, cpu float64) float64 {
	return p.contendedFrom(kappa, n, max(p.Knobs.Workers, 1), io, cpu) // loading inline is one busy reader
}

// contendedFrom is cpuContended from n0 busy workers: the step's CPU
// (StepOnCPU) counts from the workers measured, none inline, for the
// loop's thread stays busy with its step beside each worker added.
func (p *Pipeline) contendedFrom(kappa float64, n, n0 int, io, cpu float64) float64 {
	if n <= n0 || kappa <= 0 {
		return 1
	}
	share := 1.0 // a worker's time on a CPU
	if t := io + cpu; t > 0 {
		share = cpu / t
	}
	box, busy := p.BoxCPUs, p.BusyCPUs
	ranks := float64(max(p.LocalRanks, 1)) // every local rank adds its workers to the box's CPUs
	if !(box > 0) {
		box = p.CPUs + p.LoopCPUs // one rank's share already
		busy = float64(n0)*share + p.LoopCPUs
		ranks = 1
	}
	if !(box > 0) { // no CPUs known at all: from idle to full
		return 1 + kappa
	}
	if !(busy > 0) { // 0, negative, NaN
		busy = 0
	}
	u0 := min(1, busy/box)
	u := min(1, (busy+ranks*float64(n-n0)*share)/box)
	return max(1, (1+kappa*u)/(1+kappa*u0))
}

// stepRelief is the factor by which a step on the CPU, measured beside the
// workers, is slower than it runs with none (loading inline): the share
// of the box's CPUs busy falls by what the workers kept busy (the CPUs
// they were seen to use, else their time on a CPU a batch, all of it
// where their CPU was missed), and the step's CPU work runs at
// (1 + κu₀) ÷ (1 + κu) of its speed, κ the range's own; the range's high
// side counts it, as its low side counts the contention of workers added.
// 1 where the box's occupancy is unread (the tiny batches' step ran 254 µs
// beside 2 workers and 118 µs inline).
func (p *Pipeline) stepRelief() float64 {
	box, busy := p.BoxCPUs, p.BusyCPUs
	if !(box > 0) || !(busy > 0) {
		return 1
	}
	workers := p.UsedCPUs // what they were seen to use (part of it where their CPU was missed)
	if !(workers > 0) || p.WorkersCPUMissed {
		// Unread: each busy its share of its time per batch on a CPU, or
		// all of it where their CPU was missed (the high side's reading).
		share := 1.0
		if t := p.IOSec + p.CPUWaitSec + p.CPUSec; t > 0 && !p.WorkersCPUMissed {
			share = p.CPUSec / t
		}
		workers = float64(p.Knobs.Workers) * share
	}
	workers *= float64(max(p.LocalRanks, 1))
	u0 := min(1, busy/box)
	u := max(0, min(1, (busy-workers)/box))
	return max(1, (1+p.CPUContention*u0)/(1+p.CPUContention*u))
}

// predict is Predict at contention κ for the workers' CPU and σ for
// their storage wait, and a hand-over share added to a batch's CPU where
// workers replace loading inline; low is the range's low side.
func (p *Pipeline) predict(k Knobs, cpuKappa, ioSigma, handOver float64, low bool) (Prediction, Limit) {
	if p.BatchSize <= 0 || p.StepSec <= 0 {
		return Prediction{}, LimitStep
	}
	hand := p.HandOverSec                     // neither storage nor CPU: no contention, no cache moves it
	io, cpu := p.IOSec+p.CPUWaitSec, p.CPUSec // a worker's wall time per batch: io + cpu + hand
	switch {
	case k.Workers == 0 && p.Knobs.Workers > 0 && p.MakeSec > 0:
		// Loading inline again, where the workers timed their stages: what
		// a worker spends making a batch (getitem + collate, its wall
		// time: its reads and waits are in it, its wait for a CPU not:
		// fillWorkers), with none of the hand-over, which a worker's CPU
		// counts (a batch of two tensors: 320 µs of a worker's CPU a
		// batch, 196 µs of it making it; inline it took 83).
		cpu = min(p.CPUSec, p.MakeSec)
		io = p.MakeSec - cpu
	case k.Workers == 0 && p.Knobs.Workers > 0 && !low:
		// Loading inline again, untimed: one thread, which waits for no
		// CPU the workers took, and does not pickle what it makes (a
		// worker's CPU per batch is 1 + HandOverShare of the same work
		// inline). The low side keeps the workers' own figures.
		io, cpu = p.IOSec, p.CPUSec/(1+p.HandOverShare)
	}
	if k.Cache && !p.Knobs.Cache {
		io = p.CPUWaitSec // read from RAM: no storage wait (the wait for a CPU stays)
		cpu = max(0, cpu-p.ReadCPUSec) + p.BytesPerBatch/ramCopyBytesPerSec
	}
	step := p.StepSec
	if k.Workers == 0 && p.Knobs.Workers > 0 && p.StepOnCPU && !low {
		step /= p.stepRelief() // the workers' CPU work gone from beside the step
	}
	if k.Workers > 0 {
		io = p.CPUWaitSec + (io-p.CPUWaitSec)*contended(ioSigma, k.Workers, p.Knobs.Workers)
		if p.StepOnCPU {
			step *= p.contendedFrom(cpuKappa, k.Workers, p.Knobs.Workers, io, cpu) // the step's CPU work on the same box
		}
		cpu *= p.cpuContended(cpuKappa, k.Workers, io, cpu)
		if p.Knobs.Workers == 0 {
			cpu *= 1 + handOver
		}
	}
	var rate float64 // batches per second
	limit := LimitStep
	if k.Workers == 0 {
		rate, limit = 1/(step+io+cpu), LimitInline
	} else {
		overhead := max(p.OverheadSec, p.inlineTakeSec(low))
		rate = 1 / (step + overhead)
		if overhead > 0 {
			limit = LimitLoop
		}
		if c := float64(k.Workers) / (io + cpu + hand); io+cpu+hand > 0 && c < rate {
			rate, limit = c, LimitWorkers
		}
		if c := p.cpuRate(cpu); cpu > 0 && c < rate {
			rate, limit = c, LimitCPU
		}
		if c := p.BandwidthBytesPerSec / p.BytesPerBatch; p.BandwidthBytesPerSec > 0 && p.BytesPerBatch > 0 && !k.Cache && c < rate {
			rate, limit = c, LimitBandwidth
		}
		if stall := p.epochStall(io+cpu+hand, low); !k.Persistent && p.BatchesPerEpoch > 0 && stall > 0 {
			// Each epoch pays its start-up again: N batches take N/rate + stall.
			rate = p.BatchesPerEpoch / (p.BatchesPerEpoch/rate + stall)
		}
	}
	wait := p.waitAt(rate, step)
	if gap := p.EpochGapSec; gap > 0 && p.BatchesPerEpoch > 0 {
		// Every epoch pays the loop's time between epochs. The wait is a
		// share of the loop's waits and steps, which the gap is not.
		rate = p.BatchesPerEpoch / (p.BatchesPerEpoch/rate + gap)
	}
	out := Prediction{SamplesPerSec: rate * p.BatchSize, WaitShare: wait}
	if p.Relative {
		out.SamplesPerSec = 0
	}
	if m := p.measuredRate(); m > 0 {
		out.Gain = rate / m
	}
	return out, limit
}

// cpuRate is the batches per unit of time the CPUs allow, at cpu seconds
// of the workers' CPU per batch: the workers' CPUs (CPUs, the loop's
// measured use counted out) with the loop's own CPU per batch reserved at
// the rate it would run, and never the KeepCPUs the training process
// keeps.
func (p *Pipeline) cpuRate(cpu float64) float64 {
	all := p.CPUs + p.LoopCPUs // the CPUs the workers and the loop share
	rate := all / (cpu + p.LoopCPUSec)
	if p.KeepCPUs > 0 {
		rate = min(rate, p.keptCPUs()/cpu)
	}
	return rate
}

// keptCPUs is what the workers get beside the KeepCPUs the training
// process keeps: at least half a CPU (a rank's share of it where the node
// runs several ranks: floorCPUs') or what they were seen to use.
func (p *Pipeline) keptCPUs() float64 {
	return max(0.5/float64(max(p.LocalRanks, 1)), p.CPUs+p.LoopCPUs-p.KeepCPUs, p.UsedCPUs)
}

// measuredRate is the batches per unit of time the window saw.
func (p *Pipeline) measuredRate() float64 {
	if p.Relative {
		return 1 - min(p.Measured.WaitShare, sampledWaitMax) // as sampledPipeline read it
	}
	if p.BatchSize > 0 {
		return p.Measured.SamplesPerSec / p.BatchSize
	}
	return 0
}

// Model measures the pipeline model from a window of frames (oldest
// first), as Classify does; ok is false when the frames lack what the
// model needs.
func Model(frames []sample.Frame) (*Pipeline, bool) {
	if len(frames) == 0 {
		return nil, false
	}
	w := read(frames, DefaultThresholds())
	return pipeline(&w)
}

// OthersCores is the cores the processes outside the watched tree used
// over frames: the median of each frame's box-wide busy CPUs, steal
// included (a VM's neighbours), interrupts not (their work grows with the
// job's own I/O), less the tree's; false where no frame had both. tune
// compares it between a prediction's run and the run that tests it
// (session/tune: a step measured while the rest of the box took more is
// not the change's alone). False too where the tree's own CPU is not all
// read (treeCPUMissed: workers restarted every epoch that live too short
// for /proc, or workers the tree does not list): what the busy cores hold
// beyond it is then the job's as much as others' (a sweep on an idle box
// marked its 2-worker run disturbed, "outside the job took 1.5 cores").
func OthersCores(frames []sample.Frame) (float64, bool) {
	if w := read(frames, DefaultThresholds()); w.treeCPUMissed() {
		return 0, false
	}
	var l levels
	for i := range frames {
		f := &frames[i]
		if f.CPU == nil || len(f.CPU.Cores) == 0 || f.Procs == nil || f.Procs.FocusPID == 0 {
			continue
		}
		l.add(max(0, (f.CPU.BusyPct-f.CPU.IRQPct)/100*float64(len(f.CPU.Cores))-treeCores(f.Procs)))
	}
	m := l.median()
	return m.v, m.ok
}

// pipeline measures the model's inputs from a window; ok is false when
// the window lacks what the model needs. Three sources give them: a
// loader that splits its time into reading and decoding (gpuwatch's own,
// Go loaders), a loader that times only the loop (PyTorch through the
// hook or gpuwatch run: waitPipeline), and a loop nobody instrumented
// (relative figures: sampledPipeline).
func pipeline(w *window) (*Pipeline, bool) {
	p, ok := pipelineOf(w)
	if ok {
		p.StepOnCPU = stepOnCPU(w)
	}
	return p, ok
}

// stepOnCPU says the loop's step is CPU work: the hook read its forward
// on the CPU, or, for a loop sampled with no hook, no accelerator was
// read at all — so that the sampled view and the hooked one give a CPU
// job the same range (issue 52, item 2).
func stepOnCPU(w *window) bool {
	if s := w.gpu.settings; s != nil && s.Device != "" {
		return s.Device == "cpu"
	}
	_, real := w.accel() // a sampled loop always has its virtual accelerator: a GPU is what counts
	return w.sampled != nil && !real
}

// pipelineOf is pipeline by its source.
func pipelineOf(w *window) (*Pipeline, bool) {
	switch {
	case w.sampled != nil:
		return sampledPipeline(w)
	case w.workers < 0 || !w.stepMs.ok || w.stepMs.v <= 0:
		return nil, false
	case !w.readSec.ok || !w.decodeSec.ok:
		return waitPipeline(w)
	case !w.batchesPerSec.ok || w.batchesPerSec.v <= 0:
		return nil, false
	}
	return splitPipeline(w), true
}

// splitPipeline is the model of a loader that splits its time into reading
// and decoding; the window has its step, its batch rate (above 0) and both
// times.
func splitPipeline(w *window) *Pipeline {
	bps := w.batchesPerSec.v
	p := &Pipeline{StepSec: w.stepMs.v / 1000, BatchesPerEpoch: float64(w.batchesPerEpoch), EpochStallSec: w.epochStallMs / 1000, Kind: w.loaderKind,
		NewLoaderEveryEpoch: w.newLoaderEveryEpoch, CPUContention: cpuContention, IOContention: ioContention}
	if d, err := time.ParseDuration(w.knobs["read_latency"]); err == nil && d > 0 {
		p.IOContention = 0 // an emulated link: its wait is a sleep per read
	}
	if w.samplesPerSec.ok && w.samplesPerSec.v > 0 {
		p.BatchSize = w.samplesPerSec.v / bps
	} else {
		p.BatchSize = 1 // batches, where the loader does not count samples
	}
	p.BytesPerBatch = w.bytesPerSec.v / bps
	p.Knobs = knobsOf(w)
	// Per batch, summed over workers: wall time reading and decoding.
	rd, dc := w.readSec.v/bps, w.decodeSec.v/bps
	cpu, queue := splitCPU(w, rd, dc)
	p.CPUSec = cpu
	p.ReadCPUSec = readCPU(w, cpu, dc, bps, p.BytesPerBatch, p.Knobs.Cache)
	if pg := w.paging; pg.majFaults.ok && (pg.majFaults.v >= DefaultThresholds().MmapFaultsPerSec || pg.readAround(w)) {
		if pg.diskRead.ok && pg.diskRead.v > w.bytesPerSec.v {
			p.ColdReadBytesPerSec = pg.diskRead.v
		}
	}
	p.IOSec = max(0, rd+dc-cpu*queue)
	if p.Knobs.Workers == 0 {
		p.IOSec = max(0, rd+dc-cpu)
	}
	p.CPUs = workerCPUs(w, p.Knobs.Workers, cpu)
	occupancy(w, p)
	storageLimits(w, p)
	p.Measured = Prediction{SamplesPerSec: bps * p.BatchSize, Gain: 1}
	if w.waitShare.ok {
		p.Measured.WaitShare = w.waitShare.v
	}
	return p
}

// readCPU is the part of the loader's CPU per batch (cpu) that its reads
// take on top of the decode (read calls, the I/O path, faulting pages in):
// from RAM the decode stays, and a copy. The decode's CPU is its wall time
// per batch (dc) less its queueing for a core, counted among the workers
// decoding (dc × bps), not those blocked in a read. 0 where the loader
// reads from RAM already, or where its bytes are unknown (caching could
// not be priced: nothing is taken out).
func readCPU(w *window, cpu, dc, bps, bytesPerBatch float64, cached bool) float64 {
	if cached || bytesPerBatch <= 0 {
		return 0
	}
	decode := dc
	if cores := float64(w.cores); cores > 0 && dc*bps > cores {
		decode = dc / (dc * bps / cores)
	}
	return max(0, cpu-decode)
}

// splitCPU is the loader's CPU seconds per batch from its wall seconds per
// batch reading (rd) and decoding (dc), and the CPU queueing factor (1
// when the busy workers fit the cores). Wall time beyond CPU is waiting:
// on storage, or — when more workers are busy than there are CPUs — for a
// CPU; the queueing is taken out.
func splitCPU(w *window, rd, dc float64) (cpu, queue float64) {
	bps := w.batchesPerSec.v
	busy := (rd + dc) * bps // workers busy on average
	queue = 1.0
	if cores := float64(w.cores); cores > 0 && busy > cores {
		queue = busy / cores
	}
	// CPU per batch: the loader's measured CPU when it covers the workers
	// (it counts the CPU of reading too), else the decode time less its
	// queueing.
	cpu = dc / queue
	if w.loaderCPU.ok {
		if lc := w.loaderCPU.v / 100 / bps; lc >= 0.5*cpu {
			cpu = min(rd+dc, lc)
		}
	}
	return cpu, queue
}

// workerCPUs are the CPUs the loader's workers can have: the job's, less
// its training loop's own (its step; loading inline, its thread's CPU is
// mostly the loading) and less what other processes take; at least half a
// CPU. cpu is the loader's CPU seconds per batch.
func workerCPUs(w *window, workers int, cpu float64) float64 {
	bps := w.batchesPerSec.v
	loop := 0.0
	if w.roles.loopPct.ok {
		loop = w.roles.loopPct.v / 100
		if workers == 0 {
			loop = max(0, loop-cpu*bps)
		}
	}
	others := 0.0
	if w.cpuBusy.ok {
		others = max(0, w.cpuBusy.v/100*float64(w.cores)-cpu*bps-loop)
	}
	// Never fewer than worker processes were seen to use (fill says why).
	used := 0.0
	if workers > 0 && len(w.workerPIDs) > 0 && w.loaderCPU.ok {
		used = min(cpu*bps, float64(w.cores))
	}
	return max(used, floorCPUs(w, float64(w.cores)-loop-others, loop, 1))
}

// floorCPUs is the workers' CPUs where the box would give them cpus: at
// least half a CPU; for a job confined to fewer CPUs than the box has,
// what its allocation leaves the loop's thread (loop, and the spinning
// pool's share where it was read), a quarter of it at least — never the
// box's floor, which a 0.5-CPU quota does not have (a job at that quota,
// its loop using 0.12, was given 0.5 and told 2 → 3 workers for 1.2×;
// the third gave 2 %).
func floorCPUs(w *window, cpus, loop, ranks float64) float64 {
	if !w.confined() {
		return max(0.5/ranks, cpus)
	}
	c := w.job.CPUCapacityCores / ranks
	return max(c/4, c-loop)
}

// storageLimits sets what storage allows p: the bandwidth (the knob's,
// lowered to what a saturated disk serves now) and the dataset's size,
// with whether the page cache could hold it.
func storageLimits(w *window, p *Pipeline) {
	if bw, ok := knobBytes(w.knobs["read_bandwidth"]); ok && bw > 0 {
		p.BandwidthBytesPerSec = bw
	}
	if w.diskBusy.ok && w.diskBusy.v >= 90 && w.bytesPerSec.v > 0 && !p.Knobs.Cache {
		// A saturated disk serves no more than it does now.
		if p.BandwidthBytesPerSec == 0 || w.bytesPerSec.v < p.BandwidthBytesPerSec {
			p.BandwidthBytesPerSec = w.bytesPerSec.v
		}
	}
	if size, ok := knobBytes(w.knobs["dataset_size"]); ok {
		p.DatasetBytes = size
		p.CacheFits = size < w.roomForData()/2 // under a job's memory limit, the room it leaves
	}
}

// waitPipeline is the model of a loader that times only its loop (the
// hook, gpuwatch run): no read/decode split. While the loop waits, the
// workers are saturated, so one worker's wall time per batch is W ÷ rate
// (the epochs' start-up taken out when workers restart); its CPU per batch
// is the worker processes' CPU from /proc ÷ rate, and the rest is waiting
// on storage or the network. Loading inline, the loop's wait per batch is
// the loading, its thread's CPU the CPU part. docs/diagnosis.md says what
// this assumes and where it cannot see.
func waitPipeline(w *window) (*Pipeline, bool) {
	// Means, not medians: a loader whose epochs are shorter than a frame
	// (a worker start-up, then a burst of batches) has frames of every
	// kind, and only the means over the window add up.
	if !w.meanWaitShare.ok || !w.meanBatchesPerSec.ok || w.meanBatchesPerSec.v <= 0 {
		return nil, false
	}
	bps, wait := w.meanBatchesPerSec.v, w.meanWaitShare.v
	measuredWait := wait // the steady wait below takes the restarts out; "now" is what was seen
	p := &Pipeline{StepSec: w.stepMs.v / 1000, BatchesPerEpoch: float64(w.batchesPerEpoch), EpochStallSec: w.epochStallMs / 1000,
		NewLoaderEveryEpoch: w.newLoaderEveryEpoch, Knobs: knobsOf(w), Kind: w.loaderKind, BatchSize: 1, CPUContention: cpuContention, IOContention: ioContention}
	if p.Kind == "" {
		p.Kind = "python" // a loader that times only its loop: the hook's (recordings before loaders said their kind)
	}
	if p.Kind == "python" {
		p.HandOverShare = inlineHandOver
	}
	if w.meanSamplesPerSec.v > 0 {
		p.BatchSize = w.meanSamplesPerSec.v / bps
	}
	gap := w.epochGapMs / 1000
	if s := w.betweenEpochsShare; s > 0 {
		// The window's rate counts the loop's time between epochs, where
		// it takes no batch (its wait share is of its waits and steps
		// alone): inside its epochs it ran faster.
		if s >= maxBetweenEpochsShare || gap <= 0 || p.BatchesPerEpoch <= 0 {
			// Mostly between epochs, or between them before any gap
			// ended: an epoch's cycle, and what a change gains on it, is
			// not known yet.
			return nil, false
		}
		bps /= 1 - s
	}
	inEpochs := bps // the rate inside epochs, their start-ups included
	if p.restarts() {
		// The rate inside epochs pays each epoch's start-up: past it the
		// loop runs at the steady rate, and waits the rest.
		epoch := p.BatchesPerEpoch / bps
		if t := epoch - p.EpochStallSec; t > 0 {
			bps = p.BatchesPerEpoch / t
			wait = max(0, wait*epoch-p.EpochStallSec) / t
		}
	}
	fill(p, w, bps, wait, 1/bps)
	if p.restarts() {
		p.OverheadSec = max(p.OverheadSec, unexplainedWait(p, wait/bps))
	}
	p.WorkersCPUMissed = w.workersCPUMissed
	p.TakeTensors, p.TakeTensorsCut, p.TakeLooked = w.batchTensors, w.batchTensorsCut, w.batchLooked
	saturatedDisk(w, p, bps)
	p.Measured = Prediction{SamplesPerSec: w.meanBatchesPerSec.v * p.BatchSize, WaitShare: measuredWait, Gain: 1}
	if gap > 0 && p.BatchesPerEpoch > 0 {
		// "Now" is an epoch's cycle, its gap included, whatever share of
		// one the window held (a window inside an epoch read its rate as
		// the job's).
		p.EpochGapSec = gap
		p.Measured.SamplesPerSec = p.BatchesPerEpoch / (p.BatchesPerEpoch/inEpochs + gap) * p.BatchSize
	}
	return p, true
}

// maxBetweenEpochsShare is the share of a window between epochs past
// which its batches are too few to read the loop's rate inside them.
const maxBetweenEpochsShare = 0.9

// unexplainedWait is the loop's steady wait per batch (waitSec, the
// epochs' start-ups taken out) that workers restarting every epoch leave
// unexplained: where their time per batch keeps up with the step, the
// wait is not theirs, and past the restarts' refill (the other workers'
// start-ups, at most one stall each an epoch) persistent workers do not
// remove it — the loop's take of each batch, or its wait for a CPU on a
// busy box. 0 where the workers do not keep up (their limit explains
// the wait). A user's review: one worker at 0.9 ms a batch beside a 3.2
// ms step, restarting in 28 ms every 64 batches, on a busy box, was
// promised 1.9× and the wait gone from persistent_workers; it kept a 30
// % wait and gained 1.0–1.3×.
func unexplainedWait(p *Pipeline, waitSec float64) float64 {
	n := float64(p.Knobs.Workers)
	batch := p.IOSec + p.CPUSec + p.CPUWaitSec + p.HandOverSec
	if n <= 0 || p.Relative || !(p.StepSec > 0) || batch > n*p.StepSec {
		return 0
	}
	return max(0, waitSec-p.refillSec())
}

// refillSec is the most of the loop's wait per batch that workers
// restarting every epoch owe to their restarts past the first batch: the
// other workers' start-ups, at most one stall each an epoch (started one
// after another), spread over the epoch's batches.
func (p *Pipeline) refillSec() float64 {
	if p.BatchesPerEpoch <= 0 || p.Knobs.Workers < 1 {
		return 0
	}
	return p.EpochStallSec * float64(p.Knobs.Workers-1) / p.BatchesPerEpoch
}

// saturatedDisk: where the workers wait on storage and the disk they
// read is busy all the time, it serves no more when more workers ask: the
// watched tree's reads from it now (faults included) are the storage's
// limit, as storageLimits says for the embedded loader. The busiest disk
// is theirs where the tree reads at least half of what it reads; a disk
// busy with another job's reads (or writes) limits nothing here. Issue 39:
// a mapped file read at random was promised 4.0× from eight workers and
// gave 0.93×.
func saturatedDisk(w *window, p *Pipeline, bps float64) {
	if !w.diskBusy.ok || w.diskBusy.v < w.th.DiskBusyPct || p.IOSec <= 0 || p.Relative || bps <= 0 {
		return
	}
	if d := w.paging.diskRead; d.ok && d.v > 0 && d.v >= 0.5*w.diskReadBps {
		p.BandwidthBytesPerSec, p.BytesPerBatch = d.v, d.v/bps
	}
}

// restarts says the pipeline's workers start again every epoch, at a
// measured cost: not persistent, with epochs of a known length.
func (p *Pipeline) restarts() bool {
	return !p.Knobs.Persistent && p.BatchesPerEpoch > 0 && p.EpochStallSec > 0 && p.Knobs.Workers > 0
}

// sampledPipeline is the model of a loop nobody instrumented: its wait
// share was sampled, its rates are unknown. Times are in units of its step
// (the step is 1, a batch takes 1/(1−wait)), so the model's rates are per
// step and its predictions are gains and wait shares.
//
// A loop sampled waiting all the time is modelled only where it loads
// inline beside a real GPU: its step's waits on the GPU are samples not
// running, so all it ran was loading, and its step is under
// sampledWaitMax of its time, read as that. The change the model finds is
// then the hook's own (issue 52). Without a GPU signal a step on the CPU
// runs too, and reads as loading: no model, and the advice says so. With
// workers, a loop waiting all the time may be a stalled job: no model.
func sampledPipeline(w *window) (*Pipeline, bool) {
	if !w.waitShare.ok || w.workers < 0 || w.waitShare.v >= sampledWaitMax && (w.workers > 0 || !w.gpuUtil.ok) {
		return nil, false
	}
	wait := min(w.waitShare.v, sampledWaitMax)
	bps := 1 - wait // batches per step-time
	p := &Pipeline{StepSec: 1, Knobs: knobsOf(w), Kind: "python", BatchSize: 1, Relative: true, CPUContention: cpuContention, IOContention: ioContention,
		HandOverShare: inlineHandOver}
	fill(p, w, bps, wait, 1/bps)
	p.WorkersCPUMissed = w.workersCPUMissed // workers coming and going: their CPU is not read whole
	p.Measured = Prediction{WaitShare: w.waitShare.v, Gain: 1}
	return p, true
}

// sampledWaitMax is the most of a sampled loop's time the model reads as
// its wait: the frames' 50 samples a second resolve a step no shorter
// than about this share of a window's, and the model needs a step. Read
// as longer than it is, the step lowers the predicted gain only where the
// step itself would be the limit (a gain of 100×, past any box's CPUs).
const sampledWaitMax = 0.99

// fillWorkers sets the per-batch times of a pipeline with n workers (fill).
func fillWorkers(p *Pipeline, w *window, n int, bps, wait, period float64) {
	// While the loop waits for them, the workers are saturated: a
	// batch takes one W ÷ rate. When it hardly waits, they keep up
	// with the step, and that is all that is known of them.
	wall := float64(n) / bps
	if wait < w.th.WaitShareModerate {
		wall = float64(n) * p.StepSec
	}
	handingOver := handsOver(p, w, n, bps, wait, period)
	if st := w.workerStageSec; st.ok && st.v > 0 && !p.Relative && !handingOver {
		// The workers timed their stages: that is a batch's wall time,
		// and the rest of W ÷ rate they were idle, not waiting on
		// storage (issue 39: "73 ms waiting on storage" for data in RAM).
		wall = min(wall, st.v)
	}
	cpu := wall // without the workers' CPU, all of it may be CPU: the cautious reading
	if w.loaderCPU.ok {
		cpu = min(wall, w.loaderCPU.v/100/bps)
	}
	p.CPUSec, p.IOSec = cpu, wall-cpu
	if st := w.workerMakeSec; st.ok && st.v > 0 && !p.Relative {
		// Making the batch, not handing it over (no pickling inline).
		p.MakeSec = st.v
		hand := 0.0
		if w.workerStageSec.ok {
			hand = max(0, w.workerStageSec.v-st.v)
		}
		if r := w.workersRunDelay; r.ok && w.loaderCPU.ok && r.v < 1 && cpu > hand {
			// Their wait for a CPU is the workers' crowding, which a loop
			// loading inline does not pay (a review): the making's share
			// of it, the workers' CPU less the hand-over's, which is also
			// the least the making takes; never more than its wall time.
			mk := cpu - hand
			p.MakeSec = min(st.v, max(mk, st.v-mk*r.v/(1-r.v)))
		}
	}
	if r := w.workersRunDelay; r.ok && w.loaderCPU.ok && r.v < 1 {
		// Of the wall time beyond CPU, the workers' run delay was a
		// wait for a CPU, not for storage: R = delay ÷ (CPU + delay).
		p.CPUWaitSec = min(p.IOSec, cpu*r.v/(1-r.v))
		p.IOSec -= p.CPUWaitSec
	}
	if handingOver {
		// Of the wall beyond CPU and the wait for one, the loop's wait
		// past its take was the hand-over: storage only past that.
		p.HandOverSec = min(p.IOSec, max(0, wait*period-w.loopTakeSec.v))
		p.IOSec -= p.HandOverSec
	}
	busy := w.cpuBusy.v - w.spinPct.v/float64(max(w.cores, 1))
	full := p.Knobs.Prefetch > 0 && w.queueDepth.v >= float64(n*p.Knobs.Prefetch)
	// Workers whose timed stages fill the batch period are busy: the
	// loop waits on them, whatever the queue said (issue 39: "205 ms
	// taking each batch" while the loop waited on busy workers).
	busyWorkers := w.workerStageSec.ok && !p.Relative && w.workerStageSec.v*bps >= busyWorkerShare*float64(n) && !doneWhenAsked(w, n)
	if w.queueDepth.ok && !busyWorkers && !handingOver && (full || w.queueDepth.v >= 1 && (!w.cpuBusy.ok || busy < w.th.CPUSaturatedPct)) {
		// Batches were ready when the loop asked: the workers keep up,
		// and the wait is the loop taking each batch. (With every core
		// busy, a batch or two ready says less — the loop may be
		// waiting for a CPU, the CPUs' limit — but a full queue, every
		// worker's prefetch, still says the workers are ahead.)
		p.IOSec, p.CPUWaitSec = 0, 0
		p.OverheadSec = wait * period
		if p.restarts() {
			// What is left of the wait once the start-ups are taken out
			// may be the restarts' refill: the other workers' start-ups,
			// each at most one stall an epoch (workers started one after
			// another), not a cost of every batch. Past that it is the
			// loop's take of each batch, which persistent workers keep (a
			// user's review: one worker, 28 ms a restart and 64 batches an
			// epoch, was promised 1.9× from persistent_workers, its 30 %
			// wait gone; it kept the wait and gained 1.0–1.3×).
			p.OverheadSec = max(0, p.OverheadSec-p.refillSec())
		}
	}
}

// handsOver says the loop's wait is the workers' hand-over, untimed:
// batches ready when the loop asked, yet its wait per batch far beyond
// its timed take (its thread's CPU unpickling the batch). Each tensor's
// handle comes from the worker's resource-sharer thread, which waits for
// that worker's GIL while its __getitem__ runs Python — the workers'
// time, not the loop's own, and not in their timed stages (an
// unmodified script, one worker looping in Python per sample: 0.8 ms
// take, 8 ms wait per batch).
//
// Not for workers that restart every epoch: their wait per batch is what
// is left of the epochs' wait once the start-ups are taken out
// (waitPipeline), a small difference of two large sums whose frames cut
// epochs anywhere, not a wait each batch was seen to pay. Nor for idle
// workers, who hold their GIL too seldom to keep a hand-over waiting:
// the wait beyond the take is the loop's own, its trips to the workers'
// resource-sharer threads. Idle are workers whose timed stages fill
// under idleWorkerShare of the batch period (the text loop with its
// tokens stored: stages 8 % of the period, "5.6 ms waiting on storage"
// read from that wait, and 2 → 4 workers promised 1.6× measured 0.87×),
// and workers that run (or wait to run: a thread put off a CPU in Python
// holds its GIL) under idleWorkerShare of the time each, however long
// their stages: a __getitem__ that sleeps or blocks lets go of the GIL
// (4 workers sleeping 16 ms a batch beside a 10 ms step, the loop
// waiting 9 % on the trip: read as saturated, "45 ms a batch, 41 ms
// waiting on storage", and 4 → 5 was promised 11 % that 5 did not give).
//
// Nor where each worker's batch is done before the loop comes back to it
// (doneWhenAsked): its GIL is free, and the wait is the loop's own. The
// hand-over this function reads is the one whose worker is still
// computing when asked (4.8 ms a batch beside a 0.9 ms step, and an 8 ms
// wait).
func handsOver(p *Pipeline, w *window, n int, bps, wait, period float64) bool {
	idle := !p.Relative && (w.workerStageSec.ok && w.workerStageSec.v*bps < idleWorkerShare*float64(n) ||
		w.loaderCPU.ok && runnable(w.loaderCPU.v/100, w.workersRunDelay) < idleWorkerShare*float64(n))
	return w.queueDepth.ok && w.queueDepth.v >= 1 && w.loopTakeSec.ok && !p.Relative && !p.restarts() && !idle && !doneWhenAsked(w, n) &&
		w.loopTakeSec.v < w.th.OwnWaitShare*wait*period
}

// doneWhenAsked says each of n workers has its next batch made before the
// loop comes back to it: a worker is handed its next index just after the
// loop takes its batch, and is asked again after n of the loop's steps and
// the n − 1 takes between them; a worker whose timed stages take no longer
// than that is idle when asked, however much of the batch period they
// fill. Its batch is ready and its GIL free: the loop's wait is its own,
// not a wait on the workers (issue 52: an unmodified script, one worker
// looping in Python for 3.4 ms a batch beside a 4.4 ms step, the loop
// waiting 0.5 ms a batch with one ready: 1 → 2 workers promised 1.16× and
// gave 1.01×, the same wait at 1, 2 and 3 workers).
func doneWhenAsked(w *window, n int) bool {
	return w.workerStageSec.ok && w.stepMs.ok && w.loopTakeSec.ok && n > 0 &&
		w.workerStageSec.v <= float64(n)*w.stepMs.v/1000+float64(n-1)*w.loopTakeSec.v
}

// runnable is the cores' worth of time threads that used cpu cores ran
// or waited for a CPU, at the share delay of it they waited (their run
// delay); cpu itself where that is unread.
func runnable(cpu float64, delay level) float64 {
	if delay.ok && delay.v >= 0 && delay.v < 1 {
		return cpu / (1 - delay.v)
	}
	return cpu
}

// fill sets a wait-based pipeline's per-batch times and CPUs, at bps
// batches per unit of time (a second, or a step), with the loop's wait
// share and its time per batch (period) as measured.
func fill(p *Pipeline, w *window, bps, wait, period float64) {
	r := &w.roles
	spin := 0.0
	if w.spinPct.ok {
		spin = w.spinPct.v / 100 * w.th.SpinTakesShare
	}
	loopAll := 0.0
	if r.loopPct.ok {
		loopAll = r.loopPct.v / 100
	}
	loop := loopAll
	if n := p.Knobs.Workers; n > 0 {
		fillWorkers(p, w, n, bps, wait, period)
	} else {
		load := wait * period
		cpu := load
		if r.loopPct.ok {
			cpu = min(load, loop*period)
		}
		p.CPUSec, p.IOSec = cpu, load-cpu
		loop = max(0, loop-cpu*bps) // the loop's own thread, less its loading
	}
	p.SpinCPUs = spin
	p.LoopCPUs = loop
	if bps > 0 {
		p.LoopCPUSec = loop / bps
	}
	if w.gpuUtil.ok && w.cores > 2 {
		p.KeepCPUs = 1
	}
	n := workersCPUs(p, w, loop, loopAll, spin)
	p.CPUs = floorCPUs(w, p.CPUs, loop+spin, n)
	usedFloor(p, w, bps)
	occupancy(w, p)
}

// workersCPUs sets the workers' CPUs (fill): the job's, less the loop's
// thread (loop, its loading out; loopAll, all of it), less what the
// spinning pool keeps (spin), less what other processes (and the
// training process's working compute threads) take; a rank's share where
// the node runs several, whose count it returns (1 for one).
func workersCPUs(p *Pipeline, w *window, loop, loopAll, spin float64) float64 {
	workers := 0.0
	if w.loaderCPU.ok && p.Knobs.Workers > 0 {
		workers = w.loaderCPU.v / 100
	}
	others := 0.0
	if w.cpuBusy.ok {
		others = max(0, w.cpuBusy.v/100*float64(w.cores)-workers-loopAll-w.spinPct.v/100)
	}
	// A change to the script is every local rank's: each adds the same
	// workers, so the cores outside the job are shared by the ranks, each
	// keeping a core for its training process (in lockstep, one rank's
	// loop that waits for a CPU holds every rank back). A review: 2 ranks
	// on 2 cores were promised 1.3× from a worker each, and ran 0.68×.
	n := float64(w.localRanks)
	if n > 1 {
		others = max(0, others-(n-1)*(loopAll+workers))
		p.LocalRanks, p.KeepCPUs = w.localRanks, 1
	} else {
		n = 1
	}
	p.CPUs = (float64(w.cores)-others)/n - loop - spin
	if w.cpuBusy.ok && w.cpuBusy.v >= w.th.CPUSaturatedPct {
		// Every core busy: the few percent left idle are the scheduler's
		// slack, not CPUs more workers could have (3 CPU-bound workers
		// on 2 cores 93 % busy were promised 1.16× from a fourth, from
		// "1.9 CPUs they can get": what they used and the 7 % idle).
		p.CPUs = min(p.CPUs, (float64(w.cores)*w.cpuBusy.v/100-others)/n-loop-spin)
	}
	if r := w.workersRunDelay; r.ok && r.v >= w.th.ContendedRunDelay && workers > 0 {
		// Workers that queue for a CPU while a core reads idle cannot
		// get that idle (it is the scheduler's, or the hypervisor's):
		// what they used is what they can get. CI's tune battery, 3
		// CPU-bound workers on 2 cores 86 % busy, waiting a third of
		// the time they wanted a CPU: a fourth was promised 1.17× from
		// "1.9 CPUs they can get", 1.6 used and the idle rest. Not for
		// readers, workers that wait on storage three quarters of a batch
		// or more: their queueing is for the few moments they want a
		// CPU, and says nothing of the cores' idle (readers of small
		// files over sshfs, 4 % of a core each and queued a third of
		// those moments, were held to the half CPU of the floor beside
		// 1.5 idle cores).
		if p.IOSec < 3*(p.CPUSec+p.CPUWaitSec) {
			p.CPUs = min(p.CPUs, workers)
		}
	}
	return n
}

// usedFloor keeps the workers' CPUs at no fewer than they were seen to
// use: they had those (a user's review: "the 0.5 CPUs the workers have
// are the limit, at most 19 batches/s" beside 23.9 measured, its one
// worker using 0.67 of a core while another job took the rest). Their
// CPU a batch at the measured rate is that. Read from /proc only
// (unread, CPUSec is their wall time, the cautious reading, and n workers
// waiting on storage would read as n CPUs on any box), at most the box's
// cores, and for worker processes only: an in-process loader's CPU is its
// whole process's, the loop's thread with it.
func usedFloor(p *Pipeline, w *window, bps float64) {
	if len(w.workerPIDs) > 0 && !p.Relative && w.loaderCPU.ok {
		p.UsedCPUs = min(p.CPUSec*bps, float64(w.cores))
		p.CPUs = max(p.CPUs, p.UsedCPUs)
	}
}

// occupancy sets the box's CPUs and how many of them the window saw busy
// (Pipeline.BoxCPUs), for the contention of workers added.
func occupancy(w *window, p *Pipeline) {
	p.BoxCPUs = float64(max(w.cores, 0))
	if w.cpuBusy.ok {
		p.BusyCPUs = min(p.BoxCPUs, max(0, w.cpuBusy.v/100*p.BoxCPUs))
	}
	if j := w.job; j != nil && j.AllowedCPUs > 0 && float64(j.AllowedCPUs) < p.BoxCPUs {
		// Pinned to a cpuset: its cores can be full while the box idles.
		// Busy on them: the job's own use where read, else the box's
		// busy cores, as many as fit.
		p.BoxCPUs = float64(j.AllowedCPUs)
		p.BusyCPUs = min(p.BoxCPUs, p.BusyCPUs)
		if w.jobUsed.ok {
			p.BusyCPUs = min(p.BoxCPUs, max(0, w.jobUsed.v))
		}
	}
}

func knobsOf(w *window) Knobs {
	k := Knobs{Workers: max(w.workers, 0), Prefetch: max(w.prefetch, 0)}
	if v, err := strconv.ParseBool(w.knobs[sample.KnobPersistent.Flag]); err == nil {
		k.Persistent, k.knownPersistent = v, true
	}
	if k.Persistent && w.newLoaderEveryEpoch {
		// Each epoch's DataLoader has its own workers: they restart every
		// epoch (a hostile user's review: the restarts' wait was read as
		// the loop's own, "no loader knob raises throughput").
		k.Persistent, k.persistentInVain = false, true
	}
	pin, err1 := strconv.ParseBool(w.knobs[sample.KnobPin.Flag])
	cache, err2 := strconv.ParseBool(w.knobs[sample.KnobCache.Flag])
	if err1 == nil && err2 == nil {
		k.Pin, k.Cache, k.knownPC = pin, cache, true
	}
	return k
}

// busyWorkerShare: workers whose timed stages take this share of the
// batch period (n workers ÷ the batch rate) are busy all the time.
const busyWorkerShare = 0.8

// idleWorkerShare: workers whose timed stages take less than this share
// of the batch period are mostly idle: their GIL is free for the
// hand-over.
const idleWorkerShare = 0.3

// knobBytes reads a size as the embedded loader's knobs write it
// ("256MiB", "22.9MiB/s", "0B/s").
func knobBytes(s string) (float64, bool) {
	s = strings.TrimSuffix(strings.TrimSpace(s), "/s")
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	for _, u := range units {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return 0, false
			}
			return x * u.mult, true
		}
	}
	return 0, false
}
