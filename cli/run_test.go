package cli

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestRunCannotStartStatuses: a command that cannot start exits as a shell,
// env or timeout would: 127 when it is not found, 126 when it is found but
// cannot be run (permission denied, a directory).
func TestRunCannotStartStatuses(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "train.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, command, says string
		code                int
	}{
		{"not found", filepath.Join(dir, "missing"), "no such file", 127},
		{"not on PATH", "gpuwatch-no-such-command", "not found", 127},
		{"permission denied", notExec, "permission denied", 126},
		{"a directory", dir, "is a directory", 126},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run([]string{"run", "--json", "--", c.command}, &out, &errb)
			if code != c.code || !strings.Contains(errb.String(), c.says) || !strings.Contains(errb.String(), c.command) {
				t.Fatalf("exit %d, stderr %q; want %d naming the command and %q", code, errb.String(), c.code, c.says)
			}
		})
	}
}

// TestRunOnceSaysTheCommandEndedFirst: a command that ends before the
// first frame (a script whose import fails) is named as what ended the
// run, with how it ended, and its status is run's (one that succeeded:
// 4, nothing settled); not only "no frame came before the end", which
// read as gpuwatch's own failure.
func TestRunOnceSaysTheCommandEndedFirst(t *testing.T) {
	var out, errb bytes.Buffer
	code := Run([]string{"run", "--once", "--", "sh", "-c", "echo 'ModuleNotFoundError: numpy' >&2; exit 3"}, &out, &errb)
	if code != 3 || !strings.Contains(errb.String(), "the command exited with status 3 before the first") || !strings.Contains(errb.String(), "its output, if any, is above") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	// With --job-log the output is in the file, and the message says so.
	log := filepath.Join(t.TempDir(), "job.log")
	out.Reset()
	errb.Reset()
	code = Run([]string{"run", "--once", "--job-log", log, "--", "sh", "-c", "echo 'ModuleNotFoundError: numpy' >&2; exit 3"}, &out, &errb)
	if code != 3 || !strings.Contains(errb.String(), "its output is in "+log) {
		t.Fatalf("--job-log: exit %d, stderr %q", code, errb.String())
	}
	// A command that succeeds before the first frame: nothing settled
	// (4, as one that ends after a few frames), said; not gpuwatch's own
	// failure (1).
	out.Reset()
	errb.Reset()
	code = Run([]string{"run", "--once", "--", "true"}, &out, &errb)
	if code != ExitUnsettled || !strings.Contains(errb.String(), "the command exited with status 0 before the first") {
		t.Fatalf("a command that succeeds at once: exit %d, stderr %q", code, errb.String())
	}
}

// TestRunDurationIsACleanStop: --duration ran out with the job still
// running, and gpuwatch stopped it as asked: status 0, said, not the
// 130 of the SIGINT gpuwatch sent (which failed CI steps). A job that
// ends by itself within the duration still passes its status on.
func TestRunDurationIsACleanStop(t *testing.T) {
	var out, errb bytes.Buffer
	code := Run([]string{"run", "--headless", "--duration", "1s", "--", "sh", "-c", "while :; do sleep 0.1; done"}, &out, &errb)
	if code != 0 || !strings.Contains(errb.String(), "--duration 1s is up: gpuwatch stopped the job") || !strings.Contains(errb.String(), "was killed by SIGINT") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := Run([]string{"run", "--headless", "--duration", "10s", "--", "sh", "-c", "sleep 0.5; exit 3"}, &out, &errb); code != 3 {
		t.Fatalf("a job that failed by itself: exit %d, stderr %q", code, errb.String())
	}
	// Stopped, it fails on its way out (a checkpoint that does not save):
	// its status is passed on, and said.
	errb.Reset()
	code = Run([]string{"run", "--headless", "--duration", "1s", "--", "sh", "-c", "trap 'exit 1' INT; while :; do sleep 0.1; done"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "and it exited with status 1 on the way out") {
		t.Fatalf("a job failing on its way out: exit %d, stderr %q", code, errb.String())
	}
}

// TestRunOnceLeadsWithNoDataLoader: a PyTorch script that iterates no
// DataLoader, under run --once, ends with nothing settled; the reason
// first is that no DataLoader had a batch (the hook times the loop from
// one), not "too soon for a verdict", which read as if a longer run would
// have given one. Needs python3 with torch.
func TestRunOnceLeadsWithNoDataLoader(t *testing.T) {
	python := ""
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import torch").Run() == nil {
			python = p
			break
		}
	}
	if python == "" {
		t.Skip("no python3 with torch")
	}
	script := filepath.Join(t.TempDir(), "no_loader.py")
	src := "import time, torch\nx = torch.randn(64, 64)\nend = time.time() + 2\nwhile time.time() < end:\n    x = torch.tanh(x @ x)\n"
	if err := os.WriteFile(script, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Run([]string{"run", "--once", "--interval", "200ms", "--", python, script}, &out, &errb)
	first, _, _ := strings.Cut(out.String(), "\n")
	if code != ExitUnsettled || !strings.Contains(first, "NOT SETTLED: gpuwatch read no DataLoader batch before the job exited with status 0") || strings.Contains(first, "too soon") {
		t.Fatalf("exit %d, summary %q, stderr %q", code, out.String(), errb.String())
	}
}

