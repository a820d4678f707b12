//go:build integration

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runLine is what these tests read of a JSON line.
type runLine struct {
	Type   string    `json:"type"`
	Time   time.Time `json:"time"`
	Name   string    `json:"name"`
	Detail string    `json:"detail"`
	Procs  *struct {
		Threads []struct {
			Role             string   `json:"role"`
			RunDelayMsPerSec *float64 `json:"run_delay_ms_per_sec"`
		} `json:"threads"`
	} `json:"procs"`
	Loader *struct {
		Source        string   `json:"source"`
		SamplesPerSec float64  `json:"samples_per_sec"`
		WaitShare     *float64 `json:"wait_share"`
		Workers       *int     `json:"workers"`
		Knobs         map[string]string
		Sampled       *struct {
			Samples int    `json:"samples"`
			Read    string `json:"read"`
		} `json:"sampled"`
	} `json:"loader"`
	Target *struct {
		PID    int    `json:"pid"`
		Why    string `json:"why"`
		Loader string `json:"loader"`
		Exit   string `json:"exit"`
	} `json:"target"`
	Ranks []struct {
		Rank      int      `json:"rank"`
		PID       int      `json:"pid"`
		Connected bool     `json:"connected"`
		WaitShare *float64 `json:"wait_share"`
	} `json:"ranks"`
	Verdict *struct {
		Kind      string `json:"kind"`
		Straggler *int   `json:"straggler_rank"`
		Evidence  []struct {
			Text string `json:"text"`
		} `json:"evidence"`
		Advice  []string `json:"advice"`
		Changes []struct {
			Knob string `json:"knob"`
			From string `json:"from"`
			To   string `json:"to"`
		} `json:"changes"`
		Predicted *struct {
			SamplesPerSec float64 `json:"samples_per_sec"`
			WaitShare     float64 `json:"wait_share"`
		} `json:"predicted"`
	} `json:"verdict"`
}

// parseRunLines reads JSON lines; any line that is not JSON fails the test
// (gpuwatch's stdout must hold nothing else).
func parseRunLines(t *testing.T, b []byte) []runLine {
	t.Helper()
	var out []runLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		var l runLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("stdout holds a line that is not gpuwatch's JSON: %q (%v)", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// TestRunExitsWithTheJobsStatus: run's exit status is its command's: a
// code, 128+N for a signal, 127 for a command not found (126 for one that
// cannot be run: cli.TestRunCannotStartStatuses); a program
// that is not Python is watched as a process tree and said to be so.
func TestRunExitsWithTheJobsStatus(t *testing.T) {
	bin := binary(t)
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"a code", []string{"sh", "-c", "sleep 1; exit 3"}, 3},
		{"success", []string{"true"}, 0},
		{"killed by a signal", []string{"sh", "-c", "kill -TERM $$"}, 128 + 15},
		{"no such command", []string{"/nonexistent/train"}, 127},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"run", "--json", "--"}, c.args...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if got := exitCode(err); got != c.code {
				t.Fatalf("exit %d, want %d (stderr %q)", got, c.code, stderr.String())
			}
			parseRunLines(t, stdout.Bytes())
			if c.code == 127 && !strings.Contains(stderr.String(), "/nonexistent/train") {
				t.Errorf("stderr %q does not name the command", stderr.String())
			}
		})
	}
	// --once over a job that ends by itself before a verdict holds: the
	// summary says how it ended (not "a longer --duration"), and a failure
	// passes its status on (it read 4, "still starting"); a clean exit
	// is --once's own unsettled status.
	for _, c := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"--once, a failure before a verdict", []string{"sh", "-c", "sleep 2; exit 5"}, 5, "the job exited with status 5 after"},
		{"--once, a clean exit before a verdict", []string{"sh", "-c", "sleep 2"}, 4, "the job exited with status 0 after"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"run", "--once", "--"}, c.args...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if got := exitCode(err); got != c.code || !strings.Contains(stdout.String(), c.says) || strings.Contains(stdout.String(), "longer --duration") {
				t.Fatalf("exit %d, want %d; stdout %q, want %q (stderr %q)", got, c.code, stdout.String(), c.says, stderr.String())
			}
		})
	}
	// Not Python: watched as a process tree, nothing instrumented.
	out, err := exec.Command(bin, "run", "--json", "--", "sh", "-c", "sleep 4").Output()
	if err != nil {
		t.Fatal(err)
	}
	ls := parseRunLines(t, out)
	var target, exited bool
	for _, l := range ls {
		if l.Type == "frame" && l.Target != nil && l.Target.Why == "gpuwatch run" && strings.Contains(l.Target.Loader, "nothing instrumented") {
			target = true
		}
		exited = exited || l.Type == "event" && l.Name == "exited" && strings.Contains(l.Detail, "with status 0")
	}
	if !target || !exited {
		t.Fatalf("want frames saying nothing was instrumented, and the job's exit as an event: %s", out)
	}
}

