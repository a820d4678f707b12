// Package sample owns the one data type that flows through gpuwatch: a Frame,
// a timestamped snapshot of everything the probes saw, and History, a fixed
// size ring buffer of Frames. It imports nothing from the module.
//
// Conventions: every field carries its unit in its name, and missing data is
// nil (or an absent part), never zero. A rate is nil on the first reading of a
// counter, because a rate needs two readings.
package sample

import (
	"fmt"
	"strings"
	"time"
)

// Frame is one snapshot of the machine. Parts a probe could not fill are nil;
// Unavailable says why, keyed by source name ("cpu", "gpu", …).
type Frame struct {
	Time        time.Time `json:"time"`
	IntervalSec float64   `json:"interval_sec,omitempty"`
	CPU         *CPU      `json:"cpu,omitempty"`
	Mem         *Mem      `json:"mem,omitempty"`
	Disks       []Disk    `json:"disks"`
	Net         []NetIf   `json:"net"`
	PSI         *PSI      `json:"psi,omitempty"`
	Procs       *Procs    `json:"procs,omitempty"`
	GPUs        []GPU     `json:"gpus" check:"max=64"`
	// JobGPUs says how the job's GPUs (GPUs[i].Job) were found ("--gpus
	// 0,1", "CUDA_VISIBLE_DEVICES of pid 4100", "NVML lists pid 4100's
	// processes there"); empty when every GPU counts.
	JobGPUs string        `json:"job_gpus,omitempty"`
	Loader  *Loader       `json:"loader,omitempty"`
	Accel   *VirtualAccel `json:"virtual_accel,omitempty"`
	Profile *Profile      `json:"profile,omitempty"`
	Job     *Job          `json:"job,omitempty"`
	// Ranks are the loaders of a distributed job, one per rank (several
	// attach URLs, or discovery), in rank order; nil with one loader.
	// Loader then summarizes the job by the rank that sets its pace: the
	// one that waits most for input (Ranks[i].Pacing).
	Ranks []Rank `json:"ranks,omitempty" check:"max=256"`
	// Target is what the session watches: the job's process, why it was
	// chosen, how its loader is seen, and whether it still runs. Nil when
	// gpuwatch watches the host alone.
	Target *Target `json:"target,omitempty"`
	// Self is what gpuwatch itself costs: its CPU and memory (SelfCost).
	Self        *SelfCost         `json:"self,omitempty"`
	Unavailable map[Source]string `json:"unavailable"`
}

// MaxRanks bounds the ranks of a frame: the loaders one gpuwatch attaches
// to (URLs, port ranges and discovery together), and the ranks a frame
// read from a recording keeps (Frame.Check; the Ranks field's tag).
const MaxRanks = 256

// Target is the job a session watches.
type Target struct {
	// PID is the job's process (the root of its tree); Command its
	// command line, printable and bounded.
	PID     int    `json:"pid"`
	Command string `json:"command,omitempty"`
	// Why it is watched: "gpuwatch run", "--pid", "it maps libtorch".
	Why string `json:"why"`
	// Loader says how the job's loader is seen: "the hook (gpuwatch run),
	// 2 ranks", "sampled from pid 4100's main thread", "nothing
	// instrumented: …".
	Loader string `json:"loader,omitempty"`
	// ExitedAt is when the job's process was seen gone, and Exit how it
	// ended where gpuwatch knows it ("exited with status 0", "killed by
	// SIGINT"): only for a command gpuwatch run started.
	ExitedAt *time.Time `json:"exited_at,omitempty"`
	Exit     string     `json:"exit,omitempty"`
	// Starting says a command gpuwatch run started has loaded the hook but
	// gpuwatch does not read its loader yet, in its first 30 s: no
	// DataLoader has iterated (it is importing, loading a model,
	// compiling), or the hook serves and discovery has not connected. What
	// its threads do now is not its training loop as the hook sees it, so
	// --once does not settle on it.
	Starting bool `json:"starting,omitempty"`
	// Stopped says the job's process is stopped (Ctrl-Z, SIGSTOP): it does
	// nothing until it is continued, so an idle verdict is not its
	// loader's. Only for a command gpuwatch run started.
	Stopped bool `json:"stopped,omitempty"`
	// NoHook says no process of a command gpuwatch run started has loaded
	// the hook (a program that is not Python, python -I or -S): its wait
	// cannot be timed by running it so. Only for gpuwatch run's command.
	NoHook bool `json:"no_hook,omitempty"`
	// HookServes says a hook of a command gpuwatch run started has served:
	// a DataLoader of the job has iterated (the hook serves from its first
	// epoch), whether or not gpuwatch read it; it stays once seen (the
	// hook's announcement goes at its exit, before its process).
	HookServes bool `json:"hook_serves,omitempty"`
}

// Rank is one rank's loader over the interval, as its hook reports it.
type Rank struct {
	// Rank is the hook's RANK (or LOCAL_RANK) where it reports a
	// WorldSize above 1; a URL given that reports none, its position
	// among those given. A discovered loader without a WORLD_SIZE above 1
	// is a job of its own: rank 0 of 1 (WorldSize 1), no rank of another
	// loader's job (views name it by its process, not "rank 0").
	// LocalRank and WorldSize when reported.
	Rank      int  `json:"rank"`
	LocalRank *int `json:"local_rank,omitempty"`
	WorldSize *int `json:"world_size,omitempty"`
	// URL without credentials; PID the training process (0 if unknown).
	URL               string     `json:"url"`
	PID               int        `json:"pid,omitempty"`
	Connected         bool       `json:"connected"`
	DisconnectedSince *time.Time `json:"disconnected_since,omitempty"`
	// SlowSince is set while the rank's read has not answered, since
	// that read began: its figures below are its last ones (a slow rank
	// is marked, never waited for; the other ranks keep their fresh data).
	SlowSince *time.Time `json:"slow_since,omitempty"`
	// WaitShare as Loader's: the share of the rank's loop time spent
	// waiting for its next batch; StepSec its mean step (which, in a
	// synchronous job, includes waiting for the other ranks in the
	// all-reduce). Nil before two readings or without batches.
	WaitShare     *float64 `json:"wait_share"`
	StepSec       *float64 `json:"step_sec"`
	BatchesPerSec float64  `json:"batches_per_sec"`
	SamplesPerSec float64  `json:"samples_per_sec"`
	// RatesPending: the rank's loader was read once so far (its
	// Loader.RatesPending); its rates are null in JSON.
	RatesPending bool `json:"rates_pending,omitempty"`
	Workers      *int `json:"workers,omitempty"`
	// Pacing marks the rank Loader summarizes: the most input-bound.
	Pacing bool `json:"pacing,omitempty"`
	// Loader is the rank's whole loader reading, for the dashboard's
	// per-rank details; not recorded (Rank's fields are).
	Loader *Loader `json:"-"`
}

