//go:build integration

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
)

// slurmCluster is a one-node Slurm cluster of this machine's own, for one
// test: a private munged, slurmctld and slurmd, with deploy/slurm's
// prolog and epilog (through wrappers that point them at the test's
// folders and binary).
type slurmCluster struct {
	dir, conf    string
	jobs, frames string // the prolog's mapping folder, serve's kept frames
	accounting   bool   // slurmdbd over a private MariaDB: sacct works
}

// slurmTools are the Slurm and MUNGE programs the test starts; without
// them (or root) it is skipped, unless GPUWATCH_REQUIRE_SLURM=1
// (.ci/run, scripts/ci-slurm.sh) makes that a failure.
func slurmTools(t *testing.T) {
	t.Helper()
	var missing []string
	for _, p := range []string{"munged", "munge", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo", "setpriv"} {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	msg := ""
	switch {
	case len(missing) > 0:
		msg = "no " + strings.Join(missing, ", ") + " (apt-get install slurm-wlm munge; scripts/ci-slurm.sh)"
	case os.Geteuid() != 0:
		msg = "slurmd runs jobs as their users: the test runs as root"
	}
	if msg == "" {
		return
	}
	if os.Getenv("GPUWATCH_REQUIRE_SLURM") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// accountingTools says whether slurmdbd and MariaDB are here (CI installs
// them): then the cluster keeps accounting, and sacct shows the epilog's
// comment.
func accountingTools(t *testing.T) bool {
	for _, p := range []string{"slurmdbd", "sacct", "sacctmgr", "mariadbd", "mariadb-install-db", "mariadb"} {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("GPUWATCH_REQUIRE_SLURM") == "1" {
				t.Fatalf("no %s (apt-get install slurmdbd mariadb-server; scripts/ci-slurm.sh)", p)
			}
			t.Logf("no %s: no accounting, no sacct", p)
			return false
		}
	}
	return true
}

// startAccounting starts a private MariaDB (its own data folder, on a
// loopback port) and slurmdbd over it, and adds the cluster: what
// sacct and sacctmgr need. It returns slurm.conf's accounting lines.
func (c *slurmCluster) startAccounting(t *testing.T, sock string) string {
	t.Helper()
	db := filepath.Join(c.dir, "db")
	if out, err := runFor(t, 120*time.Second, nil, "mariadb-install-db", "--datadir="+db, "--user=root", "--skip-test-db", "--auth-root-authentication-method=socket"); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, tail([]byte(out), 2000))
	}
	dbPort, dbdPort := freePortNumber(t), freePortNumber(t)
	mysock := filepath.Join(c.dir, "mysql.sock")
	c.daemon(t, "mariadbd", "--datadir="+db, "--socket="+mysock, fmt.Sprintf("--port=%d", dbPort), "--bind-address=127.0.0.1",
		"--user=root", "--skip-log-bin", "--pid-file="+filepath.Join(c.dir, "mysql.pid"), "--log-error="+filepath.Join(c.dir, "mysql.err"))
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := runFor(t, 10*time.Second, nil, "mariadb", "-S", mysock, "-u", "root", "-e",
			"CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'gpuwatch-ci'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("MariaDB does not answer after 60 s: %v %s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	writeFile(t, filepath.Join(c.dir, "slurmdbd.conf"), fmt.Sprintf(`AuthType=auth/munge
AuthInfo=socket=%s
DbdHost=localhost
DbdPort=%d
SlurmUser=root
PidFile=%s/slurmdbd.pid
LogFile=%s/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=%d
StorageUser=slurm
StoragePass=gpuwatch-ci
StorageLoc=slurm_acct_db
`, sock, dbdPort, c.dir, c.dir, dbPort), 0o600)
	// AccountingStoragePass is the MUNGE socket for slurmdbd (slurm.conf(5)).
	lines := fmt.Sprintf("AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=localhost\nAccountingStoragePort=%d\nAccountingStoragePass=%s\n", dbdPort, sock)
	c.daemon(t, "slurmdbd", "-D")
	c.accounting = true
	return lines
}

