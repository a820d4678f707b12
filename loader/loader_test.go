package loader

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// small is a quick configuration over a dataset of 4 MiB in a temp folder.
func small(t testing.TB) (Config, *Dataset) {
	t.Helper()
	c := Default()
	c.SampleSize, c.BatchSize, c.DatasetSize = 4096, 8, 4<<20
	c.DecodeCost, c.Jitter, c.StepTime, c.WorkerStart = 20*time.Microsecond, 0, time.Millisecond, 0
	c.Epochs, c.Batches = 2, 20
	c.Dataset = t.TempDir()
	ds, err := OpenDataset(c.Dataset, c.DatasetSize, c.Seed)
	if err != nil {
		t.Fatal(err)
	}
	return c, ds
}

func run(t *testing.T, l *Loader) time.Duration {
	t.Helper()
	start := time.Now()
	if err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

func TestOutstandingNeverExceedsPrefetchTimesWorkers(t *testing.T) {
	for _, wp := range [][2]int{{1, 1}, {3, 2}, {4, 4}} {
		c, ds := small(t)
		c.Workers, c.Prefetch = wp[0], wp[1]
		c.StepTime = 2 * time.Millisecond // the loop is slower than loading: the pipeline fills
		l := New(c, ds, nil)
		run(t, l)
		limit := int64(c.Workers * c.Prefetch)
		if got := l.maxOutstand.Load(); got != limit {
			t.Errorf("workers %d prefetch %d: at most %d batches outstanding, want exactly %d", c.Workers, c.Prefetch, got, limit)
		}
		if s := l.Snapshot(); s.Batches != 40 {
			t.Errorf("%d batches, want 2 epochs × 20", s.Batches)
		}
	}
}

// TestInOrderDeliveryWithOneSlowWorker: batches reach the training loop in
// index order, dispatched round-robin, and one slow worker blocks the
// batches behind it (head-of-line blocking) although they are ready. Worker
// 0 is made slow by order, not by time: its batch i is fetched only once
// workers 1 and 2 have started batches i+4 and i+5, that is once they have
// handed over i+1 and i+2. So the loop always finds i+1 and i+2 ready
// behind i, on any machine.
func TestInOrderDeliveryWithOneSlowWorker(t *testing.T) {
	c, ds := small(t)
	c.Workers, c.Prefetch, c.StepTime = 3, 2, 0
	n := c.BatchesPerEpoch()
	l := New(c, ds, nil)
	var mu sync.Mutex
	started := map[[2]int]chan struct{}{} // (epoch, index) → closed when fetched
	epoch, last := [3]int{}, [3]int{-1, -1, -1}
	gate := func(e, i int) chan struct{} {
		k := [2]int{e, i}
		if started[k] == nil {
			started[k] = make(chan struct{})
		}
		return started[k]
	}
	l.fetchHook = func(worker, index int) {
		mu.Lock()
		if index < last[worker] { // a worker's indices start over each epoch
			epoch[worker]++
		}
		last[worker] = index
		e := epoch[worker]
		close(gate(e, index))
		var wait []chan struct{}
		if worker == 0 && index+5 < n {
			wait = []chan struct{}{gate(e, index+4), gate(e, index+5)}
		}
		mu.Unlock()
		for _, ch := range wait {
			<-ch
		}
	}
	run(t, l)
	s := l.Snapshot()
	var fast, readyBehindSlow int
	for i, b := range s.Recent {
		if want := i % n; b.Index != want {
			t.Fatalf("batch %d delivered as index %d: out of order", want, b.Index)
		}
		if b.Worker != b.Index%3 {
			t.Fatalf("batch %d loaded by worker %d: dispatch is not round-robin", b.Index, b.Worker)
		}
		if b.Worker != 0 && b.Index-b.Index%3+5 < n {
			fast++
			if b.QueueDepth > 0 {
				readyBehindSlow++
			}
		}
	}
	if fast == 0 || readyBehindSlow != fast {
		t.Errorf("%d of %d batches behind the slow worker's were ready when asked for: want all (head-of-line blocking)", readyBehindSlow, fast)
	}
}

func TestPersistentWorkersSkipPerEpochStartup(t *testing.T) {
	for _, persistent := range []bool{false, true} {
		c, ds := small(t)
		c.Workers, c.Prefetch, c.Persistent, c.Epochs = 2, 2, persistent, 3
		c.WorkerStart = 30 * time.Millisecond
		l := New(c, ds, nil)
		run(t, l)
		want := 2
		if !persistent {
			want = 6
		}
		if got := l.WorkerStarts(); got != want {
			t.Errorf("persistent=%v: %d worker starts over 3 epochs, want %d", persistent, got, want)
		}
		s := l.Snapshot()
		if len(s.FirstBatch) != 3 {
			t.Fatalf("first batches: %v", s.FirstBatch)
		}
		// Epoch 2's first batch pays the start-up again unless persistent:
		// a start is CPU work of at least about WorkerStart, so a lower
		// bound holds on any machine (an upper one would not).
		if stall := s.FirstBatch[1]; !persistent && stall < c.WorkerStart/2 {
			t.Errorf("persistent=false: epoch-boundary stall %v, want at least a worker's start (%v)", stall, c.WorkerStart)
		}
	}
}

// TestWaitAndStepAddUpToWallTime: the loop's time is made of its waits and
// steps, nothing counted twice: between two batches' arrivals lie at least
// the first one's step and the second one's wait (they are read off one
// monotonic clock, so this holds exactly), and over the run they fit in the
// wall time and make up most of it.
func TestWaitAndStepAddUpToWallTime(t *testing.T) {
	for _, workers := range []int{0, 2} {
		c, ds := small(t)
		c.Workers, c.Prefetch = workers, 2*min(workers, 1)
		c.StepTime, c.DecodeCost, c.Batches = 3*time.Millisecond, 100*time.Microsecond, 40
		l := New(c, ds, nil)
		wall := run(t, l)
		s := l.Snapshot()
		if len(s.Recent) < 2 {
			t.Fatalf("workers %d: %d batches", workers, len(s.Recent))
		}
		for i := 1; i < len(s.Recent); i++ {
			a, b := s.Recent[i-1], s.Recent[i]
			if a.Epoch != b.Epoch {
				continue
			}
			if gap := b.Time.Sub(a.Time); gap < a.Step+b.Wait {
				t.Fatalf("workers %d: batches %d and %d arrived %v apart, less than step %v + wait %v", workers, a.Index, b.Index, gap, a.Step, b.Wait)
			}
		}
		sum := time.Duration((s.Wait.Sum + s.Step.Sum) * float64(time.Second))
		if sum > wall || sum < wall/2 {
			t.Errorf("workers %d: wait %.3fs + step %.3fs = %v of %v wall: want at most all of it and at least half",
				workers, s.Wait.Sum, s.Step.Sum, sum, wall)
		}
	}
}

func TestValidateRefusesWhatPyTorchRefuses(t *testing.T) {
	tests := []struct {
		name        string
		edit        func(*Config)
		prefetchSet bool
		want        string
	}{
		{"prefetch with workers 0", func(c *Config) { c.Workers = 0 }, true, "--prefetch needs --workers > 0"},
		{"zero batch size", func(c *Config) { c.BatchSize = 0 }, false, "--batch-size"},
		{"persistent without workers", func(c *Config) { c.Workers, c.Prefetch, c.Persistent = 0, 0, true }, false, "--persistent"},
		{"dataset smaller than a sample", func(c *Config) { c.DatasetSize = 10 }, false, "holds no sample"},
		{"unknown access", func(c *Config) { c.Access = "zigzag" }, false, "--access"},
		{"cache and direct io", func(c *Config) { c.Cache, c.DirectIO = true, true }, false, "contradict"},
		{"more workers than a watcher accepts", func(c *Config) { c.Workers = MaxWorkers + 1 }, false, "--workers 4097: at most 4096"},
		{"a decode that only hangs", func(c *Config) { c.DecodeCost = 30 * time.Second }, false, "--decode-cost 30s: at most 10s"},
		{"a start-up that only hangs", func(c *Config) { c.WorkerStart = time.Hour }, false, "--worker-start 1h0m0s: at most 60s"},
		{"a jitter that is not a number", func(c *Config) { c.Jitter = math.NaN() }, false, "--jitter must be between 0 and 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.edit(&c)
			err := c.Validate(tc.prefetchSet)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
	if err := Default().Validate(true); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	c := Default()
	c.Workers, c.DecodeCost, c.WorkerStart = MaxWorkers, MaxDecodeCost, MaxWorkerStart
	if err := c.Validate(true); err != nil {
		t.Fatalf("the bounds themselves refused: %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"4096": 4096, "4KiB": 4096, "4k": 4096, "4KB": 4000, "1MB": 1e6, "20MB/s": 20e6,
		"1.5GiB": 3 << 29, "256MiB": 256 << 20, " 2 m ": 2 << 20,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "KiB", "4 parsecs", "-4k", "1e400"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

func TestReadersAgreeOnEveryByte(t *testing.T) {
	c, ds := small(t)
	buffered, _ := ds.newReader(false, nil)
	direct, _ := ds.newReader(true, nil)
	defer buffered.close()
	defer direct.close()
	mem := &Dataset{Dir: ds.Dir, Size: ds.Size, shards: ds.shards}
	if err := mem.LoadIntoMemory(); err != nil {
		t.Fatal(err)
	}
	cached, _ := mem.newReader(false, nil)
	if err := ds.Map(); err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	mapped := ds.newMappedReader(nil)
	for _, tc := range []struct{ off, n int64 }{{0, 1000}, {7 * 1000, 1000}, {4095, 2}, {c.DatasetSize - 333, 333}, {12345, 70000}} {
		a, b, m := make([]byte, tc.n), make([]byte, tc.n), make([]byte, tc.n)
		if err := buffered.readAt(a, tc.off); err != nil {
			t.Fatal(err)
		}
		if err := direct.readAt(b, tc.off); err != nil {
			t.Fatalf("direct read at %d: %v", tc.off, err)
		}
		if err := cached.readAt(m, tc.off); err != nil {
			t.Fatal(err)
		}
		mm := make([]byte, tc.n)
		if err := mapped.readAt(mm, tc.off); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) || !bytes.Equal(a, m) || !bytes.Equal(a, mm) {
			t.Fatalf("readers disagree at offset %d", tc.off)
		}
	}
}

func TestDatasetIsGeneratedOnceAndReused(t *testing.T) {
	dir := t.TempDir()
	d1, err := OpenDataset(dir, 70<<20, 1) // two shards, the second short
	if err != nil || !d1.Generated || len(d1.shards) != 2 {
		t.Fatalf("first open: %+v, %v", d1, err)
	}
	if !DatasetReady(dir, 70<<20) {
		t.Fatal("not ready after generation")
	}
	d2, err := OpenDataset(dir, 70<<20, 1)
	if err != nil || d2.Generated {
		t.Fatalf("second open regenerated: %+v, %v", d2, err)
	}
}

func TestMetricsParseAsPrometheusText(t *testing.T) {
	c, ds := small(t)
	c.Workers = 2
	l := New(c, ds, nil)
	run(t, l)
	srv := httptest.NewServer(Handler(l))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("not Prometheus text: %v", err)
	}
	for _, name := range []string{
		"gpuwatch_loader_wait_seconds", "gpuwatch_loader_step_seconds", "gpuwatch_loader_batches_total",
		"gpuwatch_loader_samples_total", "gpuwatch_loader_bytes_read_total", "gpuwatch_loader_read_seconds_total",
		"gpuwatch_loader_decode_seconds_total", "gpuwatch_loader_queue_depth", "gpuwatch_loader_workers",
		"gpuwatch_loader_prefetch", "gpuwatch_loader_info", "gpuwatch_loader_waiting_seconds",
	} {
		if fams[name] == nil {
			t.Errorf("missing %s", name)
		}
	}
	if got := fams["gpuwatch_loader_batches_total"].Metric[0].GetCounter().GetValue(); got != 40 {
		t.Errorf("batches_total = %v, want 40", got)
	}
	if w := fams["gpuwatch_loader_waiting_seconds"]; w != nil && w.Metric[0].GetGauge().GetValue() != 0 {
		t.Errorf("waiting %v after the run, want 0", w.Metric[0].GetGauge().GetValue())
	}
	h := fams["gpuwatch_loader_wait_seconds"].Metric[0].GetHistogram()
	if h.GetSampleCount() != 40 || len(h.Bucket) != len(Buckets)+1 { // +Inf included
		t.Errorf("wait histogram = %v", h)
	}
	info := fams["gpuwatch_loader_info"].Metric[0]
	labels := map[string]string{}
	for _, lp := range info.Label {
		labels[lp.GetName()] = lp.GetValue()
	}
	if labels["kind"] != "go" || labels["pid"] == "" {
		t.Errorf("info labels = %v", labels)
	}
	// What the protocol needs is served; the command line (credentials)
	// and execution traces are not.
	for path, want := range map[string]int{"/debug/pprof/": 200, "/debug/pprof/symbol": 200, "/debug/pprof/cmdline": 404, "/debug/pprof/trace?seconds=1": 404} {
		r, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode != want {
			t.Errorf("%s: %s, want %d", path, r.Status, want)
		}
		r.Body.Close()
	}
}

// The wait under way: from the ask to the batch, 0 before and after.
func TestSnapshotSaysTheWaitUnderWay(t *testing.T) {
	s := newStats()
	if w := s.Snapshot().Waiting; w != 0 {
		t.Fatalf("not asked: waiting %v", w)
	}
	s.asking(time.Now().Add(-2*time.Second), false)
	if w := s.Snapshot().Waiting; w < 2*time.Second || w > time.Minute {
		t.Errorf("asked 2 s ago: waiting %v", w)
	}
	// An epoch's first batch: its start-up, until a hang's time.
	s.asking(time.Now().Add(-2*time.Second), true)
	if w := s.Snapshot().Waiting; w != 0 {
		t.Errorf("the epoch's first batch asked 2 s ago: waiting %v, want 0", w)
	}
	s.asking(time.Now().Add(-HangWait-time.Second), true)
	if w := s.Snapshot().Waiting; w < HangWait {
		t.Errorf("the epoch's first batch asked %v ago: waiting %v", HangWait+time.Second, w)
	}
	s.asking(time.Time{}, false)
	if w := s.Snapshot().Waiting; w != 0 {
		t.Errorf("given the batch: waiting %v", w)
	}
}

func TestEventsAreWholeLinesWithTheNotebookNames(t *testing.T) {
	var buf bytes.Buffer
	ev := NewEvents(&buf)
	c, ds := small(t)
	c.Workers = 3
	l := New(c, ds, ev)
	run(t, l)
	if err := ev.Close(); err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("bad line %q: %v", line, err)
		}
		if e.Time < 1e9 {
			t.Fatalf("time %v is not Unix seconds", e.Time)
		}
		names[e.Name]++
		if e.Name == "get-batch end" && (e.Wait == nil || e.Worker == nil || e.Batch == nil) {
			t.Fatalf("get-batch end without wait/worker/batch: %q", line)
		}
	}
	for name, want := range map[string]int{
		"run start": 1, "setup start": 1, "setup end": 1, "epoch start": 2, "epoch end": 2,
		"get-batch start": 42, "get-batch end": 40, "training start": 40, "training end": 40, "run end": 1,
	} {
		if names[name] != want {
			t.Errorf("%q: %d lines, want %d", name, names[name], want)
		}
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	c, ds := small(t)
	c.Epochs, c.Workers = 0, 2 // forever
	l := New(c, ds, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Run(ctx) }()
	for l.Snapshot().Batches < 5 {
		runtime.Gosched()
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}

// TestRunStopsMidBurn: a loader stopped while it burns or waits on its
// emulated link returns within a bound, however long that work would
// take: a --decode-cost 30s or 100,000 workers' start-up kept the demo's
// q, Ctrl-C and SIGTERM waiting for minutes.
func TestRunStopsMidBurn(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		// busy says the loader is in the middle of the long work.
		busy func(l *Loader, fetching <-chan struct{}) bool
	}{
		{"worker start-up", func(c *Config) { c.Workers, c.WorkerStart = 4, MaxWorkerStart },
			func(l *Loader, _ <-chan struct{}) bool { return l.WorkerStarts() == 4 }},
		{"a worker's decode", func(c *Config) { c.Workers, c.DecodeCost = 2, MaxDecodeCost }, fetched},
		{"the loop's inline decode", func(c *Config) { c.Workers, c.Prefetch, c.DecodeCost = 0, 0, MaxDecodeCost }, fetched},
		{"a read's latency", func(c *Config) { c.Workers, c.ReadLatency = 1, time.Hour }, fetched},
		{"a read's share of the bandwidth", func(c *Config) { c.Workers, c.ReadBandwidth = 1, 1 }, fetched},
		{"the cache's one read over the link", func(c *Config) { c.Cache, c.ReadBandwidth = true, 1 },
			func(*Loader, <-chan struct{}) bool { return true }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ds := small(t)
			c.Epochs = 0
			tc.edit(&c)
			if err := c.Validate(false); err != nil {
				t.Fatal(err)
			}
			l := New(c, ds, nil)
			fetching := make(chan struct{}, 1)
			l.fetchHook = func(int, int) {
				select {
				case fetching <- struct{}{}:
				default:
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- l.Run(ctx) }()
			for !tc.busy(l, fetching) {
				runtime.Gosched()
			}
			cancel()
			select {
			case err := <-done:
				if err != context.Canceled {
					t.Fatalf("Run = %v, want context.Canceled", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Run still running 2 s after its context was cancelled")
			}
		})
	}
}

// fetched says a batch's fetch has begun (its read and decode follow).
func fetched(_ *Loader, fetching <-chan struct{}) bool {
	select {
	case <-fetching:
		return true
	default:
		return false
	}
}

// TestDecodeRateRecoversFromASlowStart: a hash rate measured while the
// machine was busy (here: set 100× too low) is raised by the first decodes
// that run faster, so a 2 ms decode is not cut to a fraction for the run.
func TestDecodeRateRecoversFromASlowStart(t *testing.T) {
	real := hashRate()
	rateBits.Store(math.Float64bits(real / 100))
	defer rateBits.Store(math.Float64bits(real))
	data := make([]byte, 64<<10)
	for range 3 {
		decode(nil, false, data, 2*time.Millisecond, 1)
	}
	if got := hashRate(); got < real/4 {
		t.Fatalf("rate %.3g bytes/ns after three decodes, calibrated %.3g: not recovered", got, real)
	}
}

// TestProfileLengthIsBounded: the debug server refuses a CPU profile
// longer than MaxProfileSeconds (or of no whole length) at once, and
// takes a short one; cmdline and trace are not served.
func TestProfileLengthIsBounded(t *testing.T) {
	c, ds := small(t)
	srv := httptest.NewServer(Handler(New(c, ds, nil)))
	defer srv.Close()
	for path, want := range map[string]int{
		"/debug/pprof/profile?seconds=3600": http.StatusBadRequest,
		"/debug/pprof/profile?seconds=0":    http.StatusBadRequest,
		"/debug/pprof/profile?seconds=2.5":  http.StatusBadRequest,
		"/debug/pprof/profile?seconds=x":    http.StatusBadRequest,
		"/debug/pprof/profile?seconds=1":    http.StatusOK,
		"/debug/pprof/cmdline":              http.StatusNotFound,
		"/debug/pprof/trace":                http.StatusNotFound,
		"/debug/pprof/heap":                 http.StatusOK,
		"/debug/pprof/goroutine":            http.StatusOK,
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %s, want %d", path, resp.Status, want)
		}
	}
}

// Two O_DIRECT loaders overlapping (tune's trials, the demo's switches):
// the first to end keeps the Ps the other runs on, and the last puts the
// count from before back; a GOMAXPROCS the user set stands.
func TestOverlappingDirectLoadersKeepTheirPs(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	a := &Loader{cfg: Config{DirectIO: true, Workers: before + 3}}
	b := &Loader{cfg: Config{DirectIO: true, Workers: before + 1}}
	endA := a.ownPs()
	endB := b.ownPs()
	if got := runtime.GOMAXPROCS(0); got != before+4 {
		t.Fatalf("two loaders running: GOMAXPROCS %d, want %d", got, before+4)
	}
	endA()
	if got := runtime.GOMAXPROCS(0); got < before+2 {
		t.Errorf("the first loader ended: GOMAXPROCS %d, below the %d workers + 1 still reading", got, before+1)
	}
	endB()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("both ended: GOMAXPROCS %d, want %d as before", got, before)
	}
	t.Setenv("GOMAXPROCS", strconv.Itoa(before))
	end := a.ownPs()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS=%d set by the user: the loader made it %d", before, got)
	}
	end()
}
