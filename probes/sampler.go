package probes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/bg"
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
//
// The Sampler owns its lanes and its probes' background work (see Starter):
// NewSampler starts them, Close stops them and waits (docs/architecture.md,
// "Goroutines"). Close may be called while Run or Tick runs, from any
// goroutine: it ends them first.
type Sampler struct {
	opt      SamplerOptions
	lanes    []*lane
	last     time.Time
	timer    *time.Timer
	interval chan time.Duration // SetInterval → Run
	calls    *bg.Group          // Run and Tick calls, ended and waited for by Close
	stop     chan struct{}      // closed by Close once no call runs: the lanes end
	stopOnce sync.Once
	self     *selfMeter // gpuwatch's own cost, read at the end of each tick
}

// Starter is implemented by probes that work in the background (a scan, a
// profile taken every minute, PCIe counters on their own cadence). The
// Sampler calls Start once, before the first Collect, with a context that
// ends at its Close; the probe's Close (io.Closer) then cancels that work
// and waits for it. Nothing starts a goroutine inside Collect.
type Starter interface{ Start(ctx context.Context) }

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
	busy   bool          // a call outlived its timeout and has not returned
	exited chan struct{} // closed when the lane's goroutine has closed its probes and returned
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

// NewSampler starts one goroutine per lane and the probes' background
// work. Close stops them.
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
	s := &Sampler{opt: opt, timer: time.NewTimer(time.Hour), interval: make(chan time.Duration, 1),
		calls: bg.New(context.Background()), stop: make(chan struct{}), self: newSelfMeter()}
	s.timer.Stop()
	byName := map[string]*lane{}
	for _, p := range ps {
		name := ""
		if l, ok := p.(Laned); ok {
			name = l.Lane()
		}
		ln := byName[name]
		if ln == nil || name == "" {
			ln = &lane{name: name, req: make(chan context.Context), done: make(chan struct{}, 1), exited: make(chan struct{})}
			s.lanes = append(s.lanes, ln)
			if name != "" {
				byName[name] = ln
			}
		}
		ln.probes = append(ln.probes, &slot{probe: p})
	}
	for _, p := range ps {
		if st, ok := p.(Starter); ok {
			st.Start(s.calls.Context())
		}
	}
	for _, ln := range s.lanes {
		go ln.loop(s.stop)
	}
	return s
}

