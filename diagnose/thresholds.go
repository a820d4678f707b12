package diagnose

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Thresholds are every number the diagnosis compares against, with the
// source of each default. Override them with a JSON file (the json names
// below; any subset) or --threshold name=value.
type Thresholds struct {
	// MinFrames below which the verdict is warming_up: never diagnose
	// from one frame.
	MinFrames int `json:"min_frames"`
	// WindowFrames is how many of the newest frames the Diagnoser
	// classifies. Levels are medians over the window, so one odd frame
	// does not move them; 3 frames flip after 2 new ones.
	WindowFrames int `json:"window_frames"`

	// WaitShareStarved: the training loop waits at least this share of its
	// time for input. TensorFlow's input-pipeline analyzer calls ≥ 20 %
	// "highly input-bound".
	WaitShareStarved float64 `json:"wait_share_starved"`
	// WaitShareModerate: ≥ 5 % is "moderately input-bound" (TensorFlow),
	// and the PyTorch profiler advises more workers past 5 %.
	WaitShareModerate float64 `json:"wait_share_moderate"`
	// BurstyP95 and BurstyP5: GPU utilization p95 ≥ 70 with p5 < 10 is
	// bursty starvation (SageMaker Debugger's LowGPUUtilization rule).
	BurstyP95 float64 `json:"bursty_p95"`
	BurstyP5  float64 `json:"bursty_p5"`
	// AccelBusyPct: accelerator utilization at or above this is "the
	// accelerator is the busy part". MLPerf Storage passes a system at
	// ≥ 90 % accelerator utilization.
	AccelBusyPct float64 `json:"accel_busy_pct"`
	// GPULowPct: below this the PyTorch profiler suggests a larger batch.
	GPULowPct float64 `json:"gpu_low_pct"`
	// SMActivityLowPct: a GPU at or above AccelBusyPct utilization whose
	// SM activity (GPM) is below this runs small or launch-bound kernels,
	// or waits on host syncs: "a kernel ran" is not "the GPU was used".
	// DCGM's guidance reads SM activity under 50 % as poor use; 30 % is
	// far from doubt.
	SMActivityLowPct float64 `json:"sm_activity_low_pct"`
	// PCIeLinkShare: host-to-device copies at or above this share of the
	// GPU's PCIe link make an input-bound job transfer-bound; past 80 %
	// a link has no headroom left for bursts.
	PCIeLinkShare float64 `json:"pcie_link_share"`
	// IdlePct: accelerator below this with no loader batches is idle.
	IdlePct float64 `json:"idle_pct"`

	// CPUSaturatedPct: whole-machine CPU busy at or above this is
	// saturated (SageMaker Debugger's CPUBottleneck rule: cpu_threshold 90).
	CPUSaturatedPct float64 `json:"cpu_saturated_pct"`
	// CPUSaturatedLeavePct: once the verdict shown says the CPUs are
	// saturated, they stay so while busy holds at least this (hysteresis:
	// CPU-bound workers on a small VM read 86-97 % busy second to second,
	// and a verdict that swings between cpu_saturated and gpu_starved on
	// that noise tells the user nothing). Above cpu_saturated_pct it is
	// that threshold.
	CPUSaturatedLeavePct float64 `json:"cpu_saturated_leave_pct"`
	// SingleThreadPct: one thread at or above this share of a core is
	// pegged (same 90 %, per thread: a busy thread migrates between cores,
	// so per-core numbers understate it).
	SingleThreadPct float64 `json:"single_thread_pct"`
	// ComputeCrowdShare: the training process's own non-loop threads
	// (OpenBLAS, OpenMP, MKL, torch intra-op pools) using at least this
	// share of the CPUs while the workers starve crowd the workers out.
	// Half: the workers then have at most the other half.
	ComputeCrowdShare float64 `json:"compute_crowd_share"`
	// SpinSystemShare: a busy thread whose CPU is at least this share
	// system time spins in the kernel (sched_yield, futex polling) rather
	// than computing, as idle OpenBLAS and OpenMP pool threads do.
	SpinSystemShare float64 `json:"spin_system_share"`
	// InlineLoadCPUShare: with no workers, a loop that waits (loads its
	// batches itself) while its own thread's CPU covers at least this share
	// of that time is loading on the CPU, on one thread: the num_workers=0
	// trap, even when its thread is not pegged (the step, a sleep or the
	// GPU, takes the rest). Half: the rest of the loading time may be
	// reads; below it, storage is the question.
	InlineLoadCPUShare float64 `json:"inline_load_cpu_share"`
	// SpinTakesShare: the share of the CPU a spinning compute thread shows
	// that it keeps from a worker sharing its core (the pipeline model's
	// CPUs for the workers). On the 2-core VM, 2 workers of 16 ms of CPU
	// per batch delivered 566 samples/s beside OpenBLAS's spinning pool
	// thread and 772 with OPENBLAS_NUM_THREADS=1: the spinner kept about
	// 0.4 of its core (python/examples/dataloader_bench.py --workers 2
	// --cost 0.002 --step 0.005 --matmul 200).
	SpinTakesShare float64 `json:"spin_takes_share"`
	// LoopThreadPct: the training loop's own thread, the busiest thread of
	// the job, at or above this share of a core is the loop's limit when
	// its workers idle (or it has none): a fifth short of a pegged thread,
	// since the loop also waits.
	LoopThreadPct float64 `json:"loop_thread_pct"`
	// BusyThreadPct: a worker under this share of a core idles; the
	// training process's compute threads at or above it together are busy
	// (half a core: more than bookkeeping, less than a pegged thread).
	BusyThreadPct float64 `json:"busy_thread_pct"`
	// ModelFrames: the pipeline model of a loader that times only its loop
	// (the hook) reads its means over this many frames, not the window's:
	// with a worker start-up each epoch and epochs shorter than a frame,
	// a window of 3 holds two epochs or three, and its rate swings ±30 %.
	ModelFrames int `json:"model_frames"`
	// RunDelayMsPerSec and OthersCores: the job's key thread waiting at
	// least this long per second for a CPU (schedstat run delay) while
	// processes outside the job use at least this many cores is CPU taken
	// by others. A fifth of the time lost; half a core is more than
	// background noise.
	RunDelayMsPerSec float64 `json:"run_delay_ms_per_sec"`
	OthersCores      float64 `json:"others_cores"`
	// ThrottledShare: a job throttled in at least this share of its CPU
	// quota's periods is held at its limit (the kernel's cpu.stat
	// nr_throttled / nr_periods); a fifth is well past occasional bursts.
	ThrottledShare float64 `json:"throttled_share"`
	// JobMemFullShare: a job whose memory cgroup holds at least this
	// share of its limit, and meanwhile hits the limit, swaps or is OOM
	// killed, is under memory pressure of its own.
	JobMemFullShare float64 `json:"job_mem_full_share"`
	// JobCacheShare: a job whose memory is at least this share page cache
	// (and that neither swaps nor is OOM killed) is not under pressure at
	// its limit: the cache is reclaimed first, routinely.
	JobCacheShare float64 `json:"job_cache_share"`
	// PSICPUSomePct: CPU pressure (some) at or above this counts toward
	// saturation: tasks waited for a CPU that much of the time.
	PSICPUSomePct float64 `json:"psi_cpu_some_pct"`

	// DiskBusyPct: a device busy (iostat %util) at or above this is
	// saturated for single-queue devices; NVMe can do more, so it is one
	// signal among several.
	DiskBusyPct float64 `json:"disk_busy_pct"`
	// IowaitPct: SageMaker Debugger's IOBottleneck rule uses 50 % iowait.
	IowaitPct float64 `json:"iowait_pct"`
	// PSIIOSomePct: some task stalled on I/O at least this share of time.
	PSIIOSomePct float64 `json:"psi_io_some_pct"`
	// ReadDominance: loader read time at least this many times its decode
	// time says the loader is reading, not computing; ReadSecPerSec is the
	// least read time (seconds per second, summed over workers) that says
	// anything: half a worker's time.
	ReadDominance float64 `json:"read_dominance"`
	ReadSecPerSec float64 `json:"read_sec_per_sec"`
	// ProfileCategoryShare: the loader's CPU profile names the category
	// that matches the verdict when it holds at least this share of the
	// CPU, else the largest.
	ProfileCategoryShare float64 `json:"profile_category_share"`
	// WorkersPerCoreLow: fewer workers than this share of cores is too few
	// to blame storage or the CPU (SageMaker flags < 70 % of cores).
	WorkersPerCoreLow float64 `json:"workers_per_core_low"`

	// SwapPagesPerSec: swap-in plus swap-out pages per second at or above
	// this is swapping (sustained si/so in vmstat).
	SwapPagesPerSec float64 `json:"swap_pages_per_sec"`
	// MajorFaultsPerSec: major page faults per second at or above this.
	MajorFaultsPerSec float64 `json:"major_faults_per_sec"`
	// PSIMemSomePct: memory pressure (some) at or above this.
	PSIMemSomePct float64 `json:"psi_mem_some_pct"`

	// MmapFaultsPerSec: the watched processes' major page faults per
	// second at or above this, while the loop waits and the disk is busy
	// or the page cache churns, are a memory-mapped dataset read through
	// the page cache. Each is a read the faulting thread waits for: 50/s
	// at a disk's ~1 ms is 5 % of a worker's time, and one fault's
	// read-around can fetch megabytes; the case this rule was written for
	// ran thousands a second.
	MmapFaultsPerSec float64 `json:"mmap_faults_per_sec"`
	// FileRefaultsPerSec: file pages read back soon after the kernel
	// reclaimed them (/proc/vmstat workingset_refault_file) at or above
	// this per second say the page cache is too small for what is read
	// through it: 1,000 pages/s is 4 MB/s read twice.
	FileRefaultsPerSec float64 `json:"file_refaults_per_sec"`

	// CriticalWaitShare, CriticalAccelPct, CriticalSwapPagesPerSec: a
	// problem is critical, not a warning, when the loop waits at least
	// half its time (most of the time is lost), the accelerator is below a
	// quarter busy (the PyTorch profiler's low-utilization advice starts at
	// half; a quarter is half of that), or the host swaps ten times the
	// swapping threshold.
	CriticalWaitShare       float64 `json:"critical_wait_share"`
	CriticalAccelPct        float64 `json:"critical_accel_pct"`
	CriticalSwapPagesPerSec float64 `json:"critical_swap_pages_per_sec"`

	// AllReduceStepRatio: ranks whose steps are at least this many times
	// the straggler's wait for it in the all-reduce (30 % more than the
	// straggler's own step is past rank-to-rank noise).
	AllReduceStepRatio float64 `json:"all_reduce_step_ratio"`

	// The causes beneath a verdict (cause.go, docs/diagnosis.md "Causes
	// and their bounds"): where each starts to be worth naming.
	// ContendedRunDelay: workers that wait for a CPU this share of the time
	// they want one share the CPUs with the loop (schedstat), and can get
	// no core that reads idle beside them (the knob model, fill).
	ContendedRunDelay float64 `json:"contended_run_delay"`
	// HandoverShare and HandoverBytes: collating and handing over take this
	// share of a worker's time per batch, for batches of at least this many
	// bytes (a quarter of it for float64).
	HandoverShare float64 `json:"handover_share"`
	HandoverBytes float64 `json:"handover_bytes"`
	// Float64Share: this share of a batch's bytes is float64.
	Float64Share float64 `json:"float64_share"`
	// PaddingShare: this share of the token slots is padding.
	PaddingShare float64 `json:"padding_share"`
	// GetitemShare: __getitem__ takes this share of a worker's time.
	GetitemShare float64 `json:"getitem_share"`
	// ProfileCauseShare: a category of the workers' own CPU profile that
	// practice has a fix for (decode, augment, convert, tokenize) is a
	// cause at this share of their CPU. Every category over it is named,
	// ranked by its bound: the images loop's decode 27 %, augment 19 %,
	// convert 18 % were each a cause, not a winner picked near 30 %.
	ProfileCauseShare float64 `json:"profile_cause_share"`
	// CauseLeaveRatio: a cause the verdict shown named stays named while
	// its measure is at least this share of its threshold (hysteresis, as
	// kinds have: a measure near its threshold does not flip the cause
	// from frame to frame).
	CauseLeaveRatio float64 `json:"cause_leave_ratio"`
	// TensorIdlePct: a GPU-bound step whose tensor cores are active less
	// than this share of cycles (GPM) while its SMs are busy runs its
	// matmuls in fp32 (the real H200: fp32 MLP 0–1 %, bf16 ResNet-50 12 %).
	TensorIdlePct float64 `json:"tensor_idle_pct"`
	// DRAMBusyPct and DRAMBoundTensorPct: a GPU-bound step whose DRAM
	// bandwidth is at least DRAMBusyPct busy while its tensor cores are
	// under DRAMBoundTensorPct moves memory more than it computes (the
	// practical peak of DRAM bandwidth is near 80 %: DCGM's guidance).
	DRAMBusyPct        float64 `json:"dram_busy_pct"`
	DRAMBoundTensorPct float64 `json:"dram_bound_tensor_pct"`
	// HostSyncPerStep: the host_sync cause names a site of the job's code
	// that syncs at least this often a step: one every other step (a
	// value logged every 10 or 100 steps is the fix, not the cause).
	HostSyncPerStep float64 `json:"host_sync_per_step"`
	// HostSyncIdleShare: where the hook's profile of the step split the
	// GPU's waits by sync, host_sync is named only while the waits that
	// began in a sync are at least this share of the GPU's step: under
	// it the syncs were counted but measured costing nothing to speak of
	// (the share the profile's summary starts naming a part at).
	HostSyncIdleShare float64 `json:"host_sync_idle_share"`
	// CopyStallShare: the copy_blocking cause names copies that hold the
	// loop's thread at least this share of the batch period (5 %, the
	// share the PyTorch profiler's advice starts at for the input wait).
	CopyStallShare float64 `json:"copy_stall_share"`
	// BatchRoomShare and BatchFullPct: the batch_headroom cause names a
	// step using under BatchRoomShare of the GPU's memory (room for twice
	// its batch's activations) whose SMs (or, without GPM, its time) are
	// under BatchFullPct busy; at or above, a larger batch has little to
	// fill, and healthy does not say one fits either (beside GPM's SMs).
	BatchRoomShare float64 `json:"batch_room_share"`
	BatchFullPct   float64 `json:"batch_full_pct"`
	// SmallFileBytes: the files the workers are caught reading, one per
	// sample, are small at or below this median size.
	SmallFileBytes float64 `json:"small_file_bytes"`
	// LoopTakeShare: taking and pinning each batch take this share of the
	// loop's own time per batch.
	LoopTakeShare float64 `json:"loop_take_share"`
	// OwnWaitShare: with batches ready when it asks, the loop's wait is its
	// own (taking each batch) only where its timed take is at least this
	// share of the wait per batch; below, the hand-over is the workers'.
	OwnWaitShare float64 `json:"own_wait_share"`
	// GPULagPoints: a GPU this many points of utilization below the
	// job's other GPUs (and under GPULowPct) lags them.
	GPULagPoints float64 `json:"gpu_lag_points"`
	// GPUMemRoomShare: a healthy job using less than this share of its
	// GPU's memory has room for a larger batch.
	GPUMemRoomShare float64 `json:"gpu_mem_room_share"`

	// EnterHold: a new kind must be the classification this long before
	// it is shown; LeaveHold: a problem must be clear this long before the
	// verdict returns to healthy or idle. The 3-frame median adds two
	// frames to each, so at 1 s sampling a problem needs ~3 s of evidence
	// to enter and ~5 s of clear data to leave, is shown within ~4 s of
	// its onset, and one odd frame or flapping input never flips it.
	// Where the evidence is unambiguous neither waits (Diagnoser.hold:
	// docs/diagnosis.md, "Thresholds"): a problem, or a change between
	// two kinds that are no problem, that the newest frames each show
	// alone over EnterHold (two at least) is shown at once.
	EnterHold Duration `json:"enter_hold"`
	LeaveHold Duration `json:"leave_hold"`
	// FastClearSpan: an input-bound problem clears without LeaveHold
	// once the newest frames that each say the new kind alone (two at
	// least) cover this long, with the other conditions
	// (Diagnoser.hold): two frames at the default 1 s interval, eight at
	// 250 ms (a quarter-second frame often holds no batch boundary, and
	// its wait share says little). 0: never without LeaveHold.
	FastClearSpan Duration `json:"fast_clear_span"`
}