// addCluster adds the cluster to slurmdbd (before slurmctld starts).
func (c *slurmCluster) addCluster(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := runFor(t, 20*time.Second, c.env(), "sacctmgr", "-i", "add", "cluster", "gwci")
		if err == nil || strings.Contains(out, "already exists") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sacctmgr add cluster: %v %s", err, out)
		}
		time.Sleep(time.Second)
	}
}

// run runs a command with a deadline and returns its output.
func runFor(t *testing.T, limit time.Duration, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// daemon starts a Slurm or MUNGE daemon in the foreground, its log in the
// cluster's folder, stopped (SIGTERM, then killed) at the test's end.
func (c *slurmCluster) daemon(t *testing.T, name string, args ...string) {
	t.Helper()
	log, err := os.Create(filepath.Join(c.dir, name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.conf)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("%s's output:\n%s", name, tail(b, 3000))
		}
	})
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// startSlurm starts the cluster and waits until its node is idle.
func startSlurm(t *testing.T, bin string) *slurmCluster {
	t.Helper()
	dir := t.TempDir()
	c := &slurmCluster{dir: dir, conf: filepath.Join(dir, "slurm.conf"), jobs: filepath.Join(dir, "jobs"), frames: filepath.Join(dir, "frames")}
	// Users' jobs read slurm.conf and reach munged's socket here.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"munge", "spool", "state", "frames"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A private munged: its own key and socket, the machine's untouched.
	key := filepath.Join(dir, "munge", "key")
	if err := os.WriteFile(key, bytes.Repeat([]byte("gpuwatch-ci-key!"), 64), 0o400); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "munge", "sock")
	c.daemon(t, "munged", "--foreground", "--force", "--socket="+sock, "--key-file="+key, "--log-file="+filepath.Join(dir, "munge", "log"),
		"--pid-file="+filepath.Join(dir, "munge", "pid"), "--seed-file="+filepath.Join(dir, "munge", "seed"))
	repo, _ := os.Getwd()
	gwConf := filepath.Join(dir, "gpuwatch-slurm.conf")
	writeFile(t, gwConf, fmt.Sprintf("GPUWATCH=%s\nGPUWATCH_SLURM_JOB_DIR=%s\nGPUWATCH_SLURM_FRAMES_DIR=%s\n", bin, c.jobs, c.frames), 0o644)
	for _, s := range []string{"prolog", "epilog"} {
		// A wrapper of the admin's passes --conf (slurmd passes no
		// argument, and no variable chooses what the scripts source).
		writeFile(t, filepath.Join(dir, s), fmt.Sprintf("#!/bin/sh\nexec %s --conf %s\n", filepath.Join(repo, "deploy", "slurm", s+".sh"), gwConf), 0o755)
	}
	host, err := runFor(t, 5*time.Second, nil, "hostname", "-s")
	if err != nil {
		t.Fatal(err)
	}
	host = strings.TrimSpace(host)
	ctld, d := freePortNumber(t), freePortNumber(t)
	waitMunge(t, sock)
	acct := "AccountingStorageType=accounting_storage/none\n"
	if accountingTools(t) {
		acct = c.startAccounting(t, sock)
	}
	writeFile(t, c.conf, slurmConf(dir, host, sock, ctld, d)+acct, 0o644)
	writeFile(t, filepath.Join(dir, "cgroup.conf"), "CgroupPlugin=autodetect\nCgroupAutomount=no\nConstrainCores=no\nConstrainRAMSpace=no\n", 0o644)
	if c.accounting {
		c.addCluster(t)
	}
	c.daemon(t, "slurmctld", "-D", "-f", c.conf)
	c.daemon(t, "slurmd", "-D", "-f", c.conf)
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, _ := runFor(t, 10*time.Second, c.env(), "sinfo", "-h", "-o", "%t")
		if strings.TrimSpace(out) == "idle" {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node is not idle after 60 s: sinfo says %q", out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// slurmConf is a one-node cluster with the prolog and epilog of
// deploy/slurm. Jobs are tracked in cgroups where the cgroup v1 freezer
// is mounted (proctrack/cgroup, as clusters run it; CI runs as root with
// the v1 controllers writable), else by process tree
// (proctrack/linuxproc: Slurm's cgroup v2 plugin wants systemd, which a
// container lacks).
func slurmConf(dir, host, sock string, ctld, d int) string {
	proctrack := "proctrack/linuxproc"
	if _, err := os.Stat("/sys/fs/cgroup/freezer/cgroup.procs"); err == nil {
		proctrack = "proctrack/cgroup"
	}
	return fmt.Sprintf(`ClusterName=gwci
SlurmctldHost=%[2]s
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%[3]s
CredType=cred/munge
ProctrackType=%[7]s
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
MpiDefault=none
SlurmctldPidFile=%[1]s/slurmctld.pid
SlurmdPidFile=%[1]s/slurmd.pid
SlurmdSpoolDir=%[1]s/spool
StateSaveLocation=%[1]s/state
SlurmctldLogFile=%[1]s/slurmctld.log
SlurmdLogFile=%[1]s/slurmd.log
SlurmctldPort=%[4]d
SlurmdPort=%[5]d
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
Prolog=%[1]s/prolog
Epilog=%[1]s/epilog
PrologFlags=Alloc
PrologEpilogTimeout=150
NodeName=%[2]s CPUs=%[6]d State=UNKNOWN
PartitionName=ci Nodes=%[2]s Default=YES MaxTime=10 State=UP
`, dir, host, sock, ctld, d, runtime.NumCPU(), proctrack)
}

func (c *slurmCluster) env() []string { return []string{"SLURM_CONF=" + c.conf} }

func writeFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

func freePortNumber(t *testing.T) int {
	_, p, _ := strings.Cut(freePort(t), ":")
	n, _ := strconv.Atoi(p)
	return n
}

// waitMunge waits until munged answers on sock.
func waitMunge(t *testing.T, sock string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := runFor(t, 5*time.Second, nil, "munge", "-S", sock, "-n")
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("munged does not answer: %v %s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// scrape is serve's /metrics page.
func scrape(addr string) string {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return string(b)
}

// jobUser is the user the test's jobs run as: gwslurm, a system user
// made once (useradd), as a cluster's users are not root.
type jobUser struct{ name, uid, gid string }

func ensureJobUser(t *testing.T) jobUser {
	t.Helper()
	u := jobUser{name: "gwslurm"}
	if _, err := runFor(t, 10*time.Second, nil, "id", "-u", u.name); err != nil {
		if out, err := runFor(t, 30*time.Second, nil, "useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", u.name); err != nil {
			t.Fatalf("useradd %s: %v %s", u.name, err, out)
		}
	}
	uid, err1 := runFor(t, 10*time.Second, nil, "id", "-u", u.name)
	gid, err2 := runFor(t, 10*time.Second, nil, "id", "-g", u.name)
	if err1 != nil || err2 != nil {
		t.Fatalf("id %s: %v %v", u.name, err1, err2)
	}
	u.uid, u.gid = strings.TrimSpace(uid), strings.TrimSpace(gid)
	return u
}

// folderFor makes a folder that u owns, under a path u can walk.
func folderFor(t *testing.T, u jobUser) string {
	t.Helper()
	dir := t.TempDir()
	uid, _ := strconv.Atoi(u.uid)
	gid, _ := strconv.Atoi(u.gid)
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sbatch submits script as u, its output in out, and returns the job ID.
func (c *slurmCluster) sbatch(t *testing.T, u jobUser, out, script string) string {
	t.Helper()
	got, err := runFor(t, 30*time.Second, c.env(), "setpriv", "--reuid="+u.uid, "--regid="+u.gid, "--clear-groups", "--",
		"sbatch", "--parsable", "--chdir="+out, "--output="+filepath.Join(out, "job-%j.out"), "--time=3", "--wrap", script)
	job := strings.TrimSpace(got)
	if err != nil || !regexp.MustCompile(`^\d+$`).MatchString(job) {
		t.Fatalf("sbatch: %v %q", err, got)
	}
	return job
}

// waitCompleted waits until slurmctld says the job is COMPLETED: it has
// ended, and its epilog with it (COMPLETING while the epilog runs).
func (c *slurmCluster) waitCompleted(t *testing.T, job, out string) {
	t.Helper()
	deadline := time.Now().Add(150 * time.Second)
	for {
		st, _ := runFor(t, 10*time.Second, c.env(), "scontrol", "show", "job", job)
		state := regexp.MustCompile(`JobState=(\w+)`).FindStringSubmatch(st)
		if state != nil && state[1] == "COMPLETED" {
			return
		}
		if state != nil && state[1] != "PENDING" && state[1] != "RUNNING" && state[1] != "COMPLETING" || time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(out, "job-"+job+".out"))
			t.Fatalf("job %s did not complete in 150 s:\n%s\njob output:\n%s", job, st, tail(b, 2000))
		}
		time.Sleep(time.Second)
	}
}

// TestSlurmPrologEpilogOnARealSlurm submits a real PyTorch DataLoader job
// (dataloader_bench.py, one worker whose samples wait on storage: input-
// bound; no hook, as a user's job is) with sbatch, as a user who is not
// root, to a one-node Slurm cluster running deploy/slurm's prolog and
// epilog beside gpuwatch serve --slurm-job-dir --slurm-frames-dir, and
// checks what a cluster's user and admin see: while the job runs, serve's
// series carry slurm_job and user; when it has ended, the epilog has
// written the verdict of its last minute, with advice, beside the job's
// output file, as the job's user, put its first line in the job's
// AdminComment in the accounting database (sacct shows it; where
// slurmdbd and MariaDB are installed), and removed the mapping and the
// frames. A second job's user plants a link where the epilog writes: the
// root-owned file it points to is left as it was.
func TestSlurmPrologEpilogOnARealSlurm(t *testing.T) {
	slurmTools(t)
	py := python(t, true)
	bin := binary(t)
	u := ensureJobUser(t)
	began := time.Now()
	c := startSlurm(t, bin)
	conf, _ := os.ReadFile(c.conf)
	t.Logf("slurm up in %v (%s)", time.Since(began).Round(time.Millisecond), regexp.MustCompile(`ProctrackType=\S+`).Find(conf))
	addr := freePort(t)
	start(t, "serve", "--listen", addr, "--slurm-job-dir", c.jobs, "--slurm-frames-dir", c.frames)
	out := folderFor(t, u)
	repo, _ := os.Getwd()
	bench, err := os.ReadFile(filepath.Join(repo, "python", "examples", "dataloader_bench.py"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(out, "bench.py"), string(bench), 0o644)
	job := c.sbatch(t, u, out, py+" bench.py --workers 1 --cost 0 --io 0.002 --step 0.005 --seconds 40 --warmup 4")
	t.Logf("job %s submitted at %v", job, time.Since(began).Round(time.Millisecond))
	checkJobSeries(t, addr, job, u.name)
	c.waitCompleted(t, job, out)
	t.Logf("job and epilog done at %v", time.Since(began).Round(time.Millisecond))
	report := filepath.Join(out, "gpuwatch-"+job+".txt")
	checkEpilogReport(t, report, job, u)
	if c.accounting {
		checkAdminComment(t, c, job, report)
	}
	for _, p := range []string{filepath.Join(c.jobs, job), filepath.Join(c.frames, job+".jsonl")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is left after the epilog", p)
		}
	}
	checkPlantedLink(t, c, u)
}

// checkPlantedLink: the job's user links gpuwatch-JOB.txt to a file only
// root may write; the epilog, writing as the user, leaves it as it was.
func checkPlantedLink(t *testing.T, c *slurmCluster, u jobUser) {
	t.Helper()
	victim := filepath.Join(c.dir, "root-only")
	writeFile(t, victim, "untouched\n", 0o644)
	out := folderFor(t, u)
	job := c.sbatch(t, u, out, "sleep 6")
	link := filepath.Join(out, "gpuwatch-"+job+".txt")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	c.waitCompleted(t, job, out)
	if b, _ := os.ReadFile(victim); string(b) != "untouched\n" {
		t.Errorf("the epilog wrote through the user's link: %q", b)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}
}

// checkAdminComment: sacct shows the epilog's verdict line as the job's
// AdminComment (in lower case: sacctmgr 22.05 stores it so).
func checkAdminComment(t *testing.T, c *slurmCluster, job, report string) {
	t.Helper()
	b, _ := os.ReadFile(report)
	lines := strings.Split(string(b), "\n")
	want := "gpuwatch: " + lines[1]
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := runFor(t, 20*time.Second, c.env(), "sacct", "-j", job, "-X", "-n", "-P", "-o", "AdminComment")
		// sacctmgr 22.05 lowers the case of what it stores.
		if err == nil && strings.EqualFold(strings.TrimSpace(out), want) {
			t.Logf("sacct -o AdminComment: %s", want)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sacct -o AdminComment says %q (%v), want %q", out, err, want)
		}
		time.Sleep(time.Second)
	}
}

// checkJobSeries waits until serve's series name the running job: its
// info series, and the verdict with slurm_job and user.
func checkJobSeries(t *testing.T, addr, job, user string) {
	t.Helper()
	info := fmt.Sprintf(`gpuwatch_slurm_job_info{gpus="",slurm_job=%q,user=%q} 1`, job, user)
	verdict := regexp.MustCompile(`(?m)^gpuwatch_verdict\{kind="([a-z_]+)",[^}]*slurm_job="` + job + `"[^}]*user="` + user + `"\} 1$`)
	deadline := time.Now().Add(90 * time.Second)
	var page string
	for time.Now().Before(deadline) {
		page = scrape(addr)
		if m := verdict.FindStringSubmatch(page); m != nil && strings.Contains(page, info) {
			t.Logf("serve labels the job: %s, verdict %s", info, m[1])
			return
		}
		time.Sleep(time.Second)
	}
	var lines []string
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "gpuwatch_verdict{") || strings.Contains(l, "slurm") {
			lines = append(lines, l)
		}
	}
	t.Fatalf("serve never labelled job %s:\n%s", job, strings.Join(lines, "\n"))
}

