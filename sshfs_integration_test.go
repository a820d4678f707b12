//go:build integration

package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// networkMount mounts src over sshfs at a new folder and returns it: a
// private sshd on a loopback port (its own host key, a key for this
// user, SFTP), reached through a relay that delays every chunk by delay
// in each direction (a round trip of 2×delay, the network between a
// training node and its storage), and sshfs, a real FUSE client of
// remote storage (mountinfo type fuse.sshfs). All of it stops and
// unmounts at the test's end. Without sshd, sshfs or root it skips,
// unless GPUWATCH_REQUIRE_SSHFS=1 (CI) makes that a failure.
func networkMount(t *testing.T, src string, delay time.Duration) string {
	t.Helper()
	fail := t.Skipf
	if os.Getenv("GPUWATCH_REQUIRE_SSHFS") == "1" {
		fail = t.Fatalf
	}
	for _, p := range []string{"/usr/sbin/sshd", "sshfs", "ssh-keygen", "ssh"} {
		if _, err := exec.LookPath(p); err != nil {
			fail("no %s (apt-get install openssh-server sshfs)", p)
			return ""
		}
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fail("sshfs needs FUSE: %v", err)
		return ""
	}
	if os.Geteuid() != 0 {
		fail("an sshd of its own needs root")
		return ""
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, k := range []string{"host", "user"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "user.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(freePort(t))
	conf := fmt.Sprintf(`Port %s
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
Subsystem sftp internal-sftp
LogLevel ERROR
`, port, filepath.Join(dir, "host"), filepath.Join(dir, "authorized_keys"))
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // its privilege separation folder
		t.Fatal(err)
	}
	sshd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	sshd.Stderr = os.Stderr
	if err := sshd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sshd.Process.Kill(); _ = sshd.Wait() })
	// sshd listens before the relay takes a port (it could take sshd's),
	// and a login works before sshfs tries (whose ssh's errors it hides).
	key := filepath.Join(dir, "user")
	sshArgs := []string{"-p", port, "-i", key, "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR", me.Username + "@127.0.0.1", "true"}
	for deadline := time.Now().Add(20 * time.Second); ; {
		out, err := exec.Command("ssh", sshArgs...).CombinedOutput()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh %s: %v: %s", strings.Join(sshArgs, " "), err, out)
		}
		time.Sleep(100 * time.Millisecond) // sshd starting: poll its port
	}
	relay := delayRelay(t, "127.0.0.1:"+port, delay)
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	_, rport, _ := net.SplitHostPort(relay)
	args := []string{"-p", rport, "-o", "IdentityFile=" + key + ",StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,BatchMode=yes,LogLevel=ERROR",
		me.Username + "@127.0.0.1:" + src, mnt}
	if out, err := exec.Command("sshfs", args...).CombinedOutput(); err != nil {
		t.Fatalf("sshfs %s: %v: %s", strings.Join(args, " "), err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v: %s", mnt, err, out)
			_ = exec.Command("umount", "-l", mnt).Run()
		}
	})
	return mnt
}

// delayRelay listens on a loopback port and relays each connection to
// target, every chunk delivered delay after it arrived, in order, in each
// direction. It stops at the test's end.
func delayRelay(t *testing.T, target string, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	closed := false
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			if closed { // accepted as the test ended
				mu.Unlock()
				in.Close()
				out.Close()
				return
			}
			conns = append(conns, in, out)
			wg.Add(2)
			mu.Unlock()
			go func() { defer wg.Done(); delayCopy(out, in, delay) }()
			go func() { defer wg.Done(); delayCopy(in, out, delay) }()
		}
	}()
	return ln.Addr().String()
}

// delayCopy copies src to dst, each chunk written delay after it was
// read; at src's end it closes dst's write side.
func delayCopy(dst, src net.Conn, delay time.Duration) {
	type chunk struct {
		due time.Time
		b   []byte
	}
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{time.Now().Add(delay), append([]byte(nil), buf[:n]...)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.due)) // the network's latency, emulated
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	for range q { // drain, so the reader ends
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}
