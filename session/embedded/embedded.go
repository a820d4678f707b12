// Package embedded owns what the loader commands (demo, loader, tune,
// sweep) do with gpuwatch's own test loader before and around a session:
// its datasets and events file (OpenLoaders), the host's memory its presets
// scale by (MemAvailable), the loader command's progress lines
// (LoaderProgress), the demo's tour (Demo), and Source, which adapts the
// in-process loader to endpoint.LoaderSource. It runs a session through
// session.Run; session never imports it.
package embedded

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/probes/endpoint"
)

// Source adapts the in-process loader to endpoint.LoaderSource. The
// demo tour swaps the loader behind it; the probe sees the counters start
// over, which it treats as a restart.
type Source struct {
	mu sync.Mutex
	l  *loader.Loader
}

var errLoaderStarting = errors.New("the embedded loader is starting")

// Set points the source at l (nil: none yet).
func (e *Source) Set(l *loader.Loader) {
	e.mu.Lock()
	e.l = l
	e.mu.Unlock()
}

// Source implements endpoint.LoaderSource.
func (e *Source) Source() string { return "embedded" }

// LoaderCounters implements endpoint.LoaderSource.
func (e *Source) LoaderCounters(context.Context) (endpoint.LoaderCounters, error) {
	e.mu.Lock()
	l := e.l
	e.mu.Unlock()
	if l == nil {
		// Transient, not absent: an ErrUnavailable would rest the probe
		// for 30 s when the first tick comes before the loader is set.
		return endpoint.LoaderCounters{}, errLoaderStarting
	}
	c := countersFromSnapshot(l.Snapshot(), l.Config())
	c.Kind = "embedded"
	pid := os.Getpid()
	c.PID = &pid
	if tid := l.LoopTID(); tid != 0 {
		c.LoopTID = &tid
	}
	if cached, ok := l.PageCache(); ok {
		size := l.Config().DatasetSize
		c.DatasetBytes, c.DatasetCachedBytes = &size, &cached
	}
	return c, nil
}

// countersFromSnapshot converts the embedded loader's counters (the sweep
// uses it too).
func countersFromSnapshot(s loader.Snapshot, c loader.Config) endpoint.LoaderCounters {
	rs, ds := s.ReadSeconds, s.DecodeSeconds
	qd := float64(s.QueueDepth)
	w, p := c.Workers, c.Prefetch
	waiting := s.Waiting.Seconds()
	out := endpoint.LoaderCounters{
		Batches: s.Batches, Samples: s.Samples, BytesRead: s.BytesRead,
		ReadSeconds: &rs, DecodeSeconds: &ds, Buckets: loader.Buckets,
		Wait: endpoint.Hist{Counts: s.Wait.Counts, Sum: s.Wait.Sum, Count: s.Wait.Count},
		Step: endpoint.Hist{Counts: s.Step.Counts, Sum: s.Step.Sum, Count: s.Step.Count}, StepSeen: true,
		QueueDepth: &qd, Workers: &w, Prefetch: &p, Knobs: c.Knobs(), Waiting: &waiting,
		Recent: make([]endpoint.LoaderBatch, len(s.Recent)),
	}
	for i, b := range s.Recent {
		out.Recent[i] = endpoint.LoaderBatch{Seq: b.Seq, Wait: b.Wait, Step: b.Step}
	}
	bpe := c.BatchesPerEpoch()
	out.BatchesPerEpoch = &bpe
	if len(s.FirstBatch) > 1 {
		var sum time.Duration
		for _, d := range s.FirstBatch[1:] {
			sum += d
		}
		stall := sum / time.Duration(len(s.FirstBatch)-1)
		out.EpochStall = &stall
	}
	return out
}
