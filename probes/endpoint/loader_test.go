package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
	"github.com/gpuwatch/gpuwatch/sample"
)

// fakeLoader returns the counters it is given, in turn.
type fakeLoader struct {
	c   LoaderCounters
	err error
}

func (f *fakeLoader) Source() string { return "fake" }
func (f *fakeLoader) LoaderCounters(context.Context) (LoaderCounters, error) {
	return f.c, f.err
}

var buckets = []float64{0.001, 0.01, 0.1, 1}

// counters after n batches of wait w and step s each.
func counters(n int, w, s time.Duration) LoaderCounters {
	c := LoaderCounters{Batches: uint64(n), Samples: uint64(32 * n), BytesRead: uint64(n) << 20, Buckets: buckets,
		Wait: Hist{Counts: make([]uint64, len(buckets))}, Step: Hist{Counts: make([]uint64, len(buckets))}, StepSeen: true}
	rs, ds := float64(n)*0.01, float64(n)*0.04
	c.ReadSeconds, c.DecodeSeconds = &rs, &ds
	for i := 1; i <= n; i++ {
		c.Wait.Sum += w.Seconds()
		c.Step.Sum += s.Seconds()
		c.Wait.Count++
		c.Step.Count++
		for j, b := range buckets {
			if w.Seconds() <= b {
				c.Wait.Counts[j]++
			}
			if s.Seconds() <= b {
				c.Step.Counts[j]++
			}
		}
		c.Recent = append(c.Recent, LoaderBatch{Seq: uint64(i), Wait: w, Step: s})
	}
	return c
}

