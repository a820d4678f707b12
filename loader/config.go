// Package loader is gpuwatch's embedded test loader: a Go emulation of
// PyTorch's DataLoader that makes each input-pipeline bottleneck happen for
// real — real files read with real syscalls, real CPU work per sample — so
// gpuwatch can demo and test itself on any machine. Only the accelerator
// step is simulated (a sleep), as public DataLoader benchmark scripts do.
//
// It copies the mechanics that cause what users see (docs/architecture.md §5): one
// index queue per worker, round-robin dispatch, a whole batch per task, at
// most prefetch × workers batches outstanding, refilled when the training
// loop takes a batch, in-order delivery, an epoch-boundary drain, a start-up
// cost per worker, and workers=0 meaning the training loop loads inline on
// one locked OS thread. It also serves the loader protocol (docs/architecture.md §6).
//
// It imports nothing from this module; probes adapts it through an
// interface of its own.
package loader

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Access is the order samples are read in.
type Access string

// The access patterns.
const (
	Sequential Access = "seq"    // 0, 1, 2 … like SequentialSampler
	Random     Access = "random" // a fresh permutation each epoch, like RandomSampler
	Subseq     Access = "subseq" // a random start, then a contiguous run per batch, like a time-series window sampler
)

// ReadMode is how samples leave the dataset's files.
type ReadMode string

// The read modes.
const (
	Pread ReadMode = "pread" // a read syscall per sample (per shard touched)
	Mmap  ReadMode = "mmap"  // shards mapped once; a sample is a copy out of the mapping, and a page not cached is a major fault
)

// Config is one loader configuration: PyTorch's DataLoader knobs plus what
// the dataset, the storage and the training step cost.
type Config struct {
	Workers    int  // num_workers; 0 loads inline in the training loop
	Prefetch   int  // prefetch_factor: batches in flight per worker
	BatchSize  int  // samples per batch
	Persistent bool // persistent_workers: keep workers across epochs
	Pin        bool // pin_memory: copy each batch into a reused buffer on its own goroutine

	SampleSize int64         // bytes per sample
	DecodeCost time.Duration // CPU work per sample (hashing the bytes read), not sleep
	Jitter     float64       // sigma of a lognormal multiplier on the decode cost
	StepTime   time.Duration // the simulated accelerator step (a sleep)
	Access     Access

	Dataset     string // folder of shard files; generated once, reused after
	DatasetSize int64  // bytes
	DirectIO    bool   // O_DIRECT: bypass the page cache
	Read        ReadMode
	// PageCache is the most of the dataset the page cache may keep (0: no
	// limit): above it, the loader evicts the dataset's pages. It stands
	// for a dataset larger than RAM (or a container's memory limit) on a
	// machine that could cache it all. Set, it also drops the dataset's
	// pages before the run.
	PageCache     int64
	ReadBandwidth int64 // bytes/s shared by all readers; 0 = unlimited (emulates a network link)
	ReadLatency   time.Duration
	Cache         bool // load the dataset into RAM first
	// Warm reads the dataset once through the page cache before the first
	// batch: a scenario that names a CPU bottleneck is not to wait on a
	// cold disk (a fresh CI machine's cpu-bound run spent a third of its
	// workers' time in reads and kept 1.3 of 2 cores busy).
	Warm bool

	Epochs       int           // stop after this many epochs; 0 = run until stopped
	Batches      int           // batches per epoch; 0 = the whole dataset
	Seed         int64         // drives sample order and jitter
	WorkerStart  time.Duration // CPU work each worker does when it starts (imports, dataset set-up)
	ScenarioName string        // the preset this came from, "" for custom
}

