package tune

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/probes/endpoint"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session"
	"github.com/gpuwatch/gpuwatch/session/embedded"
)

// EmbeddedTrials run configurations of gpuwatch's own loader over one
// dataset: tune and sweep without a command (gpuwatch tune --scenario …).
type EmbeddedTrials struct {
	Base     loader.Config
	Dataset  *loader.Dataset
	Events   *loader.Events
	Interval time.Duration
	Roots    probes.Roots
	Th       diagnose.Thresholds
}

// Start is a configuration's setting.
func (e *EmbeddedTrials) Start(c loader.Config) Setting {
	all := c.Knobs()
	s := Setting{}
	for _, k := range sample.KnobFlags() {
		s[k] = all[k]
	}
	return s
}

// config is the base configuration with s set.
func (e *EmbeddedTrials) config(s Setting) (loader.Config, error) {
	c := e.Base
	for name, raw := range s {
		k := sample.KnobNamed(name)
		if k == nil || k.Flag != name {
			return c, fmt.Errorf("%s: not a knob of the embedded loader", name)
		}
		v, err := k.Parse(raw)
		if err != nil {
			return c, err
		}
		n, _ := strconv.Atoi(v) // a KnobInt's, parsed above
		on := v == "true"
		switch k {
		case sample.KnobWorkers:
			c.Workers = n
		case sample.KnobPrefetch:
			c.Prefetch = n
		case sample.KnobPersistent:
			c.Persistent = on
		case sample.KnobPin:
			c.Pin = on
		case sample.KnobCache:
			c.Cache = on
			if c.Cache {
				c.DirectIO = false // in RAM: nothing bypasses the page cache
			}
		case sample.KnobAccess:
			c.Access = loader.Access(v)
		}
	}
	if c.Workers > 0 && c.Prefetch == 0 {
		c.Prefetch = sample.PrefetchWithWorkers
	}
	if c.Workers == 0 {
		c.Prefetch, c.Persistent = 0, false
	}
	return c, c.Validate(true)
}

// Apply implements Trials: each change's flag names the knob.
func (e *EmbeddedTrials) Apply(s Setting, cs []diagnose.Change) (Setting, []diagnose.Change, error) {
	next := Setting{}
	for k, v := range s {
		next[k] = v
	}
	var unset []diagnose.Change
	for _, c := range cs {
		k := strings.TrimPrefix(c.Flag, "--")
		if !slicesContains(sample.KnobFlags(), k) {
			unset = append(unset, c)
			continue
		}
		next[k] = c.To
	}
	c, err := e.config(next)
	if err != nil {
		return nil, nil, err
	}
	return e.Start(c), unset, nil
}

func slicesContains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Describe implements Trials: the loader's flags.
func (e *EmbeddedTrials) Describe(s Setting) string {
	c, err := e.config(s)
	if err != nil {
		return fmt.Sprintf("%v (%v)", s, err)
	}
	return fmt.Sprintf("workers %d prefetch %d persistent %v cache %v", c.Workers, c.Prefetch, c.Persistent, c.Cache)
}

