package endpoint

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
	"github.com/gpuwatch/gpuwatch/sample"
)

// fakeRank serves the loader protocol's /metrics for one rank whose
// counters the test moves: waitSec and stepSec so far over batches.
type fakeRank struct {
	mu               sync.Mutex
	rank             int // -1: no rank label
	batches          uint64
	waitSec, stepSec float64
	waiting          float64 // the wait under way, seconds (0: not waiting)
	srv              *http.Server
	ln               net.Listener
	addr             string
}

func (r *fakeRank) advance(batches uint64, wait, step float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches += batches
	r.waitSec += wait
	r.stepSec += step
}

func (r *fakeRank) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hist := func(name string, sum float64) {
		fmt.Fprintf(w, "# TYPE %s histogram\n%s_bucket{le=\"+Inf\"} %d\n%s_sum %g\n%s_count %d\n", name, name, r.batches, name, sum, name, r.batches)
	}
	hist("gpuwatch_loader_wait_seconds", r.waitSec)
	hist("gpuwatch_loader_step_seconds", r.stepSec)
	fmt.Fprintf(w, "# TYPE gpuwatch_loader_batches_total counter\ngpuwatch_loader_batches_total %d\n", r.batches)
	fmt.Fprintf(w, "# TYPE gpuwatch_loader_workers gauge\ngpuwatch_loader_workers 2\n")
	fmt.Fprintf(w, "# TYPE gpuwatch_loader_waiting_seconds gauge\ngpuwatch_loader_waiting_seconds %g\n", r.waiting)
	label := ""
	if r.rank >= 0 {
		label = fmt.Sprintf(",rank=\"%d\",world_size=\"3\"", r.rank)
	}
	fmt.Fprintf(w, "# TYPE gpuwatch_loader_info gauge\ngpuwatch_loader_info{pid=\"%d\",kind=\"test\"%s} 1\n", 1000+max(r.rank, 0), label)
}

// serve starts (or restarts) the rank's server at addr ("127.0.0.1:0":
// a free port), its counters from zero.
func (r *fakeRank) serve(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.ln = ln
	r.addr, r.srv = ln.Addr().String(), &http.Server{Handler: r}
	r.batches, r.waitSec, r.stepSec = 0, 0, 0
	srv := r.srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

func (r *fakeRank) stop() { _ = r.srv.Close() }

// heldBy starts a process that holds r's listening socket too (as a
// DataLoader worker forked by the loader does), so that announcing its
// PID is proven (owner.go); kill ends it. syscall.StartProcess, not
// exec.Cmd's ExtraFiles: File.Fd would make the socket, shared with the
// server, blocking.
func (r *fakeRank) heldBy(t *testing.T) (pid int, kill func()) {
	t.Helper()
	rc, err := r.ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	if err := rc.Control(func(s uintptr) { fd, err = syscall.Dup(int(s)) }); err != nil || fd < 0 {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	pid, err = syscall.ForkExec(sleep, []string{"sleep", "60"}, &syscall.ProcAttr{Files: []uintptr{0, 1, 2, uintptr(fd)}})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		})
	}
	t.Cleanup(kill)
	return pid, kill
}

func (r *fakeRank) url() string { return "http://" + r.addr }