// The bounds Validate puts on what each unit of work costs. Past them a
// configuration cannot show anything: 100,000 workers each burning 100 ms
// of start-up are 80 minutes of a 2-core box before one batch, and a 30 s decode
// per sample makes one batch of 32 a quarter of an hour of one core.
const (
	// MaxWorkers is the most workers a configuration may have: the
	// bound the loader protocol puts on gpuwatch_loader_workers (a
	// watcher drops a larger gauge), far past any machine's cores.
	MaxWorkers = 4096
	// MaxDecodeCost is the most CPU work per sample: 10 s, 5,000 times
	// the single-core preset's, and still over cpu-bound's on a machine
	// of 5,000 cores (1.875 ms a core).
	MaxDecodeCost = 10 * time.Second
	// MaxWorkerStart is the most start-up work per worker: a minute,
	// past the slowest imports and dataset set-up a real worker does.
	MaxWorkerStart = time.Minute
)

// Default is the configuration used for knobs that are not given.
func Default() Config {
	return Config{
		Workers: 2, Prefetch: 2, BatchSize: 32,
		SampleSize: 64 << 10, DecodeCost: 200 * time.Microsecond, Jitter: 0.2,
		StepTime: 50 * time.Millisecond, Access: Random, Read: Pread,
		DatasetSize: 256 << 20, Seed: 1, WorkerStart: 100 * time.Millisecond,
	}
}

// Samples is the number of samples in the dataset.
func (c Config) Samples() int {
	if c.SampleSize <= 0 {
		return 0
	}
	return int(c.DatasetSize / c.SampleSize)
}

// BatchesPerEpoch is how many batches one epoch has.
func (c Config) BatchesPerEpoch() int {
	n := (c.Samples() + c.BatchSize - 1) / c.BatchSize
	if c.Batches > 0 && c.Batches < n {
		return c.Batches
	}
	return n
}

// Validate refuses what PyTorch refuses, and what cannot run.
// prefetchSet says whether --prefetch was given explicitly.
func (c Config) Validate(prefetchSet bool) error {
	switch {
	case c.Workers < 0:
		return errors.New("--workers must be 0 or more")
	case c.Workers > MaxWorkers:
		return fmt.Errorf("--workers %d: at most %d", c.Workers, MaxWorkers)
	case c.Workers == 0 && prefetchSet && c.Prefetch != 0:
		// PyTorch: "prefetch_factor option could only be specified in
		// multiprocessing. let num_workers > 0 to enable multiprocessing".
		return errors.New("--prefetch needs --workers > 0: with 0 workers the training loop loads each batch itself, nothing is prefetched")
	case c.Workers > 0 && c.Prefetch < 1:
		return errors.New("--prefetch must be at least 1")
	case c.Workers == 0 && c.Persistent:
		return errors.New("--persistent needs --workers > 0")
	case c.BatchSize < 1:
		return errors.New("--batch-size must be at least 1")
	case c.SampleSize < 1:
		return errors.New("--sample-size must be at least 1 byte")
	case c.DatasetSize < c.SampleSize:
		return fmt.Errorf("--dataset-size %s holds no sample of %s", FormatSize(c.DatasetSize), FormatSize(c.SampleSize))
	case c.DecodeCost < 0 || c.StepTime < 0 || c.ReadLatency < 0 || c.WorkerStart < 0:
		return errors.New("durations must not be negative")
	case c.DecodeCost > MaxDecodeCost:
		return fmt.Errorf("--decode-cost %v: at most %gs of CPU work per sample", c.DecodeCost, MaxDecodeCost.Seconds())
	case c.WorkerStart > MaxWorkerStart:
		return fmt.Errorf("--worker-start %v: at most %gs of CPU work per worker", c.WorkerStart, MaxWorkerStart.Seconds())
	case !(c.Jitter >= 0 && c.Jitter <= 3): // NaN compares false both ways
		return errors.New("--jitter must be between 0 and 3")
	case c.ReadBandwidth < 0:
		return errors.New("--read-bandwidth must not be negative")
	case c.Epochs < 0 || c.Batches < 0:
		return errors.New("--epochs and --batches must not be negative")
	case c.Cache && c.DirectIO:
		return errors.New("--cache and --direct-io contradict each other: the cache is in RAM")
	case c.Read == Mmap && c.DirectIO:
		return errors.New("--read mmap and --direct-io contradict each other: a mapping reads through the page cache")
	case c.PageCache < 0:
		return errors.New("--page-cache must not be negative")
	}
	switch c.Read {
	case "", Pread:
	case Mmap:
		if errNoMmap != nil {
			return fmt.Errorf("--read mmap: %w", errNoMmap)
		}
	default:
		return fmt.Errorf("--read %q: want pread or mmap", c.Read)
	}
	if c.PageCache > 0 && errNoMmap != nil {
		return fmt.Errorf("--page-cache: %w", errNoMmap)
	}
	switch c.Access {
	case Sequential, Random, Subseq:
	default:
		return fmt.Errorf("--access %q: want seq, random or subseq", c.Access)
	}
	if c.Access == Subseq && int64(c.BatchSize)*c.SampleSize > c.DatasetSize {
		return errors.New("--access subseq needs a dataset of at least one batch")
	}
	return nil
}