// DefaultThresholds returns the documented defaults.
func DefaultThresholds() Thresholds {
	return Thresholds{
		MinFrames: 3, WindowFrames: 3,
		WaitShareStarved: 0.20, WaitShareModerate: 0.05,
		BurstyP95: 70, BurstyP5: 10, AccelBusyPct: 90, GPULowPct: 50, SMActivityLowPct: 30, PCIeLinkShare: 0.8, IdlePct: 5,
		CPUSaturatedPct: 90, CPUSaturatedLeavePct: 80, SingleThreadPct: 90, PSICPUSomePct: 50, ComputeCrowdShare: 0.5, SpinSystemShare: 0.5, InlineLoadCPUShare: 0.5, SpinTakesShare: 0.5, ModelFrames: 10,
		LoopThreadPct: 70, BusyThreadPct: 50,
		ThrottledShare: 0.2, JobMemFullShare: 0.9, JobCacheShare: 0.5, RunDelayMsPerSec: 200, OthersCores: 0.5,
		DiskBusyPct: 90, IowaitPct: 50, PSIIOSomePct: 30, ReadDominance: 4, ReadSecPerSec: 0.5, ProfileCategoryShare: 0.3, WorkersPerCoreLow: 0.7,
		SwapPagesPerSec: 100, MajorFaultsPerSec: 1000, PSIMemSomePct: 10,
		MmapFaultsPerSec: 50, FileRefaultsPerSec: 1000,
		CriticalWaitShare: 0.5, CriticalAccelPct: 25, CriticalSwapPagesPerSec: 1000,
		ContendedRunDelay: 0.2, HandoverShare: 0.15, HandoverBytes: 1 << 20, Float64Share: 0.5, PaddingShare: 0.3, GetitemShare: 0.6, ProfileCauseShare: 0.15, CauseLeaveRatio: 0.75, TensorIdlePct: 5, DRAMBusyPct: 50, DRAMBoundTensorPct: 20,
		HostSyncPerStep: 0.5, HostSyncIdleShare: 0.01, CopyStallShare: 0.05, BatchRoomShare: 0.5, BatchFullPct: 80, SmallFileBytes: 1 << 20, LoopTakeShare: 0.3, OwnWaitShare: 0.5,
		AllReduceStepRatio: 1.3, GPULagPoints: 30, GPUMemRoomShare: 0.7,
		EnterHold: Duration(time.Second), LeaveHold: Duration(3 * time.Second), FastClearSpan: Duration(2 * time.Second),
	}
}