// freeAddr is a loopback address nobody listens on (yet).
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestRanksDisconnectRestartAndLate: two ranks answer, a third comes up
// late; the waiting rank paces the job; a rank that goes away is shown
// disconnected while the others go on, and is read again from its
// restart.
func TestRanksDisconnectRestartAndLate(t *testing.T) {
	r0, r1, late := &fakeRank{rank: 0}, &fakeRank{rank: 1}, &fakeRank{rank: -1}
	r0.serve(t, "127.0.0.1:0")
	r1.serve(t, "127.0.0.1:0")
	lateAddr := freeAddr(t)
	now := probetest.T0
	var attached []*Attach
	for _, u := range []string{r1.url(), r0.url(), "http://" + lateAddr} {
		a, err := NewAttach(u)
		if err != nil {
			t.Fatal(err)
		}
		a.now = func() time.Time { return now }
		attached = append(attached, a)
	}
	p := NewRanks(attached, nil, time.Second)
	defer p.Close()
	ctx := context.Background()
	collect := func() (*sample.Frame, error) {
		f := probetest.FrameAt(now)
		err := p.Collect(ctx, f)
		now = now.Add(time.Second)
		return f, err
	}
	if _, err := collect(); err != nil {
		t.Fatalf("first reading: %v", err)
	}
	r0.advance(50, 0.01, 0.99) // waits 1 %
	r1.advance(25, 0.5, 0.5)   // waits 50 %
	f, err := collect()
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Ranks) != 3 {
		t.Fatalf("ranks %+v", f.Ranks)
	}
	// In rank order: 0 and 1 from their labels, the late one by position (2).
	r := f.Ranks
	if r[0].Rank != 0 || r[1].Rank != 1 || r[2].Rank != 2 || r[2].Connected || !r[0].Connected || *r[1].WorldSize != 3 {
		t.Fatalf("ranks %+v", r)
	}
	if !r[1].Pacing || r[0].Pacing || *r[1].WaitShare != 0.5 || f.Loader == nil || *f.Loader.WaitShare != 0.5 || r[1].PID != 1001 {
		t.Errorf("rank 1 must pace the job: %+v, loader %+v", r, f.Loader)
	}
	if p.Pacing() != attached[0] || p.PacingPID() != 1001 {
		t.Errorf("pacing attach %v pid %d", p.Pacing(), p.PacingPID())
	}

	// Rank 1 goes away: the others go on, the pace moves to rank 0.
	r1.stop()
	r0.advance(50, 0.02, 0.98)
	f, err = collect()
	if err != nil {
		t.Fatalf("one rank down must not fail the tick: %v", err)
	}
	if f.Ranks[1].Connected || f.Ranks[1].DisconnectedSince == nil || !f.Ranks[0].Pacing {
		t.Fatalf("after rank 1 went away: %+v", f.Ranks)
	}

	// Rank 1 restarts at its address with new counters; the late rank
	// comes up. After the backoff both are read, rank 1 from its restart.
	r1.serve(t, r1.addr)
	late.serve(t, lateAddr)
	now = now.Add(3 * time.Second)
	_, _ = collect()
	r0.advance(50, 0.02, 0.98)
	r1.advance(10, 0.3, 0.1)
	late.advance(10, 0.1, 0.9)
	f, err = collect()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Ranks {
		if !r.Connected || r.WaitShare == nil {
			t.Fatalf("after restart and late start: %+v", f.Ranks)
		}
	}
	if w := *f.Ranks[1].WaitShare; math.Abs(w-0.75) > 1e-9 || !f.Ranks[1].Pacing {
		t.Errorf("restarted rank 1 waits %v (want 0.75, counted from its restart) pacing %v", w, f.Ranks[1].Pacing)
	}

	// Every rank gone: the tick says so.
	r0.stop()
	r1.stop()
	late.stop()
	if _, err := collect(); err == nil {
		t.Error("no rank answering, yet no error")
	}
}

// fakeJob is fake ranks served on loopback, attached to with a clock the
// test moves, and watched as one job: collect reads a frame at the
// clock's time and moves it a second on.
type fakeJob struct {
	t        *testing.T
	now      time.Time
	attached []*Attach
	p        *Ranks
}

func watchFakeRanks(t *testing.T, ranks ...*fakeRank) *fakeJob {
	j := &fakeJob{t: t, now: probetest.T0}
	for _, r := range ranks {
		r.serve(t, "127.0.0.1:0")
		a, err := NewAttach(r.url())
		if err != nil {
			t.Fatal(err)
		}
		a.now = func() time.Time { return j.now }
		j.attached = append(j.attached, a)
	}
	j.p = NewRanks(j.attached, nil, time.Second)
	t.Cleanup(func() { _ = j.p.Close() })
	return j
}

func (j *fakeJob) collect() *sample.Frame {
	f := probetest.FrameAt(j.now)
	if err := j.p.Collect(context.Background(), f); err != nil {
		j.t.Fatal(err)
	}
	j.now = j.now.Add(time.Second)
	return f
}

// TestRanksAStuckRankPaces: a rank inside next() through the whole
// interval completes no batch, yet it waits more than any: it paces (its
// wait share 1, from the wait under way). A rank frozen in its step (not
// waiting) says nothing of its wait and does not.
func TestRanksAStuckRankPaces(t *testing.T) {
	stuck, stepping, going := &fakeRank{rank: 0}, &fakeRank{rank: 1}, &fakeRank{rank: 2}
	j := watchFakeRanks(t, going, stepping, stuck)
	collect := j.collect
	collect()
	going.advance(40, 0.2, 0.8) // waits 20 %
	stuck.mu.Lock()
	stuck.waiting = 4.2 // asked 4.2 s ago, nothing since
	stuck.mu.Unlock()
	f := collect()
	r := f.Ranks
	if len(r) != 3 || !r[0].Pacing || r[0].WaitShare == nil || *r[0].WaitShare != 1 {
		t.Fatalf("the stuck rank must pace, waiting all the interval: %+v", r)
	}
	if r[1].WaitShare != nil || r[1].Pacing || r[2].Pacing {
		t.Errorf("the rank in its step says nothing of its wait, the going one does not pace: %+v", r)
	}
	if f.Loader == nil || f.Loader.WaitingMs == nil || *f.Loader.WaitingMs != 4200 {
		t.Errorf("the loader shown is the stuck rank's, waiting 4.2 s: %+v", f.Loader)
	}
}