func collectLoader(t *testing.T, p *Loader, at time.Time) *sample.Frame {
	t.Helper()
	f := probetest.FrameAt(at)
	if err := p.Collect(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLoaderRatesShareAndVirtualAccelerator(t *testing.T) {
	src := &fakeLoader{c: counters(10, 30*time.Millisecond, 70*time.Millisecond)}
	p := NewLoader(src)
	if f := collectLoader(t, p, probetest.T0); f.Loader == nil || f.Loader.WaitShare != nil || f.Accel != nil || !f.Loader.RatesPending {
		t.Fatalf("first reading = %+v: want the part but no interval figures, its rates pending", f.Loader)
	}
	src.c = counters(20, 30*time.Millisecond, 70*time.Millisecond)
	f := collectLoader(t, p, probetest.T0.Add(time.Second))
	l := f.Loader
	if l.RatesPending {
		t.Error("second reading: rates still pending")
	}
	probetest.Near(t, "batches/s", l.BatchesPerSec, 10)
	probetest.Near(t, "samples/s", l.SamplesPerSec, 320)
	probetest.Near(t, "bytes/s", l.BytesPerSec, 10<<20)
	probetest.NearPtr(t, "wait share", l.WaitShare, 0.3)
	probetest.NearPtr(t, "wait mean", l.WaitMeanMs, 30)
	probetest.NearPtr(t, "wait p99 (exact from the batch list)", l.WaitP99Ms, 30)
	probetest.NearPtr(t, "step mean", l.StepMeanMs, 70)
	probetest.NearPtr(t, "read s/s", l.ReadSecPerSec, 0.1)
	probetest.NearPtr(t, "decode s/s", l.DecodeSecPerSec, 0.4)
	if len(l.Timeline) != 10 || l.Timeline[0].WaitMs != 30 {
		t.Fatalf("timeline = %+v", l.Timeline)
	}
	// 10 steps of 70 ms in 1 s: the accelerator is 70 % busy.
	if f.Accel == nil || f.Accel.BusyPct < 69.99 || f.Accel.BusyPct > 70.01 {
		t.Fatalf("virtual accel = %+v", f.Accel)
	}
	// While the ceiling replays kept batches the loader's steps stop: its
	// busy share is unknown, not 0 % (a review of the H200 recording).
	src.c = counters(20, 30*time.Millisecond, 70*time.Millisecond)
	src.c.Ceiling = &sample.Ceiling{State: sample.CeilingReplaying}
	f = collectLoader(t, p, probetest.T0.Add(2*time.Second))
	if f.Accel != nil || !strings.Contains(f.Unavailable["loader.step_seconds"], "the ceiling replays kept batches") {
		t.Fatalf("replaying: virtual accel %+v, %q", f.Accel, f.Unavailable["loader.step_seconds"])
	}
}

// TestNoStepTimeNoVirtualAccelerator: a loader that counts its batches
// but publishes no step time (a hostile user's review: it read "0 %
// busy", then healthy) has no virtual accelerator, and says why.
func TestNoStepTimeNoVirtualAccelerator(t *testing.T) {
	bare := func(n int) LoaderCounters {
		c := counters(n, 30*time.Millisecond, 70*time.Millisecond)
		c.Step, c.StepSeen = Hist{}, false
		return c
	}
	src := &fakeLoader{c: bare(10)}
	p := NewLoader(src)
	collectLoader(t, p, probetest.T0)
	src.c = bare(20)
	f := collectLoader(t, p, probetest.T0.Add(time.Second))
	if f.Accel != nil {
		t.Fatalf("virtual accel = %+v from a loader that times no step", f.Accel)
	}
	if why := f.Unavailable["loader.step_seconds"]; !strings.Contains(why, "no step time") {
		t.Fatalf("unavailable = %v: want the step time named as unread", f.Unavailable)
	}
	probetest.Near(t, "batches/s", f.Loader.BatchesPerSec, 10)
	// Its waits still say how much of the wall time the loop waited: 10
	// waits of 30 ms in 1 s, 30 % (not the waits over themselves, 100 %).
	if f.Loader.WaitShare == nil {
		t.Fatal("no wait share from a loader that times its waits")
	}
	probetest.Near(t, "wait share", *f.Loader.WaitShare, 0.3)
}

// A loop inside next() through a whole interval completes no batch: the
// wait under way says how much of the interval it waited (the rest it
// stepped), stuck for longer reads 1, and a loop not waiting says
// nothing of its share, as before.
func TestLoaderWaitUnderWayIsTheShareOfAnIntervalWithNoBatch(t *testing.T) {
	for _, c := range []struct {
		waiting float64
		want    *float64
	}{{0.4, probes.Ptr(0.4)}, {5, probes.Ptr(1.0)}, {0, nil}} {
		src := &fakeLoader{c: counters(10, 30*time.Millisecond, 70*time.Millisecond)}
		p := NewLoader(src)
		collectLoader(t, p, probetest.T0)
		src.c.Waiting = &c.waiting
		l := collectLoader(t, p, probetest.T0.Add(time.Second)).Loader
		if c.want == nil {
			if l.WaitShare != nil {
				t.Errorf("waiting %g: share %g, want none", c.waiting, *l.WaitShare)
			}
			continue
		}
		probetest.NearPtr(t, "wait share", l.WaitShare, *c.want)
		probetest.NearPtr(t, "waiting ms", l.WaitingMs, 1000*c.waiting)
	}
}

// oneMoreBatch is c with one more batch handed out: a wait of wait
// seconds, then a step of step seconds, both counted in bucket 3 (the
// tests read sums and counts, not the buckets).
func oneMoreBatch(c LoaderCounters, wait, step float64) LoaderCounters {
	c.Batches++
	c.Wait.Count, c.Wait.Sum = c.Wait.Count+1, c.Wait.Sum+wait
	c.Step.Count, c.Step.Sum = c.Step.Count+1, c.Step.Sum+step
	c.Wait.Counts[3]++
	c.Step.Counts[3]++
	return c
}

// A wait that spans a read is counted in the intervals it passed in: 0.4 s
// of it before the read (that interval's share), the rest, 0.5 s, after;
// then 0.3 s of the next wait under way at the next read.
func TestLoaderWaitSpanningAReadIsSplitAtIt(t *testing.T) {
	src := &fakeLoader{c: counters(10, 30*time.Millisecond, 70*time.Millisecond)}
	p := NewLoader(src)
	collectLoader(t, p, probetest.T0)
	waiting := 0.4
	src.c.Waiting = &waiting
	probetest.NearPtr(t, "interval 1 (no batch, 0.4 s waiting)", collectLoader(t, p, probetest.T0.Add(time.Second)).Loader.WaitShare, 0.4)
	c := oneMoreBatch(counters(10, 30*time.Millisecond, 70*time.Millisecond), 0.9, 0.2) // the wait ends, 0.9 s in all
	next := 0.3
	c.Waiting = &next
	src.c = c
	// (0.9 − 0.4 + 0.3) ÷ (0.8 + 0.2): 0.8; counted whole it read 0.9 ÷ 1.1.
	probetest.NearPtr(t, "interval 2", collectLoader(t, p, probetest.T0.Add(2*time.Second)).Loader.WaitShare, 0.8)
}

// A step of many seconds completes no batch in the intervals it spans:
// the step under way says the loop was busy through them (the virtual
// accelerator 100 % busy, the loop not waiting), not idle; when it ends,
// it counts whole in the interval it ends in, and the step under way at
// the last read is not taken off it (it may be another iterator's, never
// recorded: a starved loop read 30 % busy, and 100 % with such a step
// taken off its own).
func TestLoaderStepUnderWayKeepsTheAcceleratorBusy(t *testing.T) {
	src := &fakeLoader{c: counters(10, 30*time.Millisecond, 70*time.Millisecond)}
	p := NewLoader(src)
	collectLoader(t, p, probetest.T0)
	for i, stepping := range []float64{1.6, 2.6} { // a step 0.6 s in at the first read: 1.6 and 2.6 s at the next two
		src.c.Stepping = &stepping
		f := collectLoader(t, p, probetest.T0.Add(time.Duration(i+1)*time.Second))
		if f.Accel == nil || f.Accel.BusyPct < 99.99 {
			t.Fatalf("interval %d, %g s into a step: virtual accel %+v, want 100 %% busy", i+1, stepping, f.Accel)
		}
		probetest.NearPtr(t, "wait share while stepping", f.Loader.WaitShare, 0)
		probetest.NearPtr(t, "stepping ms", f.Loader.SteppingMs, 1000*stepping)
	}
	// The step ends 3.0 s in, 0.4 s past the last read; the loop waits
	// 0.1 s and steps again, 0.5 s in at this read.
	c := oneMoreBatch(counters(10, 30*time.Millisecond, 70*time.Millisecond), 0.1, 3.0)
	again := 0.5
	c.Stepping = &again
	src.c = c
	f := collectLoader(t, p, probetest.T0.Add(3*time.Second))
	// The step counts whole: 3.0 s of step, 0.1 s of wait.
	if f.Accel == nil || f.Accel.BusyPct < 99.99 {
		t.Fatalf("the interval the step ended in: virtual accel %+v, want 100 %% busy", f.Accel)
	}
	probetest.NearPtr(t, "wait share", f.Loader.WaitShare, 0.1/3.1)
	probetest.NearPtr(t, "step mean (whole steps)", f.Loader.StepMeanMs, 3000)
	// A starved loop (10 batches/s: 70 ms waits, 30 ms steps) after a read
	// that said a step 600 s under way (an abandoned iterator's): 70 %
	// waiting, 30 % busy, as without it.
	stale, none := 600.0, 0.0
	q := NewLoader(src)
	src.c = counters(10, 70*time.Millisecond, 30*time.Millisecond)
	src.c.Stepping = &stale
	collectLoader(t, q, probetest.T0)
	src.c = counters(20, 70*time.Millisecond, 30*time.Millisecond)
	src.c.Stepping = &none
	f = collectLoader(t, q, probetest.T0.Add(time.Second))
	probetest.NearPtr(t, "starved loop's wait share", f.Loader.WaitShare, 0.7)
	if f.Accel == nil || f.Accel.BusyPct < 29.99 || f.Accel.BusyPct > 30.01 {
		t.Errorf("starved loop after a stale step: virtual accel %+v, want 30 %% busy", f.Accel)
	}
}

func TestLoaderPercentilesFromBucketsWithoutBatchList(t *testing.T) {
	src := &fakeLoader{c: counters(0, 0, 0)}
	p := NewLoader(src)
	collectLoader(t, p, probetest.T0)
	c := counters(100, 5*time.Millisecond, 20*time.Millisecond)
	c.Recent = nil // a loader seen only through /metrics
	src.c = c
	l := collectLoader(t, p, probetest.T0.Add(time.Second)).Loader
	// All 100 waits are in the (1 ms, 10 ms] bucket: p50 interpolates to
	// the middle of it, as histogram_quantile does.
	probetest.NearPtr(t, "p50", l.WaitP50Ms, 5.5)
	probetest.NearPtr(t, "p99", l.WaitP99Ms, 9.91)
}

func TestLoaderRestartCountsFromZero(t *testing.T) {
	src := &fakeLoader{c: counters(500, 10*time.Millisecond, 10*time.Millisecond)}
	p := NewLoader(src)
	collectLoader(t, p, probetest.T0)
	src.c = counters(4, 60*time.Millisecond, 20*time.Millisecond) // a new loader, 4 batches in
	l := collectLoader(t, p, probetest.T0.Add(time.Second)).Loader
	if l.BatchesPerSec != 4 || l.WaitShare == nil {
		t.Fatalf("after a restart: %+v", l)
	}
	probetest.NearPtr(t, "wait share after restart", l.WaitShare, 0.75)
	probetest.NearPtr(t, "read s/s after restart", l.ReadSecPerSec, 0.04)
}

func TestLoaderUnavailablePassesThrough(t *testing.T) {
	p := NewLoader(&fakeLoader{err: probes.Unavailable("no loader")})
	if err := p.Collect(context.Background(), probetest.FrameAt(probetest.T0)); !errors.Is(err, probes.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
}

func TestBucketQuantile(t *testing.T) {
	up := []float64{1, 2, 4}
	tests := []struct {
		q      float64
		counts []uint64
		total  uint64
		want   float64
	}{
		{0.5, []uint64{0, 10, 10}, 10, 1.5},
		{0.5, []uint64{5, 10, 10}, 10, 1},
		{0.99, []uint64{0, 0, 5}, 10, 4}, // above the last finite bucket: its bound
		{0.25, []uint64{4, 4, 4}, 4, 0.25},
	}
	for _, tc := range tests {
		got, ok := BucketQuantile(tc.q, up, tc.counts, tc.total)
		if !ok || got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("q%v %v/%d = %v, want %v", tc.q, tc.counts, tc.total, got, tc.want)
		}
	}
	if _, ok := BucketQuantile(0.5, up, []uint64{0, 0, 0}, 0); ok {
		t.Error("no observations gave a quantile")
	}
}

// TestANewDataLoaderEveryEpochIsRead: the hook's count of epochs over a
// DataLoader built anew says whether every epoch after the first was (then
// persistent_workers alone keeps nothing); under three epochs it says
// nothing, and a count past the epochs is dropped.
func TestANewDataLoaderEveryEpochIsRead(t *testing.T) {
	page := func(epochs, rebuilt string) []byte {
		return []byte("gpuwatch_loader_batches_total 10\ngpuwatch_loader_epochs_total " + epochs + "\ngpuwatch_loader_rebuilt_epochs_total " + rebuilt + "\n")
	}
	for _, c := range []struct {
		epochs, rebuilt string
		want            *bool
	}{
		{"3", "2", probes.Ptr(true)},
		{"4", "2", probes.Ptr(false)}, // a fresh eval loader beside the training one
		{"3", "0", probes.Ptr(false)},
		{"2", "1", nil},  // train and val, or two rebuilt: not told apart yet
		{"3", "9", nil},  // more than the epochs: not believed
		{"3", "-1", nil}, // negative: not believed
	} {
		got, _, err := CountersFromMetrics(page(c.epochs, c.rebuilt))
		if err != nil {
			t.Fatal(err)
		}
		if (got.NewLoaderEveryEpoch == nil) != (c.want == nil) || got.NewLoaderEveryEpoch != nil && *got.NewLoaderEveryEpoch != *c.want {
			t.Errorf("epochs %s, rebuilt %s: %v, want %v", c.epochs, c.rebuilt, got.NewLoaderEveryEpoch, c.want)
		}
	}
}

// TestAnIterableDatasetsSplitIsRead: the hook's word on whether its
// IterableDataset splits by worker is read as said; a value outside 0–1
// is not believed, and a page without it says nothing.
func TestAnIterableDatasetsSplitIsRead(t *testing.T) {
	for _, c := range []struct {
		line string
		want *bool
	}{
		{"gpuwatch_loader_iterable_splits_by_worker 1\n", probes.Ptr(true)},
		{"gpuwatch_loader_iterable_splits_by_worker 0\n", probes.Ptr(false)},
		{"gpuwatch_loader_iterable_splits_by_worker 7\n", nil},
		{"", nil},
	} {
		got, _, err := CountersFromMetrics([]byte("gpuwatch_loader_batches_total 10\n" + c.line))
		if err != nil {
			t.Fatal(err)
		}
		if (got.IterableSplitsByWorker == nil) != (c.want == nil) || got.IterableSplitsByWorker != nil && *got.IterableSplitsByWorker != *c.want {
			t.Errorf("%q: %v, want %v", c.line, got.IterableSplitsByWorker, c.want)
		}
	}
}

// TestARemoteLoadersPIDNamesNoProcessHere (a review): the pid a loader
// reports names a process here only where its connection is to this
// machine and the pid holds its port; attached to a remote loader, the
// local process that happens to have that number is not its.
func TestARemoteLoadersPIDNamesNoProcessHere(t *testing.T) {
	a, err := NewAttach("http://node7:6060")
	if err != nil {
		t.Fatal(err)
	}
	a.pid = os.Getpid()
	if got := a.LocalPID(); got != 0 {
		t.Errorf("a remote loader: LocalPID %d, want 0", got)
	}
	a.peer = netip.MustParseAddrPort("127.0.0.1:6060")
	if got := a.LocalPID(); got != os.Getpid() {
		t.Errorf("a local loader: LocalPID %d, want %d", got, os.Getpid())
	}
	a.pidCheck.bad = true
	if got := a.LocalPID(); got != 0 {
		t.Errorf("a local loader whose pid does not hold its port: LocalPID %d, want 0", got)
	}
}

// TestTheLoopsTimeBetweenEpochsIsRead: the hook's sum of the gaps between
// epochs and the gap under way make a clock whose increase is the
// interval's time between epochs, whether the gap ended in it or goes on;
// the sum over the gaps counted is their mean.
func TestTheLoopsTimeBetweenEpochsIsRead(t *testing.T) {
	page := func(sum, gaps, now float64) LoaderCounters {
		c, _, err := CountersFromMetrics([]byte(fmt.Sprintf("gpuwatch_loader_batches_total 10\ngpuwatch_loader_epochs_total 3\n"+
			"gpuwatch_loader_between_epochs_seconds_total %g\ngpuwatch_loader_epoch_gaps_total %g\ngpuwatch_loader_between_epochs_seconds %g\n", sum, gaps, now)))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	src := &fakeLoader{c: page(5, 1, 0.25)}
	p := NewLoader(src)
	collectLoader(t, p, at)
	for i, c := range []struct {
		sum, gaps, now float64
		want, gapMs    float64 // gapMs 0: none counted
	}{
		{5, 1, 0.75, 0.5, 5000}, // the gap under way goes on through the interval
		{6.5, 2, 0, 0.75, 3250}, // it ended 0.75 s into the next interval: 1.5 s in all
		{6.5, 2, 0, 0, 3250},    // inside an epoch
		{6.5, 2, 3, 1, 3250},    // 3 s under way since the last read: at most the interval's 1 s
		{6.5, 2, 0, 0, 3250},    // the last read was inside the next epoch's iter(): the clock steps back, none
	} {
		src.c = page(c.sum, c.gaps, c.now)
		l := collectLoader(t, p, at.Add(time.Duration(i+1)*time.Second)).Loader
		if l.BetweenEpochsSec == nil || *l.BetweenEpochsSec != c.want {
			t.Errorf("%d: between epochs %v s, want %g", i, fmtPtr(l.BetweenEpochsSec), c.want)
		}
		if got := l.EpochGapMs; c.gapMs == 0 && got != nil || c.gapMs > 0 && (got == nil || *got != c.gapMs) {
			t.Errorf("%d: mean gap %v ms, want %g", i, fmtPtr(got), c.gapMs)
		}
	}
	// A hostile page's mean is no Duration overflowed, nor a count of a
	// fraction of a gap.
	for _, c := range [][2]float64{{1 << 40, 1}, {10, 1e-300}, {10, 1.5}, {10, 0}} {
		if got := page(c[0], c[1], 0).EpochGap; got != nil {
			t.Errorf("%g s over %g gaps: mean %v, want none", c[0], c[1], *got)
		}
	}
}

// fmtPtr is a figure or "absent".
func fmtPtr(v *float64) string {
	if v == nil {
		return "absent"
	}
	return fmt.Sprint(*v)
}