// TestRunKeepsTheJobsOutputApart: headless, gpuwatch's stdout holds its
// JSON lines only; the job's stdout and stderr are gpuwatch's stderr, or
// --job-log's file; its stdin is the job's.
func TestRunKeepsTheJobsOutputApart(t *testing.T) {
	bin := binary(t)
	// The markers are put together at run time: the command line (in the
	// exit event) must not hold them.
	script := `import sys; print("JOB" + "-OUT", sys.stdin.readline().strip(), flush=True); print("JOB" + "-ERR", file=sys.stderr, flush=True)`
	cmd := exec.Command(bin, "run", "--json", "--", "python3", "-c", script)
	cmd.Stdin = strings.NewReader("from-stdin\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	parseRunLines(t, stdout.Bytes())
	if strings.Contains(stdout.String(), "JOB-") {
		t.Fatalf("the job's output reached gpuwatch's stdout: %s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "JOB-OUT from-stdin") || !strings.Contains(stderr.String(), "JOB-ERR") {
		t.Fatalf("the job's output is not on stderr: %q", stderr.String())
	}
	log := filepath.Join(t.TempDir(), "job.log")
	cmd = exec.Command(bin, "run", "--headless", "--job-log", log, "--", "python3", "-c", script)
	cmd.Stdin = strings.NewReader("again\n")
	stdout.Reset()
	stderr.Reset()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "JOB-OUT again") || !strings.Contains(string(b), "JOB-ERR") || strings.Contains(stderr.String()+stdout.String(), "JOB-") {
		t.Fatalf("--job-log %q; stdout %q; stderr %q", b, stdout.String(), stderr.String())
	}
}

// TestRunPassesSignalsOn: SIGTERM, SIGINT and SIGHUP sent to gpuwatch
// reach the job, whose handler decides: here it says so and exits 7, and
// run exits 7. gpuwatch keeps watching until then.
func TestRunPassesSignalsOn(t *testing.T) {
	bin := binary(t)
	script := `
import signal, sys, time
def on(sig, _):
    print("JOB got", signal.Signals(sig).name, flush=True)
    sys.exit(7)
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, on)
print("JOB ready", flush=True)
while True:
    time.sleep(0.1)
`
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		cmd := exec.Command(bin, "run", "--json", "--", "python3", "-c", script)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		jobOut, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(jobOut)
		if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, "JOB ready") {
			t.Fatalf("%v: the job's first line %q (%v)", sig, line, err)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		rest, _ := bufio.NewReader(r).ReadString(0)
		err = cmd.Wait()
		if code := exitCode(err); code != 7 || !strings.Contains(rest, "JOB got "+sigName(sig)) {
			t.Fatalf("%v: exit %d, job said %q: want the job to get it and run to exit 7", sig, code, rest)
		}
		ls := parseRunLines(t, stdout.Bytes())
		if len(ls) == 0 || ls[len(ls)-1].Type != "event" || ls[len(ls)-1].Name != "exited" {
			t.Fatalf("%v: gpuwatch did not watch until the job's end: %s", sig, stdout.String())
		}
	}
}

func sigName(s syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT", syscall.SIGHUP: "SIGHUP"}[s]
}
