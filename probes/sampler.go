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
// Probes run on worker goroutines, one per lane (see Laned), so a probe
// stuck in a syscall or a driver call delays nothing: the tick waits at
// most Timeout, then publishes what the other lanes found.
type Sampler struct {
	opt      SamplerOptions
	lanes    []*lane
	last     time.Time
	timer    *time.Timer
	interval chan time.Duration // SetInterval → Run
}

// Laned is implemented by probes that may share a worker goroutine with
// others of the same lane, run one after another. The /proc probes share
// the "procfs" lane: they only read files the kernel generates, which do
// not block, and one wake-up a tick instead of six matters on a VM, where
// every futex wake is an exit to the hypervisor. A probe without a lane
// (the GPU driver, a loader over HTTP) gets a worker of its own.
type Laned interface{ Lane() string }

// lane is a worker goroutine and the probes it runs.
type lane struct {
	name   string
	probes []*slot
	req    chan context.Context
	done   chan struct{}
	busy   bool // a call outlived its timeout and has not returned
}

// slot is one probe's state within its lane.
type slot struct {
	probe     Probe
	scratch   sample.Frame // written by the probe while its lane runs
	err       error
	skip      bool      // resting: not called this tick
	restUntil time.Time // unavailable: not tried again before this
	reason    string    // why the source is unavailable or failing
}

// NewSampler starts one goroutine per lane. Close stops them.
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
	s := &Sampler{opt: opt, timer: time.NewTimer(time.Hour), interval: make(chan time.Duration, 1)}
	s.timer.Stop()
	byName := map[string]*lane{}
	for _, p := range ps {
		name := ""
		if l, ok := p.(Laned); ok {
			name = l.Lane()
		}
		ln := byName[name]
		if ln == nil || name == "" {
			ln = &lane{name: name, req: make(chan context.Context), done: make(chan struct{}, 1)}
			s.lanes = append(s.lanes, ln)
			if name != "" {
				byName[name] = ln
			}
		}
		ln.probes = append(ln.probes, &slot{probe: p})
	}
	for _, ln := range s.lanes {
		go ln.loop()
	}
	return s
}

func (ln *lane) loop() {
	for ctx := range ln.req {
		for _, sl := range ln.probes {
			if !sl.skip {
				sl.err = sl.collect(ctx)
			}
		}
		ln.done <- struct{}{}
	}
	for _, sl := range ln.probes {
		if c, ok := sl.probe.(io.Closer); ok {
			_ = c.Close()
		}
	}
}

// collect calls the probe and turns a panic into an error: a probe bug must
// not take the dashboard (and the user's terminal) down with it.
func (sl *slot) collect(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("probe %s panicked: %v", sl.probe.Name(), r)
		}
	}()
	return sl.probe.Collect(ctx, &sl.scratch)
}

// SetInterval changes the time between frames of a running Run, from any
// goroutine; the newest request wins. The per-probe timeout keeps its value.
func (s *Sampler) SetInterval(d time.Duration) {
	if d <= 0 {
		return
	}
	for {
		select {
		case s.interval <- d:
			return
		default:
			select { // replace a request Run has not taken yet
			case <-s.interval:
			default:
			}
		}
	}
}

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
	var sent []*lane
	for _, ln := range s.lanes {
		if ln.busy {
			select {
			case <-ln.done: // the late call returned; its data is stale
				ln.busy = false
			default:
				for _, sl := range ln.probes {
					f.Unavailable[sl.probe.Name()] = sl.reason
				}
				continue
			}
		}
		ran := false
		for _, sl := range ln.probes {
			sl.skip = now.Before(sl.restUntil)
			if sl.skip {
				f.Unavailable[sl.probe.Name()] = sl.reason
				continue
			}
			sl.scratch, sl.err, ran = sample.Frame{Time: now}, nil, true
		}
		if !ran {
			continue
		}
		ln.req <- cctx
		ln.busy = true
		sent = append(sent, ln)
	}
	s.timer.Reset(s.opt.Timeout)
	expired := false
	for _, ln := range sent {
		if !expired {
			select {
			case <-ln.done:
				ln.busy = false
			case <-s.timer.C:
				expired = true
			}
		}
		if expired && ln.busy {
			// Collect the lanes that made it anyway, without waiting.
			select {
			case <-ln.done:
				ln.busy = false
			default:
				for _, sl := range ln.probes {
					if !sl.skip {
						sl.reason = fmt.Sprintf("%s probe did not answer within %v", sl.probe.Name(), s.opt.Timeout)
					}
					f.Unavailable[sl.probe.Name()] = sl.reason
				}
				continue
			}
		}
		for _, sl := range ln.probes {
			if sl.skip {
				continue
			}
			switch err := sl.err; {
			case err == nil:
				sl.reason = ""
				f.Merge(&sl.scratch)
			case errors.Is(err, ErrUnavailable):
				sl.reason = err.Error()
				sl.restUntil = now.Add(s.opt.RetryAfter)
				f.Unavailable[sl.probe.Name()] = sl.reason
			default:
				// A failing read is reported but retried next tick;
				// whatever the probe did fill is kept.
				sl.reason = err.Error()
				f.Merge(&sl.scratch)
				f.Unavailable[sl.probe.Name()] = sl.reason
			}
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
		case d := <-s.interval:
			t.Reset(d)
			continue
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
	for _, ln := range s.lanes {
		close(ln.req)
	}
	s.lanes = nil
}
