package endpoint

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/pprofsum"
	"github.com/gpuwatch/gpuwatch/internal/testnet"
	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
	"github.com/gpuwatch/gpuwatch/sample"
)

func metricsText(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "attach", "loader-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCountersFromARealLoader converts /metrics as `gpuwatch loader`
// served it (captured into testdata).
func TestCountersFromARealLoader(t *testing.T) {
	c, info, err := CountersFromMetrics(metricsText(t))
	if err != nil {
		t.Fatal(err)
	}
	if c.Batches == 0 || c.Samples != 64*c.Batches || c.BytesRead != c.Samples*128<<10 {
		t.Fatalf("counters %+v", c)
	}
	if c.Wait.Count != c.Batches || c.Step.Count != c.Batches || len(c.Buckets) != 15 || len(c.Wait.Counts) != 15 {
		t.Fatalf("histograms: buckets %v wait %+v", c.Buckets, c.Wait)
	}
	if c.ReadSeconds == nil || *c.ReadSeconds <= 0 || c.Workers == nil || *c.Workers != 16 || c.QueueDepth == nil {
		t.Fatalf("gauges: %+v", c)
	}
	if info["kind"] != "go" || info["pid"] == "" {
		t.Fatalf("info %v", info)
	}
}

// TestCountersFromMetricsNamesTheJobsRoles reads the training process,
// the loop's thread and the worker PIDs as the Python hook serves them,
// and refuses IDs that no process can have.
func TestCountersFromMetricsNamesTheJobsRoles(t *testing.T) {
	text := `gpuwatch_loader_batches_total 3
gpuwatch_loader_info{pid="4100",kind="python",tid="4100"} 1
gpuwatch_loader_worker_info{worker="0",pid="4121"} 1
gpuwatch_loader_worker_info{worker="1",pid="4122"} 1
gpuwatch_loader_worker_info{worker="2",pid="-3"} 1
gpuwatch_loader_worker_info{worker="3",pid="99999999999"} 1
`
	c, _, err := CountersFromMetrics([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if c.PID == nil || *c.PID != 4100 || c.LoopTID == nil || *c.LoopTID != 4100 || !slices.Equal(c.WorkerPIDs, []int{4121, 4122}) {
		t.Fatalf("pid %v tid %v workers %v", c.PID, c.LoopTID, c.WorkerPIDs)
	}
	c, _, err = CountersFromMetrics([]byte("gpuwatch_loader_info{pid=\"x\",kind=\"go\",tid=\"0\"} 1\n"))
	if err != nil || c.PID != nil || c.LoopTID != nil {
		t.Fatalf("bad IDs gave pid %v tid %v (%v)", c.PID, c.LoopTID, err)
	}
	// Whether an IterableDataset's workers repeat each other, as measured;
	// absent, not told.
	for page, want := range map[string]string{
		"gpuwatch_loader_iterable_repeats 1\n": "true", "gpuwatch_loader_iterable_repeats 0\n": "false",
		"gpuwatch_loader_iterable_repeats 7\n": "nil", "": "nil",
	} {
		c, _, err := CountersFromMetrics([]byte("gpuwatch_loader_batches_total 1\n" + page))
		got := "nil"
		if c.IterableRepeats != nil {
			got = fmt.Sprint(*c.IterableRepeats)
		}
		if err != nil || got != want {
			t.Errorf("%q: repeats %s, want %s (%v)", page, got, want, err)
		}
	}
	// The ranks on the loader's node: from 1 to its world size, else none.
	for labels, want := range map[string]int{
		`rank="1",world_size="8",local_world_size="4"`:  4,
		`rank="1",world_size="8",local_world_size="9"`:  0,
		`rank="1",world_size="8",local_world_size="0"`:  0,
		`rank="1",local_world_size="4"`:                 0,
		`rank="1",world_size="8",local_world_size="-1"`: 0,
	} {
		c, _, err := CountersFromMetrics([]byte("gpuwatch_loader_batches_total 1\ngpuwatch_loader_info{" + labels + "} 1\n"))
		if got := 0; err != nil || c.LocalWorldSize != nil && *c.LocalWorldSize != want || c.LocalWorldSize == nil && want != 0 {
			if c.LocalWorldSize != nil {
				got = *c.LocalWorldSize
			}
			t.Errorf("%s: local world size %d, want %d (%v)", labels, got, want, err)
		}
	}
	var many strings.Builder
	many.WriteString("gpuwatch_loader_batches_total 1\n")
	for i := range 5000 {
		fmt.Fprintf(&many, "gpuwatch_loader_worker_info{worker=\"%d\",pid=\"%d\"} 1\n", i, i+1)
	}
	if c, _, _ := CountersFromMetrics([]byte(many.String())); len(c.WorkerPIDs) != maxWorkerPIDs {
		t.Fatalf("%d worker PIDs kept from 5000, want the cap %d", len(c.WorkerPIDs), maxWorkerPIDs)
	}
}

func TestCountersFromMetricsRejectsWhatIsNotALoader(t *testing.T) {
	for name, text := range map[string]string{
		"html":             "<html><body>hello</body></html>",
		"other metrics":    "# TYPE http_requests_total counter\nhttp_requests_total 5\n",
		"garbage":          "gpuwatch_loader_batches_total{ 1 2",
		"empty":            "",
		"negative counter": "", // covered below
	} {
		if name == "negative counter" {
			continue
		}
		if _, _, err := CountersFromMetrics([]byte(text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	c, _, err := CountersFromMetrics([]byte("gpuwatch_loader_batches_total -5\n"))
	if err != nil || c.Batches != 0 {
		t.Errorf("negative counter: %+v %v", c, err)
	}
}

// loaderServer serves the captured metrics and a tiny pprof index, and
// records every request's method.
type loaderServer struct {
	*httptest.Server
	mu      sync.Mutex
	methods []string
	down    bool
}

func newLoaderServer(t *testing.T, text []byte) *loaderServer {
	s := &loaderServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.methods = append(s.methods, r.Method)
		down := s.down
		s.mu.Unlock()
		if down {
			http.Error(w, "restarting", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(text)
	})
	mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "profiles") })
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func TestAttachFirstConnection(t *testing.T) {
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>login</html>")
	}))
	defer html.Close()
	nothing := httptest.NewServer(http.NotFoundHandler())
	defer nothing.Close()
	stuck := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stuck:
		case <-r.Context().Done():
		}
	}))
	defer func() { close(stuck); slow.Close() }()
	closed := "http://" + testnet.RefusedAddr(t)
	tlsURL := strings.Replace(newLoaderServer(t, metricsText(t)).URL, "http://", "https://", 1)
	selfSigned := httptest.NewTLSServer(http.NotFoundHandler())
	defer selfSigned.Close()

	tests := []struct {
		name, url, want string
	}{
		{"refused", closed, "connection refused"},
		{"no such host", "http://gpuwatch-no-such-host.invalid:6060", "no such host"},
		{"timeout", slow.URL, "no answer within 100ms"},
		{"html", html.URL, "HTML page"},
		{"404 everywhere", nothing.URL, "/metrics answered 404 Not Found"},
		{"tls to a plain server", tlsURL, "TLS handshake failed"},
		{"untrusted certificate", selfSigned.URL, "TLS: x509: certificate signed by unknown authority"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := NewAttach(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "timeout" {
				a.Timeout = 100 * time.Millisecond // the handler never answers
			}
			err = a.Check(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "cannot attach to "+a.Source()) {
				t.Fatalf("err = %v, want it to name the URL and say %q", err, tc.want)
			}
			if strings.Count(err.Error(), "\n") > 0 {
				t.Fatalf("not one line: %q", err)
			}
		})
	}
}