// Knobs lists the configuration as flag names and values, for JSON, the
// dashboard and reports.
func (c Config) Knobs() map[string]string {
	return map[string]string{
		"workers": strconv.Itoa(c.Workers), "prefetch": strconv.Itoa(c.Prefetch),
		"batch_size": strconv.Itoa(c.BatchSize), "persistent": strconv.FormatBool(c.Persistent),
		"pin": strconv.FormatBool(c.Pin), "sample_size": FormatSize(c.SampleSize),
		"decode_cost": c.DecodeCost.String(), "jitter": strconv.FormatFloat(c.Jitter, 'g', -1, 64),
		"step_time": c.StepTime.String(), "access": string(c.Access),
		"dataset_size": FormatSize(c.DatasetSize), "direct_io": strconv.FormatBool(c.DirectIO),
		"read_bandwidth": FormatSize(c.ReadBandwidth) + "/s", "read_latency": c.ReadLatency.String(),
		"cache": strconv.FormatBool(c.Cache), "read": string(cmp.Or(c.Read, Pread)),
		"page_cache": FormatSize(c.PageCache),
	}
}

// Scenarios are the presets, in tour order.
var Scenarios = []string{"healthy", "starved", "single-core", "cpu-bound", "io-bound", "mmap-random", "remote-storage"}

// Name is the preset the configuration came from, or "custom".
func (c Config) Name() string {
	if c.ScenarioName == "" {
		return "custom"
	}
	return c.ScenarioName
}

