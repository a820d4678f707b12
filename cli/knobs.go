package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session/embedded"
)

// sizeFlag is a pflag.Value for byte sizes with units ("4KiB", "20MB/s").
type sizeFlag struct{ p *int64 }

func (s sizeFlag) String() string {
	if s.p == nil {
		return "0"
	}
	return loader.FormatSize(*s.p)
}
func (s sizeFlag) Set(v string) error {
	n, err := loader.ParseSize(v)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("size %q must not be negative", v)
	}
	*s.p = n
	return nil
}
func (s sizeFlag) Type() string { return "size" }

// knobFlags are the embedded loader's knobs, shared by demo, loader and
// sweep. Flags the user gives override the scenario preset.
type knobFlags struct {
	scenario string
	cfg      loader.Config
	access   string
	read     string
	events   string
}

// knobCopy copies one knob, by flag name, from the flags into a preset.
var knobCopy = map[string]func(dst, src *loader.Config){
	sample.KnobWorkers.Flag:    func(d, s *loader.Config) { d.Workers = s.Workers },
	sample.KnobPrefetch.Flag:   func(d, s *loader.Config) { d.Prefetch = s.Prefetch },
	"batch-size":               func(d, s *loader.Config) { d.BatchSize = s.BatchSize },
	sample.KnobPersistent.Flag: func(d, s *loader.Config) { d.Persistent = s.Persistent },
	sample.KnobPin.Flag:        func(d, s *loader.Config) { d.Pin = s.Pin },
	"sample-size":              func(d, s *loader.Config) { d.SampleSize = s.SampleSize },
	"decode-cost":              func(d, s *loader.Config) { d.DecodeCost = s.DecodeCost },
	"jitter":                   func(d, s *loader.Config) { d.Jitter = s.Jitter },
	"step-time":                func(d, s *loader.Config) { d.StepTime = s.StepTime },
	sample.KnobAccess.Flag:     func(d, s *loader.Config) { d.Access = s.Access },
	"dataset":                  func(d, s *loader.Config) { d.Dataset = s.Dataset },
	"dataset-size":             func(d, s *loader.Config) { d.DatasetSize = s.DatasetSize },
	"direct-io":                func(d, s *loader.Config) { d.DirectIO = s.DirectIO },
	"read-bandwidth":           func(d, s *loader.Config) { d.ReadBandwidth = s.ReadBandwidth },
	"read-latency":             func(d, s *loader.Config) { d.ReadLatency = s.ReadLatency },
	sample.KnobCache.Flag:      func(d, s *loader.Config) { d.Cache = s.Cache },
	"read":                     func(d, s *loader.Config) { d.Read = s.Read },
	"page-cache":               func(d, s *loader.Config) { d.PageCache = s.PageCache },
	"epochs":                   func(d, s *loader.Config) { d.Epochs = s.Epochs },
	"batches":                  func(d, s *loader.Config) { d.Batches = s.Batches },
	"seed":                     func(d, s *loader.Config) { d.Seed = s.Seed },
	"worker-start":             func(d, s *loader.Config) { d.WorkerStart = s.WorkerStart },
}