func TestAttachProfileOnlyEndpoint(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "pprof index") })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	a, _ := NewAttach(srv.URL)
	if err := a.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !a.NoMetrics() {
		t.Fatal("a pprof-only endpoint is not marked as such")
	}
	if _, err := a.LoaderCounters(context.Background()); !errors.Is(err, probes.ErrUnavailable) || !strings.Contains(err.Error(), "no loader metrics") {
		t.Fatalf("err = %v", err)
	}
}

func TestAttachNeverShowsCredentialsNorFollowsRedirectsAway(t *testing.T) {
	other := newLoaderServer(t, metricsText(t))
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/metrics", http.StatusFound)
	}))
	defer redirect.Close()
	u := strings.Replace(redirect.URL, "http://", "http://alice:s3cret@", 1)
	a, err := NewAttach(u + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	err = a.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "refusing a redirect to another host") {
		t.Fatalf("err = %v", err)
	}
	for _, s := range []string{a.Source(), err.Error()} {
		if strings.Contains(s, "s3cret") || strings.Contains(s, "alice") {
			t.Fatalf("credentials shown: %q", s)
		}
	}
	if len(other.methods) != 0 {
		t.Fatal("the other host was contacted")
	}
	if _, err := NewAttach("ftp://bob:pw@example.com"); err == nil || strings.Contains(err.Error(), "pw") {
		t.Fatalf("bad scheme: %v", err)
	}
	// A port no listener can have is the URL's form, refused before any
	// dial (it failed at the dial, "invalid port", exit 1).
	for _, u := range []string{"http://127.0.0.1:99999", "http://127.0.0.1:0", "http://[::1]:65536"} {
		if _, err := NewAttach(u); !errors.Is(err, ErrBadURL) {
			t.Errorf("%s: %v, want ErrBadURL", u, err)
		}
	}
	if _, err := NewAttach("http://127.0.0.1:65535"); err != nil {
		t.Errorf("port 65535: %v", err)
	}
}

