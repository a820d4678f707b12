//go:build integration

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/gpuwatch/gpuwatch/recording"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sys/unix"

	"github.com/gpuwatch/gpuwatch/probes/endpoint"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// TestMain removes the built binary's folder (the binary, the tests'
// runtime and state folders) once every test has run: each run left
// 24 MB in the temporary folder.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// binary builds gpuwatch once per test run.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gpuwatch-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "gpuwatch")
		// The binaries these tests start announce their loaders, and plain
		// gpuwatch attaches to what is announced: a folder of the tests'
		// own keeps them from the machine's real loaders, and those from
		// the tests.
		runtime := filepath.Join(dir, "runtime")
		if err := os.Mkdir(runtime, 0o700); err != nil {
			buildErr = err
			return
		}
		os.Setenv("XDG_RUNTIME_DIR", runtime)
		// tune keeps its predictions' errors in the state folder, and every
		// later verdict says their bias: the tests' own keeps the tests'
		// verdicts from the machine's record, and that from the tests.
		os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// TestPerCoreAgreesWithMpstat pins a busy loop to the last CPU, then runs
// the real binary (gpuwatch --headless --json) and sysstat's mpstat side by
// side for five one-second intervals, and checks that both see the same
// per-core busy share: the pinned core near 100 %, and every core within
// 10 points of mpstat's figure averaged over the run.
func TestPerCoreAgreesWithMpstat(t *testing.T) {
	if _, err := exec.LookPath("mpstat"); err != nil {
		t.Skip("mpstat (Debian sysstat) not installed")
	}
	bin := binary(t)
	hot := runtime.NumCPU() - 1
	var stop atomic.Bool
	defer stop.Store(true)
	pinned := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(hot)
		pinned <- unix.SchedSetaffinity(0, &set)
		for !stop.Load() {
		}
	}()
	if err := <-pinned; err != nil {
		t.Fatalf("pin to cpu%d: %v", hot, err)
	}

	gw := exec.Command(bin, "--headless", "--json", "--interval", "1s", "--duration", "5500ms")
	mp := exec.Command("mpstat", "-P", "ALL", "-o", "JSON", "1", "5")
	var gwOut, mpOut bytes.Buffer
	gw.Stdout, mp.Stdout = &gwOut, &mpOut
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	if err := mp.Start(); err != nil {
		t.Fatal(err)
	}
	if err := gw.Wait(); err != nil {
		t.Fatalf("gpuwatch: %v", err)
	}
	if err := mp.Wait(); err != nil {
		t.Fatalf("mpstat: %v", err)
	}

	ours := make([]float64, runtime.NumCPU())
	frames := 0
	sc := bufio.NewScanner(&gwOut)
	for sc.Scan() {
		var line struct {
			Type string `json:"type"`
			CPU  struct {
				Cores []struct {
					ID      int     `json:"id"`
					BusyPct float64 `json:"busy_pct"`
				} `json:"cores"`
			} `json:"cpu"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("bad JSON line %q: %v", sc.Text(), err)
		}
		if line.Type != "frame" || len(line.CPU.Cores) != len(ours) {
			t.Fatalf("frame has %d cores, want %d: %s", len(line.CPU.Cores), len(ours), sc.Text())
		}
		for _, c := range line.CPU.Cores {
			ours[c.ID] += c.BusyPct
		}
		frames++
	}
	if frames < 4 {
		t.Fatalf("%d frames in 5.5 s, want at least 4", frames)
	}

	var mps struct {
		Sysstat struct {
			Hosts []struct {
				Statistics []struct {
					CPULoad []struct {
						CPU    string  `json:"cpu"`
						Idle   float64 `json:"idle"`
						Iowait float64 `json:"iowait"`
					} `json:"cpu-load"`
				} `json:"statistics"`
			} `json:"hosts"`
		} `json:"sysstat"`
	}
	if err := json.Unmarshal(mpOut.Bytes(), &mps); err != nil {
		t.Fatalf("mpstat JSON: %v\n%s", err, mpOut.String())
	}
	theirs := make([]float64, len(ours))
	stats := mps.Sysstat.Hosts[0].Statistics
	for _, s := range stats {
		for _, l := range s.CPULoad {
			id, err := strconv.Atoi(l.CPU)
			if err != nil || id >= len(theirs) {
				continue // "all"
			}
			theirs[id] += 100 - l.Idle - l.Iowait
		}
	}
	for i := range ours {
		ours[i] /= float64(frames)
		theirs[i] /= float64(len(stats))
		t.Logf("cpu%d busy: gpuwatch %.1f%%, mpstat %.1f%%", i, ours[i], theirs[i])
		if math.Abs(ours[i]-theirs[i]) > 10 {
			t.Errorf("cpu%d: gpuwatch %.1f%% vs mpstat %.1f%%", i, ours[i], theirs[i])
		}
	}
	if ours[hot] < 90 {
		t.Errorf("pinned cpu%d reads %.1f%% busy, want ≥ 90", hot, ours[hot])
	}
}

// TestSignalsStopCleanly sends SIGTERM and SIGINT to the running binary: it
// must stop at once with exit status 0 and a complete last line.
func TestSignalsStopCleanly(t *testing.T) {
	bin := binary(t)
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		cmd := exec.Command(bin, "--headless", "--json", "--interval", "100ms")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(stdout)
		if _, err := r.ReadString('\n'); err != nil { // running and sampling
			t.Fatal(err)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(r)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v: exit %v, want 0", sig, err)
		}
		if len(rest) > 0 && rest[len(rest)-1] != '\n' {
			t.Fatalf("%v: output ends mid-line: %q", sig, rest)
		}
	}
}

// startBinary starts gpuwatch with args, killed at the test's end, and
// returns once it printed its first line (commands that serve say where).
func startBinary(t *testing.T, args ...string) (*exec.Cmd, *bufio.Reader, string) {
	t.Helper()
	cmd, stdout := start(t, args...)
	r := bufio.NewReader(stdout)
	first, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("%v: no first line: %v", args, err)
	}
	return cmd, r, first
}

// startLoader starts `gpuwatch loader` on a free loopback port and returns
// the command and its base URL.
func startLoader(t *testing.T, args ...string) (*exec.Cmd, string, *bufio.Reader) {
	t.Helper()
	cmd, r, first := startBinary(t, append([]string{"loader", "--listen", "127.0.0.1:0", "--progress-every", "1s"}, args...)...)
	return cmd, loaderURL(t, first), r
}

// loaderURL is the base URL in `gpuwatch loader`'s first line.
func loaderURL(t *testing.T, first string) string {
	t.Helper()
	i := strings.Index(first, "http://")
	if i < 0 {
		t.Fatalf("first line %q names no URL", first)
	}
	return strings.TrimSuffix(strings.Fields(first[i:])[0], "/metrics")
}

// TestLoaderServesTheProtocol runs `gpuwatch loader` as its own process and
// reads it as an attaching gpuwatch would: /metrics parses as Prometheus
// text with the protocol's names, /debug/pprof/profile is a real CPU
// profile, progress lines come, and SIGTERM stops it with status 0.
func TestLoaderServesTheProtocol(t *testing.T) {
	dir := t.TempDir()
	cmd, base, out := startLoader(t, "--dataset", dir, "--dataset-size", "16MiB", "--workers", "2",
		"--decode-cost", "500us", "--step-time", "5ms")
	var fams map[string]*dto.MetricFamily
	for {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err = p.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if fams["gpuwatch_loader_batches_total"].GetMetric()[0].GetCounter().GetValue() >= 10 {
			break
		}
	}
	info := fams["gpuwatch_loader_info"].GetMetric()[0]
	pid := ""
	for _, l := range info.GetLabel() {
		if l.GetName() == "pid" {
			pid = l.GetValue()
		}
	}
	if pid != strconv.Itoa(cmd.Process.Pid) {
		t.Fatalf("info pid %q, process %d", pid, cmd.Process.Pid)
	}
	resp, err := http.Get(base + "/debug/pprof/profile?seconds=1")
	if err != nil {
		t.Fatal(err)
	}
	prof, err := profile.Parse(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("profile: %v", err)
	}
	if len(prof.Sample) == 0 {
		t.Fatal("empty CPU profile from a busy loader")
	}
	line, err := out.ReadString('\n')
	if err != nil || !strings.Contains(line, "samples/s") {
		t.Fatalf("progress line %q, %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

func TestLoaderWarnsOnNonLoopbackListen(t *testing.T) {
	cmd := exec.Command(binary(t), "loader", "--listen", "0.0.0.0:0", "--dataset", t.TempDir(),
		"--dataset-size", "4MiB", "--sample-size", "4KiB", "--epochs", "1", "--batches", "3", "--step-time", "1ms")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "warning: serving on") || !strings.Contains(string(out), "done: 3 batches") {
		t.Fatalf("output:\n%s", out)
	}
}

func TestLoaderPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out, err := exec.Command(binary(t), "loader", "--listen", ln.Addr().String(), "--dataset", t.TempDir(),
		"--dataset-size", "4MiB").CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "address already in use") {
		t.Fatalf("exit %d: %s", code, out)
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestDemoTourSwitchesEveryScenario runs the tour with 2 s per scenario:
// a scenario line per switch, in order, and loader data in the frames.
func TestDemoTourSwitchesEveryScenario(t *testing.T) {
	cmd := exec.Command(binary(t), "demo", "--headless", "--json", "--tour-every", "2s", "--duration", "15s", "--interval", "500ms")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	loaderFrames := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Type   string          `json:"type"`
			Name   string          `json:"name"`
			Loader json.RawMessage `json:"loader"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Type == "scenario" {
			names = append(names, line.Name)
		} else if len(line.Loader) > 0 {
			loaderFrames++
		}
	}
	want := "healthy starved single-core cpu-bound io-bound mmap-random remote-storage"
	if got := strings.Join(names, " "); !strings.HasPrefix(got, want) {
		t.Fatalf("scenario lines %q, want %q first", got, want)
	}
	if loaderFrames < 15 {
		t.Fatalf("%d frames with loader data", loaderFrames)
	}
}