// Duration is a time.Duration that reads and writes as "2s" in JSON.
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MaxThresholdsBytes bounds a thresholds file: the whole set is ~1 KiB.
const MaxThresholdsBytes = 1 << 20

// LoadThresholds reads a JSON file of overrides onto th. Only a regular
// file is read (a FIFO or /dev/zero is refused before any read), at most
// MaxThresholdsBytes, within 5 s.
func LoadThresholds(path string, th *Thresholds) error {
	b, err := readSmallFile(path, MaxThresholdsBytes, 5*time.Second)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(th); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return th.Validate()
}

// readSmallFile reads a regular file of at most limit bytes within timeout.
// It opens without blocking (a FIFO with no writer would block open) and
// refuses what is not a regular file. A read that does not return within
// timeout (a hung network filesystem) is abandoned: its goroutine ends
// when the read does. This is one of the two bounded exceptions to the
// goroutine rule (docs/architecture.md, "Goroutines").
func readSmallFile(path string, limit int64, timeout time.Duration) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, limit+1))
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		if r.err == nil && int64(len(r.b)) > limit {
			return nil, fmt.Errorf("%s is larger than %d KiB", path, limit>>10)
		}
		return r.b, r.err
	case <-time.After(timeout):
		return nil, fmt.Errorf("%s: no data within %v", path, timeout)
	}
}

