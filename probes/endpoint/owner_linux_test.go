//go:build linux

package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeProcRoot is a /proc tree in which each of procs (pid → port, 0 for
// none) is a process of uid holding a socket listening on 127.0.0.1:port.
func fakeProcRoot(t testing.TB, uid int, procs map[int]uint16) string {
	t.Helper()
	root := t.TempDir()
	tcp := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	inode := 1000
	for pid, port := range procs {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(filepath.Join(dir, "fd"), 0o755); err != nil {
			t.Fatal(err)
		}
		status := fmt.Sprintf("Name:\tpython\nUid:\t%d\t%d\t%d\t%d\n", uid, uid, uid, uid)
		if err := os.WriteFile(filepath.Join(dir, "status"), []byte(status), 0o644); err != nil {
			t.Fatal(err)
		}
		if port == 0 {
			continue
		}
		inode++
		if err := os.Symlink(fmt.Sprintf("socket:[%d]", inode), filepath.Join(dir, "fd", "3")); err != nil {
			t.Fatal(err)
		}
		tcp += fmt.Sprintf("   0: 0100007F:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000 %5d        0 %d 1 0 100 0 0 10 0\n", port, uid, inode)
	}
	if err := os.MkdirAll(filepath.Join(root, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "net", "tcp"), []byte(tcp), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// recordingServer counts every request, and those with a token.
type recordingServer struct {
	url            string
	requests, auth atomic.Int64
}

func serveRecording(t *testing.T) (*recordingServer, net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recordingServer{url: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if req.Header.Get("Authorization") != "" {
			r.auth.Add(1)
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "gpuwatch_loader_batches_total 1")
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r, ln
}

// TestProveListenerOnThisMachine: this test's own listener is proven its
// own; a live process that does not hold it, and another user, are not.
func TestProveListenerOnThisMachine(t *testing.T) {
	_, ln := serveRecording(t)
	ap := netip.MustParseAddrPort(ln.Addr().String())
	uid := os.Geteuid()
	if err := proveListener("/proc", os.Getpid(), uid, ap.Addr(), ap.Port()); err != nil {
		t.Fatalf("this process's listener: %v", err)
	}
	if err := proveListener("/proc", 0, uid, ap.Addr(), ap.Port()); err != nil {
		t.Fatalf("this user's listener: %v", err)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if err := proveListener("/proc", cmd.Process.Pid, uid, ap.Addr(), ap.Port()); !errors.Is(err, ErrNotProven) {
		t.Errorf("a live process that does not hold the socket: %v", err)
	}
	if err := proveListener("/proc", os.Getpid(), uid+1, ap.Addr(), ap.Port()); !errors.Is(err, ErrNotProven) {
		t.Errorf("another user: %v", err)
	}
}

// TestAStaleAnnouncementIsNeverConnectedTo: an announcement whose PID
// lives but does not hold the port (a reused PID: the loader was killed
// with -9, something else serves on its port now) is removed by
// discovery, and neither discovery nor an attach given its announcement
// sends the listener a request, let alone the token.
func TestAStaleAnnouncementIsNeverConnectedTo(t *testing.T) {
	rec, _ := serveRecording(t)
	dir := filepath.Join(t.TempDir(), "gpuwatch")
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	ann := Announcement{PID: cmd.Process.Pid, URL: rec.url, Kind: "python", Token: "s3cret"}
	if _, err := Announce(dir, ann); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%d-%s.json", ann.PID, rec.url[len("http://127.0.0.1:"):]))
	d, err := Discover(dir, "/proc")
	if err != nil || len(d.Found) != 0 {
		t.Fatalf("found %+v: %v", d.Found, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale announcement is still there: %v (%s)", err, d.Note())
	}
	a, err := NewAttach(rec.url)
	if err != nil {
		t.Fatal(err)
	}
	ann.uid, ann.procRoot = os.Geteuid(), "/proc"
	a.Announced(ann)
	if err := a.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "is not the one listening") {
		t.Errorf("attached to a listener the announced process does not hold: %v", err)
	}
	// The announced process gone (the job ended): said as such, not as
	// another process's listener (a review read a spoofing alarm).
	cmd.Process.Kill()
	cmd.Wait()
	if err := a.Check(context.Background()); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the announced loader's process (pid %d) has exited, and another process listens on its port", ann.PID)) {
		t.Errorf("the announced process gone: %v", err)
	}
	if n := rec.requests.Load(); n != 0 {
		t.Errorf("%d requests reached the listener (%d with the token)", n, rec.auth.Load())
	}
	// The announced process itself: proven, and the token goes.
	ann.PID = os.Getpid()
	a.Announced(ann)
	if err := a.Check(context.Background()); err != nil {
		t.Fatalf("the announced process's own listener: %v", err)
	}
	if rec.auth.Load() == 0 {
		t.Error("the proven listener did not get the token")
	}
}

// TestAnExplicitURLToAnotherUsersPortSaysSo: a URL given to a loopback
// port whose listener is not the user's is read without a token, and the
// frame's reason says it is not proven; with credentials in the URL it is
// not connected to.
func TestAnExplicitURLToAnotherUsersPortSaysSo(t *testing.T) {
	rec, ln := serveRecording(t)
	ap := netip.MustParseAddrPort(ln.Addr().String())
	other := os.Geteuid() + 1
	root := fakeProcRoot(t, other, map[int]uint16{1: ap.Port()})
	a, _ := NewAttach(rec.url)
	a.owner.procRoot = root
	if os.Geteuid() == 0 {
		t.Skip("root reads anyone's listener")
	}
	if err := a.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if note := a.ProofNote(); note == "" {
		t.Error("no note for another user's listener")
	}
	b, _ := NewAttach("http://gpuwatch:tok@" + ln.Addr().String())
	b.owner.procRoot = root
	if err := b.Check(context.Background()); err == nil || rec.auth.Load() != 0 {
		t.Errorf("the URL's credentials went to another user's listener: %v, %d", err, rec.auth.Load())
	}
}

// TestDiscoveryLooksAtABoundedNumberOfFiles: a folder of 60,000 junk
// files and 1,100 bad announcements of a live process still finds a loader
// named before them, and says that not every file was looked at.
func TestDiscoveryLooksAtABoundedNumberOfFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gpuwatch")
	r0 := &fakeRank{rank: 0}
	r0.serve(t, "127.0.0.1:0")
	if _, err := Announce(dir, Announcement{PID: 1, URL: r0.url()}); err != nil {
		t.Fatal(err)
	}
	for i := range 60_000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("junk%d", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	me := os.Getpid()
	for i := range 1100 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d-%d.json", me, i)), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, port, _ := net.SplitHostPort(r0.addr)
	p, _ := strconv.Atoi(port)
	d, err := Discover(dir, fakeProcRoot(t, os.Geteuid(), map[int]uint16{1: uint16(p), me: 0}))
	if err != nil || len(d.Found) != 1 || !d.Capped || !strings.Contains(d.Note(), "holds too many files") {
		t.Fatalf("found %+v, capped %v: %v %s", d.Found, d.Capped, err, d.Note())
	}
}

// BenchmarkDiscoverJunkFolder is one scan of a folder holding 50,000
// junk files and one announcement (the scan runs every 2 s, off the tick).
func BenchmarkDiscoverJunkFolder(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "gpuwatch")
	if _, err := Announce(dir, Announcement{PID: 1, URL: "http://127.0.0.1:6061"}); err != nil {
		b.Fatal(err)
	}
	for i := range 50_000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("junk%d.json", i)), nil, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	procRoot := fakeProcRoot(b, os.Geteuid(), map[int]uint16{1: 6061})
	b.ResetTimer()
	for range b.N {
		if d, err := Discover(dir, procRoot); err != nil || len(d.Found) != 1 {
			b.Fatal(d, err)
		}
	}
}