// attachLine is what the attach tests read from frames.
type attachLine struct {
	Type   string `json:"type"`
	Loader *struct {
		Connected         *bool      `json:"connected"`
		DisconnectedSince *time.Time `json:"disconnected_since"`
		Batches           uint64     `json:"batches"`
		SamplesPerSec     float64    `json:"samples_per_sec"`
		WaitShare         *float64   `json:"wait_share"`
		Workers           *int       `json:"workers"`
		LoopTID           *int       `json:"loop_tid"`
	} `json:"loader"`
	Profile *struct {
		Categories []struct {
			Name  string  `json:"name"`
			Share float64 `json:"share"`
		} `json:"categories"`
		Top []struct {
			Name string  `json:"name"`
			Flat float64 `json:"flat"`
		} `json:"top"`
		Error string `json:"error"`
	} `json:"profile"`
	Procs *struct {
		FocusPID int `json:"focus_pid"`
	} `json:"procs"`
	Accel *struct {
		BusyPct float64  `json:"busy_pct"`
		StepPct *float64 `json:"step_pct"`
		DelayPc *float64 `json:"loop_run_delay_pct"`
	} `json:"virtual_accel"`
	Verdict *struct {
		Kind     string `json:"kind"`
		Evidence []struct {
			Metric string `json:"metric"`
			Text   string `json:"text"`
		} `json:"evidence"`
		Advice    []string `json:"advice"`
		Secondary []struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"secondary"`
		Straggler *int `json:"straggler_rank"`
	} `json:"verdict"`
	Ranks []struct {
		Rank      int      `json:"rank"`
		URL       string   `json:"url"`
		PID       int      `json:"pid"`
		Connected bool     `json:"connected"`
		WaitShare *float64 `json:"wait_share"`
		StepSec   *float64 `json:"step_sec"`
		Pacing    bool     `json:"pacing"`
		SlowSince *string  `json:"slow_since"`
		Batches   float64  `json:"batches_per_sec"`
	} `json:"ranks"`
	Job *struct {
		CgroupVersion    int      `json:"cgroup_version"`
		Cgroup           string   `json:"cgroup"`
		Source           string   `json:"source"`
		Self             bool     `json:"self"`
		CPUCapacityCores float64  `json:"cpu_capacity_cores"`
		CPUUsedCores     *float64 `json:"cpu_used_cores"`
	} `json:"job"`
	Unavailable map[string]string `json:"unavailable"`
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start starts gpuwatch with args, killed at the test's end, and returns
// its stdout (its stderr is the test's).
func start(t *testing.T, args ...string) (*exec.Cmd, io.Reader) {
	t.Helper()
	return startCmd(t, exec.Command(binary(t), args...))
}

// startCmd starts cmd, its stderr the test's, and kills it at the end.
func startCmd(t *testing.T, cmd *exec.Cmd) (*exec.Cmd, io.Reader) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, stdout
}

// startJSON starts gpuwatch with args (a --json command) and streams its
// lines.
func startJSON(t *testing.T, args ...string) (*exec.Cmd, <-chan attachLine) {
	t.Helper()
	cmd, stdout := start(t, args...)
	return cmd, lines(t, stdout)
}

// lines streams a process's JSON lines.
func lines(t *testing.T, r io.Reader) <-chan attachLine {
	ch := make(chan attachLine, 256)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			var l attachLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("bad JSON line: %v", err)
				return
			}
			ch <- l
		}
	}()
	return ch
}

// await reads lines until ok, failing after limit.
func await(t *testing.T, ch <-chan attachLine, what string, limit time.Duration, ok func(attachLine) bool) attachLine {
	t.Helper()
	deadline := time.After(limit)
	var seen []string // the last frames, said on a failure
	for {
		select {
		case l, open := <-ch:
			if !open {
				t.Fatalf("attach ended before %s; the last frames:\n%s", what, strings.Join(seen, "\n"))
			}
			if l.Type != "frame" {
				continue
			}
			if ok(l) {
				return l
			}
			seen = append(seen, describeAttachLine(l))
			if len(seen) > 5 {
				seen = seen[1:]
			}
		case <-deadline:
			t.Fatalf("no frame with %s within %v; the last frames:\n%s", what, limit, strings.Join(seen, "\n"))
		}
	}
}

// describeAttachLine says what await's conditions read of a frame.
func describeAttachLine(l attachLine) string {
	b, _ := json.Marshal(struct {
		Loader, Profile, Verdict any
	}{l.Loader, l.Profile, l.Verdict})
	if len(b) > 1500 {
		b = b[:1500]
	}
	return string(b)
}

// TestAttachToARealLoader runs `gpuwatch loader --scenario io-bound` as its
// own process, attaches headless, and checks loader data, a profile whose
// largest category is reading, the io_bound verdict and the focus on the
// loader's PID; then kills the loader, sees the disconnection, restarts it
// on the same port and sees the reconnection.
func TestAttachToARealLoader(t *testing.T) {
	addr := freePort(t)
	// startLoader returns once the loader says it serves (its first line).
	startLoader := func() *exec.Cmd {
		cmd, r, first := startBinary(t, "loader", "--scenario", "io-bound", "--listen", addr)
		if !strings.Contains(first, "serving") {
			t.Fatalf("loader start: %q", first)
		}
		go io.Copy(io.Discard, r)
		return cmd
	}
	ldr := startLoader()
	url := "http://" + addr
	att, ch := startJSON(t, "attach", url, "--headless", "--json", "--profile-every", "4s", "--profile-seconds", "2", "--duration", "90s")

	// The first profile, taken at once, also covers the loader's start-up
	// (each worker's start-up work is hashing: "decoding"); the next ones
	// are steady state.
	largest := func(l attachLine) string {
		best := l.Profile.Categories[0]
		for _, c := range l.Profile.Categories {
			if c.Share > best.Share {
				best = c
			}
		}
		return best.Name
	}
	l := await(t, ch, "loader data, a profile led by reading and the io_bound verdict", 40*time.Second, func(l attachLine) bool {
		return l.Loader != nil && l.Loader.Connected != nil && *l.Loader.Connected && l.Loader.Batches > 0 && l.Loader.WaitShare != nil &&
			l.Profile != nil && len(l.Profile.Categories) > 0 && largest(l) == "reading" && l.Verdict != nil && l.Verdict.Kind == "io_bound"
	})
	if l.Procs == nil || l.Procs.FocusPID != ldr.Process.Pid {
		t.Fatalf("process focus %+v, loader pid %d", l.Procs, ldr.Process.Pid)
	}
	profileEvidence := false
	for _, e := range l.Verdict.Evidence {
		profileEvidence = profileEvidence || strings.Contains(e.Text, "CPU profile")
	}
	if !profileEvidence {
		t.Fatalf("the verdict does not cite the profile: %+v", l.Verdict.Evidence)
	}

	_ = ldr.Process.Kill()
	_ = ldr.Wait()
	await(t, ch, "the disconnection", 10*time.Second, func(l attachLine) bool {
		return l.Loader != nil && l.Loader.Connected != nil && !*l.Loader.Connected && l.Loader.DisconnectedSince != nil
	})
	startLoader()
	await(t, ch, "the reconnection", 40*time.Second, func(l attachLine) bool {
		return l.Loader != nil && l.Loader.Connected != nil && *l.Loader.Connected && l.Loader.Batches > 0
	})
	if err := att.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range ch {
	}
	if err := att.Wait(); err != nil {
		t.Fatalf("attach after SIGTERM: %v", err)
	}
}

// TestAttachToAPlainGoPprofServer: a Go program with net/http/pprof and no
// loader metrics gives profiles, and the frames say the metrics are missing.
func TestAttachToAPlainGoPprofServer(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := &http.Server{Handler: mux}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	var stop atomic.Bool
	defer stop.Store(true)
	go func() { // something for the profile to see
		x := 0
		for !stop.Load() {
			x++
		}
	}()
	// The default profile length (5 s): the first one comes at start.
	_, ch := startJSON(t, "attach", "http://"+ln.Addr().String(), "--headless", "--json", "--duration", "25s")
	await(t, ch, "a profile and the missing metrics said", 20*time.Second, func(l attachLine) bool {
		return l.Profile != nil && len(l.Profile.Categories) > 0 && strings.Contains(l.Unavailable["loader"], "no loader metrics")
	})
}

func TestAttachRefusesADeadURL(t *testing.T) {
	addr := freePort(t)
	s, err := execGpuwatch(t, "attach", "http://user:hunter2@"+addr)
	if code := exitCode(err); code != 1 {
		t.Fatalf("exit %d: %s", code, s)
	}
	if !strings.Contains(s, "cannot attach to http://"+addr+": connection refused") || strings.Contains(s, "hunter2") || strings.Count(s, "\n") != 1 {
		t.Fatalf("output %q", s)
	}
}

// verdictKinds reads the verdict kind of every frame line.
func verdictKinds(t *testing.T, b []byte) []string {
	t.Helper()
	var kinds []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var l struct {
			Type    string `json:"type"`
			Verdict *struct {
				Kind string `json:"kind"`
			} `json:"verdict"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Type == "frame" && l.Verdict != nil {
			kinds = append(kinds, l.Verdict.Kind)
		}
	}
	return kinds
}

