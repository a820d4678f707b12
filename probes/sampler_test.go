package probes

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// fakeProbe fills Mem.TotalBytes with its call count, or does what its
// hooks say.
type fakeProbe struct {
	name  string
	calls atomic.Int64
	err   error
	block chan struct{} // when set, Collect waits on it
	panic bool
}

func (p *fakeProbe) Name() string { return p.name }

func (p *fakeProbe) Collect(ctx context.Context, f *sample.Frame) error {
	n := p.calls.Add(1)
	if p.block != nil {
		<-p.block
	}
	if p.panic {
		panic("boom")
	}
	if p.err != nil {
		return p.err
	}
	f.Mem = &sample.Mem{TotalBytes: uint64(n)}
	return nil
}

// cpuFake fills the CPU part so two fakes don't write the same part.
type cpuFake struct{ fakeProbe }

func (p *cpuFake) Collect(ctx context.Context, f *sample.Frame) error {
	p.calls.Add(1)
	f.CPU = &sample.CPU{BusyPct: 42}
	return nil
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestSamplerStuckProbeDoesNotHoldTheTick(t *testing.T) {
	stuck := &fakeProbe{name: "mem", block: make(chan struct{})}
	ok := &cpuFake{fakeProbe{name: "cpu"}}
	c := &clock{t: t0}
	s := NewSampler([]Probe{stuck, ok}, SamplerOptions{Interval: time.Second, Timeout: 20 * time.Millisecond, Now: c.now})
	defer s.Close()

	f := s.Tick(context.Background())
	if f.CPU == nil || f.CPU.BusyPct != 42 {
		t.Fatalf("the healthy probe's part is missing: %+v", f)
	}
	if !strings.Contains(f.Unavailable[sample.SourceMem], "did not answer") {
		t.Fatalf("unavailable = %v, want the stuck probe named", f.Unavailable)
	}
	// Still stuck: not called again, still reported.
	c.t = c.t.Add(time.Second)
	f = s.Tick(context.Background())
	if stuck.calls.Load() != 1 || f.Unavailable[sample.SourceMem] == "" {
		t.Fatalf("calls = %d, unavailable = %v", stuck.calls.Load(), f.Unavailable)
	}
	// Released: the late result is dropped, the next call is fresh.
	close(stuck.block)
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.t = c.t.Add(time.Second)
		f = s.Tick(context.Background())
		if f.Mem != nil || time.Now().After(deadline) {
			break
		}
		runtime.Gosched()
	}
	if f.Mem == nil || f.Unavailable[sample.SourceMem] != "" {
		t.Fatalf("probe did not recover: %+v", f)
	}
	if f.Mem.TotalBytes < 2 {
		t.Fatalf("published the stale late result (call %d)", f.Mem.TotalBytes)
	}
}

func TestSamplerUnavailableIsRetriedRarely(t *testing.T) {
	p := &fakeProbe{name: "gpu", err: Unavailable("libnvidia-ml.so.1 not found")}
	c := &clock{t: t0}
	s := NewSampler([]Probe{p}, SamplerOptions{Interval: time.Second, RetryAfter: 30 * time.Second, Now: c.now})
	defer s.Close()
	for i := 0; i < 30; i++ {
		f := s.Tick(context.Background())
		if f.Unavailable[sample.SourceGPU] != "libnvidia-ml.so.1 not found" {
			t.Fatalf("tick %d: unavailable = %v", i, f.Unavailable)
		}
		c.t = c.t.Add(time.Second)
	}
	if n := p.calls.Load(); n != 1 {
		t.Fatalf("tried %d times in 30 s, want once", n)
	}
	s.Tick(context.Background())
	if n := p.calls.Load(); n != 2 {
		t.Fatalf("not retried after RetryAfter (calls = %d)", n)
	}
}

func TestSamplerFailingAndPanickingProbesAreReportedAndRetried(t *testing.T) {
	failing := &fakeProbe{name: "mem", err: errors.New("read /proc/meminfo: EIO")}
	panicky := &cpuFake{fakeProbe{name: "cpu"}}
	bad := &fakeProbe{name: "disk", panic: true}
	c := &clock{t: t0}
	s := NewSampler([]Probe{failing, panicky, bad}, SamplerOptions{Now: c.now})
	defer s.Close()
	for i := 0; i < 3; i++ {
		f := s.Tick(context.Background())
		if f.Unavailable[sample.SourceMem] != "read /proc/meminfo: EIO" {
			t.Fatalf("unavailable = %v", f.Unavailable)
		}
		if !strings.Contains(f.Unavailable[sample.SourceDisk], "panicked") {
			t.Fatalf("panic not reported: %v", f.Unavailable)
		}
		if f.CPU == nil {
			t.Fatal("a failing probe stopped the others")
		}
		c.t = c.t.Add(time.Second)
	}
	if failing.calls.Load() != 3 || bad.calls.Load() != 3 {
		t.Fatalf("plain errors are retried every tick: calls %d, %d", failing.calls.Load(), bad.calls.Load())
	}
}