// Job is the watched job as its cgroup confines it: what it may use (CPU
// quota, cpuset, memory limit), what it used, and who it is. Nil where no
// job is watched (no --pid, --cgroup or attached loader). A limit that is
// not set is nil.
type Job struct {
	// Cgroup is the job's cgroup path (for v1, that of the controllers
	// that confine it: cpu, cpuset, memory, each named where they differ);
	// CgroupVersion 1 or 2; Source how it was found ("pid 4100",
	// "--cgroup", "slurm job 42").
	Cgroup        string `json:"cgroup"`
	CgroupVersion int    `json:"cgroup_version"`
	Source        string `json:"source"`
	// Self: no job was named and gpuwatch runs confined itself (a
	// container's or a step's limits), so the job is its own cgroup: the
	// limits judged are the ones what runs beside it runs under (a job
	// it finds outside its cgroups is judged by its own: docs/diagnosis.md).
	Self bool `json:"self,omitempty"`
	// CPU: the quota in cores (cpu.max / cfs_quota_us ÷ period) with its
	// two numbers in µs, the cpuset, the CPUs the job may run on (cpuset ∩
	// the processes' affinity), and the capacity: the smaller of the quota
	// and those CPUs.
	CPUQuotaCores    *float64 `json:"cpu_quota_cores,omitempty"`
	CPUQuotaUs       *float64 `json:"cpu_quota_us,omitempty"`
	CPUPeriodUs      *float64 `json:"cpu_period_us,omitempty"`
	CPUSet           string   `json:"cpuset,omitempty"`
	AllowedCPUs      int      `json:"allowed_cpus"`
	CPUCapacityCores float64  `json:"cpu_capacity_cores"`
	// Over the last interval: the job's CPU use in cores, the share of
	// enforcement periods in which it was throttled (0–1), and the time
	// it was held back, seconds per second. Nil on the first reading.
	CPUUsedCores *float64 `json:"cpu_used_cores,omitempty"`
	// CPUUsedWhy says why CPUUsedCores is not read where the cgroup has
	// no count of the job's own (cgroup v1 with the job in cpuacct's root).
	CPUUsedWhy            string   `json:"cpu_used_why,omitempty"`
	ThrottledPeriodsShare *float64 `json:"throttled_periods_share,omitempty"`
	ThrottledSecPerSec    *float64 `json:"throttled_sec_per_sec,omitempty"`
	// Memory, bytes: the hard limit (memory.max / limit_in_bytes), the
	// v2 throttling limit (memory.high), use and swap use.
	MemLimitBytes *uint64 `json:"mem_limit_bytes,omitempty"`
	MemHighBytes  *uint64 `json:"mem_high_bytes,omitempty"`
	MemUsedBytes  *uint64 `json:"mem_used_bytes,omitempty"`
	// MemFileBytes is the page cache charged to the job (memory.stat
	// file; v1 cache): part of MemUsedBytes the kernel reclaims first.
	MemFileBytes  *uint64    `json:"mem_file_bytes,omitempty"`
	SwapUsedBytes *uint64    `json:"swap_used_bytes,omitempty"`
	MemEvents     *MemEvents `json:"mem_events,omitempty"`
	// PSI is the cgroup's own pressure (v2 only).
	PSI *PSI `json:"psi,omitempty"`
	// IOMax is io.max's lines (v2), as the kernel prints them.
	IOMax    []string     `json:"io_max,omitempty"`
	Identity *JobIdentity `json:"identity,omitempty"`
}

// MemEvents are the memory cgroup's event counters, cumulative: high
// (throttled at memory.high), max (at the limit: reclaim or failure), oom
// and oom_kill. v1 has max (failcnt) and oom_kill only.
type MemEvents struct {
	High    uint64 `json:"high"`
	Max     uint64 `json:"max"`
	OOM     uint64 `json:"oom"`
	OOMKill uint64 `json:"oom_kill"`
}