// TestRanksOneLoaderIsTheLoaderProbe: one URL and no discovery read as
// attach always did: the loader, no ranks.
func TestRanksOneLoaderIsTheLoaderProbe(t *testing.T) {
	r0 := &fakeRank{rank: -1}
	r0.serve(t, "127.0.0.1:0")
	a, _ := NewAttach(r0.url())
	p := NewRanks([]*Attach{a}, nil, time.Second)
	defer p.Close()
	_ = p.Collect(context.Background(), probetest.FrameAt(probetest.T0))
	r0.advance(10, 0.1, 0.9)
	f := probetest.FrameAt(probetest.T0.Add(time.Second))
	if err := p.Collect(context.Background(), f); err != nil || f.Ranks != nil || f.Loader == nil || *f.Loader.WaitShare != 0.1 {
		t.Fatalf("one loader: ranks %+v loader %+v err %v", f.Ranks, f.Loader, err)
	}
}

// TestDiscovery: announcements in a private folder are found in rank
// order; a stale one (its process gone) is removed; a folder others may
// write is refused; hostile files are skipped; a loader announced later
// is picked up by the next scan, and one whose announcement went and that
// no longer answers is dropped.
func TestDiscovery(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gpuwatch")
	r0, r1 := &fakeRank{rank: 0}, &fakeRank{rank: 1}
	r0.serve(t, "127.0.0.1:0")
	r1.serve(t, "127.0.0.1:0")
	one, two := 1, 2
	self := os.Getpid()
	// Two live processes announce: a child that holds r1's socket, and
	// this test.
	holder, unhold := r1.heldBy(t)
	remove1, err := Announce(dir, Announcement{PID: holder, Rank: &one, WorldSize: &two, URL: r1.url(), Kind: "python"})
	if err != nil {
		t.Fatal(err)
	}
	// A process that has gone: PID 2^22 is above Linux's pid_max.
	if _, err := Announce(dir, Announcement{PID: 1 << 22, URL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	// Hostile files, named as announcements of this live process.
	me := strconv.Itoa(self)
	for name, body := range map[string]string{
		me + "-10.json": "{not json",
		me + "-11.json": `{"pid":1,"url":"ftp://127.0.0.1:1"}`,
		me + "-12.json": `{"url":"http://127.0.0.1:2"}`,
		me + "-13.json": `{"pid":1,"url":"http://127.0.0.1:3","kind":"` + string(make([]byte, 8<<10)) + `"}`,
		me + "-14.json": `{"pid":` + me + `,"rank":-4,"url":"http://127.0.0.1:4"}`,
		"junk.json":     "{not json", // not named as an announcement: not looked at
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, me+"-15.json")); err != nil {
		t.Fatal(err)
	}
	procRoot := "/proc"
	d, err := Discover(dir, procRoot)
	found := d.Found
	if err != nil || len(found) != 1 || found[0].URL != r1.url() || *found[0].Rank != 1 || found[0].Kind != "python" {
		t.Fatalf("found %+v %v", found, err)
	}
	if d.Refusals != 6 || !strings.Contains(d.Note(), "refused 6 announcements") || !strings.Contains(d.Note(), me+"-15.json: not a regular file") {
		t.Errorf("refusals %d: %s", d.Refusals, d.Note())
	}
	if _, err := os.Stat(filepath.Join(dir, strconv.Itoa(1<<22)+"-1.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale announcement is still there: %v", err)
	}

	p := NewRanks(nil, func() (Discovery, error) { return Discover(dir, procRoot) }, 10*time.Millisecond)
	p.Start(context.Background())
	defer p.Close()
	now := probetest.T0
	collect := func() *sample.Frame {
		f := probetest.FrameAt(now)
		_ = p.Collect(context.Background(), f)
		now = now.Add(time.Second)
		return f
	}
	if f := collect(); len(f.Ranks) != 1 || f.Ranks[0].Rank != 1 || !strings.Contains(f.Unavailable[sample.SourceDiscovery], "refused 6 announcements") {
		t.Fatalf("first scan: %+v, %q", f.Ranks, f.Unavailable[sample.SourceDiscovery])
	}
	zero := 0
	if _, err := Announce(dir, Announcement{PID: self, Rank: &zero, URL: r0.url()}); err != nil {
		t.Fatal(err)
	}
	if f := collectUntil(t, collect, func(f *sample.Frame) bool { return len(f.Ranks) == 2 }); f.Ranks[0].Rank != 0 || f.Ranks[1].Rank != 1 {
		t.Fatalf("after rank 0 announced: %+v", f.Ranks)
	}
	remove1()
	unhold()
	r1.stop()
	if f := collectUntil(t, collect, func(f *sample.Frame) bool { return len(f.Ranks) == 1 }); f.Ranks[0].Rank != 0 {
		t.Fatalf("rank 1 gone and unannounced must be dropped: %+v", f.Ranks)
	}

	// A folder that others may write is not trusted.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Discover(dir, procRoot); err == nil {
		t.Error("read announcements from a world-writable folder")
	}
}