// checkEpilogReport reads the epilog's file: a heading, then the verdict
// as --once prints it. The job waits most of its time on its one worker,
// so the verdict must be an input-bound one (gpu_starved on an idle
// machine, cpu_saturated where other work holds the cores), with advice.
func checkEpilogReport(t *testing.T, path, job string, u jobUser) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fmt.Sprint(fi.Sys().(*syscall.Stat_t).Uid) != u.uid {
		t.Errorf("%s is not the job user's (%s): %v", path, u.uid, err)
	}
	text := string(b)
	t.Logf("%s:\n%s", path, text)
	lines := strings.Split(text, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "gpuwatch, the last 1m of Slurm job "+job+" on ") {
		t.Fatalf("heading %q", lines[0])
	}
	m := regexp.MustCompile(`^([a-z_]+) \((\w+), (\d+) % confident; (settled|NOT SETTLED)`).FindStringSubmatch(lines[1])
	if m == nil {
		t.Fatalf("no verdict line: %q", lines[1])
	}
	var kind diagnose.Kind
	if err := kind.UnmarshalText([]byte(m[1])); err != nil || !kind.Problem() || kind == diagnose.MemoryPressure {
		t.Errorf("verdict %q: want an input-bound one", lines[1])
	}
	if m[4] != "settled" {
		// On a machine shared with other work the verdict may flip
		// between gpu_starved and cpu_saturated as the others' load comes
		// and goes; the kind it ends on is still input-bound.
		t.Logf("the verdict did not settle: %s", lines[1])
	}
	if !strings.Contains(text, "⇒ ") {
		t.Error("no advice")
	}
}
