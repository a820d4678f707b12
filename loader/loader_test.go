package loader

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sys/unix"
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

func TestInOrderDeliveryWithOneSlowWorker(t *testing.T) {
	c, ds := small(t)
	c.Workers, c.Prefetch, c.StepTime = 3, 2, 0
	l := New(c, ds, nil)
	l.fetchHook = func(worker, _ int) {
		if worker == 0 {
			burn(20 * time.Millisecond) // worker 0 is slow
		}
	}
	run(t, l)
	s := l.Snapshot()
	var slowWait, fastWait time.Duration
	var slowN, fastN, readyBehindSlow int
	for i, b := range s.Recent {
		if want := i % 20; b.Index != want {
			t.Fatalf("batch %d delivered as index %d: out of order", want, b.Index)
		}
		if b.Worker == 0 {
			slowWait += b.Wait
			slowN++
		} else {
			fastWait += b.Wait
			fastN++
			if b.QueueDepth > 0 {
				readyBehindSlow++
			}
		}
		if b.Worker != b.Index%3 {
			t.Fatalf("batch %d loaded by worker %d: dispatch is not round-robin", b.Index, b.Worker)
		}
	}
	// Head-of-line blocking: the loop waits on worker 0's batches while
	// the others' are already done and queued behind them.
	if slowWait/time.Duration(slowN) < 10*(fastWait/time.Duration(fastN)+time.Microsecond) {
		t.Errorf("mean wait on the slow worker %v vs others %v: no head-of-line blocking seen",
			slowWait/time.Duration(slowN), fastWait/time.Duration(fastN))
	}
	if readyBehindSlow < fastN/2 {
		t.Errorf("only %d of %d fast batches were already queued when asked for", readyBehindSlow, fastN)
	}
}

func TestWorkersZeroLoadsOnOneLockedThread(t *testing.T) {
	c, ds := small(t)
	c.Workers, c.Prefetch = 0, 0
	c.StepTime = 200 * time.Microsecond // each timer wake-up may resume a goroutine elsewhere
	l := New(c, ds, nil)
	var mu sync.Mutex
	tids := map[int]int{}
	l.fetchHook = func(worker, _ int) {
		if worker != -1 {
			t.Errorf("batch loaded by worker %d with workers=0", worker)
		}
		mu.Lock()
		tids[unix.Gettid()]++
		mu.Unlock()
	}
	// Churn threads: blocking syscalls make the runtime hand Ps to other
	// Ms, so an unlocked goroutine would soon run on another thread.
	stop := make(chan struct{})
	defer close(stop)
	for i := 0; i < 4*runtime.GOMAXPROCS(0); i++ {
		go func() {
			ts := unix.Timespec{Nsec: 100_000}
			for {
				select {
				case <-stop:
					return
				default:
					burn(20 * time.Microsecond)
					_ = unix.Nanosleep(&ts, nil) // blocks the M, not just the goroutine
				}
			}
		}()
	}
	run(t, l)
	if len(tids) != 1 {
		t.Fatalf("batches loaded on %d threads (%v), want one", len(tids), tids)
	}
	if l.WorkerStarts() != 0 {
		t.Fatalf("%d workers started with workers=0", l.WorkerStarts())
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
		// Epoch 2's first batch pays the start-up again unless persistent.
		if stall := s.FirstBatch[1]; persistent == (stall >= 30*time.Millisecond) {
			t.Errorf("persistent=%v: epoch-boundary stall %v", persistent, stall)
		}
	}
}

func TestWaitAndStepAddUpToWallTime(t *testing.T) {
	for _, workers := range []int{0, 2} {
		c, ds := small(t)
		c.Workers, c.Prefetch = workers, 2*min(workers, 1)
		c.StepTime, c.DecodeCost, c.Batches = 3*time.Millisecond, 100*time.Microsecond, 40
		l := New(c, ds, nil)
		wall := run(t, l)
		s := l.Snapshot()
		sum := time.Duration((s.Wait.Sum + s.Step.Sum) * float64(time.Second))
		if off := (wall - sum).Seconds() / wall.Seconds(); off < 0 || off > 0.02 {
			t.Errorf("workers %d: wait %.3fs + step %.3fs = %v of %v wall (%.1f %% unaccounted)",
				workers, s.Wait.Sum, s.Step.Sum, sum, wall, 100*off)
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
		"gpuwatch_loader_prefetch", "gpuwatch_loader_info",
	} {
		if fams[name] == nil {
			t.Errorf("missing %s", name)
		}
	}
	if got := fams["gpuwatch_loader_batches_total"].Metric[0].GetCounter().GetValue(); got != 40 {
		t.Errorf("batches_total = %v, want 40", got)
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

// TestDecodeRateRecoversFromASlowStart: a hash rate measured while the
// machine was busy (here: set 100× too low) is raised by the first decodes
// that run faster, so a 2 ms decode is not cut to a fraction for the run.
func TestDecodeRateRecoversFromASlowStart(t *testing.T) {
	real := hashRate()
	rateBits.Store(math.Float64bits(real / 100))
	defer rateBits.Store(math.Float64bits(real))
	data := make([]byte, 64<<10)
	for range 3 {
		decode(data, 2*time.Millisecond, 1)
	}
	if got := hashRate(); got < real/4 {
		t.Fatalf("rate %.3g bytes/ns after three decodes, calibrated %.3g: not recovered", got, real)
	}
}