// TestRunStopsTheJobWhenItsReaderGoesAway: gpuwatch run --headless …
// | head -2 — the reader gone, a write to stdout raises SIGPIPE; run
// catches it, the failed write ends the session, the job's whole group is
// stopped (a rank its shell started with &, SIGINT ignored, included) and
// run exits 141, a pipe writer's status, by itself — not killed by the
// signal. Before, gpuwatch died of SIGPIPE and the job's DataLoader
// workers ran on, orphaned (a user's review). Go raises SIGPIPE only for
// writes to fds 1 and 2, so run runs in a child of this test with its
// stdout on the pipe.
func TestRunStopsTheJobWhenItsReaderGoesAway(t *testing.T) {
	if pids := os.Getenv("GPUWATCH_TEST_PIPE_CHILD"); pids != "" {
		os.Exit(Run([]string{"run", "--headless", "--interval", "200ms", "--duration", "60s", "--", "sh", "-c", `sleep 60 & echo "$!" > "$0.tmp"; mv "$0.tmp" "$0"; wait`, pids}, os.Stdout, os.Stderr))
	}
	pids := filepath.Join(t.TempDir(), "pids")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunStopsTheJobWhenItsReaderGoesAway$")
	cmd.Env = append(os.Environ(), "GPUWATCH_TEST_PIPE_CHILD="+pids)
	cmd.Stdout, cmd.Stderr = w, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// The reader goes away once the shell has started its rank (a loaded
	// box may take its time to start sh): lines before that are read.
	go func() { _, _ = io.Copy(io.Discard, r) }()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(pids); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the shell never started its rank; stderr %q", errb.String())
		}
	}
	r.Close()
	err = cmd.Wait()
	st, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if st.Signaled() || cmd.ProcessState.ExitCode() != pipeClosed {
		t.Fatalf("run: %v (signaled %v, %v), stderr %q; want exit %d by itself", err, st.Signaled(), st.Signal(), errb.String(), pipeClosed)
	}
	// The job's own words on its stop (a KeyboardInterrupt) are not
	// left alone on stderr.
	if !strings.Contains(errb.String(), "gpuwatch: its output was closed (the pipe's reader went away): gpuwatch stopped the job (pid ") {
		t.Errorf("stderr %q", errb.String())
	}
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))
	if stat, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil {
		if s := string(stat); !strings.HasPrefix(s[strings.LastIndexByte(s, ')'):], ") Z") {
			t.Errorf("rank %s still runs after the reader went away: %s", pid, s)
		}
	}
}

// TestRunSaysAGPUProfileNotRecorded: a job that ends before the recording
// --gpu-profile asked for (a short script) is told so at the end, with
// what gpuwatch last read of it; one that gpuwatch stops (--duration) or
// whose recording finished is not.
func TestRunSaysAGPUProfileNotRecorded(t *testing.T) {
	var out, errb bytes.Buffer
	code := Run([]string{"run", "--headless", "--gpu-profile", "--", "sh", "-c", "sleep 1.5"}, &out, &errb)
	if want := "gpuwatch: --gpu-profile: not recorded: gpuwatch read no loader's figures in the "; code != 0 || !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), "iterates a DataLoader") {
		t.Fatalf("exit %d, stderr %q, want %q", code, errb.String(), want)
	}
	errb.Reset()
	if Run([]string{"run", "--headless", "--gpu-profile", "--duration", "1s", "--", "sh", "-c", "while :; do sleep 0.1; done"}, &out, &errb); strings.Contains(errb.String(), "not recorded") {
		t.Fatalf("a job gpuwatch stopped: %q", errb.String())
	}
	frame := func(state string, batches uint64) *sample.Frame {
		return &sample.Frame{Ranks: []sample.Rank{{Loader: &sample.Loader{Kind: "python", Batches: batches, GPUProfile: &sample.GPUProfile{State: state, Steps: 5}}}}}
	}
	for _, c := range []struct {
		states []string
		once   bool
		want   string
	}{
		{[]string{sample.GPUProfileWaiting}, false, "the job ended before the recording started, at the loop's 10th batch (its figures last read at batch 7)"},
		{[]string{sample.GPUProfileWaiting}, true, ""}, // --once's summary said it
		{[]string{sample.GPUProfileWaiting, sample.GPUProfileRecording}, false, "the job ended while the hook recorded, before its last step"},
		{[]string{sample.GPUProfileRecording, sample.GPUProfileDone, sample.GPUProfileWaiting}, false, ""},               // a rank done is the recording done
		{[]string{sample.GPUProfileRecording, sample.GPUProfileWaiting}, false, "the job ended while the hook recorded"}, // the rank furthest on
		{[]string{sample.GPUProfileRefused}, false, ""},
	} {
		var g gpuProfileSeen
		for i, s := range c.states {
			g.Frame(frame(s, uint64(7+i*10)), diagnose.Verdict{})
		}
		got := g.unrecorded(time.Second, c.once)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%v (once %v): %q, want %q", c.states, c.once, got, c.want)
		}
	}
	// A loader read whose figures never carried the recording.
	var g gpuProfileSeen
	g.Frame(&sample.Frame{Loader: &sample.Loader{Kind: "python", Batches: 40}}, diagnose.Verdict{})
	if got := g.unrecorded(time.Second, false); !strings.Contains(got, "the hook's figures never carried the recording") {
		t.Errorf("a loader without it: %q", got)
	}
	// gpuwatch's own loader has no hook: as if none was read.
	var own gpuProfileSeen
	own.Frame(&sample.Frame{Loader: &sample.Loader{Kind: "embedded", Batches: 40}}, diagnose.Verdict{})
	if got := own.unrecorded(time.Second, false); !strings.Contains(got, "gpuwatch read no loader's figures") {
		t.Errorf("the embedded loader: %q", got)
	}
	// A state a newer hook names is still one carried.
	var newer gpuProfileSeen
	newer.Frame(frame("paused", 12), diagnose.Verdict{})
	if got := newer.unrecorded(time.Second, false); !strings.Contains(got, `with the recording "paused"`) {
		t.Errorf("an unknown state: %q", got)
	}
}