func TestSamplerIntervalFromClock(t *testing.T) {
	c := &clock{t: t0}
	s := NewSampler(nil, SamplerOptions{Now: c.now})
	defer s.Close()
	if f := s.Tick(context.Background()); f.IntervalSec != 0 || !f.Time.Equal(t0) {
		t.Fatalf("first frame = %+v", f)
	}
	c.t = c.t.Add(1500 * time.Millisecond)
	if f := s.Tick(context.Background()); f.IntervalSec != 1.5 {
		t.Fatalf("interval = %v, want 1.5", f.IntervalSec)
	}
}

func TestSamplerRunStopsOnCancel(t *testing.T) {
	s := NewSampler([]Probe{&cpuFake{fakeProbe{name: "cpu"}}}, SamplerOptions{Interval: 50 * time.Millisecond})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan *sample.Frame)
	done := make(chan error)
	go func() { done <- s.Run(ctx, out) }()
	f := <-out
	if f.CPU == nil {
		t.Fatal("frame without the probe's part")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
}

// lanedFake is a fakeProbe in a named lane.
type lanedFake struct {
	*fakeProbe
	lane string
}

func (p lanedFake) Lane() string { return p.lane }

func TestSamplerLanesShareAWorkerAndItsFate(t *testing.T) {
	stuck := &fakeProbe{name: "mem", block: make(chan struct{})}
	sibling := &cpuFake{fakeProbe{name: "cpu"}}
	other := &fakeProbe{name: "gpu", err: errors.New("driver busy")}
	c := &clock{t: t0}
	s := NewSampler([]Probe{lanedFake{stuck, "procfs"}, lanedCPU{sibling, "procfs"}, other},
		SamplerOptions{Interval: time.Second, Timeout: 20 * time.Millisecond, Now: c.now})
	defer s.Close()
	if len(s.lanes) != 2 {
		t.Fatalf("%d lanes, want procfs and one of its own for gpu", len(s.lanes))
	}
	f := s.Tick(context.Background())
	// The stuck probe holds its lane: its sibling could not run either.
	if f.Unavailable[sample.SourceMem] == "" || f.Unavailable[sample.SourceCPU] == "" || f.CPU != nil {
		t.Fatalf("unavailable = %v, cpu = %v", f.Unavailable, f.CPU)
	}
	// Another lane is not held up.
	if f.Unavailable[sample.SourceGPU] != "driver busy" {
		t.Fatalf("gpu = %q", f.Unavailable[sample.SourceGPU])
	}
	close(stuck.block)
}

type lanedCPU struct {
	*cpuFake
	lane string
}

func (p lanedCPU) Lane() string { return p.lane }

// closingProbe counts its Close calls; it works in the background from
// Start until Close, which waits for it.
type closingProbe struct {
	fakeProbe
	started, closed int
	bgDone          chan struct{}
}

func (p *closingProbe) Start(ctx context.Context) {
	p.started++
	p.bgDone = make(chan struct{})
	go func() { <-ctx.Done(); close(p.bgDone) }()
}

func (p *closingProbe) Close() error {
	<-p.bgDone
	p.closed++
	return nil
}

// TestSamplerCloseDuringRunEndsRunFirst: Close from another goroutine
// while Run ticks ends Run, waits for it, then stops the lanes, which
// close each probe once: no tick races the lanes' end (bde0bec's CI
// race: a send on a closed lane; -race and 50 runs in CI), and Run after
// Close runs nothing.
func TestSamplerCloseDuringRunEndsRunFirst(t *testing.T) {
	p := &closingProbe{fakeProbe: fakeProbe{name: "mem"}}
	s := NewSampler([]Probe{p}, SamplerOptions{Interval: time.Millisecond, Timeout: time.Second})
	if p.started != 1 {
		t.Fatalf("Start called %d times by NewSampler", p.started)
	}
	frames := make(chan *sample.Frame)
	ran := make(chan error, 1)
	go func() { ran <- s.Run(context.Background(), frames) }()
	<-frames
	<-frames  // Run is ticking
	s.Close() // Run's call has ended when Close returns; its result follows
	if err := <-ran; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run ended with %v, want context.Canceled", err)
	}
	if p.closed != 1 {
		t.Fatalf("probe closed %d times", p.closed)
	}
	s.Close()
	if p.closed != 1 {
		t.Fatalf("a second Close closed the probe again (%d)", p.closed)
	}
	if err := s.Run(context.Background(), frames); err == nil {
		t.Fatal("Run after Close ran")
	}
	if f := s.Tick(context.Background()); f.Unavailable[sample.SourceSampler] != "closed" {
		t.Fatalf("Tick after Close: %v", f.Unavailable)
	}
}

// t0 is when the fake clock of these tests starts.
var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