func TestAttachDisconnectBackoffAndReconnect(t *testing.T) {
	srv := newLoaderServer(t, metricsText(t))
	a, _ := NewAttach(srv.URL)
	now := probetest.T0
	a.now = func() time.Time { return now }
	p := NewLoader(a)
	ctx := context.Background()
	f := probetest.FrameAt(now)
	if err := p.Collect(ctx, f); err != nil || f.Loader == nil || f.Loader.Connected == nil || !*f.Loader.Connected {
		t.Fatalf("connected frame: %+v %v", f.Loader, err)
	}
	srv.mu.Lock()
	srv.down = true
	srv.mu.Unlock()
	now = now.Add(time.Second)
	f = probetest.FrameAt(now)
	err := p.Collect(ctx, f)
	if !errors.Is(err, ErrDisconnected) || f.Loader == nil || *f.Loader.Connected || !f.Loader.DisconnectedSince.Equal(now) {
		t.Fatalf("after the loader went away: %+v %v", f.Loader, err)
	}
	// Within the backoff, no request is made.
	srv.mu.Lock()
	n := len(srv.methods)
	srv.mu.Unlock()
	now = now.Add(500 * time.Millisecond)
	_ = p.Collect(ctx, probetest.FrameAt(now))
	srv.mu.Lock()
	if len(srv.methods) != n {
		t.Fatal("retried before the backoff ran out")
	}
	srv.down = false
	srv.mu.Unlock()
	now = now.Add(2 * time.Second)
	f = probetest.FrameAt(now)
	if err := p.Collect(ctx, f); err != nil || !*f.Loader.Connected {
		t.Fatalf("did not reconnect: %+v %v", f.Loader, err)
	}
	for _, m := range srv.methods {
		if m != http.MethodGet {
			t.Fatalf("sent a %s", m)
		}
	}
}

