//go:build linux

package endpoint

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// pidProcRoot is a /proc tree with a listener of inode 5000 on addr
// (tcp, or tcp6 when v6) and port 7000, and processes: pid 10 holds it,
// pid 11 holds another socket, pid 12 has no fd folder at all (gone).
func pidProcRoot(t *testing.T, tcpAddr string, v6 bool) string {
	t.Helper()
	root := t.TempDir()
	head := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	line := fmt.Sprintf("   0: %s:1B58 %s:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5000 1 0 100 0 0 10 0\n", tcpAddr, strings.Repeat("0", len(tcpAddr)))
	// A connection on the same port, not listening: never the listener.
	conn := fmt.Sprintf("   1: %s:1B58 %s:D431 01 00000000:00000000 00:00000000 00000000  1000        0 6000 1 0 100 0 0 10 0\n", tcpAddr, tcpAddr)
	tcp, tcp6 := head, head
	if v6 {
		tcp6 += line + conn
	} else {
		tcp += line + conn
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "net"), 0o755))
	must(os.WriteFile(filepath.Join(root, "net", "tcp"), []byte(tcp), 0o644))
	must(os.WriteFile(filepath.Join(root, "net", "tcp6"), []byte(tcp6), 0o644))
	for pid, inode := range map[int]int{10: 5000, 11: 6000} {
		fd := filepath.Join(root, strconv.Itoa(pid), "fd")
		must(os.MkdirAll(fd, 0o755))
		must(os.Symlink("/dev/null", filepath.Join(fd, "0")))
		must(os.Symlink(fmt.Sprintf("socket:[%d]", inode), filepath.Join(fd, "3")))
	}
	must(os.MkdirAll(filepath.Join(root, "12"), 0o755))
	return root
}

func TestPIDHoldsOnFixtures(t *testing.T) {
	lo4, lo6 := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")
	v4 := pidProcRoot(t, "0100007F", false)
	v6 := pidProcRoot(t, "00000000000000000000000001000000", true)
	any6 := pidProcRoot(t, "00000000000000000000000000000000", true) // [::]: takes IPv4 too
	for _, c := range []struct {
		name string
		root string
		pid  int
		host netip.Addr
		port uint16
		want holding
		why  string
	}{
		{"owns", v4, 10, lo4, 7000, holdOwns, ""},
		{"does not own", v4, 11, lo4, 7000, holdNotOwns, "does not hold its port"},
		{"gone", v4, 12, lo4, 7000, holdNotOwns, "gone"},
		{"no such pid", v4, 99, lo4, 7000, holdNotOwns, "gone"},
		{"another port: not found", v4, 10, lo4, 7001, holdCannotTell, "no socket listens on 127.0.0.1:7001"},
		{"another address: not found", v4, 10, netip.MustParseAddr("127.0.0.2"), 7000, holdCannotTell, "no socket listens"},
		{"IPv6 owns", v6, 10, lo6, 7000, holdOwns, ""},
		{"IPv6 does not own", v6, 11, lo6, 7000, holdNotOwns, "does not hold"},
		{"IPv6 wildcard takes IPv4", any6, 10, lo4, 7000, holdOwns, ""},
		{"no tables", t.TempDir(), 10, lo4, 7000, holdCannotTell, "no /proc/net/tcp"},
	} {
		h, why := pidHolds(c.root, c.pid, c.host, c.port)
		if h != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s: %v %q, want %v %q", c.name, h, why, c.want, c.why)
		}
	}
	bad := pidProcRoot(t, "0100007F", false)
	if err := os.WriteFile(filepath.Join(bad, "net", "tcp"), []byte("header\nnot a socket line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if h, why := pidHolds(bad, 10, lo4, 7000); h != holdCannotTell || !strings.Contains(why, "/proc/net/tcp") {
		t.Errorf("a table that is not the kernel's: %v %q", h, why)
	}
}

