package probes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// SamplerOptions tune a Sampler. Zero values take the defaults.
type SamplerOptions struct {
	// Interval between frames (default 1 s).
	Interval time.Duration
	// Timeout for one probe's Collect (default: half the interval, at most
	// 2 s). A probe still running then is left to finish on its own and
	// skipped until it does; the Frame says so.
	Timeout time.Duration
	// RetryAfter is how long an unavailable source rests before it is
	// tried again (default 30 s).
	RetryAfter time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Sampler runs probes and assembles their parts into one Frame per tick.
// Each probe has a goroutine of its own, so a probe stuck in a syscall or a
// driver call delays nothing: the tick waits at most Timeout, then publishes
// what the others found.
type Sampler struct {
	opt     SamplerOptions
	workers []*worker
	last    time.Time
	timer   *time.Timer
}

type worker struct {
	probe     Probe
	req       chan context.Context
	done      chan error
	scratch   sample.Frame // written by the probe while a call is under way
	busy      bool         // a call outlived its timeout and has not returned
	restUntil time.Time    // unavailable: not tried again before this
	reason    string       // why the source is unavailable or failing
}

// NewSampler starts one goroutine per probe. Close stops them.
func NewSampler(ps []Probe, opt SamplerOptions) *Sampler {
	if opt.Interval <= 0 {
		opt.Interval = time.Second
	}
	if opt.Timeout <= 0 {
		opt.Timeout = min(opt.Interval/2, 2*time.Second)
	}
	if opt.RetryAfter <= 0 {
		opt.RetryAfter = 30 * time.Second
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	s := &Sampler{opt: opt, timer: time.NewTimer(time.Hour)}
	s.timer.Stop()
	for _, p := range ps {
		w := &worker{probe: p, req: make(chan context.Context), done: make(chan error, 1)}
		go w.loop()
		s.workers = append(s.workers, w)
	}
	return s
}

func (w *worker) loop() {
	for ctx := range w.req {
		w.done <- w.collect(ctx)
	}
	if c, ok := w.probe.(io.Closer); ok {
		_ = c.Close()
	}
}

// collect calls the probe and turns a panic into an error: a probe bug must
// not take the dashboard (and the user's terminal) down with it.
func (w *worker) collect(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("probe %s panicked: %v", w.probe.Name(), r)
		}
	}()
	return w.probe.Collect(ctx, &w.scratch)
}

// Interval is the time between frames.
func (s *Sampler) Interval() time.Duration { return s.opt.Interval }

// Tick runs every probe once and returns the assembled Frame. It never
// fails: what a probe could not give is in Frame.Unavailable.
func (s *Sampler) Tick(ctx context.Context) *sample.Frame {
	now := s.opt.Now()
	f := &sample.Frame{Time: now, Unavailable: make(map[string]string)}
	if !s.last.IsZero() {
		f.IntervalSec = now.Sub(s.last).Seconds()
	}
	s.last = now
	cctx, cancel := context.WithTimeout(ctx, s.opt.Timeout)
	defer cancel()
	for _, w := range s.workers {
		if w.busy {
			select {
			case <-w.done: // the late call returned; its data is stale
				w.busy = false
			default:
				f.Unavailable[w.probe.Name()] = w.reason
				continue
			}
		}
		if now.Before(w.restUntil) {
			f.Unavailable[w.probe.Name()] = w.reason
			continue
		}
		w.scratch = sample.Frame{Time: now}
		w.req <- cctx
		w.busy = true
	}
	s.timer.Reset(s.opt.Timeout)
	expired := false
	for _, w := range s.workers {
		if !w.busy || f.Unavailable[w.probe.Name()] != "" {
			continue
		}
		var err error
		if !expired {
			select {
			case err = <-w.done:
				w.busy = false
			case <-s.timer.C:
				expired = true
			}
		}
		if expired {
			// Collect the ones that made it anyway, without waiting.
			select {
			case err = <-w.done:
				w.busy = false
			default:
				w.reason = fmt.Sprintf("%s probe did not answer within %v", w.probe.Name(), s.opt.Timeout)
				f.Unavailable[w.probe.Name()] = w.reason
				continue
			}
		}
		switch {
		case err == nil:
			w.reason = ""
			f.Merge(&w.scratch)
		case errors.Is(err, ErrUnavailable):
			w.reason = err.Error()
			w.restUntil = now.Add(s.opt.RetryAfter)
			f.Unavailable[w.probe.Name()] = w.reason
		default:
			// A failing read is reported but retried next tick; whatever
			// the probe did fill is kept.
			w.reason = err.Error()
			f.Merge(&w.scratch)
			f.Unavailable[w.probe.Name()] = w.reason
		}
	}
	s.timer.Stop() // since Go 1.23 no stale tick can remain in C
	return f
}

// Run primes the probes (counters need a baseline, so the first published
// Frame already has rates), then sends a Frame every interval until ctx
// ends. A slow receiver makes ticks coalesce; frames are never queued up.
func (s *Sampler) Run(ctx context.Context, out chan<- *sample.Frame) error {
	s.Tick(ctx)
	t := time.NewTicker(s.opt.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		f := s.Tick(ctx)
		select {
		case out <- f:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close stops the probe goroutines and closes probes that are io.Closers.
// A probe stuck in a call is closed when that call returns.
func (s *Sampler) Close() {
	for _, w := range s.workers {
		close(w.req)
	}
	s.workers = nil
}