// TestProfilerRetriesWhileAnotherProfileRuns: Go answers a second CPU
// profile of the same process with 500 "cpu profiling already in use";
// the profiler comes back after a jittered wait instead of reporting a
// failure until the next turn.
func TestProfilerRetriesWhileAnotherProfileRuns(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("..", "..", "internal", "pprofsum", "testdata", "loader-io-bound.pb.gz")) // the profile pprofsum summarises in its golden test
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			fmt.Fprintln(w, "gpuwatch_loader_batches_total 1")
		case "/debug/pprof/profile":
			if calls.Add(1) <= 2 {
				http.Error(w, "Could not enable CPU profiling: cpu profiling already in use", http.StatusInternalServerError)
				return
			}
			w.Write(good)
		}
	}))
	defer srv.Close()
	a, err := NewAttach(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := NewProfilerOf(func() *Attach { return a }, time.Hour, time.Second) // one turn: only retries can bring a profile
	p.Start(context.Background())
	defer p.Close()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		f := &sample.Frame{}
		_ = p.Collect(context.Background(), f)
		if f.Profile != nil && len(f.Profile.Top) > 0 {
			if calls.Load() != 3 {
				t.Fatalf("%d requests, want 2 refused and 1 answered", calls.Load())
			}
			return
		}
		if f.Profile != nil && f.Profile.Error != "" {
			t.Fatalf("reported %q instead of retrying", f.Profile.Error)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no profile within 10 s")
}

// TestSummarizeProfileRefusesBombs: a gzip bomb stops at the 64 MiB
// uncompressed limit, and a second gzip layer (which pprof's parser would
// inflate without one) is refused.
func TestSummarizeProfileRefusesBombs(t *testing.T) {
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for range 100 {
		zw.Write(zero)
	}
	zw.Close()
	if _, err := pprofsum.SummarizeProfile(bomb.Bytes(), 5); err == nil || !strings.Contains(err.Error(), "uncompressed larger than 64 MiB") {
		t.Fatalf("a %d KB bomb of 100 MiB: %v", bomb.Len()>>10, err)
	}
	var twice bytes.Buffer
	zw = gzip.NewWriter(&twice)
	zw.Write(bomb.Bytes()[:1<<10])
	zw.Close()
	if _, err := pprofsum.SummarizeProfile(twice.Bytes(), 5); err == nil || !strings.Contains(err.Error(), "gzipped twice") {
		t.Fatalf("gzip in gzip: %v", err)
	}
}

// TestOutOfRangeGaugesAreDropped: gpuwatch_loader_workers 1e300 once
// became −9223372036854775808 and advice to "raise num_workers to 1".
// Every gauge has a range: a value outside it is dropped, and the frame's
// unavailable says which and why.
func TestOutOfRangeGaugesAreDropped(t *testing.T) {
	text := "gpuwatch_loader_batches_total 10\ngpuwatch_loader_workers 1e300\ngpuwatch_loader_prefetch -1\n" +
		"gpuwatch_loader_queue_depth 1e30\ngpuwatch_loader_persistent_workers 7\ngpuwatch_loader_info{pid=\"4100\",kind=\"python\"} 1\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, text) }))
	defer srv.Close()
	a, _ := NewAttach(srv.URL)
	p := NewLoader(a)
	f := &sample.Frame{Time: time.Now()}
	if err := p.Collect(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	l := f.Loader
	if l == nil || l.Workers != nil || l.Prefetch != nil || l.QueueDepth != nil || l.Knobs["persistent"] != "" || l.Batches != 10 {
		t.Fatalf("loader %+v", l)
	}
	for name, want := range map[sample.Source]string{
		"loader.workers":            "1e+300: outside 0–4096, dropped",
		"loader.prefetch":           "-1: outside 0–65536, dropped",
		"loader.queue_depth":        "1e+30: outside 0–1.048576e+06, dropped",
		"loader.persistent_workers": "7: outside 0–1, dropped",
	} {
		if got := f.Unavailable[name]; got != want {
			t.Errorf("unavailable[%s] = %q, want %q", name, got, want)
		}
	}
}

// TestTheBackoffIsShort: a loader that stops answering for a minute (an
// attack on its connections) is tried again within a few seconds of
// coming back, not after 30 s (issue 41, item 3).
func TestTheBackoffIsShort(t *testing.T) {
	srv := newLoaderServer(t, metricsText(t))
	a, _ := NewAttach(srv.URL)
	now := probetest.T0
	a.now = func() time.Time { return now }
	p := NewLoader(a)
	ctx := context.Background()
	if err := p.Collect(ctx, probetest.FrameAt(now)); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	srv.down = true
	srv.mu.Unlock()
	for i := 0; i < 120; i++ { // a minute of ticks every 0.5 s
		now = now.Add(500 * time.Millisecond)
		_ = p.Collect(ctx, probetest.FrameAt(now))
	}
	srv.mu.Lock()
	srv.down = false
	srv.mu.Unlock()
	back := now
	for {
		now = now.Add(500 * time.Millisecond)
		f := probetest.FrameAt(now)
		if err := p.Collect(ctx, f); err == nil && *f.Loader.Connected {
			break
		}
		if now.Sub(back) > 5*time.Second {
			t.Fatalf("still not read %v after the loader came back", now.Sub(back))
		}
	}
}

// profiledLoader serves /metrics with a batch count the test sets and
// /debug/pprof/profile with a real profile, counting the profiles asked.
func profiledLoader(t *testing.T) (a *Attach, batches, profiles *atomic.Int64) {
	t.Helper()
	good, err := os.ReadFile(filepath.Join("..", "..", "internal", "pprofsum", "testdata", "loader-io-bound.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	batches, profiles = new(atomic.Int64), new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			fmt.Fprintf(w, "# TYPE gpuwatch_loader_batches_total counter\ngpuwatch_loader_batches_total %d\n", batches.Load())
		case "/debug/pprof/profile":
			profiles.Add(1)
			w.Write(good)
		}
	}))
	t.Cleanup(srv.Close)
	if a, err = NewAttach(srv.URL); err != nil {
		t.Fatal(err)
	}
	return a, batches, profiles
}