// Settle implements Trials: the loader runs in this process, watched by a
// session of the one probe set, until the verdict settles.
func (e *EmbeddedTrials) Settle(ctx context.Context, s Setting, limit time.Duration) (TuneStep, error) {
	cfg, err := e.config(s)
	if err != nil {
		return TuneStep{}, err
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	src := &embedded.Source{}
	l := loader.New(cfg, e.Dataset, e.Events)
	src.Set(l)
	runErr, ran := make(chan error, 1), make(chan struct{})
	go func() { runErr <- l.Run(runCtx); close(ran) }()
	// Every return waits for the loader to end: the next trial's loader
	// never overlaps this one's.
	defer func() { stopRun(); <-ran }()
	// Set-up (loading a cached dataset, once) is not the pipeline's
	// steady state: the measurement starts at the first batch.
	if err := firstBatch(runCtx, l, runErr); err != nil {
		return TuneStep{}, err
	}
	ctx, cancel := context.WithTimeout(runCtx, limit)
	defer cancel()
	w, err := session.NewWatch(ctx, session.Options{Interval: e.Interval, Thresholds: e.Th, Target: session.Target{Roots: e.Roots, Own: os.Getpid()},
		Sources: session.Sources{Probes: []probes.Probe{endpoint.NewLoader(src)}}})
	if err != nil {
		return TuneStep{}, err
	}
	defer w.Close()
	st := session.NewSettle(cancel, e.Th.MinFrames)
	rec := &tail{}
	err = w.Loop(ctx, nil, st, rec)
	stopRun()
	if lerr := <-runErr; lerr != nil && !errors.Is(lerr, context.Canceled) {
		return TuneStep{}, fmt.Errorf("loader: %w", lerr)
	}
	if err != nil {
		return TuneStep{}, err
	}
	return settledStep(st, rec)
}

// settledStep reads a settled stretch: samples/s and wait share averaged
// over it, the verdict and its changes.
func settledStep(st *session.Settle, rec *tail) (TuneStep, error) {
	if st.Frames() == 0 {
		return TuneStep{}, errors.New("no frame came")
	}
	v := st.Verdict()
	s := TuneStep{Verdict: v.Kind, Changes: v.Changes, Advice: v.Advice, NoChange: v.NoChange, Next: v.Predicted, Settled: st.Settled(),
		Seconds: st.Seconds(), Measured: rec.mean(session.SettleFrames, 0), Window: rec.frames[max(0, len(rec.frames)-3):]}
	if len(v.Evidence) > 0 {
		s.Evidence = v.Evidence[0].Text
	}
	if c, ok := diagnose.OthersCores(rec.frames[max(0, len(rec.frames)-session.SettleFrames):]); ok {
		s.OthersCores = &c
	}
	return s, nil
}

// firstBatch waits until l has handed out a batch (its set-up is done).
func firstBatch(ctx context.Context, l *loader.Loader, runErr <-chan error) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for l.Snapshot().Batches == 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-runErr:
			return fmt.Errorf("loader ended before its first batch: %v", err)
		case <-t.C:
		}
	}
	return nil
}

// Sweep implements Trials: a run of the configuration's epochs, measured
// from the loader itself.
func (e *EmbeddedTrials) Sweep(ctx context.Context, s Setting) (SweepResult, error) {
	c, err := e.config(s)
	if err != nil {
		return SweepResult{}, err
	}
	l := loader.New(c, e.Dataset, e.Events)
	start := time.Now()
	if err := l.Run(ctx); err != nil {
		return SweepResult{}, err
	}
	r := summarize(c, l, time.Since(start))
	r.Knobs, r.Command = s, e.Describe(s)
	return r, nil
}

// summarize measures a finished embedded run from the loader itself.
func summarize(c loader.Config, l *loader.Loader, wall time.Duration) SweepResult {
	s := l.Snapshot()
	sec := wall.Seconds()
	r := SweepResult{
		Workers: &c.Workers, Prefetch: &c.Prefetch, Persistent: &c.Persistent, Batches: s.Batches,
		SamplesPerSec: float64(s.Samples) / sec, MBPerSec: float64(s.BytesRead) / sec / 1e6,
		AccelBusyPct: 100 * s.Step.Sum / sec, WorkerStarts: l.WorkerStarts(), WallSeconds: sec, embedded: true,
	}
	if s.Wait.Count > 0 {
		r.WaitMeanMs = 1000 * s.Wait.Sum / float64(s.Wait.Count)
	}
	if t := s.Wait.Sum + s.Step.Sum; t > 0 {
		r.WaitShare = s.Wait.Sum / t
	}
	waits := make([]float64, 0, len(s.Recent))
	for _, b := range s.Recent {
		waits = append(waits, 1000*b.Wait.Seconds())
	}
	if uint64(len(waits)) == s.Batches && len(waits) > 0 {
		slices.Sort(waits)
		r.WaitP50Ms, r.WaitP99Ms = sample.NearestRank(waits, 0.5), sample.NearestRank(waits, 0.99)
	} else if v, ok := endpoint.BucketQuantile(0.5, loader.Buckets, s.Wait.Counts, s.Wait.Count); ok {
		r.WaitP50Ms = 1000 * v
		v, _ = endpoint.BucketQuantile(0.99, loader.Buckets, s.Wait.Counts, s.Wait.Count)
		r.WaitP99Ms = 1000 * v
	}
	if len(s.FirstBatch) > 0 {
		r.FirstBatchMs = float64(s.FirstBatch[0].Microseconds()) / 1000
	}
	if len(s.FirstBatch) > 1 {
		var sum time.Duration
		for _, d := range s.FirstBatch[1:] {
			sum += d
		}
		r.EpochStallMs = float64(sum.Microseconds()) / 1000 / float64(len(s.FirstBatch)-1)
	}
	return r
}
