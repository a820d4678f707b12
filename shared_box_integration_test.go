//go:build integration

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue 41, items 1–4, as they were found: two real users on this machine.
// The victim (victimUID) runs gpuwatch; the other user (nobody, 65534)
// stands in for everyone else on a shared training box. Both run under
// setpriv (util-linux), so the tests need root and setpriv, and skip
// without them.

const (
	victimUID   = 60001
	attackerUID = 65534
)

// sharedBox is the two users' set-up: the victim's home (HOME, no
// XDG_RUNTIME_DIR: cron, su, Slurm) and a copy of gpuwatch both may run.
type sharedBox struct {
	bin  string // gpuwatch, 0755
	home string // the victim's, 0700
}

func newSharedBox(t *testing.T) *sharedBox {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run as two other users")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3")
	}
	src := binary(t)
	dir, err := os.MkdirTemp("", "gpuwatch-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b := &sharedBox{bin: filepath.Join(dir, "gpuwatch"), home: filepath.Join(dir, "home")}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.Chmod(dir, 0o755))
	must(t, os.WriteFile(b.bin, data, 0o755))
	must(t, os.Mkdir(b.home, 0o700))
	must(t, os.Chown(b.home, victimUID, victimUID))
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// as is a command run as uid (its group the same number, no others).
func (b *sharedBox) as(uid int, name string, args ...string) *exec.Cmd {
	u := strconv.Itoa(uid)
	cmd := exec.Command("setpriv", append([]string{"--reuid=" + u, "--regid=" + u, "--clear-groups", name}, args...)...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + b.home, "LANG=C.UTF-8"}
	if uid != victimUID {
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "LANG=C.UTF-8"}
	}
	return cmd
}

// TestSharedBoxRunFolderCannotBeMadeByAnother: the run folder on the
// job's PYTHONPATH, once gpuwatch has removed it, is a path no other user
// can make: the other user's sitecustomize never runs as the victim
// (issue 41, item 1; it did with /tmp/gpuwatch-run-NNN).
func TestSharedBoxRunFolderCannotBeMadeByAnother(t *testing.T) {
	b := newSharedBox(t)
	out, err := b.as(victimUID, b.bin, "run", "--json", "--", "sh", "-c", `printf %s "$PYTHONPATH" > "$HOME/pythonpath"`).CombinedOutput()
	if err != nil {
		t.Fatalf("gpuwatch run: %v\n%s", err, out)
	}
	pp, err := os.ReadFile(filepath.Join(b.home, "pythonpath"))
	must(t, err)
	runDir := strings.Split(string(pp), ":")[0]
	if !filepath.IsAbs(runDir) {
		t.Fatalf("PYTHONPATH %q", pp)
	}
	if _, err := os.Stat(runDir); !os.IsNotExist(err) {
		t.Errorf("the run folder %s outlived gpuwatch: %v", runDir, err)
	}
	// A process the job left behind still has runDir on its PYTHONPATH:
	// the other user tries to plant a sitecustomize there.
	pwned := filepath.Join(os.TempDir(), fmt.Sprintf("gpuwatch-pwned-%d", os.Getpid()))
	t.Cleanup(func() { os.Remove(pwned) })
	plant := fmt.Sprintf(`mkdir -p %q && printf 'import os\nopen(%q, "w").write(str(os.getuid()))\n' > %q/sitecustomize.py`, runDir, pwned, runDir)
	planted, perr := b.as(attackerUID, "sh", "-c", plant).CombinedOutput()
	t.Cleanup(func() {
		// Whatever the other user made under /tmp, as the old run folder was.
		if strings.HasPrefix(runDir, os.TempDir()+"/") {
			os.RemoveAll(runDir)
		}
	})
	leftover := b.as(victimUID, "/usr/bin/python3", "-c", "pass")
	leftover.Env = append(leftover.Env, "PYTHONPATH="+string(pp))
	if o, err := leftover.CombinedOutput(); err != nil {
		t.Fatalf("the leftover's python: %v\n%s", err, o)
	}
	if b, err := os.ReadFile(pwned); err == nil {
		t.Fatalf("code of uid %d ran as uid %s: the run folder %s could be made again by another user", attackerUID, b, runDir)
	}
	if perr == nil {
		t.Errorf("uid %d could make %s (but its code did not run): %s", attackerUID, runDir, planted)
	}
	if !strings.HasPrefix(runDir, b.home+"/") {
		t.Errorf("the run folder %s is not under the victim's home %s (no XDG_RUNTIME_DIR)", runDir, b.home)
	}
}