// loop runs the lane's probes on each request until stop is closed, then
// closes them. A call in flight finishes first: a probe is never closed
// while it collects.
func (ln *lane) loop(stop <-chan struct{}) {
	defer close(ln.exited)
	for {
		select {
		case ctx := <-ln.req:
			for _, sl := range ln.probes {
				if !sl.skip {
					sl.err = sl.collect(ctx)
				}
			}
			ln.done <- struct{}{}
		case <-stop:
			for _, sl := range ln.probes {
				if c, ok := sl.probe.(io.Closer); ok {
					_ = c.Close()
				}
			}
			return
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
// fails: what a probe could not give is in Frame.Unavailable. After Close
// it runs nothing and says so. Tick is not called concurrently with
// itself or Run.
func (s *Sampler) Tick(ctx context.Context) *sample.Frame {
	calls, leave, ok := s.calls.Enter()
	if !ok {
		return &sample.Frame{Time: s.opt.Now(), Unavailable: map[sample.Source]string{"sampler": "closed"}}
	}
	defer leave()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(calls, cancel)()
	return s.tick(ctx)
}

// tick runs one round: it hands every lane with a probe to call the
// round's context, waits at most Timeout for them, and assembles what
// arrived into the Frame, with each missing probe's reason and gpuwatch's
// own cost (Frame.Self: its CPU and memory, and the round's wall time).
func (s *Sampler) tick(ctx context.Context) *sample.Frame {
	now := s.opt.Now()
	f := &sample.Frame{Time: now, Unavailable: make(map[sample.Source]string)}
	if !s.last.IsZero() {
		f.IntervalSec = now.Sub(s.last).Seconds()
	}
	s.last = now
	cctx, cancel := context.WithTimeout(ctx, s.opt.Timeout)
	defer cancel()
	sent := s.dispatch(cctx, f, now)
	s.gather(sent, f, now)
	end := s.opt.Now()
	f.Self = s.self.read(end, end.Sub(now))
	f.AssignRoles()
	return f
}

// dispatch sends ctx to every lane that is free and has a probe not
// resting at now, and returns those lanes. The probes of a lane still busy
// with a late call, and resting probes, are marked unavailable in f with
// their last reason.
func (s *Sampler) dispatch(ctx context.Context, f *sample.Frame, now time.Time) []*lane {
	var sent []*lane
	for _, ln := range s.lanes {
		if ln.stillBusy() {
			for _, sl := range ln.probes {
				f.Unavailable[sample.Source(sl.probe.Name())] = sl.reason
			}
			continue
		}
		ran := false
		for _, sl := range ln.probes {
			sl.skip = now.Before(sl.restUntil)
			if sl.skip {
				f.Unavailable[sample.Source(sl.probe.Name())] = sl.reason
				continue
			}
			sl.scratch, sl.err, ran = sample.Frame{Time: now}, nil, true
		}
		if !ran {
			continue
		}
		ln.req <- ctx
		ln.busy = true
		sent = append(sent, ln)
	}
	return sent
}

// gather waits for the lanes sent, all within one Timeout, and merges what
// each one's probes found into f. Once the time is up it takes the lanes
// that made it anyway, without waiting, and marks the others' probes as not
// answering.
func (s *Sampler) gather(sent []*lane, f *sample.Frame, now time.Time) {
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
		if expired && ln.stillBusy() {
			for _, sl := range ln.probes {
				if !sl.skip {
					sl.reason = fmt.Sprintf("%s probe did not answer within %v", sl.probe.Name(), s.opt.Timeout)
				}
				f.Unavailable[sample.Source(sl.probe.Name())] = sl.reason
			}
			continue
		}
		ln.merge(f, now, s.opt.RetryAfter)
	}
	s.timer.Stop() // since Go 1.23 no stale tick can remain in C
}

// stillBusy reports whether the lane's call outlived its timeout and has
// not returned yet; a late call that has returned frees the lane (its data
// is stale and is dropped with the next call).
func (ln *lane) stillBusy() bool {
	if !ln.busy {
		return false
	}
	select {
	case <-ln.done:
		ln.busy = false
		return false
	default:
		return true
	}
}

// merge adds the lane's probes' results of the call that returned to f. A
// probe that is unavailable rests until now+retryAfter; one that failed
// otherwise is retried next tick, and whatever it did fill is kept.
func (ln *lane) merge(f *sample.Frame, now time.Time, retryAfter time.Duration) {
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
			sl.restUntil = now.Add(retryAfter)
			f.Unavailable[sample.Source(sl.probe.Name())] = sl.reason
		default:
			// A failing read is reported but retried next tick;
			// whatever the probe did fill is kept.
			sl.reason = err.Error()
			f.Merge(&sl.scratch)
			f.Unavailable[sample.Source(sl.probe.Name())] = sl.reason
		}
	}
}

// Run primes the probes (counters need a baseline, so the first published
// Frame already has rates), then sends a Frame every interval until ctx
// ends or Close. A slow receiver makes ticks coalesce; frames are never
// queued up.
func (s *Sampler) Run(ctx context.Context, out chan<- *sample.Frame) error {
	calls, leave, ok := s.calls.Enter()
	if !ok {
		return errClosed
	}
	defer leave()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(calls, cancel)()
	s.tick(ctx)
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
		f := s.tick(ctx)
		select {
		case out <- f:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// errClosed is Run's error after Close.
var errClosed = errors.New("sampler closed")

// Close ends Run and Tick if they run and waits for them, then stops the
// lanes, which close their probes (io.Closer), and waits for that. A
// probe stuck in a call (a driver that does not return) is waited for at
// most twice the timeout; its lane closes it when the call returns. Close
// is safe to call more than once.
func (s *Sampler) Close() {
	s.calls.Close()
	s.stopOnce.Do(func() { close(s.stop) })
	grace := time.NewTimer(2 * s.opt.Timeout)
	defer grace.Stop()
	for _, ln := range s.lanes {
		select {
		case <-ln.exited:
		case <-grace.C:
			return
		}
	}
}
