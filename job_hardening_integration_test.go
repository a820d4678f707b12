//go:build integration

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// These tests are issue 41's items 5 to 10 as they were found: the job
// and gpuwatch on a real terminal (tmux runs a shell in a pane, as a user's
// ssh session does), signals from outside, a sweep interrupted.

// pane is a shell in a detached 120×40 tmux pane on a server of its own.
type pane struct {
	t    *testing.T
	sock string
}

func newPane(t *testing.T) *pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("needs tmux (scripts/job-hardening.sh installs it)")
	}
	p := &pane{t: t, sock: fmt.Sprintf("gpuwatch-hardening-%d-%d", os.Getpid(), time.Now().UnixNano())}
	if out, err := p.tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "40", "bash", "--norc", "--noprofile"); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { _, _ = p.tmux("kill-server") })
	p.send("export PS1='$ '; stty -ixon", "Enter")
	return p
}

func (p *pane) tmux(args ...string) ([]byte, error) {
	return exec.Command("tmux", append([]string{"-L", p.sock}, args...)...).CombinedOutput()
}

func (p *pane) send(keys ...string) {
	p.t.Helper()
	if out, err := p.tmux(append([]string{"send-keys", "-t", "t"}, keys...)...); err != nil {
		p.t.Fatalf("send-keys: %v %s", err, out)
	}
}

// waitFor polls the pane until it shows s, for at most d.
func (p *pane) waitFor(s string, d time.Duration) {
	p.t.Helper()
	end := time.Now().Add(d)
	var screen []byte
	for time.Now().Before(end) {
		screen, _ = p.tmux("capture-pane", "-p", "-J", "-t", "t", "-S", "-200")
		if bytes.Contains(screen, []byte(s)) {
			return
		}
		time.Sleep(200 * time.Millisecond) // polling a screen: tmux has no event to wait on
	}
	p.t.Fatalf("not on screen within %v: %q\n%s", d, s, screen)
}

// readPID reads a PID a shell wrote to path, waiting for it at most 20 s.
func readPID(t *testing.T, path string) int {
	t.Helper()
	end := time.Now().Add(20 * time.Second)
	for time.Now().Before(end) {
		if b, err := os.ReadFile(path); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err == nil {
				return pid
			}
		}
		time.Sleep(100 * time.Millisecond) // the file is written by another process
	}
	t.Fatalf("no PID in %s", path)
	return 0
}

// waitGone waits, on a pidfd (no polling), until pid has exited; false
// after d.
func waitGone(t *testing.T, pid int, d time.Duration) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err == unix.ESRCH // already gone
	}
	defer unix.Close(fd)
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(d.Milliseconds()))
	return err == nil && n == 1
}

// TestCtrlZUnderHeadlessRunActsLikeAShell: Ctrl-Z stops the job, and
// gpuwatch gives the shell its prompt back ("Stopped"); fg continues both,
// the job runs to its end, and run exits with its status. Before, the
// shell never got control back and Ctrl-C did nothing.
func TestCtrlZUnderHeadlessRunActsLikeAShell(t *testing.T) {
	bin := binary(t)
	pidFile := filepath.Join(t.TempDir(), "job.pid")
	p := newPane(t)
	p.send(bin+" run --headless --interval 20s -- sh -c 'echo $$ > "+pidFile+"; for i in 1 2 3 4 5 6; do echo tick $i; sleep 1; done; exit 7'", "Enter")
	job := readPID(t, pidFile)
	p.waitFor("tick 2", 20*time.Second)
	p.send("C-z")
	p.waitFor("Stopped", 10*time.Second)
	// gpuwatch is stopped now, and the job must be too until fg.
	if st := procState(t, job); st != 'T' {
		t.Fatalf("the job's state is %c while gpuwatch is stopped: want T", st)
	}
	p.send("jobs -l; fg; echo FG=$?", "Enter")
	p.waitFor("tick 6", 20*time.Second)
	p.waitFor("FG=7", 20*time.Second)
}

