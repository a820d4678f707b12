//go:build integration

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 57, items 1 and 3, as they were found: two real users on this
// machine (victimUID and attackerUID of shared_box_integration_test.go),
// and a full disk under run --headless --job-log.

// recorderPy serves HTTP on 127.0.0.1:PORT as its user and appends each
// request it gets (path and Authorization header) to a file: a squatter
// on a loader's port that would collect its token.
const recorderPy = `
import http.server, sys
port, log = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(log, "a") as f:
            f.write("%s %s\n" % (self.path, self.headers.get("Authorization", "-")))
        body = b"gpuwatch_loader_batches_total 1\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", port), H)
print("ready", flush=True)
s.serve_forever()
`

// squatter is the attacker's server on port, its log of requests.
func squatter(t *testing.T, b *sharedBox, port int) (pid int, requests func() string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "gpuwatch-squat-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chown(dir, attackerUID, attackerUID))
	log := filepath.Join(dir, "requests")
	cmd := b.as(attackerUID, "/usr/bin/python3", "-c", recorderPy, strconv.Itoa(port), log)
	out, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if l, err := bufio.NewReader(out).ReadString('\n'); err != nil || l != "ready\n" {
		t.Fatalf("the squatter did not start: %q %v", l, err)
	}
	// setpriv execs python3: the PID is the server's.
	return cmd.Process.Pid, func() string { b, _ := os.ReadFile(log); return string(b) }
}

// victimRuntime is a runtime folder of the victim's (XDG_RUNTIME_DIR),
// its discovery folder made, and the environment naming it.
func victimRuntime(t *testing.T, b *sharedBox) (announcements string, env []string) {
	t.Helper()
	rt := filepath.Join(b.home, "run")
	announcements = filepath.Join(rt, "gpuwatch")
	for _, d := range []string{rt, announcements} {
		must(t, os.MkdirAll(d, 0o700))
		must(t, os.Chown(d, victimUID, victimUID))
	}
	return announcements, []string{"XDG_RUNTIME_DIR=" + rt}
}

// announceAs writes the victim's announcement of pid on port, with its
// token, as the hook does (0600, the victim's).
func announceAs(t *testing.T, dir string, pid, port int, token string) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("%d-%d.json", pid, port))
	b, _ := json.Marshal(map[string]any{"pid": pid, "url": fmt.Sprintf("http://127.0.0.1:%d", port), "kind": "python", "token": token})
	must(t, os.WriteFile(path, b, 0o600))
	must(t, os.Chown(path, victimUID, victimUID))
	return path
}

// TestSharedBoxATokenGoesOnlyToTheAnnouncedLoader: the victim's loader
// announced itself on port X and died (kill -9: its announcement stays).
// The other user serves on X, and its server has the announced PID (a PID
// reused: 32,332 forks did it live; here the announcement names it). The
// victim's plain gpuwatch must neither connect to it nor send the token;
// the stale announcement is removed. Nor may a live process of the
// victim's that does not hold X lend its PID. An explicit attach to X
// reads it without the token and says it is not proven. Before: the
// squatter got "Authorization: Bearer <token>" on every read.
func TestSharedBoxATokenGoesOnlyToTheAnnouncedLoader(t *testing.T) {
	b := newSharedBox(t)
	_, p, _ := strings.Cut(freePort(t), ":")
	port, err := strconv.Atoi(p)
	must(t, err)
	announcements, env := victimRuntime(t, b)
	const token = "victims-token-0123456789abcdefghijklmnopqrstuv"

	// The victim's loader: a process of the victim's that announced and
	// died without removing its file.
	dead := b.as(victimUID, "sleep", "0")
	must(t, dead.Run())
	// The other user's server on X, with the PID the announcement names.
	squatPID, requests := squatter(t, b, port)
	victimSleeper := b.as(victimUID, "sleep", "60")
	must(t, victimSleeper.Start())
	t.Cleanup(func() { victimSleeper.Process.Kill(); victimSleeper.Wait() })

	for _, c := range []struct {
		name string
		pid  int
	}{
		{"the announced PID is gone", dead.Process.Pid},
		{"the announced PID is the other user's server (reused)", squatPID},
		{"the announced PID is the victim's but does not hold the port", victimSleeper.Process.Pid},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := announceAs(t, announcements, c.pid, port, token)
			cmd := b.as(victimUID, b.bin, "--json", "--duration", "4s")
			cmd.Env = append(cmd.Env, env...)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("gpuwatch: %v\n%s", err, out)
			}
			if r := requests(); r != "" {
				t.Fatalf("the other user's server got requests:\n%s", r)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("the stale announcement %s is still there: %v", path, err)
			}
			if strings.Contains(string(out), `"connected":true`) {
				t.Errorf("a frame shows a connected loader:\n%.2000s", out)
			}
		})
	}

	t.Run("an explicit attach to the port", func(t *testing.T) {
		announceAs(t, announcements, squatPID, port, token)
		cmd := b.as(victimUID, b.bin, "attach", "--json", "--duration", "3s", fmt.Sprintf("http://127.0.0.1:%d", port))
		cmd.Env = append(cmd.Env, env...)
		out, _ := cmd.CombinedOutput()
		r := requests()
		if strings.Contains(r, token) || strings.Contains(r, "Bearer") {
			t.Fatalf("the token went to the other user's server:\n%s", r)
		}
		if !strings.Contains(string(out), "not proven the loader's") {
			t.Errorf("no frame says the listener is not proven:\n%.3000s", out)
		}
	})
}