// register adds the knob flags. For sweep, workers, prefetch and
// persistent are lists and are registered by the sweep command instead.
func (k *knobFlags) register(cmd *cobra.Command, sweep bool) {
	d := loader.Default()
	k.cfg = d
	fl := cmd.Flags()
	fl.StringVar(&k.scenario, "scenario", "", "preset: "+strings.Join(loader.Scenarios, ", ")+" (flags given override it)")
	if !sweep {
		fl.IntVar(&k.cfg.Workers, sample.KnobWorkers.Flag, d.Workers, sample.KnobWorkers.Name+fmt.Sprintf(": loader workers; 0 loads inline in the training loop on one thread; at most %d", loader.MaxWorkers))
		fl.IntVar(&k.cfg.Prefetch, sample.KnobPrefetch.Flag, d.Prefetch, sample.KnobPrefetch.Name+": batches in flight per worker")
		fl.BoolVar(&k.cfg.Persistent, sample.KnobPersistent.Flag, d.Persistent, sample.KnobPersistent.Name+": keep workers across epochs")
	}
	fl.IntVar(&k.cfg.BatchSize, "batch-size", d.BatchSize, "samples per batch")
	fl.BoolVar(&k.cfg.Pin, sample.KnobPin.Flag, d.Pin, sample.KnobPin.Name+": copy each batch into a reused buffer on its own goroutine")
	fl.Var(sizeFlag{&k.cfg.SampleSize}, "sample-size", "bytes per sample (units: 4KiB, 1MB)")
	fl.DurationVar(&k.cfg.DecodeCost, "decode-cost", d.DecodeCost, fmt.Sprintf("CPU work per sample (hashing the bytes read; real work, not sleep; at most %gs)", loader.MaxDecodeCost.Seconds()))
	fl.Float64Var(&k.cfg.Jitter, "jitter", d.Jitter, "sigma of a lognormal per-sample variation of the decode cost")
	fl.DurationVar(&k.cfg.StepTime, "step-time", d.StepTime, "the simulated accelerator step (a sleep)")
	fl.StringVar(&k.access, sample.KnobAccess.Flag, string(d.Access), "read order: seq, random, or subseq (random start, contiguous run)")
	fl.StringVar(&k.cfg.Dataset, "dataset", "", "dataset folder (default: the user cache folder); shard files are generated once and reused")
	fl.Var(sizeFlag{&k.cfg.DatasetSize}, "dataset-size", "dataset size (units: 256MiB, 1GB)")
	fl.BoolVar(&k.cfg.DirectIO, "direct-io", d.DirectIO, "read with O_DIRECT, bypassing the page cache")
	fl.Var(sizeFlag{&k.cfg.ReadBandwidth}, "read-bandwidth", "emulate a storage link of this bandwidth, shared by all readers (20MB/s; 0: unlimited)")
	fl.DurationVar(&k.cfg.ReadLatency, "read-latency", d.ReadLatency, "emulate this latency per read (network or object storage)")
	fl.BoolVar(&k.cfg.Cache, sample.KnobCache.Flag, d.Cache, "load the dataset into RAM first")
	fl.StringVar(&k.read, "read", string(d.Read), "how samples are read: pread (a read syscall each) or mmap (shards memory-mapped; uncached pages are major faults)")
	fl.Var(sizeFlag{&k.cfg.PageCache}, "page-cache", "keep at most this much of the dataset in the page cache, evicting the rest, and start cold (emulates a dataset larger than RAM; 0: no limit)")
	fl.IntVar(&k.cfg.Epochs, "epochs", d.Epochs, "stop after N epochs (0: run until stopped)")
	fl.IntVar(&k.cfg.Batches, "batches", d.Batches, "batches per epoch (0: the whole dataset)")
	fl.Int64Var(&k.cfg.Seed, "seed", d.Seed, "seed for sample order and jitter")
	fl.DurationVar(&k.cfg.WorkerStart, "worker-start", d.WorkerStart, fmt.Sprintf("CPU work each worker does when it starts (re-paid every epoch unless --persistent; at most %gs)", loader.MaxWorkerStart.Seconds()))
	fl.StringVar(&k.events, "events", "", "write loader events (run/epoch/get-batch/training start and end) as JSON lines to this file")
}

// anyKnob says whether the user gave any knob (or a scenario).
func (k *knobFlags) anyKnob(cmd *cobra.Command) bool {
	given := false
	cmd.Flags().Visit(func(f *pflagFlag) {
		if _, ok := knobCopy[f.Name]; ok || f.Name == "scenario" {
			given = true
		}
	})
	return given
}

// config builds the configuration: the scenario preset (or the defaults)
// with the given flags on top, validated.
func (k *knobFlags) config(cmd *cobra.Command, scenario string) (loader.Config, error) {
	k.cfg.Access = loader.Access(k.access)
	k.cfg.Read = loader.ReadMode(k.read)
	c := loader.Default()
	if scenario != "" {
		var err error
		if c, err = loader.Scenario(scenario, embedded.MemAvailable()); err != nil {
			return c, usageErrorf(cmd, "--scenario: %v", err)
		}
	}
	prefetchSet := false
	cmd.Flags().Visit(func(f *pflagFlag) {
		if cp, ok := knobCopy[f.Name]; ok {
			cp(&c, &k.cfg)
		}
		prefetchSet = prefetchSet || f.Name == "prefetch"
	})
	if c.Workers == 0 && !prefetchSet {
		c.Prefetch = 0
	}
	if c.Dataset == "" {
		c.Dataset = loader.DefaultDatasetDir(c.DatasetSize)
	}
	if err := c.Validate(prefetchSet); err != nil {
		return c, usageErrorf(cmd, "%v", err)
	}
	return c, nil
}

func parseIntList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%q: want a comma-separated list of whole numbers", s)
		}
		out = append(out, v)
	}
	return out, nil
}

type pflagFlag = pflag.Flag
