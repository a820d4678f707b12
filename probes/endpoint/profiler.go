package endpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/pprofsum"
	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/internal/bg"
	"github.com/gpuwatch/gpuwatch/sample"
)

// maxProfileDownload caps what is fetched (16 MiB; a loader's CPU profile
// is a few hundred KiB gzipped): a bigger one is skipped.
const maxProfileDownload = 16 << 20

// Profiler fetches a CPU profile from an attached loader every `every`,
// each `seconds` long, on its own goroutine, and keeps the latest summary; its
// Collect only copies that summary into the frame. A profile that fails
// (truncated, not gzip, not protobuf, over MaxProfileBytes) is skipped with
// its reason, and the previous summary stays.
type Profiler struct {
	pick    func() *Attach // the loader to profile now
	ready   func() bool    // the loop has had its first batch; nil: always
	every   time.Duration
	seconds int
	now     func() time.Time
	poll    time.Duration // between looks for the first turn (firstPoll)

	mu      sync.Mutex
	latest  *sample.Profile
	lastErr string
	g       *bg.Group // the fetching goroutine; nil before Start
}

// NewProfilerOf returns a Profiler that profiles, each turn, the loader
// pick names then: of several ranks, the one that paces the job (see
// Ranks.Pacing), not every rank every turn.
func NewProfilerOf(pick func() *Attach, every, length time.Duration) *Profiler {
	return &Profiler{pick: pick, every: every, seconds: max(1, int(length.Seconds())), now: time.Now, poll: firstPoll}
}

// firstPoll is how often the profiler looks, before its first turn,
// whether there is a loader to profile and its loop has started.
const firstPoll = time.Second

// FirstAfter makes the first profile wait until ready says the loop has
// had its first batch (see Ranks.Started), or `every` at the latest: a
// profile of the imports and the dataset's build says little about the
// loop, and one a whole `every` later comes after a short run has ended.
// Call it before Start.
func (p *Profiler) FirstAfter(ready func() bool) { p.ready = ready }

// Start implements Starter: it takes the first profile as soon as there
// is a loader to profile whose loop has started (FirstAfter), looking every
// firstPoll, and then one every `every`, until ctx ends or Close. Call it
// once.
func (p *Profiler) Start(ctx context.Context) {
	p.g = bg.New(ctx)
	p.g.Go(func(ctx context.Context) {
		if !p.waitFirst(ctx) {
			return
		}
		t := time.NewTicker(p.every)
		defer t.Stop()
		for {
			p.fetch(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
}

// waitFirst returns when the first turn is due: a loader to profile is
// known and its loop has started, or `every` has passed with a loader
// known (a dataset that builds for minutes is profiled at the cadence, as
// before). False when ctx ended first.
func (p *Profiler) waitFirst(ctx context.Context) bool {
	start := p.now()
	t := time.NewTicker(p.poll)
	defer t.Stop()
	for {
		if p.pick() != nil && (p.ready == nil || p.ready() || p.now().Sub(start) >= p.every) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// busyRetries is how often a profile refused because another one is
// being taken is retried before the turn is skipped.
const busyRetries = 4

func (p *Profiler) fetch(ctx context.Context) {
	s, err := p.take(ctx)
	for try := 0; errors.Is(err, errProfilingBusy) && try < busyRetries; try++ {
		// Another watcher (a dashboard beside serve) is profiling the same
		// Go process, which allows one CPU profile at a time: come back at
		// a random point within the next profile's length, so two watchers
		// on the same cadence fall out of step instead of colliding again.
		wait := time.Duration(p.seconds)*time.Second/2 + rand.N(time.Duration(p.seconds)*time.Second)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		s, err = p.take(ctx)
	}
	if ctx.Err() != nil || errors.Is(err, errNothingToProfile) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.lastErr = "profile skipped: " + err.Error()
		return
	}
	p.latest, p.lastErr = s, ""
}

func (p *Profiler) take(ctx context.Context) (*sample.Profile, error) {
	limit := time.Duration(p.seconds+10) * time.Second
	a := p.pick()
	if a == nil {
		return nil, errNothingToProfile
	}
	resp, err := a.get(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", p.seconds), limit)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := probes.ReadCapped(resp.Body, 4<<10, "error")
		if resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusInternalServerError && bytes.Contains(msg, []byte("already in use")) {
			return nil, errProfilingBusy
		}
		return nil, fmt.Errorf("/debug/pprof/profile answered %s", resp.Status)
	}
	data, err := probes.ReadCapped(resp.Body, maxProfileDownload, "profile")
	if err != nil {
		return nil, fmt.Errorf("/debug/pprof/profile: %w", a.explain(err, limit))
	}
	s, err := pprofsum.SummarizeProfile(data, 10)
	if err != nil {
		return nil, err
	}
	if s.TakenAt.IsZero() {
		s.TakenAt = p.now()
	}
	s.Source = a.Source()
	return s, nil
}

// errNothingToProfile: no loader is known yet (discovery has found none);
// the turn passes without a word.
var errNothingToProfile = errors.New("no loader to profile yet")

// errProfilingBusy is the answer while another CPU profile of the same
// process runs: Go's 500 "cpu profiling already in use", the Python
// hook's 409.
var errProfilingBusy = errors.New("another CPU profile of the loader is being taken")

// Name implements Probe.
func (p *Profiler) Name() string { return "profile" }

// Lane implements Laned: it shares the attached loader's worker.
func (p *Profiler) Lane() string { return "attach" }

// Collect implements Probe: the latest summary, and why the newest profile
// was skipped if it was.
func (p *Profiler) Collect(_ context.Context, f *sample.Frame) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.latest == nil && p.lastErr == "" {
		return nil // the first profile is still being taken
	}
	out := &sample.Profile{}
	if p.latest != nil {
		c := *p.latest
		out = &c
	}
	out.Error = p.lastErr
	f.Profile = out
	return nil
}

// Close stops the goroutine and waits for it.
func (p *Profiler) Close() error {
	if p.g != nil {
		p.g.Close()
	}
	return nil
}