// Scenario returns the preset name, scaled to this machine: cores from
// runtime.NumCPU, dataset sizes within memAvail bytes.
func Scenario(name string, memAvail int64) (Config, error) {
	cpus := runtime.NumCPU()
	c := Default()
	c.ScenarioName = name
	switch name {
	case "healthy":
		// Loading a batch costs ~32 × 0.3 ms on one worker; the step
		// takes 80 ms: the loader idles most of the time.
		c.Workers, c.Prefetch = min(4, cpus), 2
		c.DecodeCost, c.StepTime, c.Access = 300*time.Microsecond, 80*time.Millisecond, Sequential
		c.Persistent, c.Warm = true, true
	case "starved":
		// 32 reads × 4 ms of latency = ~130 ms per batch on the only
		// worker, against a 40 ms step. More workers would hide it.
		c.Workers, c.Prefetch = 1, 2
		c.ReadLatency, c.DecodeCost, c.StepTime = 4*time.Millisecond, 50*time.Microsecond, 40*time.Millisecond
		c.Persistent = true
	case "single-core":
		// The training loop decodes 32 × 2 ms inline, then steps for 5 ms:
		// one thread busy over 90 % of the time.
		c.Workers, c.Prefetch = 0, 0
		c.DecodeCost, c.StepTime, c.Access = 2*time.Millisecond, 5*time.Millisecond, Sequential
		c.Warm = true
	case "cpu-bound":
		// A worker per core, each batch 3× more decode than the cores
		// can deliver within one step: every core busy, still waiting.
		c.Workers, c.Prefetch, c.Persistent, c.Warm = cpus, 2, true, true
		c.StepTime = 20 * time.Millisecond
		c.DecodeCost = time.Duration(3 * float64(c.StepTime) * float64(cpus) / float64(c.BatchSize))
	case "io-bound":
		// Random 128 KiB reads with O_DIRECT (no page cache help), 8
		// workers per core (at most 64) to keep the device queue full, no
		// decode, and a step so short no disk can feed it (8 MiB every
		// 2 ms on 2 cores, every 250 µs on 16). On a 2-core virtio VM,
		// 16 KiB reads left the disk 70-80 % busy (Go's hand-off of
		// blocking syscalls was the limit); 128 KiB reads keep it ~98 %.
		// Each worker has a P of its own while it reads (Run: O_DIRECT).
		c.Workers, c.Prefetch, c.Persistent = min(8*cpus, 64), 1, true
		c.SampleSize, c.BatchSize, c.Access, c.DirectIO = 128<<10, 64, Random, true
		c.DecodeCost, c.Jitter = 0, 0
		c.StepTime = max(250*time.Microsecond, 4*time.Millisecond/time.Duration(cpus))
		c.DatasetSize = 1 << 30
	case "mmap-random":
		// The seeds' case: a memory-mapped dataset (Arrow, numpy.memmap)
		// read in random order, larger than the page cache can keep for
		// it (emulated: at most 1/16 of it stays cached, and it starts
		// cold). Each 16 KiB sample touches pages not in memory: a major
		// fault, a disk read the worker waits on, and the kernel's
		// read-around fetches far more than the sample. The same run
		// with --access subseq reads contiguous runs the read-ahead
		// serves, and keeps up with the 10 ms step (6,400 samples/s).
		c.Workers, c.Prefetch, c.Persistent = cpus, 2, true
		c.Read, c.Access = Mmap, Random
		c.SampleSize, c.BatchSize = 16<<10, 64
		c.DecodeCost, c.Jitter = 20*time.Microsecond, 0
		c.StepTime = 10 * time.Millisecond
		c.DatasetSize = 1 << 30
	case "remote-storage":
		// A 24 MB/s link with 2 ms per read: even 4 workers per core
		// cannot fetch 2 MiB batches faster than ~11 a second.
		c.Workers, c.Prefetch, c.Persistent = 4*cpus, 2, true
		c.ReadBandwidth, c.ReadLatency = 24_000_000, 2*time.Millisecond
		c.DecodeCost, c.StepTime = 50*time.Microsecond, 30*time.Millisecond
	default:
		return Config{}, fmt.Errorf("unknown scenario %q (have: %s)", name, strings.Join(Scenarios, ", "))
	}
	// Presets that scale with cores stay within Validate's bounds on any
	// machine.
	c.Workers, c.DecodeCost = min(c.Workers, MaxWorkers), min(c.DecodeCost, MaxDecodeCost)
	// Keep the dataset well inside free memory where it could be cached,
	// so the page cache stays what the scenario wants it to be.
	if memAvail > 0 && c.DatasetSize > memAvail/4 {
		c.DatasetSize = max(c.SampleSize*int64(c.BatchSize)*4, memAvail/4)
	}
	if name == "mmap-random" {
		c.PageCache = c.DatasetSize / 16
	}
	return c, nil
}

// ParseSize parses a byte size with an optional unit and "/s":
// "4096", "4KiB", "4k" (fio style: k, m, g are powers of 1024), "1MB"
// (powers of 1000), "20MB/s".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "/s")
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("size %q: want a number with an optional unit (4KiB, 1MB, 20MB/s)", s)
	}
	mult, ok := sizeUnits[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (B, KB, MB, GB, KiB, MiB, GiB, k, m, g)", s, unit)
	}
	b := v * mult
	if b > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(b), nil
}

var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

// FormatSize renders bytes with binary units: "64KiB", "1.5GiB".
func FormatSize(n int64) string {
	f := float64(n)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if f < 1024 || u == "TiB" {
			if f == math.Trunc(f) {
				return strconv.FormatFloat(f, 'f', 0, 64) + u
			}
			return strconv.FormatFloat(f, 'f', 1, 64) + u
		}
		f /= 1024
	}
	return ""
}