// collectUntil collects until cond holds of a frame (discovery scans on
// its own goroutine: the frame after a change is not known in advance),
// failing after 5 s.
func collectUntil(t *testing.T, collect func() *sample.Frame, cond func(*sample.Frame) bool) *sample.Frame {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if f := collect(); cond(f) {
			return f
		}
		time.Sleep(5 * time.Millisecond) // the scanner's next turn; the condition decides, not this
	}
	f := collect()
	t.Fatalf("not within 5 s: ranks %+v", f.Ranks)
	return f
}

func TestExpandURLs(t *testing.T) {
	got, err := ExpandURLs([]string{"http://127.0.0.1:6061-6063", "http://u:secret@10.0.0.2:6061"})
	want := []string{"http://127.0.0.1:6061", "http://127.0.0.1:6062", "http://127.0.0.1:6063", "http://u:secret@10.0.0.2:6061"}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v %v", got, err)
	}
	for _, bad := range []string{"http://h:6068-6061", "http://h:0-3", "http://h:1-70000", "http://h:1000-2000", "ftp://h:1", "h:6061"} {
		if _, err := ExpandURLs([]string{bad}); !errors.Is(err, ErrBadURL) {
			t.Errorf("%q: %v, want ErrBadURL", bad, err)
		}
	}
}

