package session

import (
	"context"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/sample"
)

// Watch is a session's sources running: the probe set built from its
// Options and the Sampler over them. NewWatch is the one assembler: plain
// watching and the dashboard (Run, and so demo and run), tune's and
// sweep's trials all watch through it, and nothing else makes a Sampler
// (docs/architecture.md). Close stops it and waits.
type Watch struct {
	set     *probeSet
	sampler *probes.Sampler
	th      diagnose.Thresholds
	bias    biasLines // an advice line for a verdict that predicts (loop); Run sets it
}

// NewWatch builds o's probes and starts sampling them every o.Interval;
// nothing reaches an observer before Loop. It calls o.Started once they
// are built.
func NewWatch(ctx context.Context, o Options) (*Watch, error) {
	set, err := newProbeSet(ctx, o)
	if err != nil {
		return nil, err
	}
	if o.Started != nil {
		o.Started()
	}
	return &Watch{set: set, sampler: probes.NewSampler(set.probes, probes.SamplerOptions{Interval: o.Interval}), th: o.Thresholds}, nil
}

// Loop runs the session's one frame loop over the watch (see loop) with a
// fresh Diagnoser on its thresholds, until ctx ends, the sampler fails or
// an observer does.
func (w *Watch) Loop(ctx context.Context, notes <-chan sample.Note, obs ...Observer) error {
	return loop(ctx, w.sampler, diagnose.NewDiagnoser(w.th), w.bias, notes, obs)
}

// Close stops the sampler and the probes' background work, and waits.
func (w *Watch) Close() { w.sampler.Close() }