// untilTrue polls cond (another goroutine's progress) for up to 10 s.
func untilTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("not within 10 s: %s", what)
}

// TestProfilerFirstTurnComesWhenTheLoopStarts: with a cadence of an hour,
// the first profile still comes as soon as a loader is known (discovery
// finds it after the profiler started) and its loop has had its first
// batch, and not before that batch (issue 39: a run shorter than the
// cadence showed no profile at all).
func TestProfilerFirstTurnComesWhenTheLoopStarts(t *testing.T) {
	a, batches, profiles := profiledLoader(t)
	ranks := NewRanks([]*Attach{a}, nil, time.Second)
	defer ranks.Close()
	var known atomic.Bool
	var picks atomic.Int64
	pick := func() *Attach {
		picks.Add(1)
		if !known.Load() {
			return nil // discovery has found nothing yet
		}
		return ranks.Pacing()
	}
	p := NewProfilerOf(pick, time.Hour, time.Second)
	p.poll = 5 * time.Millisecond
	p.FirstAfter(ranks.Started)
	p.Start(context.Background())
	defer p.Close()

	untilTrue(t, "the profiler looks for a loader", func() bool { return picks.Load() >= 3 })
	known.Store(true)
	_ = ranks.Collect(context.Background(), probetest.FrameAt(probetest.T0)) // read: no batch yet
	n := picks.Load()
	untilTrue(t, "the profiler looks again", func() bool { return picks.Load() >= n+3 })
	if got := profiles.Load(); got != 0 {
		t.Fatalf("%d profiles before the loop's first batch, want none", got)
	}

	batches.Store(4)
	_ = ranks.Collect(context.Background(), probetest.FrameAt(probetest.T0.Add(time.Second)))
	untilTrue(t, "a profile once the loop has started", func() bool {
		f := &sample.Frame{}
		_ = p.Collect(context.Background(), f)
		return f.Profile != nil && len(f.Profile.Top) > 0
	})
}

// TestProfilerFirstTurnWaitsACadenceAtMost: a loop that never starts (a
// dataset that builds for minutes) is profiled at the cadence anyway.
func TestProfilerFirstTurnWaitsACadenceAtMost(t *testing.T) {
	a, _, profiles := profiledLoader(t)
	p := NewProfilerOf(func() *Attach { return a }, 50*time.Millisecond, time.Second)
	p.poll = 5 * time.Millisecond
	p.FirstAfter(func() bool { return false })
	p.Start(context.Background())
	defer p.Close()
	untilTrue(t, "a profile after one cadence", func() bool { return profiles.Load() >= 1 })
}

// TestATakenLoaderSaysSo: the hook's server closes a connection it has no
// slot for (issue 57, item 2): the disconnection says the loader at its
// URL does not answer because its connections are taken, not only "EOF".
func TestATakenLoaderSaysSo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, _ := w.(http.Hijacker).Hijack()
		c.Close()
	}))
	defer srv.Close()
	a, _ := NewAttach(srv.URL)
	_, err := a.LoaderCounters(context.Background())
	want := "the loader at " + srv.URL + " does not answer (its connections are taken)"
	if !errors.Is(err, ErrDisconnected) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}