// TestHeadlessJobLogOnAFullDisk: run --headless --job-log FILE with FILE
// on a 64 KiB tmpfs and a job that writes 2 MB: the job runs to its end
// (exit 0), and gpuwatch says the log failed and the job went on. Before,
// the job had the file as its stdout and died at its first failed write
// (exit 120 for Python; sh's echo fails and the job's status says so).
func TestHeadlessJobLogOnAFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a small tmpfs")
	}
	bin := binary(t)
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		t.Skipf("a 64 KiB tmpfs: %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	log := filepath.Join(dir, "job.log")
	job := `set -e; i=0; while [ $i -lt 20000 ]; do echo "line $i of a chatty training log........................................"; i=$((i+1)); done; echo done > "$MARK"`
	mark := filepath.Join(t.TempDir(), "mark")
	cmd := exec.Command(bin, "run", "--headless", "--job-log", log, "--", "sh", "-c", job)
	cmd.Env = append(os.Environ(), "MARK="+mark)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	must(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(120 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("gpuwatch run did not end\n%s", stderr.String())
	}
	if err != nil {
		t.Fatalf("gpuwatch run: %v (the job's status)\n%s", err, stderr.String())
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("the job did not reach its end: %v", err)
	}
	want := "writing the job's log to " + log + " failed (no space left on device): the job goes on"
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("gpuwatch did not say %q:\n%s", want, stderr.String())
	}
}

// TestSharedBoxAJobIsNamedByItsCgroup (issue 54, item 2): two real
// users. The victim's process runs in a Slurm job's cgroup (v1 freezer,
// /slurm…/uid_U/job_J, as proctrack/cgroup makes it); the other user's
// process, outside every job, sets SLURM_JOB_ID=J and POD_NAME. gpuwatch
// --pid names the victim's process job J and the other's nobody's job:
// before, the environment came first and the other user's process was J.
func TestSharedBoxAJobIsNamedByItsCgroup(t *testing.T) {
	b := newSharedBox(t)
	job := fmt.Sprintf("%d", 900000+os.Getpid()%99999)
	slurm := fmt.Sprintf("/sys/fs/cgroup/freezer/slurm_gwtest%d", os.Getpid())
	jobDir := filepath.Join(slurm, fmt.Sprintf("uid_%d", victimUID), "job_"+job, "step_0")
	if err := os.MkdirAll(jobDir, 0o755); err != nil {
		t.Skipf("cgroup v1 freezer not writable here: %v", err)
	}
	t.Cleanup(func() {
		for d := jobDir; len(d) >= len(slurm); d = filepath.Dir(d) {
			b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			for _, pid := range strings.Fields(string(b)) {
				_ = os.WriteFile("/sys/fs/cgroup/freezer/cgroup.procs", []byte(pid), 0)
			}
			_ = os.Remove(d)
		}
	})
	// Each in a memory cgroup of its own: a process in the root cgroup of
	// every controller is no job at all, whatever names it.
	memV := v1Cgroup(t, fmt.Sprintf("gpuwatch-ident-v-%d", os.Getpid()), map[string]map[string]string{"memory": {}})
	memA := v1Cgroup(t, fmt.Sprintf("gpuwatch-ident-a-%d", os.Getpid()), map[string]map[string]string{"memory": {}})

	victim := b.as(victimUID, "sleep", "60")
	must(t, victim.Start())
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	must(t, os.WriteFile(filepath.Join(jobDir, "cgroup.procs"), []byte(strconv.Itoa(victim.Process.Pid)), 0))
	must(t, os.WriteFile(memV[0], []byte(strconv.Itoa(victim.Process.Pid)), 0))
	other := b.as(attackerUID, "env", "SLURM_JOB_ID="+job, "SLURM_STEP_ID=0", "SLURM_PROCID=0", "POD_NAME=victims-pod", "POD_NAMESPACE=ml", "sleep", "60")
	must(t, other.Start())
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	must(t, os.WriteFile(memA[0], []byte(strconv.Itoa(other.Process.Pid)), 0))

	identity := func(pid int) (id map[string]string, jobSeen bool) {
		out, err := exec.Command(binary(t), "--pid", strconv.Itoa(pid), "--headless", "--json", "--duration", "3s").Output()
		if err != nil {
			t.Fatalf("gpuwatch --pid %d: %v", pid, err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			var f struct {
				Type string `json:"type"`
				Job  *struct {
					Identity map[string]string `json:"identity"`
				} `json:"job"`
			}
			if json.Unmarshal([]byte(l), &f) == nil && f.Type == "frame" && f.Job != nil {
				id, jobSeen = f.Job.Identity, true
			}
		}
		return id, jobSeen
	}
	if id, seen := identity(victim.Process.Pid); !seen || id["slurm_job"] != job || id["slurm_step"] != "0" {
		t.Errorf("the victim's process in job %s's cgroup: job seen %v, identity %v", job, seen, id)
	}
	id, seen := identity(other.Process.Pid)
	if !seen {
		t.Fatalf("the other user's process: no job read (its memory cgroup is %s)", memA[0])
	}
	if len(id) > 0 {
		t.Errorf("the other user's process, outside every job, claiming job %s and a pod: identity %v, want none", job, id)
	}
}