// TestSharedBoxAnotherUserCannotReadOrBlindTheHook: the other user has
// taken /tmp/gpuwatch-VICTIM first (item 4), finds the hook's port in
// /proc/net/tcp and asks it for /metrics and a profile without the token
// (item 2), then holds as many connections to it as it can for 8 s
// (item 3). gpuwatch run still reads the loop all along, never calls it
// idle, and never says no DataLoader has iterated while batches flow.
func TestSharedBoxAnotherUserCannotReadOrBlindTheHook(t *testing.T) {
	b := newSharedBox(t)
	if err := exec.Command("/usr/bin/python3", "-c", "import torch.utils.data").Run(); err != nil {
		t.Skip("needs torch for /usr/bin/python3 (Debian's python3-torch)")
	}
	squat := filepath.Join(os.TempDir(), fmt.Sprintf("gpuwatch-%d", victimUID))
	os.RemoveAll(squat)
	if out, err := b.as(attackerUID, "sh", "-c", fmt.Sprintf("mkdir -m 777 %q", squat)).CombinedOutput(); err != nil {
		t.Fatalf("squat: %v %s", err, out)
	}
	t.Cleanup(func() { os.RemoveAll(squat) })
	train := filepath.Join(b.home, "train.py")
	must(t, os.WriteFile(train, []byte(trainLoop), 0o644))
	must(t, os.Chown(train, victimUID, victimUID))
	cmd := b.as(victimUID, b.bin, "run", "--json", "--duration", "40s", "--profile-every", "0", "--", "/usr/bin/python3", train)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	frames := make(chan runLine, 256)
	go func() {
		defer close(frames)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			var l runLine
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Type == "frame" {
				frames <- l
			}
		}
	}()
	// Item 4: with the discovery folder taken, the hook is still read.
	first := awaitFrame(t, frames, 60*time.Second, func(l runLine) bool { return connectedRanks(l) > 0 })
	t.Logf("read the hook despite %s: %s", squat, first.Target.Loader)

	port := listeningPort(t, victimUID)
	b.askWithoutToken(t, port)
	check := func(l runLine) {
		if l.Verdict != nil && l.Verdict.Kind == "idle" {
			t.Errorf("verdict idle at %s while the loop runs (ranks %+v)", l.Time.Format("15:04:05"), l.Ranks)
		}
		if l.Target != nil && strings.Contains(l.Target.Loader, "no DataLoader has iterated") {
			t.Errorf("frame at %s says %q while batches flow", l.Time.Format("15:04:05"), l.Target.Loader)
		}
	}
	check(first)
	during, connected := holdTheHook(t, port, frames, check, &stderr)
	if during == 0 || connected < during-1 {
		t.Errorf("while uid %d held the hook's connections, %d of %d frames read the hook", attackerUID, connected, during)
	}
	for l := range frames {
		check(l)
	}
	_ = cmd.Wait()
}