// TestRecordReplayRoundTrip records a demo scenario headless, replays the
// file headless, and compares the verdict of every frame.
func TestRecordReplayRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	live, err := exec.Command(binary(t), "demo", "--scenario", "single-core", "--headless", "--json", "--duration", "8s", "--record", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	replayed, err := exec.Command(binary(t), "replay", path, "--headless", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	a, b := verdictKinds(t, live), verdictKinds(t, replayed)
	if len(a) < 6 || strings.Join(a, " ") != strings.Join(b, " ") {
		t.Fatalf("live verdicts %v\nreplayed %v", a, b)
	}
	if a[len(a)-1] != "single_core_maxed" {
		t.Fatalf("live run ended on %s", a[len(a)-1])
	}
}

// TestRecordingSurvivesKill9 kills a recording process with SIGKILL: the
// file must parse up to its last line, with at most ~1 s of frames lost.
func TestRecordingSurvivesKill9(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	cmd := exec.Command(binary(t), "--headless", "--json", "--interval", "200ms", "--record", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 4<<20)
	var printed int
	var lastPrinted time.Time
	for sc.Scan() && printed < 10 {
		var l struct {
			Time time.Time `json:"time"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		printed++
		lastPrinted = l.Time
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	rec, err := recording.Open(path)
	if err != nil {
		t.Fatalf("the killed recording does not read: %v", err)
	}
	defer rec.Close()
	if rec.Len() < printed-1 {
		t.Fatalf("%d frames in the file, %d were printed before the kill", rec.Len(), printed)
	}
	lastFrame, err := rec.Frame(rec.Len() - 1)
	if err != nil {
		t.Fatal(err)
	}
	if lost := lastPrinted.Sub(lastFrame.Frame.Time); lost > time.Second {
		t.Fatalf("lost %v of frames", lost)
	}
}

func TestReplayRefusesWhatIsNotARecording(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"csv.txt":     "time,cpu\n1,2\n",
		"newer.jsonl": `{"type":"header","format":"gpuwatch-recording","version":9}` + "\n",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		out, err := exec.Command(binary(t), "replay", p, "--headless").CombinedOutput()
		if exitCode(err) != 1 || strings.Count(string(out), "\n") != 1 {
			t.Fatalf("%s: exit %d, %q", name, exitCode(err), out)
		}
	}
}

// TestReportRendersInChromium writes the HTML report of a recorded tour
// and renders it in Debian's headless Chromium: the DOM must hold every
// chart, a screenshot must come out, and the browser must log no error.
func TestReportRendersInChromium(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (CI installs Debian's)")
	}
	dir := t.TempDir()
	html := filepath.Join(dir, "tour.html")
	if out, err := exec.Command(binary(t), "report", filepath.Join("recording", "testdata", "tour.jsonl"), "-o", html).CombinedOutput(); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + filepath.Join(dir, "profile"), "--enable-logging=stderr", "--v=0"}
	var stderr bytes.Buffer
	cmd := exec.Command(browser, append(args, "--dump-dom", "file://"+html)...)
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	for _, id := range []string{"chart-verdicts", "chart-accel", "chart-cores", "chart-disk", "chart-psi", "chart-train", "chart-wait-hist"} {
		if !bytes.Contains(dom, []byte(`id="`+id+`"`)) {
			t.Errorf("rendered DOM lacks %s", id)
		}
	}
	if !bytes.Contains(dom, []byte("single_core_maxed")) || bytes.Count(dom, []byte("<svg")) < 7 {
		t.Fatalf("rendered DOM lacks verdicts or charts")
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") {
			t.Errorf("page error: %s", line)
		}
	}
	png := filepath.Join(dir, "tour.png")
	shot := exec.Command(browser, append(args, "--window-size=1000,2600", "--screenshot="+png, "file://"+html)...)
	if out, err := shot.CombinedOutput(); err != nil {
		t.Fatalf("screenshot: %v\n%s", err, out)
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 20<<10 {
		t.Fatalf("screenshot %v, %v", st, err)
	}
	// On a phone (a 500 px window, headless chromium's least): the page
	// is no wider than the window. A review: a recording with ranks and a
	// cgroup path read 754–778 px; testdata/wide.jsonl is its first frames.
	wide := filepath.Join(dir, "wide.html")
	if out, err := exec.Command(binary(t), "report", filepath.Join("recording", "testdata", "wide.jsonl"), "-o", wide).CombinedOutput(); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	page, err := os.ReadFile(wide)
	if err != nil {
		t.Fatal(err)
	}
	measured := filepath.Join(dir, "wide-measured.html")
	page = bytes.Replace(page, []byte("</body>"), []byte(`<script>document.body.setAttribute("data-sw", document.documentElement.scrollWidth)</script></body>`), 1)
	if err := os.WriteFile(measured, page, 0o600); err != nil {
		t.Fatal(err)
	}
	dom, err = exec.Command(browser, append(args, "--window-size=500,2000", "--dump-dom", "file://"+measured)...).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	m := regexp.MustCompile(`data-sw="(\d+)"`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("no width measured in the DOM")
	}
	if w, _ := strconv.Atoi(string(m[1])); w > 500 {
		t.Errorf("the report is %d px wide in a 500 px window", w)
	}
}

// TestRecordWritesItsReportAtExit: record --duration with --report leaves
// both the recording and the report.
func TestRecordWritesItsReportAtExit(t *testing.T) {
	dir := t.TempDir()
	run, md := filepath.Join(dir, "run.jsonl"), filepath.Join(dir, "run.md")
	out, err := exec.Command(binary(t), "record", "--duration", "3s", "--interval", "500ms", "-o", run, "--report", md).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	b, err := os.ReadFile(md)
	if err != nil || !strings.Contains(string(b), "# gpuwatch report") || !strings.Contains(string(b), "| verdict | time | share |") {
		t.Fatalf("report: %v\n%s", err, b)
	}
	if _, err := os.Stat(run); err != nil {
		t.Fatal(err)
	}
	again, err := exec.Command(binary(t), "report", run, "-o", md).CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(again), "--force") {
		t.Fatalf("replaced a report without --force: %s", again)
	}
}

// TestExporterScrapedByARealPrometheus: `gpuwatch serve` passes promtool's
// metrics check, Debian's Prometheus scrapes it on loopback and answers a
// query for the verdict series, and the documented alert rules load.
func TestExporterScrapedByARealPrometheus(t *testing.T) {
	promBin, err1 := exec.LookPath("prometheus")
	promtool, err2 := exec.LookPath("promtool")
	if err1 != nil || err2 != nil {
		t.Skip("prometheus/promtool not installed (CI installs Debian's)")
	}
	addr := freePort(t)
	if _, _, first := startBinary(t, "serve", "--listen", addr, "--interval", "500ms"); !strings.Contains(first, addr) {
		t.Fatalf("serve: %q", first)
	}
	promtoolCheck(t, "http://"+addr+"/metrics")
	if msg, err := exec.Command(promtool, "check", "rules", filepath.Join("docs", "prometheus-alerts.yml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, msg)
	}

	promAddr, promLog := startPrometheus(t, promBin, addr)
	// Wait (bounded) for Prometheus to scrape and answer: an external
	// process's progress, polled.
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case <-deadline:
			t.Fatalf("Prometheus never answered with the verdict; its log:\n%s", promLog)
		case <-tick.C:
		}
		r, err := http.Get("http://" + promAddr + "/api/v1/query?query=gpuwatch_verdict%3D%3D1")
		if err != nil {
			continue
		}
		var q struct {
			Status string `json:"status"`
			Data   struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
				} `json:"result"`
			} `json:"data"`
		}
		err = json.NewDecoder(r.Body).Decode(&q)
		r.Body.Close()
		if err != nil || q.Status != "success" || len(q.Data.Result) == 0 {
			continue
		}
		if len(q.Data.Result) != 1 || q.Data.Result[0].Metric["kind"] == "" || q.Data.Result[0].Metric["job"] != "gpuwatch" {
			t.Fatalf("want one verdict series with kind and job labels: %+v", q.Data.Result)
		}
		return
	}
}

// startPrometheus runs Debian's Prometheus on a free loopback port,
// scraping targets every second into a temporary folder, until the test
// ends; it returns its address and its log.
func startPrometheus(t *testing.T, promBin string, targets ...string) (string, *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = strconv.Quote(tg)
	}
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: gpuwatch\n    static_configs:\n      - targets: ["+strings.Join(quoted, ", ")+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	promAddr := freePort(t)
	prom := exec.Command(promBin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr)
	var promLog bytes.Buffer
	prom.Stdout, prom.Stderr = &promLog, &promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prom.Process.Kill(); _ = prom.Wait() })
	return promAddr, &promLog
}

// promtoolCheck lints a /metrics page with Prometheus's promtool, where
// installed (CI installs Debian's prometheus).
func promtoolCheck(t *testing.T, url string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not installed: /metrics not linted")
		return
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The hook answers only with the token of its announcement.
	if d, err := endpoint.Discover(endpoint.DiscoveryDir(), "/proc"); err == nil {
		if token := endpoint.TokenFor(d, strings.TrimSuffix(url, "/metrics")); token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %v %s", url, err, resp.Status)
	}
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = bytes.NewReader(body)
	if msg, err := check.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics %s: %v\n%s", url, err, msg)
	}
}

// TestVersionFromBuildInfo: a build without the release's -ldflags (go
// build, go install) still names its commit, from Go's VCS stamp.
func TestVersionFromBuildInfo(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skip("not a git checkout")
	}
	bin := filepath.Join(t.TempDir(), "gpuwatch")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	// Go stamps a module version too: the tag, or a pseudo-version
	// (v0.0.0-TIME-COMMIT) between tags.
	if s := string(out); !strings.HasPrefix(s, "gpuwatch v") || !strings.Contains(s, "(commit "+string(head[:12])) {
		t.Fatalf("version says %q, want a module version and commit %s", s, head[:12])
	}
}