// procState is pid's state letter (proc(5)).
func procState(t *testing.T, pid int) byte {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndexByte(b, ')')
	return b[i+2]
}

// TestAStoppedJobIsSaidInFrames: a job stopped from outside (kill -STOP)
// while gpuwatch watches it without a terminal: the frames say that the
// job is stopped, and it is continued and ends as usual.
func TestAStoppedJobIsSaidInFrames(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command(binary(t), "run", "--json", "--interval", "300ms", "--", "sh", "-c", "echo $$ > "+pidFile+"; sleep 30")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	job := readPID(t, pidFile)
	if err := syscall.Kill(job, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// At most 20 s of frames: then gpuwatch is killed, and the read ends.
	bound := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() })
	defer bound.Stop()
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 8<<20)
	seen := false
	for !seen && sc.Scan() {
		var l struct {
			Target *struct{ Stopped bool } `json:"target"`
		}
		seen = json.Unmarshal(sc.Bytes(), &l) == nil && l.Target != nil && l.Target.Stopped
	}
	if !seen {
		t.Fatalf("no frame said the job was stopped (%v)", sc.Err())
	}
	_ = syscall.Kill(job, syscall.SIGCONT)
	_ = syscall.Kill(-job, syscall.SIGTERM)
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if err := cmd.Wait(); exitCode(err) != 128+15 {
		t.Fatalf("run: %v, want the job's 143", err)
	}
}

// TestAHangUpEndsTheDashboardRun: the ssh session drops (the pane is
// killed): the job gets the hang-up, and gpuwatch ends too, leaving
// nothing running. Before, gpuwatch ran on for ever without a terminal.
func TestAHangUpEndsTheDashboardRun(t *testing.T) {
	dir := t.TempDir()
	p := newPane(t)
	p.send(fmt.Sprintf("cd %s; sh -c 'echo $$ > gw.pid; exec %s run -- sh -c \"echo \\$\\$ > job.pid; exec sleep 300\"'", dir, binary(t)), "Enter")
	gw, job := readPID(t, filepath.Join(dir, "gw.pid")), readPID(t, filepath.Join(dir, "job.pid"))
	t.Cleanup(func() { _ = syscall.Kill(job, syscall.SIGKILL) })
	p.waitFor("job pid", 20*time.Second)
	if _, err := p.tmux("kill-server"); err != nil {
		t.Fatal(err)
	}
	if !waitGone(t, job, 20*time.Second) {
		t.Fatal("the job outlived the hang-up")
	}
	if !waitGone(t, gw, 20*time.Second) {
		_ = syscall.Kill(gw, syscall.SIGKILL)
		t.Fatal("gpuwatch ran on after the hang-up and its job's end")
	}
}