// FuzzAnnouncement: whatever a discovery file holds, reading it never
// panics, and what it yields is a checked loader URL, a real PID range and
// ranks in range.
func FuzzAnnouncement(f *testing.F) {
	f.Add([]byte(`{"pid":4242,"rank":1,"local_rank":1,"world_size":8,"url":"http://127.0.0.1:6062","kind":"python"}`))
	f.Add([]byte(`{"pid":1,"url":"http://u:p@[::1]:1/x","kind":"\u001b[2J"}`))
	f.Add([]byte(`{"pid":7,"world_size":2,"url":"http://127.0.0.1:6061","rendezvous":"[fe80::1%eth0]:29500"}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body []byte) {
		path := filepath.Join(dir, "a.json")
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		a, err := readAnnouncement(path)
		if err != nil {
			return
		}
		if a.PID <= 0 || a.PID > 1<<22 {
			t.Fatalf("pid %d", a.PID)
		}
		if _, err := NewAttach(a.URL); err != nil {
			t.Fatalf("url %q: %v", a.URL, err)
		}
		for _, r := range []*int{a.Rank, a.LocalRank, a.WorldSize} {
			if r != nil && (*r < 0 || *r > maxRank) {
				t.Fatalf("rank %d", *r)
			}
		}
		if strings.ContainsFunc(a.Kind, func(r rune) bool { return r < 'a' && r != '-' && r != '_' && (r < '0' || r > '9') }) {
			t.Fatalf("kind %q", a.Kind)
		}
		if a.Rendezvous != "" && (len(a.Rendezvous) > 262 || sample.Printable(a.Rendezvous) != a.Rendezvous || strings.ContainsAny(a.Rendezvous, " /@")) {
			t.Fatalf("rendezvous %q", a.Rendezvous)
		}
	})
}

// FuzzExpandURLs: any argument expands to at most sample.MaxRanks checked URLs,
// or is refused.
func FuzzExpandURLs(f *testing.F) {
	f.Add("http://127.0.0.1:6061-6068")
	f.Add("https://h:1-65535/x")
	f.Fuzz(func(t *testing.T, raw string) {
		urls, err := ExpandURLs([]string{raw})
		if err != nil {
			return
		}
		if len(urls) > sample.MaxRanks {
			t.Fatalf("%d URLs", len(urls))
		}
		for _, u := range urls {
			if _, err := NewAttach(u); err != nil {
				t.Fatalf("%q: %v", u, err)
			}
		}
	})
}

// TestDiscoveryOneLoaderIsOneRank: one loader announced five ways — as
// 127.0.0.1, localhost and ::ffff:127.0.0.1, with a trailing slash and
// with credentials, by five live processes — is one rank, however many
// scans run; a loader on another host is refused, and the frame says why.
func TestDiscoveryOneLoaderIsOneRank(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gpuwatch")
	r0 := &fakeRank{rank: 0}
	r0.serve(t, "127.0.0.1:0")
	_, port, _ := net.SplitHostPort(r0.addr)
	var pids []int
	for range 4 {
		pid, _ := r0.heldBy(t)
		pids = append(pids, pid)
	}
	pids = append(pids, os.Getpid())
	for i, u := range []string{
		"http://127.0.0.1:" + port, "http://localhost:" + port, "http://[::ffff:127.0.0.1]:" + port,
		"http://127.0.0.1:" + port + "/", "http://user:pw@127.0.0.1:" + port,
	} {
		if _, err := Announce(dir, Announcement{PID: pids[i], URL: u}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Announce(dir, Announcement{PID: 1, URL: "http://10.1.2.3:6061"}); err != nil {
		t.Fatal(err)
	}
	p := NewRanks(nil, func() (Discovery, error) { return Discover(dir, "/proc") }, 5*time.Millisecond)
	p.Start(context.Background())
	defer p.Close()
	now := probetest.T0
	for range 20 {
		f := probetest.FrameAt(now)
		_ = p.Collect(context.Background(), f)
		now = now.Add(time.Second)
		if p.Len() != 1 {
			t.Fatalf("%d ranks from one loader: %+v", p.Len(), f.Ranks)
		}
		note := f.Unavailable[sample.SourceDiscovery]
		if !strings.Contains(note, "refused 5 announcements") || !strings.Contains(note, "the same loader as") ||
			!strings.Contains(note, "http://10.1.2.3:6061 is not on this machine: discovery takes loopback URLs only") {
			t.Fatalf("discovery note %q", note)
		}
		time.Sleep(2 * time.Millisecond) // let the scanner run between ticks, as it does in use
	}
}

// slowServer answers /metrics with headers at once and then one byte of
// the body every 200 ms, never finishing within a read's deadline (a
// slowloris endpoint).
func slowServer(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := w.Write([]byte("#")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestASlowRankHoldsNoOtherBack: with a slowloris rank beside two fast
// ones, every tick returns within its budget, the fast ranks carry fresh
// readings each tick, and the slow one is marked slow, not waited for.
func TestASlowRankHoldsNoOtherBack(t *testing.T) {
	r0, r1 := &fakeRank{rank: 0}, &fakeRank{rank: 1}
	r0.serve(t, "127.0.0.1:0")
	r1.serve(t, "127.0.0.1:0")
	var attached []*Attach
	for _, u := range []string{r0.url(), r1.url(), slowServer(t)} {
		a, _ := NewAttach(u)
		attached = append(attached, a)
	}
	p := NewRanks(attached, nil, time.Second)
	defer p.Close()
	now := probetest.T0
	for tick := range 6 {
		r0.advance(10, 0.1, 0.9)
		r1.advance(10, 0.5, 0.5)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		f := probetest.FrameAt(now)
		start := time.Now()
		err := p.Collect(ctx, f)
		took := time.Since(start)
		cancel()
		now = now.Add(time.Second)
		// Its budget is the context's 500 ms (four fifths of it waiting
		// on the slow rank, by design); a tick the slow rank held would
		// last as long as it streams, for ever. A second past the budget
		// is a loaded machine's slack (a race build beside the suite read
		// 540 ms), not a held tick.
		if took > 1500*time.Millisecond {
			t.Fatalf("tick %d took %v: the slow rank held it", tick, took)
		}
		if err != nil || len(f.Ranks) != 3 {
			t.Fatalf("tick %d: %v, ranks %+v", tick, err, f.Ranks)
		}
		var slow *sample.Rank
		for i := range f.Ranks {
			r := &f.Ranks[i]
			switch {
			case r.URL == attached[2].Source():
				slow = r
			case !r.Connected:
				t.Fatalf("tick %d: fast rank %d shown disconnected", tick, r.Rank)
			case tick > 0 && r.WaitShare == nil:
				t.Fatalf("tick %d: fast rank %d has no fresh reading", tick, r.Rank)
			}
		}
		if slow == nil || slow.SlowSince == nil {
			t.Fatalf("tick %d: the slow rank is not marked slow: %+v", tick, slow)
		}
	}
}

// tokenRank is a fakeRank that, as the hook does since issue 41, answers
// only requests with its token.
type tokenRank struct {
	fakeRank
	token string
	seen  []string // the Authorization headers it got
}

func (r *tokenRank) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.seen = append(r.seen, req.Header.Get("Authorization"))
	r.mu.Unlock()
	if req.Header.Get("Authorization") != "Bearer "+r.token {
		http.Error(w, "401: wants its token", http.StatusUnauthorized)
		return
	}
	r.fakeRank.ServeHTTP(w, req)
}

// TestTheTokenComesFromTheAnnouncement: a loader that wants a token is
// read with the one it announced (issue 41, item 2); without one it is
// refused, with a message that says where the token is; a token that is
// no token is refused at discovery.
func TestTheTokenComesFromTheAnnouncement(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gpuwatch")
	r := &tokenRank{token: "s3cr3t-Token_0123456789abcdefghij"}
	r.rank = -1
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: r}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String()

	// Without the token: refused, and told why.
	a, _ := NewAttach(url)
	err = a.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "announcement") {
		t.Fatalf("no token: %v", err)
	}
	// Announced with it: discovery reads it.
	self := os.Getpid()
	if _, err := Announce(dir, Announcement{PID: self, URL: url, Kind: "python", Token: r.token}); err != nil {
		t.Fatal(err)
	}
	d, err := Discover(dir, "/proc")
	if err != nil || len(d.Found) != 1 || d.Found[0].Token != r.token || TokenFor(d, url+"/") != r.token {
		t.Fatalf("discovery: %+v %v", d, err)
	}
	p := NewRanks(nil, func() (Discovery, error) { return Discover(dir, "/proc") }, time.Hour)
	defer p.Close()
	f := probetest.FrameAt(probetest.T0)
	if err := p.Collect(context.Background(), f); err != nil || len(f.Ranks) != 1 || !f.Ranks[0].Connected {
		t.Fatalf("discovered with its token: %v %+v", err, f.Ranks)
	}
	// A URL given: the token is looked up after the first 401.
	b, _ := NewAttach(url)
	b.LookUpAnnouncement(func() (Announcement, bool) { d, _ := Discover(dir, "/proc"); return AnnouncedFor(d, url) })
	if err := b.Check(context.Background()); err != nil {
		t.Fatalf("a given URL, its token looked up: %v", err)
	}
	// Credentials in the URL are sent instead of a token (basic auth).
	c, _ := NewAttach(strings.Replace(url, "http://", "http://gpuwatch:other@", 1))
	c.SetToken(r.token)
	_ = c.Check(context.Background())
	r.mu.Lock()
	last := r.seen[len(r.seen)-1]
	r.mu.Unlock()
	if !strings.HasPrefix(last, "Basic ") {
		t.Errorf("with credentials in the URL, sent %q", last)
	}
	// A token that would break a header is refused.
	for i, bad := range []string{"a b", "a\r\nX-Evil: 1", strings.Repeat("a", 300)} {
		name := filepath.Join(dir, fmt.Sprintf("%d-%d.json", self, 40000+i))
		body := fmt.Sprintf(`{"pid":%d,"url":"http://127.0.0.1:%d","token":%q}`, self, 40000+i, bad)
		if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d, _ = Discover(dir, "/proc")
	if len(d.Found) != 1 || d.Refusals != 3 || !strings.Contains(d.Note(), "token") {
		t.Errorf("bad tokens: found %d, %s", len(d.Found), d.Note())
	}
}

// The fake ranks, all served by this test's process, name pids 1000 to
// 1009 (1000+rank): those are taken as holding their ports.
func init() {
	real := holdsPort
	holdsPort = func(procRoot string, pid int, host netip.Addr, port uint16) (holding, string) {
		if pid >= 1000 && pid < 1010 {
			return holdOwns, ""
		}
		return real(procRoot, pid, host, port)
	}
}

// TestRanksOfKeepsUnrelatedJobsApart: two scripts started from one shell,
// each with its own loader and no WORLD_SIZE, are two jobs: attaching to
// one of them by its URL does not take the other for its rank 1. The
// ranks of a distributed job (the same WORLD_SIZE, above 1) join the one
// named; a one-process job with WORLD_SIZE=1 joins nothing. Two jobs of
// two ranks each, side by side, are told apart by their rendezvous
// (MASTER_ADDR:MASTER_PORT); a rank that announces none (a hook from
// before it was announced) is grouped by WORLD_SIZE alone.
func TestRanksOfKeepsUnrelatedJobsApart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gpuwatch")
	zero, one, two, three := 0, 1, 2, 3
	rs := make([]*fakeRank, 10)
	for i, ann := range []Announcement{
		{}, {}, // two unrelated scripts
		{Rank: &zero, WorldSize: &two}, {Rank: &one, WorldSize: &two}, // one job's two ranks
		{Rank: &zero, WorldSize: &one}, // a job of one process that set WORLD_SIZE=1
		// Two jobs of three ranks each, started side by side: 5 and 6 at
		// one rendezvous, 7 and 8 at another; 9 announces none.
		{Rank: &zero, WorldSize: &three, Rendezvous: "127.0.0.1:29500"}, {Rank: &one, WorldSize: &three, Rendezvous: "127.0.0.1:29500"},
		{Rank: &zero, WorldSize: &three, Rendezvous: "127.0.0.1:29501"}, {Rank: &one, WorldSize: &three, Rendezvous: "127.0.0.1:29501"},
		{Rank: &two, WorldSize: &three},
	} {
		rs[i] = &fakeRank{}
		rs[i].serve(t, "127.0.0.1:0")
		ann.PID, _ = rs[i].heldBy(t)
		ann.URL, ann.Kind = rs[i].url(), "python"
		if _, err := Announce(dir, ann); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Discover(dir, "/proc")
	if err != nil || len(d.Found) != len(rs) {
		t.Fatalf("found %d: %v %s", len(d.Found), err, d.Note())
	}
	urlsOf := func(as []Announcement) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.URL)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(us ...string) []string { slices.Sort(us); return us }
	for _, c := range []struct {
		name  string
		named []string
		want  []string
	}{
		{"one of two unrelated scripts", []string{rs[0].url()}, []string{rs[0].url()}},
		{"a rank of a distributed job", []string{rs[3].url()}, sorted(rs[2].url(), rs[3].url())},
		{"WORLD_SIZE=1", []string{rs[4].url()}, []string{rs[4].url()}},
		{"one of two jobs of the same WORLD_SIZE", []string{rs[5].url()}, sorted(rs[5].url(), rs[6].url(), rs[9].url())},
		{"the other one", []string{rs[8].url()}, sorted(rs[7].url(), rs[8].url(), rs[9].url())},
		{"a URL nobody announced", []string{"http://127.0.0.1:1"}, nil},
	} {
		if got := urlsOf(RanksOf(d, c.named)); !slices.Equal(got, c.want) {
			t.Errorf("%s: joined %v, want %v", c.name, got, c.want)
		}
	}
	if len(d.Found) != len(rs) {
		t.Errorf("RanksOf changed the discovery: %d found", len(d.Found))
	}
}

// TestAnnouncedRendezvousIsAHostAndAPort: what an announcement's
// rendezvous may be; anything else is read as none (grouped by WORLD_SIZE
// alone), not as a key two hostile files could share.
func TestAnnouncedRendezvousIsAHostAndAPort(t *testing.T) {
	for s, want := range map[string]bool{
		"127.0.0.1:29500": true, "node-01.cluster:1234": true, "[fe80::1%eth0]:29500": true,
		"": false, "127.0.0.1": false, "127.0.0.1:0": false, "127.0.0.1:70000": false, "host:port": false,
		"a b:1": false, "\x1b]0;x\x07:1": false, strings.Repeat("a", 254) + ":1": false,
	} {
		if got := validRendezvous(s); got != want {
			t.Errorf("validRendezvous(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestDiscoveredLoadersWithoutAWorldAreJobsOfTheirOwn: two loaders
// announced without RANK or WORLD_SIZE (two unrelated scripts) are each
// rank 0 of a world of 1 — not ranks 0 and 1 of one job by their order —
// in every frame, and one keeps that when the other goes; a loader whose
// metrics say rank 1 of 3 is that rank beside them.
func TestDiscoveredLoadersWithoutAWorldAreJobsOfTheirOwn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gpuwatch")
	a, b, c := &fakeRank{rank: -1}, &fakeRank{rank: -1}, &fakeRank{rank: 1}
	for _, r := range []*fakeRank{a, b, c} {
		r.serve(t, "127.0.0.1:0")
	}
	removeA, err := Announce(dir, Announcement{PID: os.Getpid(), URL: a.url(), Kind: "python"})
	if err != nil {
		t.Fatal(err)
	}
	p := NewRanks(nil, func() (Discovery, error) { return Discover(dir, "/proc") }, 5*time.Millisecond)
	p.Start(context.Background())
	defer p.Close()
	now := probetest.T0
	collect := func() *sample.Frame {
		f := probetest.FrameAt(now)
		_ = p.Collect(context.Background(), f)
		now = now.Add(time.Second)
		a.advance(10, 0.98, 0.02)
		b.advance(2, 0.01, 0.99)
		c.advance(5, 0.1, 0.9)
		return f
	}
	collectUntil(t, collect, func(f *sample.Frame) bool { return len(f.Ranks) == 1 })
	pidB, unholdB := b.heldBy(t)
	removeB, err := Announce(dir, Announcement{PID: pidB, URL: b.url(), Kind: "python"})
	if err != nil {
		t.Fatal(err)
	}
	pidC, _ := c.heldBy(t)
	if _, err := Announce(dir, Announcement{PID: pidC, URL: c.url(), Kind: "python"}); err != nil {
		t.Fatal(err)
	}
	collectUntil(t, collect, func(f *sample.Frame) bool { return len(f.Ranks) == 3 })
	own := func(f *sample.Frame, url string) {
		t.Helper()
		for _, r := range f.Ranks {
			if r.URL == url && (r.Rank != 0 || r.WorldSize == nil || *r.WorldSize != 1 || r.LocalRank != nil) {
				t.Fatalf("%s is no rank of a job, yet reads %+v", url, r)
			}
		}
	}
	for range 3 {
		f := collect()
		own(f, a.url())
		own(f, b.url())
		for _, r := range f.Ranks {
			if r.URL == c.url() && (r.Rank != 1 || r.WorldSize == nil || *r.WorldSize != 3) {
				t.Fatalf("the loader that says rank 1 of 3 reads %+v", r)
			}
		}
	}
	// The first one goes: the others keep what they were.
	removeA()
	a.stop()
	f := collectUntil(t, collect, func(f *sample.Frame) bool { return len(f.Ranks) == 2 })
	own(f, b.url())
	removeB()
	unholdB()
	b.stop()
}

// TestAJobOfItsOwnKeepsTheFrame: of two unrelated jobs that both wait
// for input, the one whose reading the last frame showed keeps it until
// the other waits samePace more (they took it in turns, frame by frame);
// ranks of one job are paced by the one that waits most, as before.
func TestAJobOfItsOwnKeepsTheFrame(t *testing.T) {
	a0, _ := NewAttach("http://127.0.0.1:1")
	a1, _ := NewAttach("http://127.0.0.1:2")
	targets := []*rankTarget{{a: a0}, {a: a1}}
	ranks := func(world int, w0, w1 float64) []sample.Rank {
		return []sample.Rank{{Connected: true, WorldSize: &world, WaitShare: &w0}, {Rank: 1, Connected: true, WorldSize: &world, WaitShare: &w1}}
	}
	for _, c := range []struct {
		world  int
		w0, w1 float64
		last   *Attach
		want   int
	}{
		{1, 0.97, 0.99, a0, 0}, // the last frame's job keeps it
		{1, 0.97, 0.99, a1, 1},
		{1, 0.97, 0.99, nil, 1}, // the first frame: the one that waits most
		{1, 0.50, 0.99, a0, 1},  // the other waits far more: it takes the frame
		{2, 0.97, 0.99, a0, 1},  // ranks of one job: the most waiting paces
	} {
		if got := paceOf(ranks(c.world, c.w0, c.w1), targets, c.last); got != c.want {
			t.Errorf("world %d waits %v/%v: pace %d, want %d", c.world, c.w0, c.w1, got, c.want)
		}
	}
}

// TestTheFirstProfileWaitsForThePacingRank: of two ranks, the profiler's
// first turn (Started) comes once their waits say which paces, and it is
// the straggler's: rank 0, read first and first with batches, used to be
// profiled while rank 1 paced, and --once ended on that profile (a
// hostile user's review).
func TestTheFirstProfileWaitsForThePacingRank(t *testing.T) {
	quick, straggler := &fakeRank{rank: 0}, &fakeRank{rank: 1}
	j := watchFakeRanks(t, quick, straggler)
	p, attached, collect := j.p, j.attached, j.collect
	for i := range worldWaitReads + 1 { // their world is 3: the third rank is waited for this long
		quick.advance(20, 0.05, 0.95)     // waits 5 %: the rest is its all-reduce, waiting for rank 1
		straggler.advance(20, 0.85, 0.15) // loads every batch itself
		if p.Started() && p.Pacing() != attached[1] {
			t.Fatalf("reading %d: the first profile would be taken of %s, not the straggler's %s", i, p.Pacing().Source(), attached[1].Source())
		}
		collect()
	}
	if !p.Started() || p.Pacing() != attached[1] {
		t.Fatalf("after %d readings: started %v, pacing %s: want the straggler's turn", worldWaitReads+1, p.Started(), p.Pacing().Source())
	}
}

// TestOneRankOfSeveralWaitsForTheOthers: the first rank discovery finds
// of a job of three is not profiled at its first batch (the others come a
// scan later, and one of them may pace); after worldWaitReads reads it
// is (a node of a job of many sees only its own ranks).
func TestOneRankOfSeveralWaitsForTheOthers(t *testing.T) {
	r := &fakeRank{rank: 0} // its world is 3 (fakeRank's label)
	r.serve(t, "127.0.0.1:0")
	a, err := NewAttach(r.url())
	if err != nil {
		t.Fatal(err)
	}
	now := probetest.T0
	a.now = func() time.Time { return now }
	p := NewRanks([]*Attach{a}, nil, time.Second)
	defer p.Close()
	for i := 1; i <= worldWaitReads; i++ {
		r.advance(20, 0.5, 0.5)
		if err := p.Collect(context.Background(), probetest.FrameAt(now)); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
		if started, want := p.Started(), i >= worldWaitReads; started != want {
			t.Fatalf("after %d reads: started %v, want %v", i, started, want)
		}
	}
}
