package job

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalsAfterTheJobStopGpuwatch: while the job runs a signal is the
// job's; once it has ended, SIGTERM ends gpuwatch's session; a SIGHUP (the
// terminal is gone) is passed on and ends the session when the job ends;
// and the forwarding goroutine is gone once stopped, reading nothing more
// (it used to range over a channel nobody closed, issue 37).
func TestSignalsAfterTheJobStopGpuwatch(t *testing.T) {
	start := func() *Job {
		j, err := Start(Options{Argv: []string{"sleep", "60"}, Env: os.Environ()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = j.Signal(syscall.SIGKILL); <-j.Done() })
		return j
	}
	wait := func(what string, c <-chan struct{}) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: not within 20 s", what)
		}
	}

	job := start()
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	stop := Forward(sigs, job, cancel, true)
	sigs <- syscall.SIGTERM
	wait("the job ends on the SIGTERM passed on", job.Done())
	if job.ExitCode() != 128+15 || ctx.Err() != nil {
		t.Fatalf("exit %d, session %v: want the job killed by SIGTERM and the session still on", job.ExitCode(), ctx.Err())
	}
	sigs <- syscall.SIGTERM
	wait("SIGTERM after the job ended ends the session", ctx.Done())
	stop()
	sigs <- syscall.SIGINT
	if len(sigs) != 1 {
		t.Fatal("a signal was read after the forwarding stopped")
	}

	if signal.Ignored(syscall.SIGHUP) {
		// Started under nohup: the job inherits SIGHUP ignored, as a
		// user's job under `nohup gpuwatch run` should (forwarded).
		t.Log("SIGHUP is ignored here (nohup): its half is not tested")
		return
	}
	job = start()
	ctx, cancel = context.WithCancel(context.Background())
	sigs = make(chan os.Signal, 1)
	stop = Forward(sigs, job, cancel, true)
	sigs <- syscall.SIGHUP
	wait("the job ends on the SIGHUP passed on", job.Done())
	wait("a hang-up ends the dashboard's session once the job has ended", ctx.Done())
	stop()

	// Headless, the session ends with the job by itself, after its last
	// frame and the exit event: the hang-up must not cut those off.
	job = start()
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	sigs = make(chan os.Signal, 1)
	stop = Forward(sigs, job, cancel, false)
	sigs <- syscall.SIGHUP
	wait("the job ends on the SIGHUP passed on", job.Done())
	stop() // waits for the forwarder: it has handled the job's end or never will
	if ctx.Err() != nil {
		t.Fatal("a hang-up cancelled a headless session: its exit event would be cut off")
	}
}

// TestANohupRunKeepsSIGHUPIgnored: gpuwatch started with SIGHUP ignored
// (nohup) neither catches nor forwards it, so the job keeps it ignored
// and outlives the hang-up the user asked it to survive.
func TestANohupRunKeepsSIGHUPIgnored(t *testing.T) {
	if !signal.Ignored(syscall.SIGHUP) {
		cmd := exec.Command("nohup", os.Args[0], "-test.run=^TestANohupRunKeepsSIGHUPIgnored$", "-test.count=1")
		cmd.Env = os.Environ()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("under nohup: %v\n%s", err, out)
		}
		return
	}
	if slices.Contains(Forwarded(), os.Signal(syscall.SIGHUP)) {
		t.Fatal("SIGHUP is forwarded although gpuwatch was started with it ignored")
	}
}

// TestStopThenSaysNoLaterThanTheGrace: run --once writes its summary in
// StopThen's callback; a job that ignores SIGINT must not hold it back
// past the SIGINT's grace (a job that ignored SIGINT and SIGTERM held it
// for ever, and killed by timeout, gpuwatch printed nothing). The job
// still ends, by SIGTERM.
func TestStopThenSaysNoLaterThanTheGrace(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	j, err := Start(Options{Argv: []string{"sh", "-c", `trap '' INT; touch "$0"; sleep 60 & wait`, ready}, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) { // until its trap is set
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			j.Stop(time.Second)
			t.Fatal("the job never set its trap")
		}
	}
	calls, aliveAtCall := 0, false
	j.StopThen(200*time.Millisecond, func() {
		calls++
		select {
		case <-j.Done():
		default:
			aliveAtCall = true
		}
	})
	if calls != 1 || !aliveAtCall {
		t.Errorf("then called %d times, the job still running at the call: %v (want once, while it ignored SIGINT)", calls, aliveAtCall)
	}
	if how, _ := j.Exit(); how != "killed by SIGTERM" {
		t.Errorf("the job %s, want killed by SIGTERM", how)
	}
}