// TestSignalsStopTheDashboardOnceTheJobEnded: the job has ended and the
// view stays ("q quits"); SIGTERM now stops gpuwatch (it was passed to a
// job that was gone).
func TestSignalsStopTheDashboardOnceTheJobEnded(t *testing.T) {
	dir := t.TempDir()
	p := newPane(t)
	p.send(fmt.Sprintf("cd %s; sh -c 'echo $$ > gw.pid; exec %s run -- true'; echo EXIT=$?", dir, binary(t)), "Enter")
	gw := readPID(t, filepath.Join(dir, "gw.pid"))
	t.Cleanup(func() { _ = syscall.Kill(gw, syscall.SIGKILL) }) // had it not stopped
	p.waitFor("exited with status 0", 30*time.Second)
	if err := syscall.Kill(gw, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitFor("EXIT=0", 20*time.Second)
}

// TestAKilledGpuwatchTakesItsJobWithIt: gpuwatch SIGKILLed during a
// headless run: the job gets its parent-death signal (SIGTERM) and ends,
// instead of running on orphaned.
func TestAKilledGpuwatchTakesItsJobWithIt(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command(binary(t), "run", "--headless", "--", "sh", "-c", "echo $$ > "+pidFile+"; exec sleep 300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	job := readPID(t, pidFile)
	defer syscall.Kill(job, syscall.SIGKILL)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !waitGone(t, job, 20*time.Second) {
		t.Fatal("the job outlived gpuwatch's SIGKILL")
	}
}

// TestSweepInterruptedKeepsItsRows: Ctrl-C (SIGINT) during the second
// configuration: the first one's row is printed and written to --out,
// marked interrupted, and the exit status is 0 (a clean stop, as the
// README says). Before, every row was lost and the status was 1.
func TestSweepInterruptedKeepsItsRows(t *testing.T) {
	outFile := filepath.Join(t.TempDir(), "sweep.json")
	cmd := exec.Command(binary(t), "sweep", "--workers", "0,1,2", "--dataset", t.TempDir(), "--dataset-size", "4MiB",
		"--sample-size", "4KiB", "--batch-size", "8", "--step-time", "20ms", "--epochs", "20", "--batches", "5", "--out", outFile)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Each configuration takes about 2 s (20 epochs × 5 batches × 20 ms):
	// the SIGINT goes when the second one's progress line comes.
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "[2/3]") {
			_ = cmd.Process.Signal(syscall.SIGINT)
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sweep: %v, want status 0; stdout:\n%s", err, stdout.String())
	}
	if !strings.Contains(stdout.String(), "interrupted after 1 of 3 configurations") {
		t.Fatalf("the table does not say it was interrupted:\n%s", stdout.String())
	}
	var res struct {
		Interrupted bool
		Planned     int `json:"planned_configurations"`
		Results     []struct{ Workers int }
	}
	b, err := os.ReadFile(outFile)
	if err != nil || json.Unmarshal(b, &res) != nil || !res.Interrupted || res.Planned != 3 || len(res.Results) != 1 {
		t.Fatalf("--out: %v %s", err, b)
	}
}

// TestAFullDiskUnderTheDashboardsJobLog: the dashboard's job writes 2 MB
// while its --job-log is on a 64 KiB tmpfs: the job still runs to its end
// (the view says it exited), the view says that writing the log failed,
// and its last line is shown. Before, the job froze in write() and the
// view said "Idle: nothing is running". Needs root (the tmpfs).
func TestAFullDiskUnderTheDashboardsJobLog(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		t.Skipf("a 64 KiB tmpfs needs root: %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	p := newPane(t)
	p.send(binary(t)+" run --job-log "+filepath.Join(dir, "job.log")+` -- sh -c 'i=0; while [ $i -lt 20000 ]; do echo line $i of a chatty training log......................................; i=$((i+1)); done; echo the last line'; echo EXIT=$?`, "Enter")
	p.waitFor("exited with status 0", 60*time.Second)
	p.waitFor("the last line", 5*time.Second)
	p.send("q")
	p.waitFor("EXIT=0", 20*time.Second)
	p.waitFor("writing it failed (write "+filepath.Join(dir, "job.log")+": no space left on device)", 5*time.Second)
}

// TestSweepOnAJobShorterThanTheWarmUpSaysSo: a job that ends by itself
// (status 0) inside --warmup was told "a longer --run-for", which cannot
// help; the row says the command ended, when, and what can.
func TestSweepOnAJobShorterThanTheWarmUpSaysSo(t *testing.T) {
	py := python(t, true)
	script := filepath.Join(t.TempDir(), "short.py")
	if err := os.WriteFile(script, []byte(`import sys, time
from torch.utils.data import DataLoader
dl = DataLoader(list(range(100000)), batch_size=4, num_workers=int(sys.argv[1]))
t = time.time()
for x in dl:
    time.sleep(0.01)
    if time.time() - t > 3:
        break
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command(binary(t), "sweep", "--grid", "num_workers=0", "--", py, script, "{num_workers:0}").CombinedOutput()
	if !strings.Contains(string(out), "the command exited with status 0 after") || !strings.Contains(string(out), "a shorter --warmup") {
		t.Fatalf("want the command's own end and a shorter --warmup said:\n%s", out)
	}
	if strings.Contains(string(out), "a longer --run-for") {
		t.Errorf("a longer --run-for cannot help a job that ends by itself:\n%s", out)
	}
}