// TestPIDHoldsUnreadableDescriptors: another user's /proc/PID/fd, which
// only root reads, cannot tell.
func TestPIDHoldsUnreadableDescriptors(t *testing.T) {
	ls := []listener{{Port: 7000, Inode: 5000}}
	perm := &fs.PathError{Op: "open", Path: "/proc/10/fd", Err: fs.ErrPermission}
	if h, why := decideHolding(ls, nil, perm, false, "127.0.0.1:7000"); h != holdCannotTell || !strings.Contains(why, "cannot be read") {
		t.Errorf("unreadable: %v %q", h, why)
	}
	if os.Geteuid() == 0 {
		t.Skip("root reads every folder: the fixture's mode cannot refuse it")
	}
	root := pidProcRoot(t, "0100007F", false)
	fd := filepath.Join(root, "10", "fd")
	if err := os.Chmod(fd, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(fd, 0o755) })
	if h, why := pidHolds(root, 10, netip.MustParseAddr("127.0.0.1"), 7000); h != holdCannotTell || !strings.Contains(why, "cannot be read") {
		t.Errorf("unreadable fixture: %v %q", h, why)
	}
}

// TestAttachTrustsOnlyThePIDThatHoldsItsPort: this test's process serves
// the loader; a page naming this process is trusted, one naming pid 1 is
// not (root: pid 1's descriptors say it holds no such socket; another
// user: they cannot be read, and the pid is said unverified).
func TestAttachTrustsOnlyThePIDThatHoldsItsPort(t *testing.T) {
	var pid atomic.Int64
	pid.Store(int64(os.Getpid()))
	srv := serveMetrics(t, func() int { return int(pid.Load()) })
	a, _ := NewAttach(srv)
	c, err := a.LoaderCounters(context.Background())
	if err != nil || c.PID == nil || *c.PID != os.Getpid() || a.PID() != os.Getpid() || a.ProofNote() != "" {
		t.Fatalf("own pid: %v %v %d %q", err, c.PID, a.PID(), a.ProofNote())
	}
	pid.Store(1)
	a, _ = NewAttach(srv)
	c, err = a.LoaderCounters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	note := a.ProofNote()
	if os.Geteuid() == 0 {
		if c.PID != nil || c.LoopTID != nil || c.WorkerPIDs != nil || a.PID() != 0 || !strings.Contains(note, "says pid 1, but that process does not hold its port: pid not trusted (name the process with --pid)") {
			t.Fatalf("pid 1: %v %d %q", c.PID, a.PID(), note)
		}
	} else if c.PID == nil || !strings.Contains(note, "says pid 1, not verified to hold its port") {
		t.Fatalf("pid 1 as a user: %v %q", c.PID, note)
	}
	// Once per connection: a second frame does not look again.
	calls := 0
	real := holdsPort
	holdsPort = func(r string, p int, h netip.Addr, port uint16) (holding, string) {
		calls++
		return real(r, p, h, port)
	}
	defer func() { holdsPort = real }()
	for i := 0; i < 3; i++ {
		if _, err := a.LoaderCounters(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 0 || a.ProofNote() != note {
		t.Errorf("checked %d times on a kept connection, note %q", calls, a.ProofNote())
	}
}

// serveMetrics serves a loader's /metrics page from this process, naming
// the pid pid() gives (with a loop thread and a worker of it).
func serveMetrics(t *testing.T, pid func() int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		p := pid()
		fmt.Fprintf(w, "gpuwatch_loader_batches_total 5\ngpuwatch_loader_info{kind=\"python\",pid=\"%d\",tid=\"%d\"} 1\ngpuwatch_loader_worker_info{pid=\"%d\"} 1\n", p, p, p+1)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSharedBoxAPIDIsTrustedOnlyWithItsPort: two real users. Another
// user (65534) serves /metrics on loopback naming this test's process;
// root (the watcher) reads it: the pid is not trusted. The listener's own
// pid is found holding the port.
func TestSharedBoxAPIDIsTrustedOnlyWithItsPort(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a process as another user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv")
	}
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	dir, err := os.MkdirTemp("", "gpuwatch-pid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	page := fmt.Sprintf("gpuwatch_loader_batches_total 5\ngpuwatch_loader_info{kind=\"python\",pid=\"%d\"} 1\n", os.Getpid())
	if err := os.WriteFile(filepath.Join(dir, "metrics"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", python, "-u", "-m", "http.server", "--bind", "127.0.0.1", "--directory", dir, "0")
	cmd.Dir = "/"
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	port := make(chan uint16, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			// Serving HTTP on 127.0.0.1 port 41234 (http://127.0.0.1:41234/) ...
			f := strings.Fields(sc.Text())
			for i := 0; i+1 < len(f); i++ {
				if f[i] == "port" {
					if p, err := strconv.ParseUint(f[i+1], 10, 16); err == nil {
						port <- uint16(p)
						return
					}
				}
			}
		}
	}()
	var p uint16
	select {
	case p = <-port:
	case <-time.After(10 * time.Second):
		t.Fatal("the other user's server did not say its port")
	}
	lo := netip.MustParseAddr("127.0.0.1")
	if h, why := pidHolds("/proc", os.Getpid(), lo, p); h != holdNotOwns {
		t.Errorf("this test's pid on the other user's port: %v %q", h, why)
	}
	if h, why := pidHolds("/proc", cmd.Process.Pid, lo, p); h != holdOwns {
		t.Errorf("the listener's own pid (%d): %v %q", cmd.Process.Pid, h, why)
	}
	a, _ := NewAttach(fmt.Sprintf("http://127.0.0.1:%d", p))
	c, err := a.LoaderCounters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.PID != nil || a.PID() != 0 || !strings.Contains(a.ProofNote(), fmt.Sprintf("says pid %d, but that process does not hold its port: pid not trusted", os.Getpid())) {
		t.Errorf("the other user's claim of this pid: %v %d %q", c.PID, a.PID(), a.ProofNote())
	}
}

// FuzzPIDHolds: whatever /proc/net/tcp holds, pidHolds answers one of its
// three results, and never says a process holds a port without a
// listener of that port whose inode the process holds.
func FuzzPIDHolds(f *testing.F) {
	f.Add([]byte("h\n   0: 0100007F:1B58 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5000 1 0 100 0 0 10 0\n"), uint16(7000))
	f.Add([]byte("h\n 0: 0100007F:1B58 0:0 0A 0 0 0 1 0 6000\n"), uint16(7000))
	f.Add([]byte("h\n 0: 00000000:1B58 0:0 0A 0 0 0 1 0 5000\n 1: 00000000:1B58 0:0 0A 0 0 0 1 0 99\n"), uint16(7000))
	root := f.TempDir()
	fd := filepath.Join(root, "10", "fd")
	if err := os.MkdirAll(filepath.Join(root, "net"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.MkdirAll(fd, 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink("socket:[5000]", filepath.Join(fd, "3")); err != nil {
		f.Fatal(err)
	}
	lo := netip.MustParseAddr("127.0.0.1")
	f.Fuzz(func(t *testing.T, table []byte, port uint16) {
		if err := os.WriteFile(filepath.Join(root, "net", "tcp"), table, 0o644); err != nil {
			t.Fatal(err)
		}
		h, why := pidHolds(root, 10, lo, port)
		switch h {
		case holdOwns:
			ls, err := parseListeners(strings.NewReader(string(table)), port)
			if err != nil || len(ls) == 0 || why != "" {
				t.Fatalf("owns with %v, %d listeners, %q", err, len(ls), why)
			}
			for _, l := range ls {
				if l.takes(lo) && l.Inode != 5000 {
					t.Fatalf("owns, with listener %d not the process's", l.Inode)
				}
			}
		case holdNotOwns, holdCannotTell:
			if why == "" {
				t.Fatal("no reason")
			}
		default:
			t.Fatalf("result %d", h)
		}
	})
}