// TestStopEndsWhatTheShellLeft: a shell that starts ranks with & (a
// non-interactive shell starts them with SIGINT ignored) ends on the
// SIGINT; the ranks it started are stopped too, by SIGTERM to what is
// left of the job's process group (they used to run on after gpuwatch
// run --once had exited, holding their GPUs).
func TestStopEndsWhatTheShellLeft(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	j, err := Start(Options{Argv: []string{"sh", "-c", `sleep 60 & a=$!; sleep 60 & echo "$a $!" > "$0.tmp"; mv "$0.tmp" "$0"; wait`, pids}, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	ranks := startedRanks(t, j, pids)
	j.StopThen(200*time.Millisecond, nil)
	if how, _ := j.Exit(); how != "killed by SIGINT" {
		t.Errorf("the shell %s, want killed by SIGINT (the ranks are what ignores it)", how)
	}
	for _, pid := range ranks {
		if alive(pid) {
			t.Errorf("rank %d still runs after the job was stopped", pid)
		}
	}
}

// startedRanks waits for the PIDs job j's shell writes to the file at
// path (renamed into place once written whole) and returns them; the
// test fails, the job stopped, if none come within 10 s.
func startedRanks(t *testing.T, j *Job, path string) []int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil {
			var pids []int
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
					pids = append(pids, pid)
				}
			}
			if len(pids) > 0 {
				return pids
			}
		}
		if time.Now().After(deadline) {
			j.Stop(time.Second)
			t.Fatal("the shell never started its ranks")
		}
	}
}

// alive says pid runs: it is in /proc and not a zombie (an orphan waits
// there for init to reap it).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// TestQuitAfterQEndsWhatTheShellLeft: the dashboard's q sends SIGINT,
// the shell ends on it and the ranks it started (SIGINT ignored) run on;
// the stop that follows (run's, as the dashboard quits) is a stop
// gpuwatch began, not a job that ended by itself: it ends them too.
func TestQuitAfterQEndsWhatTheShellLeft(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	j, err := Start(Options{Argv: []string{"sh", "-c", `sleep 60 & echo "$!" > "$0.tmp"; mv "$0.tmp" "$0"; wait`, pids}, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	rank := startedRanks(t, j, pids)[0]
	j.Interrupt() // q: SIGINT to the group
	<-j.Done()
	if !alive(rank) {
		t.Fatal("the rank ended on SIGINT: it should ignore it, as a shell's & starts it")
	}
	j.StopThen(200*time.Millisecond, nil)
	if alive(rank) {
		t.Errorf("rank %d still runs after the dashboard quit", rank)
	}
}

// TestAZombieIsNotLeftInTheGroup: a process of the group that has ended
// and waits for its parent to reap it is not one left to stop.
func TestAZombieIsNotLeftInTheGroup(t *testing.T) {
	for _, c := range []struct {
		stat  string
		state byte
		pgrp  int
	}{
		{"42 (sleep) S 1 4242 4242 0 -1", 'S', 4242},
		{"43 (a) b) c) Z 1 77 77 0", 'Z', 77}, // a name with parentheses
	} {
		st, pg, ok := statStateGroup([]byte(c.stat))
		if !ok || st != c.state || pg != c.pgrp {
			t.Errorf("%q: %c %d %v, want %c %d", c.stat, st, pg, ok, c.state, c.pgrp)
		}
	}
	if _, _, ok := statStateGroup([]byte("garbage")); ok {
		t.Error("a line with no command read")
	}
	proc := t.TempDir()
	for pid, stat := range map[string]string{"10": "10 (x) Z 1 500 500 0", "11": "11 (y) S 1 600 600 0"} {
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, pid, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if liveInGroup(proc, 500) {
		t.Error("group 500 holds only a zombie: nothing is left in it")
	}
	if !liveInGroup(proc, 600) {
		t.Error("group 600's sleeping process is left")
	}
}