// askWithoutToken: the other user asks the hook at port for /metrics, a
// profile with fine switching, and the index, with no token: 401 each
// (item 2).
func (b *sharedBox) askWithoutToken(t *testing.T, port int) {
	t.Helper()
	probe := fmt.Sprintf(`
import urllib.request, urllib.error
for path in ("/metrics", "/debug/pprof/profile?seconds=1&fine_switch=1", "/"):
    try:
        r = urllib.request.urlopen("http://127.0.0.1:%d" + path, timeout=5)
        print(path, r.status, r.read()[:200])
    except urllib.error.HTTPError as e:
        print(path, e.code)
`, port)
	got, err := b.as(attackerUID, "/usr/bin/python3", "-c", probe).CombinedOutput()
	if err != nil {
		t.Fatalf("the other user's requests: %v\n%s", err, got)
	}
	for _, path := range []string{"/metrics", "/debug/pprof/profile?seconds=1&fine_switch=1", "/"} {
		if !strings.Contains(string(got), path+" 401") {
			t.Errorf("uid %d asked %s without the token: %s", attackerUID, path, got)
		}
	}
}

// holdTheHook: the other user holds every connection to port it can for
// 8 s, opening new ones as the server closes them (item 3); each frame
// meanwhile goes to check. It returns the frames seen and how many of
// them read the hook.
func holdTheHook(t *testing.T, port int, frames <-chan runLine, check func(runLine), stderr fmt.Stringer) (during, connected int) {
	t.Helper()
	u := strconv.Itoa(attackerUID)
	hold := exec.Command("setpriv", "--reuid="+u, "--regid="+u, "--clear-groups", "/usr/bin/python3", "-c", fmt.Sprintf(holdConnections, port))
	hold.Dir = "/"
	holdOut, err := hold.StdoutPipe()
	must(t, err)
	must(t, hold.Start())
	defer func() { _ = hold.Process.Kill(); _ = hold.Wait() }()
	line, _ := bufio.NewReader(holdOut).ReadString('\n')
	if !strings.HasPrefix(line, "held") {
		t.Fatalf("the other user could not connect: %q", line)
	}
	t.Logf("uid %d: %s", attackerUID, strings.TrimSpace(line))
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); {
		select {
		case l, ok := <-frames:
			if !ok {
				t.Fatalf("gpuwatch ended early: %s", stderr)
			}
			check(l)
			during++
			if connectedRanks(l) > 0 {
				connected++
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no frame for 10 s")
		}
	}
	_, _ = io.Copy(io.Discard, holdOut)
	return during, connected
}

// trainLoop is an unmodified training loop: a DataLoader over a small
// in-memory dataset, its batches taken as fast as they come, until
// gpuwatch stops it.
const trainLoop = `
import torch
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(4096, 8), torch.randint(0, 2, (4096,)))
loader = DataLoader(ds, batch_size=32, num_workers=0)
while True:
    for x, y in loader:
        (x * 2).sum()
`

// holdConnections opens 64 connections to the port and keeps them open,
// reopening each one the server closes, for 8 s.
const holdConnections = `
import socket, time
port = %d
def conn():
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        s.setblocking(False)
        return s
    except OSError:
        return None
socks = [conn() for _ in range(64)]
print("held", sum(s is not None for s in socks), "connections", flush=True)
end = time.monotonic() + 8
while time.monotonic() < end:
    for i, s in enumerate(socks):
        try:
            if s is None or s.recv(1) == b"":
                raise OSError
        except BlockingIOError:
            pass
        except OSError:
            if s is not None:
                s.close()
            socks[i] = conn()
    time.sleep(0.05)
`

// awaitFrame reads frames until ok holds, within limit.
func awaitFrame(t *testing.T, frames <-chan runLine, limit time.Duration, ok func(runLine) bool) runLine {
	t.Helper()
	deadline := time.After(limit)
	var last runLine
	for {
		select {
		case l, open := <-frames:
			if !open {
				t.Fatalf("gpuwatch ended before the frame waited for; last: %+v", last.Target)
			}
			last = l
			if ok(l) {
				return l
			}
		case <-deadline:
			loader := ""
			if last.Target != nil {
				loader = last.Target.Loader
			}
			t.Fatalf("no such frame within %v; the last says %q", limit, loader)
		}
	}
}

func connectedRanks(l runLine) int {
	n := 0
	for _, r := range l.Ranks {
		if r.Connected {
			n++
		}
	}
	return n
}