// JobIdentity is who the job is, from its environment and cgroup path;
// empty fields are unknown.
type JobIdentity struct {
	SlurmJob  string `json:"slurm_job,omitempty"`
	SlurmStep string `json:"slurm_step,omitempty"`
	SlurmTask string `json:"slurm_task,omitempty"`
	SlurmRank string `json:"slurm_rank,omitempty"`
	Pod       string `json:"pod,omitempty"`
	PodUID    string `json:"pod_uid,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Container string `json:"container,omitempty"`
	Rank      string `json:"rank,omitempty"`
	LocalRank string `json:"local_rank,omitempty"`
	WorldSize string `json:"world_size,omitempty"`
}

// CPU is host CPU use over the last interval, from /proc/stat and /proc/loadavg.
// Percentages are of the whole machine (0–100), except per core.
type CPU struct {
	Cores                 []Core  `json:"cores"`
	BusyPct               float64 `json:"busy_pct"`
	UserPct               float64 `json:"user_pct"`
	SystemPct             float64 `json:"system_pct"`
	IowaitPct             float64 `json:"iowait_pct"`
	StealPct              float64 `json:"steal_pct"`
	IRQPct                float64 `json:"irq_pct"`
	Load1                 float64 `json:"load1"`
	Load5                 float64 `json:"load5"`
	Load15                float64 `json:"load15"`
	ProcsRunning          int     `json:"procs_running"`
	ProcsBlocked          int     `json:"procs_blocked"`
	ContextSwitchesPerSec float64 `json:"context_switches_per_sec"`
}

// Core is one logical CPU over the last interval. BusyPct is everything but
// idle and iowait, 0–100.
type Core struct {
	ID        int     `json:"id"`
	BusyPct   float64 `json:"busy_pct"`
	UserPct   float64 `json:"user_pct"`
	SystemPct float64 `json:"system_pct"`
	IowaitPct float64 `json:"iowait_pct"`
}

// Mem is host memory, from /proc/meminfo and /proc/vmstat. The rates are nil
// until two readings exist.
type Mem struct {
	TotalBytes         uint64   `json:"total_bytes"`
	UsedBytes          uint64   `json:"used_bytes"`
	AvailableBytes     uint64   `json:"available_bytes"`
	CachedBytes        uint64   `json:"cached_bytes"`
	SwapTotalBytes     uint64   `json:"swap_total_bytes"`
	SwapUsedBytes      uint64   `json:"swap_used_bytes"`
	SwapInPagesPerSec  *float64 `json:"swap_in_pages_per_sec,omitempty"`
	SwapOutPagesPerSec *float64 `json:"swap_out_pages_per_sec,omitempty"`
	MajorFaultsPerSec  *float64 `json:"major_faults_per_sec,omitempty"`
	// FileStealPagesPerSec are file pages reclaimed (/proc/vmstat
	// pgsteal_file), FileRefaultsPerSec the reclaimed ones read back soon
	// after (workingset_refault_file): a page cache too small for what is
	// read through it churns.
	FileStealPagesPerSec *float64 `json:"file_steal_pages_per_sec,omitempty"`
	FileRefaultsPerSec   *float64 `json:"file_refaults_per_sec,omitempty"`
}

// Disk is one whole block device over the last interval, from /proc/diskstats.
// AwaitMs is nil when the device completed no request in the interval.
type Disk struct {
	Name             string   `json:"name"`
	ReadBytesPerSec  float64  `json:"read_bytes_per_sec"`
	WriteBytesPerSec float64  `json:"write_bytes_per_sec"`
	ReadIOPS         float64  `json:"read_iops"`
	WriteIOPS        float64  `json:"write_iops"`
	BusyPct          float64  `json:"busy_pct"`
	AwaitMs          *float64 `json:"await_ms,omitempty"`
	InFlight         uint64   `json:"in_flight"`
}

// NetIf is one network interface over the last interval, from /proc/net/dev.
type NetIf struct {
	Name          string  `json:"name"`
	RxBytesPerSec float64 `json:"rx_bytes_per_sec"`
	TxBytesPerSec float64 `json:"tx_bytes_per_sec"`
}

// PSI is pressure stall information from /proc/pressure. A resource the kernel
// does not report is nil.
type PSI struct {
	CPU    *Pressure `json:"cpu,omitempty"`
	IO     *Pressure `json:"io,omitempty"`
	Memory *Pressure `json:"memory,omitempty"`
}

// Pressure is one PSI resource. The Avg10 fields are the kernel's 10 s
// averages (0–100); the Pct fields are computed from the total stall counter
// over the last interval, which reacts faster. Full is nil where the kernel
// has no "full" line (cpu before Linux 5.13); Pct fields are nil on the first
// reading.
type Pressure struct {
	SomeAvg10 float64  `json:"some_avg10"`
	FullAvg10 *float64 `json:"full_avg10,omitempty"`
	SomePct   *float64 `json:"some_pct,omitempty"`
	FullPct   *float64 `json:"full_pct,omitempty"`
}

// Procs is the process view: the focused process and its descendants when a
// PID is focused (FocusPID != 0), else the busiest processes on the host.
type Procs struct {
	FocusPID int      `json:"focus_pid,omitempty"`
	List     []Proc   `json:"list"`
	Threads  []Thread `json:"threads"`
}

// Proc is one process over the last interval. CPUPct is percent of one core
// (a process with 4 busy threads reads 400). The I/O rates are nil when
// /proc/PID/io is not readable (another user's process) or on the first
// reading.
type Proc struct {
	PID                 int      `json:"pid"`
	PPID                int      `json:"ppid"`
	Name                string   `json:"name"`
	State               string   `json:"state"`
	CPUPct              float64  `json:"cpu_pct" check:"0,1e6"`
	Threads             int      `json:"threads"`
	RSSBytes            uint64   `json:"rss_bytes"`
	ReadBytesPerSec     *float64 `json:"read_bytes_per_sec,omitempty"`
	WriteBytesPerSec    *float64 `json:"write_bytes_per_sec,omitempty"`
	DiskReadBytesPerSec *float64 `json:"disk_read_bytes_per_sec,omitempty"`
	// MajorFaultsPerSec are page faults that waited for the disk (a
	// mapped file's page not in the page cache, or swap);
	// MinorFaultsPerSec those served from memory. Nil on the first
	// reading.
	MajorFaultsPerSec *float64 `json:"major_faults_per_sec,omitempty"`
	MinorFaultsPerSec *float64 `json:"minor_faults_per_sec,omitempty"`
	// MappedFileBytes is the size of the regular files the process maps
	// for reading (not its program and libraries), from /proc/PID/maps;
	// MappedFile the largest of them. Read only while the process takes
	// major faults, at most every few seconds.
	MappedFileBytes uint64 `json:"mapped_file_bytes,omitempty"`
	MappedFile      string `json:"mapped_file,omitempty"`
	// Files is what looks at a focused process's descriptors found while
	// it read (a look a tick, at 64 KiB/s of read calls or more): nil
	// before any. A worker that opens one small file per sample finds a
	// new small file at many of its looks; one that reads shards, few and
	// large ones.
	Files *FileLooks `json:"files,omitempty"`
}

// FileLooks are a process's last looks (at most 20): how many found a
// data file (a regular file, not a library, a device or shared memory,
// opened for reading) opened since the look before; of those, how many
// had their size read (Sized: not where reading it could ask a server)
// and their median size (nil when none); and the newest of them.
type FileLooks struct {
	Looks       int       `json:"looks"`
	Opened      int       `json:"opened"`
	Sized       int       `json:"sized"`
	MedianBytes *uint64   `json:"median_bytes,omitempty"`
	Newest      *OpenFile `json:"newest,omitempty"`
}

// OpenFile is a file a process has open: its path; its size as the kernel
// has it cached, or, where that could ask a server (SizeUnknown), the
// bytes the process had read of it (a lower bound); and the file system it
// is on (mountinfo's type and mount point; Network for NFS, SMB, the
// cluster file systems and the FUSE clients of remote and object storage).
type OpenFile struct {
	Path        string `json:"path"`
	Bytes       uint64 `json:"bytes"`
	SizeUnknown bool   `json:"size_unknown,omitempty"`
	FS          string `json:"fs,omitempty"`
	Mount       string `json:"mount,omitempty"`
	Network     bool   `json:"network,omitempty"`
}

// Thread is one thread of a watched process over the last interval; CPUPct is
// percent of one core (0–100). A thread near 100 is a pegged core.
// SystemPct is the part of CPUPct spent in the kernel: a thread that is
// mostly system time spins (sched_yield, futex polling), as idle OpenBLAS
// and OpenMP pool threads do.
type Thread struct {
	TID       int     `json:"tid"`
	PID       int     `json:"pid"`
	Name      string  `json:"name"`
	CPUPct    float64 `json:"cpu_pct" check:"0,1e6"`
	SystemPct float64 `json:"system_pct" check:"0,1e6"`
	// RunDelayMsPerSec is how long the thread was runnable but waiting
	// for a CPU, ms per second (schedstat); nil unless a process tree is
	// focused, and on the first reading.
	RunDelayMsPerSec *float64 `json:"run_delay_ms_per_sec,omitempty"`
	// MajorFaultsPerSec and MinorFaultsPerSec are the thread's own (a
	// worker thread waiting on a mapped dataset's pages); nil on the
	// first reading.
	MajorFaultsPerSec *float64 `json:"major_faults_per_sec,omitempty"`
	MinorFaultsPerSec *float64 `json:"minor_faults_per_sec,omitempty"`
	// Role is what the thread does in the job (loop, worker, main), set
	// from the frame's loader by AssignRoles; empty for none.
	Role Role `json:"role,omitempty"`
}

// GPU is one accelerator as its driver reports it (NVML for NVIDIA, sysfs
// for AMD). A field the device does not support is nil, and Unavailable says
// why (field name → reason), so a view can show "not supported" instead of a
// made-up zero.
type GPU struct {
	Index  int    `json:"index"`
	Name   string `json:"name"`
	Vendor string `json:"vendor"` // "nvidia" or "amd"
	UUID   string `json:"uuid,omitempty"`
	BusID  string `json:"bus_id,omitempty"`
	// UtilPct is the driver's utilization: for NVML the share of the last
	// sample period (1/6 s to 1 s by model) in which a kernel ran.
	UtilPct     *float64     `json:"util_pct"`
	MemUtilPct  *float64     `json:"mem_util_pct"`
	UtilSamples *UtilSamples `json:"util_samples,omitempty"`
	// Memory in bytes.
	MemUsedBytes    *uint64  `json:"mem_used_bytes"`
	MemTotalBytes   *uint64  `json:"mem_total_bytes"`
	PowerWatts      *float64 `json:"power_watts"`
	PowerLimitWatts *float64 `json:"power_limit_watts"`
	TempC           *float64 `json:"temp_c"`
	SMClockMHz      *float64 `json:"sm_clock_mhz"`
	SMClockMaxMHz   *float64 `json:"sm_clock_max_mhz"`
	// ClockEvents are the reasons the clocks are held down now, in words
	// ("idle", "power cap", "thermal slowdown" …); nil when unknown.
	ClockEvents []string `json:"clock_events" check:"max=32"`
	// PCIe throughput, bytes per second, from a 20 ms window read at most
	// once a second.
	PCIeRxBytesPerSec *float64 `json:"pcie_rx_bytes_per_sec"`
	PCIeTxBytesPerSec *float64 `json:"pcie_tx_bytes_per_sec"`
	// PCIeLink is the GPU's link ("PCIe 4.0 x16") and PCIeLinkBytesPerSec
	// its bandwidth each way: RX near it is a transfer-bound input.
	PCIeLink            string   `json:"pcie_link,omitempty"`
	PCIeLinkBytesPerSec *float64 `json:"pcie_link_bytes_per_sec,omitempty"`
	// NVLink data throughput over the interval, summed over links, bytes
	// per second; nil without NVLink.
	NVLinkRxBytesPerSec *float64     `json:"nvlink_rx_bytes_per_sec,omitempty"`
	NVLinkTxBytesPerSec *float64     `json:"nvlink_tx_bytes_per_sec,omitempty"`
	Processes           []GPUProcess `json:"processes"`
	// GPM is what the GPU's SMs did over the interval (Hopper and later):
	// utilization says a kernel ran, GPM how much of the GPU it used.
	GPM *GPM `json:"gpm,omitempty"`
	// Peak is the model's dense peak throughput by dtype; nil for a model
	// the table does not know (Unavailable["peak"] says so).
	Peak *GPUPeak `json:"peak,omitempty"`
	// MIG lists the GPU's MIG devices when it is partitioned (NVML then
	// reports no utilization for the parent GPU: Unavailable says so).
	MIG []MIGDevice `json:"mig,omitempty"`
	// Job marks the job's GPUs (Frame.JobGPUs says how they were found):
	// where any GPU is marked, only the marked ones are judged.
	Job bool `json:"job,omitempty"`
	// Lost is true when the driver reports the GPU fell off the bus.
	Lost        bool              `json:"lost,omitempty"`
	Unavailable map[string]string `json:"unavailable,omitempty"`
}

// GPM is a GPU's performance-monitoring readings over the interval, in
// percent: SM activity (the share of time SMs had a warp resident), SM
// occupancy (warps resident of the maximum), tensor-core activity and DRAM
// bandwidth use, and each pipe's activity by precision. Nil fields the GPU
// did not give (never 0: a pipe the driver does not report is unknown).
type GPM struct {
	SMActivityPct     *float64 `json:"sm_activity_pct"`
	SMOccupancyPct    *float64 `json:"sm_occupancy_pct"`
	TensorActivityPct *float64 `json:"tensor_activity_pct"`
	DRAMBWUtilPct     *float64 `json:"dram_bw_util_pct"`
	// TensorHMMAActivityPct, TensorIMMAActivityPct and TensorDFMAActivityPct
	// are the tensor cores' activity by instruction (NVML GPM's
	// HMMA_TENSOR_UTIL, IMMA_TENSOR_UTIL, DFMA_TENSOR_UTIL): half-precision
	// matmuls (fp16, bf16, tf32), integer ones (int8) and fp64 ones.
	TensorHMMAActivityPct *float64 `json:"tensor_hmma_activity_pct"`
	TensorIMMAActivityPct *float64 `json:"tensor_imma_activity_pct"`
	TensorDFMAActivityPct *float64 `json:"tensor_dfma_activity_pct"`
	// FP16ActivityPct, FP32ActivityPct and FP64ActivityPct are the
	// non-tensor floating-point pipes' activity (GPM's FP16_UTIL,
	// FP32_UTIL, FP64_UTIL): a busy FP32 pipe with idle tensor cores is a
	// matmul left in fp32.
	FP16ActivityPct *float64 `json:"fp16_activity_pct"`
	FP32ActivityPct *float64 `json:"fp32_activity_pct"`
	FP64ActivityPct *float64 `json:"fp64_activity_pct"`
}

// The dtypes of GPUPeak.DenseTFLOPS, in the order views list them.
const (
	DtypeFP64       = "fp64"
	DtypeFP64Tensor = "fp64_tensor"
	DtypeFP32       = "fp32"
	DtypeTF32       = "tf32"
	DtypeBF16       = "bf16"
	DtypeFP16       = "fp16"
	DtypeFP8        = "fp8"
	DtypeINT8       = "int8"
)

// Dtypes lists GPUPeak.DenseTFLOPS's keys, in the order views list them.
var Dtypes = []string{DtypeFP64, DtypeFP64Tensor, DtypeFP32, DtypeTF32, DtypeBF16, DtypeFP16, DtypeFP8, DtypeINT8}

// GPUPeak is a GPU model's published dense peak throughput, from the
// vendor's datasheet (probes/gpu/peaks.go): the ceiling an achieved rate
// or an MFU is a share of.
type GPUPeak struct {
	// Model is the table's row the GPU's name matched ("H100 SXM").
	Model string `json:"model"`
	// Source names the datasheet the figures come from.
	Source string `json:"source"`
	// DenseTFLOPS is the dense (not 2:4 sparse, which datasheets print at
	// 2×) peak by dtype (Dtypes' keys), in TFLOPS (TOPS for int8), at the
	// boost clock; a dtype the model lacks or the datasheet does not give
	// is absent.
	DenseTFLOPS map[string]float64 `json:"dense_tflops" check:"0,1e6"`
	// NoTF32: the model has no TF32 (Volta, Turing, CDNA 2): torch's
	// TF32 switches change nothing, its fp32 matmuls and convs run in
	// full fp32.
	NoTF32 bool `json:"no_tf32,omitempty"`
}

// MIGDevice is one MIG instance of a partitioned GPU: its profile (from
// its name, "1g.10gb"), memory and processes.
type MIGDevice struct {
	UUID          string       `json:"uuid"`
	Profile       string       `json:"profile"`
	GPUInstanceID *int         `json:"gpu_instance_id,omitempty"`
	MemUsedBytes  *uint64      `json:"mem_used_bytes"`
	MemTotalBytes *uint64      `json:"mem_total_bytes"`
	Processes     []GPUProcess `json:"processes"`
	// GPM is the instance's own readings, where the GPU has GPM.
	GPM *GPM `json:"gpm,omitempty"`
}

// UtilSamples reduces the driver's utilization samples taken since the
// previous frame (NVML keeps a buffer of them, finer than one poll). A
// sawtooth — busy, idle, busy — within one second shows as a low P5 and a
// high P95 even when the mean looks fine.
type UtilSamples struct {
	N    int     `json:"n"`
	Min  float64 `json:"min" check:"0,100"`
	Mean float64 `json:"mean" check:"0,100"`
	Max  float64 `json:"max" check:"0,100"`
	P5   float64 `json:"p5" check:"0,100"`
	P95  float64 `json:"p95" check:"0,100"`
}

// GPUProcess is one compute process on a GPU. SMUtilPct is nil where the
// driver does not report per-process utilization.
type GPUProcess struct {
	PID int `json:"pid"`
	// User and Command are the process's owner and command name, from
	// /proc (empty where it cannot be read: another PID namespace).
	User         string   `json:"user,omitempty"`
	Command      string   `json:"command,omitempty"`
	UsedMemBytes *uint64  `json:"used_mem_bytes"`
	SMUtilPct    *float64 `json:"sm_util_pct,omitempty"`
}

// Loader is the data loader over the last interval: the embedded test
// loader, or one gpuwatch attached to. Figures that need a completed batch
// in the interval are nil when there was none.
type Loader struct {
	// Source names the loader: "embedded" or the URL attached to (never
	// with credentials).
	Source string `json:"source"`
	// Kind is what speaks for it: "python" (the hook, gpuwatch run: its
	// knobs are PyTorch's), "go" (a Go loader: gpuwatch loader), "embedded"
	// (gpuwatch demo), or "" when it does not say; a sampled loop has
	// Sampled instead.
	Kind string `json:"kind,omitempty"`
	// Connected is set for an attached loader: false while it cannot be
	// reached, since DisconnectedSince.
	Connected         *bool      `json:"connected,omitempty"`
	DisconnectedSince *time.Time `json:"disconnected_since,omitempty"`
	// NoMetrics: the endpoint serves profiles but no loader metrics (a
	// plain Go program with net/http/pprof).
	NoMetrics bool   `json:"no_metrics,omitempty"`
	Batches   uint64 `json:"batches"` // cumulative
	// RatesPending: this is the first reading of the loader's counters,
	// and a rate needs two; its rates are null in JSON, as unknown ones,
	// though the loader answers.
	RatesPending bool `json:"rates_pending,omitempty"`
	// BytesNotCounted: the loader does not count the bytes it reads (the
	// Python hook): its bytes_per_sec is unknown (null), not 0.
	BytesNotCounted bool `json:"bytes_not_counted,omitempty"`
	// Rates over the interval.
	BatchesPerSec float64 `json:"batches_per_sec"`
	SamplesPerSec float64 `json:"samples_per_sec"`
	BytesPerSec   float64 `json:"bytes_per_sec"`
	// WaitShare is wait / (wait + step) over the batches of the interval,
	// 0–1: the share of the training loop's time spent waiting for input.
	WaitShare  *float64 `json:"wait_share"`
	WaitMeanMs *float64 `json:"wait_mean_ms"`
	WaitP50Ms  *float64 `json:"wait_p50_ms"`
	WaitP95Ms  *float64 `json:"wait_p95_ms"`
	WaitP99Ms  *float64 `json:"wait_p99_ms"`
	StepMeanMs *float64 `json:"step_mean_ms"`
	// QueueDepth is how many batches were ready when the training loop
	// last asked for one.
	QueueDepth *float64 `json:"queue_depth"`
	// WaitingMs is how long the training loop had waited for the batch it
	// asked for when the loader was read (0: it was not waiting, or waits
	// for its epoch's first batch, its start-up, less than a hang's
	// HangWait);
	// nil where the loader does not say. A loop that waits through a whole
	// interval completes no batch there: this is what says it waited.
	WaitingMs *float64 `json:"waiting_ms,omitempty"`
	// SteppingMs is how long the training loop's step under way had run
	// when the loader was read (0: it was waiting, or between epochs); nil
	// where the loader does not say. A step longer than an interval
	// completes none there: this is what says the loop was busy stepping.
	SteppingMs *float64 `json:"stepping_ms,omitempty"`
	Workers    *int     `json:"workers"`
	Prefetch   *int     `json:"prefetch"`
	// PID is the training process's, as the loader reports it; LoopTID the
	// thread that runs the training loop (nil when the loader does not
	// say); WorkerPIDs its worker processes (empty when it has none or does
	// not say). They let diagnosis split the job's CPU by role.
	// EpochStallMs is the mean time from an epoch's start to its first
	// batch, epochs after the first (workers restarting when they are not
	// persistent, the pipeline refilling); BatchesPerEpoch the epoch's
	// length (a DataLoader with no len(), an IterableDataset's: the batches
	// of its last epoch that ran to its end). Nil when the loader does not
	// say (attached loaders).
	EpochStallMs    *float64 `json:"epoch_stall_ms,omitempty"`
	BatchesPerEpoch *int     `json:"batches_per_epoch,omitempty"`
	// EpochGapMs is the loop's mean time from an epoch's end
	// (StopIteration) to the next epoch's start (validation, checkpoints:
	// no loader knob moves it, and every epoch pays it); nil where no epoch
	// that ran to its end was followed by another, or the loader does not
	// say. BetweenEpochsSec is the seconds of the interval the loop spent
	// between epochs (nil where the loader does not say).
	EpochGapMs       *float64 `json:"epoch_gap_ms,omitempty"`
	BetweenEpochsSec *float64 `json:"between_epochs_sec,omitempty"`
	// NewLoaderEveryEpoch: every epoch after the first (three or more)
	// iterated a DataLoader built anew, the last epoch's gone, so its
	// workers start every epoch whatever persistent_workers says (it keeps
	// them across one DataLoader's epochs). Nil when the loader does not
	// say.
	NewLoaderEveryEpoch *bool `json:"new_loader_every_epoch,omitempty"`
	// IterableSplitsByWorker: the DataLoader's IterableDataset names
	// get_worker_info in its __iter__ (or the DataLoader's worker_init_fn
	// does), so it can split its data by worker; false where neither
	// does; nil for a map-style dataset, or a loader that does not say.
	IterableSplitsByWorker *bool `json:"iterable_splits_by_worker,omitempty"`
	// IterableRepeats: an IterableDataset's workers yield the same
	// samples, measured on their first batches (two workers' first two
	// the same bytes, the first worker's second not its first); false
	// where they differed; nil where not measured.
	IterableRepeats *bool `json:"iterable_repeats,omitempty"`
	PID             *int  `json:"pid,omitempty"`
	LoopTID         *int  `json:"loop_tid,omitempty"`
	// Rank, LocalRank and WorldSize as the hook reports them (RANK,
	// LOCAL_RANK, WORLD_SIZE of its process); nil when it does not.
	// LocalWorldSize is the job's ranks on the loader's node as its
	// launcher says (torchrun's LOCAL_WORLD_SIZE), at most WorldSize.
	Rank           *int  `json:"rank,omitempty"`
	LocalRank      *int  `json:"local_rank,omitempty"`
	WorldSize      *int  `json:"world_size,omitempty"`
	LocalWorldSize *int  `json:"local_world_size,omitempty"`
	WorkerPIDs     []int `json:"worker_pids,omitempty" check:"max=1024"`
	// ReadSecPerSec and DecodeSecPerSec are seconds spent reading and
	// decoding per wall second, summed over workers (2 = two workers busy
	// all the time).
	ReadSecPerSec   *float64          `json:"read_sec_per_sec"`
	DecodeSecPerSec *float64          `json:"decode_sec_per_sec"`
	Knobs           map[string]string `json:"knobs,omitempty"`
	// DatasetBytes is the dataset's size and DatasetCachedBytes how much
	// of it the page cache holds (mincore on the loader's own mappings):
	// nil unless the embedded loader maps its dataset.
	DatasetBytes       *int64 `json:"dataset_bytes,omitempty"`
	DatasetCachedBytes *int64 `json:"dataset_cached_bytes,omitempty"`
	// Timeline is wait and step of the interval's batches, oldest first
	// (at most 64): the "train row".
	Timeline []BatchTiming `json:"timeline,omitempty" check:"max=64"`
	// Stages is where each batch's time goes, stage by stage (the hook
	// times them inside the DataLoader's workers); Payload what the
	// batches hold. Nil when the loader does not measure them.
	Stages  *LoaderStages `json:"stages,omitempty"`
	Payload *BatchPayload `json:"payload,omitempty"`
	// WorkersRunDelayShare is, of the time the loader's worker processes'
	// threads ran or were ready to run, the share they waited for a CPU
	// (schedstat's run delay over CPU time plus run delay), from the
	// frame's worker threads (AssignRoles derives it); nil when no worker
	// thread's run delay was read. A worker's wall time that is neither
	// its CPU nor this wait is a wait on storage, the network or a lock.
	WorkersRunDelayShare *float64 `json:"workers_run_delay_share,omitempty"`
	// Sampled is set when nobody instrumented the loader: WaitShare then
	// comes from sampling what the training process's main thread is doing
	// (probes/training/loop.go), and the rates above (batches, samples, bytes) are
	// unknown, not zero.
	Sampled *SampledLoop `json:"sampled,omitempty"`
	// Ceiling is the loop's rate with its input free, when the hook was
	// asked to measure it (gpuwatch run --ceiling); nil when it was not.
	Ceiling *Ceiling `json:"ceiling,omitempty"`
	// Settings is what the job already does (autocast, TF32, memory
	// format, compile…), as the hook read it; nil when it did not.
	Settings *JobSettings `json:"settings,omitempty"`
	// Syncs are the sites of the job's code that make the host wait for
	// the GPU inside the step, as the hook counted them (syncs.go), most
	// calls first; nil when it counted none.
	Syncs []HostSync `json:"syncs,omitempty" check:"max=16"`
	// SyncSteps are the steps in which the hook counted host syncs, all
	// its windows summed; nil where it did not count. Counted steps with
	// no Syncs is a count of none: no advice then says "sync less".
	SyncSteps *uint64 `json:"sync_steps,omitempty"`
	// GPUProfile is the step's GPU time by category, when the hook was
	// asked to record it (gpuwatch run --gpu-profile; gpuprofile.go); nil
	// when it was not.
	GPUProfile *GPUProfile `json:"gpu_profile,omitempty"`
	// MFU is the step's model FLOPs utilization, derived (AssignRoles)
	// where the hook counted the model's FLOPs and the GPU's dense peak is
	// known; nil otherwise, and MFUWhy says why where the frame has a GPU
	// (a CPU job has no MFU to miss).
	MFU    *MFU   `json:"mfu,omitempty"`
	MFUWhy string `json:"mfu_why,omitempty"`
	// HookCPUSecPerSec is the CPU time the hook's own instrumentation took
	// inside the training process per wall second over the interval (its
	// threads' clocks: the batches' timing, the looks, the windows, the
	// profiler, its server; 0.003 is 0.3 % of a core), and
	// HookCPUPerSampleUs that time per sample handed out, in µs. Nil when
	// the loader does not say (not the hook, or a hook before it measured
	// itself), on the first reading, and (per sample) with no samples.
	// HookCPUPerBatchUs stands in for the figure per sample where the
	// loader's samples are not counted (batches handed out, no sample: a
	// batch made on the GPU, a type without a length): that time per
	// batch, in µs; nil wherever the figure per sample is read, and
	// without batches.
	HookCPUSecPerSec   *float64 `json:"hook_cpu_sec_per_sec,omitempty" check:"0,1e4"`
	HookCPUPerSampleUs *float64 `json:"hook_cpu_us_per_sample,omitempty" check:"0,1e9"`
	HookCPUPerBatchUs  *float64 `json:"hook_cpu_us_per_batch,omitempty" check:"0,1e9"`
	// HookCPUParts is that time by part of the hook (loop, payload,
	// settings, syncs, stages, profiler, gpu_profile, server:
	// python/gpuwatch_hook/_cost.py), the costliest first; nil when the
	// loader does not split it, and on the first reading.
	HookCPUParts []HookCPUPart `json:"hook_cpu_parts,omitempty" check:"max=16"`
}

// LoaderStages is one batch's time, stage by stage, over the interval
// (docs/architecture.md §6). In a worker: GetitemMs (the dataset's
// __getitem__ summed over the batch's samples, or an IterableDataset's
// next items), CollateMs (collate_fn) — wall time on the worker's main
// thread — and HandoverMs (pickling it for the trip, CPU time of the
// thread that does). In the training process: TakeMs (unpickling a
// worker's batch, CPU time), PinMs (the pin-memory thread's copy), StepMs
// (the loop's work on the batch) and FirstBatchMs (the time from an
// epoch's start to its first batch, every epoch's mean). A stage not timed
// over the interval is nil, never 0.
type LoaderStages struct {
	GetitemMs    *float64 `json:"getitem_ms,omitempty"`
	CollateMs    *float64 `json:"collate_ms,omitempty"`
	HandoverMs   *float64 `json:"handover_ms,omitempty"`
	TakeMs       *float64 `json:"take_ms,omitempty"`
	PinMs        *float64 `json:"pin_ms,omitempty"`
	StepMs       *float64 `json:"step_ms,omitempty"`
	FirstBatchMs *float64 `json:"first_batch_ms,omitempty"`
	// The shares of a worker's time per batch (getitem + collate +
	// handover) each of its stages takes, 0–1; nil when the workers'
	// stages were not timed.
	GetitemShare  *float64 `json:"getitem_share,omitempty"`
	CollateShare  *float64 `json:"collate_share,omitempty"`
	HandoverShare *float64 `json:"handover_share,omitempty"`
	// Inline: getitem and collate ran in the training process
	// (num_workers=0), with no hand-over.
	Inline bool `json:"inline,omitempty"`
}

// BatchPayload is what the batches the training loop receives hold, from
// the batches the hook looked inside (a sample of them): bytes per batch
// (its tensors' and arrays'), the float64 and pinned shares of those
// bytes, the padding share of its integer token tensors, and the last
// look's tensors.
type BatchPayload struct {
	BatchesLooked uint64  `json:"batches_looked"` // cumulative
	BytesPerBatch float64 `json:"bytes_per_batch"`
	// BytesPerSec is BytesPerBatch at the interval's batch rate; nil
	// when the rate is unknown.
	BytesPerSec  *float64 `json:"bytes_per_sec,omitempty"`
	Float64Share *float64 `json:"float64_share,omitempty"`
	PinnedShare  *float64 `json:"pinned_share,omitempty"`
	// PaddingShare: of the token tensors' elements, the share that is
	// padding (an attention mask's zeros, or the pad value that ends the
	// rows); nil when the batches hold no token tensor.
	PaddingShare *float64        `json:"padding_share,omitempty"`
	Tensors      []PayloadTensor `json:"tensors,omitempty" check:"max=16"` // at most MaxPayloadTensors
	// Copy is the loop's copy of those batches to the GPU; nil when none
	// was seen (no GPU, or the batches stay on the CPU).
	Copy *HostCopy `json:"copy,omitempty"`
}

// HostCopy is the training loop's copy of the batches looked at to a GPU
// (tensor.to(device), tensor.cuda()), over the interval's copies (or every
// one so far, when the interval had none): bytes per batch, the loop's
// time in the copy calls per batch, the copies' time on the GPU (CUDA
// events) and so their rate, and the shares of the bytes copied from
// pinned memory and with non_blocking=True.
type HostCopy struct {
	BatchesCopied  uint64  `json:"batches_copied"` // cumulative
	BytesPerBatch  float64 `json:"bytes_per_batch"`
	HostMsPerBatch float64 `json:"host_ms_per_batch"`
	// DeviceMsPerBatch and BytesPerSec (bytes ÷ the GPU's time) are nil
	// when no copy's GPU time was read.
	DeviceMsPerBatch *float64 `json:"device_ms_per_batch,omitempty"`
	BytesPerSec      *float64 `json:"bytes_per_sec,omitempty"`
	PinnedShare      float64  `json:"pinned_share"`
	NonBlockingShare float64  `json:"non_blocking_share"`
	// Device is the CUDA index of the GPU the last copy went to.
	Device *int `json:"device,omitempty"`
	// Link is that GPU's PCIe link ("PCIe 5.0 x16") and LinkBytesPerSec
	// its bandwidth each way; LinkShare is BytesPerSec's share of it (a
	// copy's rate, not the link's load). Derived from the frame's GPUs
	// (AssignRoles); empty where the GPU or its link is unknown.
	Link            string   `json:"link,omitempty"`
	LinkBytesPerSec *float64 `json:"link_bytes_per_sec,omitempty"`
	LinkShare       *float64 `json:"link_share,omitempty" check:"0,10"`
}

// MaxPayloadTensors is the most tensors a payload lists (the hook's
// MAX_SHOWN, the check tag of BatchPayload.Tensors).
const MaxPayloadTensors = 16

// PayloadTensor is one tensor or array of the last batch looked at: its
// path in the batch ("[0]", "['input_ids']"), dtype ("float32"), shape,
// bytes, and whether it is pinned (nil: a numpy array, or unknown).
type PayloadTensor struct {
	Path   string  `json:"path"`
	DType  string  `json:"dtype"`
	Shape  []int64 `json:"shape" check:"max=8"`
	Bytes  int64   `json:"bytes"`
	Pinned *bool   `json:"pinned,omitempty"`
}

// SampledLoop says how an uninstrumented loop's wait was sampled.
type SampledLoop struct {
	// Samples taken over the interval, at Hz.
	Samples int     `json:"samples"`
	Hz      float64 `json:"hz"`
	// Inline: the process has no worker processes, so the loop loads each
	// batch itself: its running time (and its waits on disks and sockets)
	// counts as loading, its other waits (a sleep, the GPU) as the step.
	Inline bool `json:"inline,omitempty"`
	// BeforeFirstBatch: the process carries gpuwatch run's hook, which
	// reports it from its DataLoader's first batch on; none has come, so
	// its loop has not started (no wait share, no worker count).
	BeforeFirstBatch bool `json:"before_first_batch,omitempty"`
	// WorkersRestart: a generation of the process's workers was seen to
	// end within 10 s of its start, in the last 30 s: its DataLoader ends
	// them at each epoch's end (persistent_workers=False). Where a look
	// finds none, the loader's worker count is the last generation's; their
	// CPU is not read whole.
	WorkersRestart bool `json:"workers_restart,omitempty"`
	// Read says what each sample reads ("state, wchan, syscall"); Missing
	// what it could not read or tell, and how to see more.
	Read    string `json:"read"`
	Missing string `json:"missing,omitempty"`
	// Command and Why name the process sampled and how it was chosen
	// ("it maps libtorch").
	Command string `json:"command,omitempty"`
	Why     string `json:"why,omitempty"`
}

// BatchTiming is one batch as the training loop saw it.
type BatchTiming struct {
	WaitMs float64 `json:"wait_ms"`
	StepMs float64 `json:"step_ms"`
}

// VirtualAccel is the accelerator as seen from a loader's step timing, on
// machines without a GPU signal: the share of wall time the training loop
// spent in steps. It is not a GPU and is never listed among GPUs.
//
// StepPct is the loop's step (or not-waiting) share of wall time as the
// loader measured it; BusyPct is that, less the time the loop thread sat
// runnable without a CPU (LoopRunDelayPct: throttled at its cgroup's quota,
// or behind other threads), which no accelerator would spend busy.
// AssignRoles derives BusyPct and LoopRunDelayPct from StepPct, so a
// recording's are recomputed (docs/diagnosis.md, "Throttling").
type VirtualAccel struct {
	BusyPct float64  `json:"busy_pct" check:"0,100"`
	StepPct *float64 `json:"step_pct,omitempty" check:"0,100"`
	// LoopRunDelayPct is the loop thread's run delay (schedstat) taken off
	// StepPct, percent of wall time; nil when it was not read.
	LoopRunDelayPct *float64 `json:"loop_run_delay_pct,omitempty" check:"0,100"`
	// Basis says where the number comes from, for views.
	Basis string `json:"basis"`
}

// Describe says how BusyPct was measured, for views and evidence: the
// basis, and the loop thread's wait for a CPU where one was taken off.
func (a *VirtualAccel) Describe() string {
	basis := a.Basis
	if basis == "" {
		basis = "loader step time / wall time"
	}
	if a.LoopRunDelayPct == nil || a.StepPct == nil || *a.LoopRunDelayPct < 0.5 {
		return basis
	}
	return fmt.Sprintf("%s, %.0f %% less %.0f %% the loop thread waited for a CPU", basis, *a.StepPct, *a.LoopRunDelayPct)
}

// ProfiledRank is the rank whose process the frame's CPU profile was
// taken of, where the frame holds several ranks and the profile names
// its source; nil otherwise. Views name it beside the profile, which may
// be another rank's than the one the verdict judges (PacingProfile).
func (f *Frame) ProfiledRank() *Rank {
	p := f.Profile
	if p == nil || len(f.Ranks) < 2 || p.Source == "" {
		return nil
	}
	for i := range f.Ranks {
		if f.Ranks[i].URL == p.Source {
			return &f.Ranks[i]
		}
	}
	return nil
}

// PacingProfile is the frame's CPU profile where it describes the loader
// the frame judges: with several ranks, a profile of the pacing rank, or
// of a rank that waits for input within profileSameWait of it (ranks
// alike, which of them paces changes from frame to frame, and either's
// profile tells of both); nil for another rank's. A hostile user's
// review: the first profile, taken before the ranks' waits said which
// paced, was rank 0's while a straggler rank 1 paced, and rank 1, with
// no workers, was told of "pickling batches through the workers' queues".
func (f *Frame) PacingProfile() *Profile {
	p := f.Profile
	if p == nil || len(f.Ranks) < 2 || p.Source == "" {
		return p
	}
	var pacing, profiled *Rank
	for i := range f.Ranks {
		r := &f.Ranks[i]
		if r.Pacing {
			pacing = r
		}
		if r.URL == p.Source {
			profiled = r
		}
	}
	switch {
	case pacing == nil || profiled == pacing:
		return p // no rank answers (the frame shows the last word), or the pacing rank's own
	case profiled == nil || !profiled.Connected || pacing.WaitShare == nil || profiled.WaitShare == nil:
		return nil
	case *pacing.WaitShare-*profiled.WaitShare < profileSameWait:
		return p
	}
	return nil
}

// profileSameWait is how much less than the pacing rank another rank may
// wait for input for its profile to stand for the pacing one's.
const profileSameWait = 0.1

// Profile summarizes a CPU profile of the loader's process: where its CPU
// time goes, by category and by function. Shares are 0–1 of the profile's
// total CPU time.
type Profile struct {
	TakenAt     time.Time `json:"taken_at"`
	DurationSec float64   `json:"duration_sec"`
	CPUSec      float64   `json:"cpu_sec"` // CPU time sampled
	// Samples is how many samples the shares come from (omitted by
	// recordings older than it): 16 samples support whole percents at best.
	Samples    int64             `json:"samples,omitempty"`
	Categories []ProfileCategory `json:"categories" check:"max=16"`
	// WorkersShare is the share of the CPU sampled in the DataLoader's
	// worker processes (gpuwatch run merges their profiles), and Workers
	// their categories alone, as shares of the workers' CPU; both omitted
	// where no worker was profiled.
	WorkersShare float64           `json:"workers_share,omitempty"`
	Workers      []ProfileCategory `json:"workers,omitempty" check:"max=16"`
	Top          []ProfileFunc     `json:"top" check:"max=64"`
	// WorkersTop is Top of the workers' samples alone, shares of the
	// workers' CPU: what a cause in __getitem__ names (omitted with
	// Workers).
	WorkersTop []ProfileFunc `json:"workers_top,omitempty" check:"max=64"`
	// InlineShare is the share of the profile's CPU (the workers' too,
	// where merged) sampled under the DataLoader's fetch in the training
	// process (num_workers=0: the loop loads each batch itself), and
	// InlineTop Top of those
	// samples alone, shares of their CPU: what a cause in __getitem__
	// names there, not the step's functions beside it. Both omitted
	// where no such sample was taken.
	InlineShare float64       `json:"inline_share,omitempty"`
	InlineTop   []ProfileFunc `json:"inline_top,omitempty" check:"max=64"`
	// Inline is the categories of those samples alone, shares of their
	// CPU, as Workers is of the workers' (omitted with InlineTop): what
	// the profile causes read with num_workers=0.
	Inline []ProfileCategory `json:"inline,omitempty" check:"max=16"`
	// Dataset is the kind of dataset the loading sampled fetched from,
	// DatasetMap or DatasetIterable, by torch's fetcher on its stacks
	// (_MapDatasetFetcher, _IterableDatasetFetcher): of the workers'
	// samples where there are any, else of the loop's loading inline,
	// the kind most of them fetched from. "" where no stack names a
	// fetcher's class (no loading sampled; Python before 3.11, whose
	// frames have no qualified name; a recording from before it).
	Dataset string `json:"dataset,omitempty"`
	// Source is the URL the profile came from (several ranks: the
	// pacing rank's).
	Source string `json:"source,omitempty"`
	// Error says why the latest profile was skipped; the summary above is
	// then the previous good one (or empty).
	Error string `json:"error,omitempty"`
}

// The kinds of dataset a profile's loading fetched from (Profile.Dataset):
// a map-style dataset makes each sample in __getitem__; an IterableDataset
// has none, its per-sample work runs in the __iter__ (or __next__) of the
// iterator it returns.
const (
	DatasetMap      = "map"
	DatasetIterable = "iterable"
)

// The profile categories, defined here once: internal/pprofsum's rows
// sort a profile's functions into them, diagnose's profile causes read
// them (causeRule.category), reports and views name them with
// ProfileCategoryWords.
const (
	CatReading  = "reading"
	CatDecoding = "decoding"
	// CatDecompressing is zlib, gzip, bz2, lzma, zstd and lz4 (Go's
	// compress/): not decoding, whose fixes (a reduced-size image decode,
	// a decode on the GPU) do nothing for it.
	CatDecompressing = "decompressing"
	CatAugmenting    = "augmenting"
	CatTokenizing    = "tokenizing"
	CatConverting    = "converting"
	CatCollating     = "collating"
	CatSerializing   = "serializing"
	CatWaiting       = "waiting"
	CatInterpreter   = "interpreter"
	CatGC            = "gc"
	CatOther         = "other"
)

// profileCategoryTable is the categories of a profile summary in display
// order, each with what it is, for people.
var profileCategoryTable = []struct{ name, words string }{
	{CatReading, "reading (files, network)"},
	{CatDecoding, "decoding (images, audio, video, parsed data)"},
	{CatDecompressing, "decompressing (zlib, gzip, bz2, lzma, zstd, lz4)"},
	{CatAugmenting, "augmenting and transforming samples (transforms, array math)"},
	{CatTokenizing, "tokenizing text"},
	{CatConverting, "converting samples to tensors and arrays (Python loops building lists included)"},
	{CatCollating, "collating samples into batches"},
	{CatSerializing, "pickling batches through the workers' queues"},
	{CatWaiting, "waiting (queues, locks, sleep)"},
	{CatInterpreter, "the interpreter's or runtime's own overhead (imports, scheduling)"},
	{CatGC, "in the garbage collector"},
	{CatOther, "elsewhere (no category's code on the stack)"},
}

// ProfileCategories are the categories of a profile summary, in display
// order (the profile probe sorts CPU samples into them, diagnosis names
// them, and a report keeps only these); ProfileCategoryWords says what
// each is. Both are read from profileCategoryTable.
var (
	ProfileCategories    = make([]string, 0, len(profileCategoryTable))
	ProfileCategoryWords = make(map[string]string, len(profileCategoryTable))
)

func init() {
	for _, c := range profileCategoryTable {
		ProfileCategories = append(ProfileCategories, c.name)
		ProfileCategoryWords[c.name] = c.words
	}
}

// ProfileCategory is a share of the profile's CPU in one of
// ProfileCategories; internal/pprofsum's categoryRules say which functions
// count for which (docs/diagnosis.md lists them).
type ProfileCategory struct {
	Name  string  `json:"name"`
	Share float64 `json:"share"`
}

// ProfileFunc is one function: Flat is the share of samples where it was
// running, Cum where it was on the stack (counted once per sample).
type ProfileFunc struct {
	Name string `json:"name"`
	// File and Line say where the function is: its file and first line
	// (else the first line sampled); omitted where the profile has none.
	File string `json:"file,omitempty"`
	Line int64  `json:"line,omitempty"`
	// Call: a C function the hook caught running (torch.tensor,
	// builtins.float), named by what its caller calls; File and Line are
	// where it is called. Python 3.11+.
	Call bool    `json:"call,omitempty"`
	Flat float64 `json:"flat"`
	Cum  float64 `json:"cum"`
	// Category is the one that holds 90 % of its flat time (one of
	// ProfileCategories, "other" too; in WorkersTop, of the workers'
	// samples); "" where none does (and in recordings from before it).
	Category string `json:"category,omitempty"`
}

// Where is f's file and line for a view: the file's last two path
// elements ("PIL/ImageFile.py:155", "train.py:42"), "" without a file.
// A terminal view sanitises it (Printable).
func (f ProfileFunc) Where() string {
	if f.File == "" {
		return ""
	}
	file := f.File
	if i := strings.LastIndexByte(file, '/'); i > 0 {
		if j := strings.LastIndexByte(file[:i], '/'); j >= 0 {
			file = file[j+1:]
		}
	}
	if f.Line > 0 {
		return fmt.Sprintf("%s:%d", file, f.Line)
	}
	return file
}

// Merge copies every part that from has into f, and from's unavailable
// reasons. It is how the Sampler assembles one Frame from probes that each
// filled a scratch Frame.
func (f *Frame) Merge(from *Frame) {
	if from.CPU != nil {
		f.CPU = from.CPU
	}
	if from.Mem != nil {
		f.Mem = from.Mem
	}
	if from.Disks != nil {
		f.Disks = from.Disks
	}
	if from.Net != nil {
		f.Net = from.Net
	}
	if from.PSI != nil {
		f.PSI = from.PSI
	}
	if from.Procs != nil {
		f.Procs = from.Procs
	}
	if from.GPUs != nil {
		f.GPUs, f.JobGPUs = from.GPUs, from.JobGPUs
	}
	// The virtual accelerator is its loader's step timing: it goes where
	// its loader goes. A sampled loop's stayed beside an attached loader
	// that times no step (a review: another process's loop read "94 %
	// busy" for the loader attached).
	if from.Loader != nil {
		if !f.Loader.sampledOver(from.Loader) {
			f.Loader, f.Accel = from.Loader, from.Accel
		}
	} else if from.Accel != nil {
		f.Accel = from.Accel
	}
	if from.Profile != nil {
		f.Profile = from.Profile
	}
	if from.Job != nil {
		f.Job = from.Job
	}
	if from.Ranks != nil {
		f.Ranks = from.Ranks
	}
	if from.Target != nil {
		f.Target = from.Target
	}
	if from.Self != nil {
		f.Self = from.Self
	}
	for k, v := range from.Unavailable {
		if f.Unavailable == nil {
			f.Unavailable = make(map[Source]string)
		}
		f.Unavailable[k] = v
	}
}

// Throughput is the loader's rate in words: samples per second, or
// batches per second when the loader does not count samples (the Python
// hook, when it cannot read a batch's size).
func (l *Loader) Throughput() string {
	if l.SamplesPerSec == 0 && l.BatchesPerSec > 0 {
		return fmt.Sprintf("%.1f batches/s", l.BatchesPerSec)
	}
	return fmt.Sprintf("%.0f samples/s", l.SamplesPerSec)
}

// NearestRank is quantile q (0–1) of sorted values by the nearest-rank
// method: the smallest value with at least q of the values at or below it.
// sorted must not be empty.
func NearestRank(sorted []float64, q float64) float64 {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Source names a part of gpuwatch that fills a frame: the key of
// Frame.Unavailable. A probe's source is its Name.
type Source string

// The sources a view looks up by name. Every probe's Name is a Source.
const (
	SourceCPU       Source = "cpu"
	SourceMem       Source = "mem"
	SourceDisk      Source = "disk"
	SourceNet       Source = "net"
	SourcePSI       Source = "psi"
	SourceProc      Source = "proc"
	SourceGPU       Source = "gpu"
	SourceJob       Source = "job"
	SourceLoader    Source = "loader"
	SourceProfile   Source = "profile"
	SourceLoop      Source = "loop"
	SourceDiscovery Source = "discovery" // the announcements folder
	SourceRecording Source = "recording" // a replayed frame's own notes
	SourceSampler   Source = "sampler"
	SourceTarget    Source = "target" // what the session watches (session's target probe)
)

// Sources are the declared sources; TestEveryProbeIsASource holds every
// probe's Name to it. A loader's dropped series add "loader.<series>"
// keys of their own.
var Sources = []Source{SourceCPU, SourceMem, SourceDisk, SourceNet, SourcePSI, SourceProc, SourceGPU, SourceJob,
	SourceLoader, SourceProfile, SourceLoop, SourceDiscovery, SourceRecording, SourceSampler, SourceTarget}

// HangWait is the one home of a hang's time: a loader's wait for a batch
// this long is a hang, not a slow input. The watcher's stuck advice
// needs it (diagnose); the embedded loader (loader.HangWait) and the
// hook (HANG_SEC, python/gpuwatch_hook/_timing.py) count an epoch's
// first batch as a wait under way only past the same figure, which their
// tests hold equal to this one.
const HangWait = 10 * time.Second