// Set applies one "name=value" override (the json name).
func (th *Thresholds) Set(kv string) error {
	name, val, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("threshold %q: want name=value", kv)
	}
	v := reflect.ValueOf(th).Elem()
	for i := 0; i < v.NumField(); i++ {
		if strings.Split(v.Type().Field(i).Tag.Get("json"), ",")[0] != name {
			continue
		}
		f := v.Field(i)
		switch f.Interface().(type) {
		case Duration:
			d, err := time.ParseDuration(val)
			if err != nil {
				return fmt.Errorf("threshold %s: %w", name, err)
			}
			f.Set(reflect.ValueOf(Duration(d)))
		case int:
			n, err := strconv.Atoi(val)
			if err != nil {
				return fmt.Errorf("threshold %s: %q is not a whole number", name, val)
			}
			f.SetInt(int64(n))
		case float64:
			x, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return fmt.Errorf("threshold %s: %q is not a number", name, val)
			}
			f.SetFloat(x)
		}
		return th.Validate()
	}
	return fmt.Errorf("unknown threshold %q", name)
}

// MaxWindowFrames caps the window: an hour of frames at 1 s.
const MaxWindowFrames = 3600

// Validate refuses thresholds that cannot work: non-finite or negative
// numbers, percentages past 100, shares past 1, a window past
// MaxWindowFrames.
func (th Thresholds) Validate() error {
	v := reflect.ValueOf(th)
	for i := 0; i < v.NumField(); i++ {
		name := strings.Split(v.Type().Field(i).Tag.Get("json"), ",")[0]
		var x float64
		switch f := v.Field(i).Interface().(type) {
		case float64:
			x = f
		case int:
			x = float64(f)
		case Duration:
			x = float64(f)
		}
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			return fmt.Errorf("thresholds: %s must be a finite number", name)
		case x < 0:
			return fmt.Errorf("thresholds: %s must not be negative", name)
		case strings.HasSuffix(name, "_pct") && x > 100:
			return fmt.Errorf("thresholds: %s is a percentage: at most 100", name)
		case strings.HasSuffix(name, "_share") && x > 1:
			return fmt.Errorf("thresholds: %s is a share: at most 1", name)
		}
	}
	switch {
	case th.WindowFrames > MaxWindowFrames:
		return fmt.Errorf("thresholds: window_frames at most %d", MaxWindowFrames)
	case th.ModelFrames > MaxWindowFrames:
		return fmt.Errorf("thresholds: model_frames at most %d", MaxWindowFrames)
	case th.MinFrames < 1 || th.WindowFrames < th.MinFrames:
		return fmt.Errorf("thresholds: need 1 ≤ min_frames ≤ window_frames")
	case th.WaitShareModerate < 0 || th.WaitShareStarved <= th.WaitShareModerate || th.WaitShareStarved > 1:
		return fmt.Errorf("thresholds: need 0 ≤ wait_share_moderate < wait_share_starved ≤ 1")
	case th.EnterHold < 0 || th.LeaveHold < 0 || th.FastClearSpan < 0:
		return fmt.Errorf("thresholds: holds must not be negative")
	}
	return nil
}

// ThresholdNames lists every threshold's name (its JSON name), the names
// --threshold and --thresholds take.
func ThresholdNames() []string {
	t := reflect.TypeOf(Thresholds{})
	out := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		if n := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]; n != "" && n != "-" {
			out = append(out, n)
		}
	}
	return out
}