// listeningPort finds, as any local user can, the loopback TCP port uid
// listens on (/proc/net/tcp: proc(5); state 0A is LISTEN).
func listeningPort(t *testing.T, uid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	must(t, err)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 8 || f[3] != "0A" || f[7] != strconv.Itoa(uid) {
			continue
		}
		if hostPort := strings.Split(f[1], ":"); len(hostPort) == 2 && hostPort[0] == "0100007F" {
			p, err := strconv.ParseInt(hostPort[1], 16, 32)
			must(t, err)
			return int(p)
		}
	}
	t.Fatalf("uid %d listens on no loopback port", uid)
	return 0
}

// TestSharedBoxAnotherUsersJobIsSaidUnread: gpuwatch --pid run by one
// user on another user's busy process cannot read that process's exe or
// maps, so it cannot know whether it trains; the target says so — how many busy processes it could not read, and what to do —
// instead of "no training process found" (issue 54 item 3: serve as uid
// 65534 read "no training process" beside a root job).
func TestSharedBoxAnotherUsersJobIsSaidUnread(t *testing.T) {
	b := newSharedBox(t)
	busy := b.as(victimUID, "/usr/bin/python3", "-c", "import time\nt = time.time()\nwhile time.time() - t < 30: pass")
	must(t, busy.Start())
	t.Cleanup(func() { busy.Process.Kill(); busy.Wait() })
	out, err := b.as(attackerUID, b.bin, "--json", "--duration", "4s", "--interval", "1s", "--pid", strconv.Itoa(busy.Process.Pid)).Output()
	if err != nil {
		t.Fatalf("gpuwatch as uid %d: %v\n%s", attackerUID, err, out)
	}
	var said []string
	for _, line := range strings.Split(string(out), "\n") {
		var f struct {
			Type   string `json:"type"`
			Target *struct {
				Loader string `json:"loader"`
			} `json:"target"`
		}
		if json.Unmarshal([]byte(line), &f) == nil && f.Type == "frame" && f.Target != nil {
			said = append(said, f.Target.Loader)
		}
	}
	if len(said) == 0 || !strings.Contains(said[len(said)-1], "a busy process of another user could not be read") {
		t.Fatalf("the target said %q", said)
	}
	t.Logf("%s", said[len(said)-1])

	// A process that ran a second of CPU and sleeps now is not busy: an old
	// daemon of another user is no reason to run gpuwatch as root.
	// Its second is of CPU, not of wall time: on a busy box 1.5 s of
	// wall gave it 0.8 s of CPU (a CI run), under the second waited for.
	idle := b.as(victimUID, "/usr/bin/python3", "-c", "import time\nwhile time.process_time() < 1.05: pass\ntime.sleep(30)")
	must(t, idle.Start())
	t.Cleanup(func() { idle.Process.Kill(); idle.Wait() })
	// Its busy second over (the process asleep in time.sleep) before it is
	// watched: what is measured is a process asleep.
	for deadline := time.Now().Add(10 * time.Second); ; {
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", idle.Process.Pid))
		if i := strings.LastIndexByte(string(st), ')'); i > 0 {
			// After the name: state, then utime and stime at fields 12 and 13.
			f := strings.Fields(string(st[i+1:]))
			if len(f) > 13 && f[0] == "S" {
				ut, _ := strconv.Atoi(f[11])
				stm, _ := strconv.Atoi(f[12])
				if ut+stm >= 100 { // its second and more of CPU done
					break
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the process never slept: %s", st)
		}
		time.Sleep(50 * time.Millisecond) // polling /proc: no event says a process fell asleep
	}
	out, err = b.as(attackerUID, b.bin, "--json", "--duration", "4s", "--interval", "1s", "--pid", strconv.Itoa(idle.Process.Pid)).Output()
	if err != nil {
		t.Fatalf("gpuwatch as uid %d: %v\n%s", attackerUID, err, out)
	}
	if strings.Contains(string(out), "could not be read") {
		t.Errorf("a sleeping process of another user counted as busy:\n%s", out)
	}
}
