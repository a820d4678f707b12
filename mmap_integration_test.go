//go:build integration

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// mmapRun is what a run over a mapped dataset showed: its last verdict,
// and the mean samples/s of its second half.
type mmapRun struct {
	kind, first, metric string
	changes             []string
	samplesPerSec       float64
}

// collectRun reads frames from ch until it closes or limit passes.
func collectRun(t *testing.T, ch <-chan attachLine, limit time.Duration) mmapRun {
	t.Helper()
	var rates []float64
	var last attachLine
	deadline := time.After(limit)
loop:
	for {
		select {
		case l, open := <-ch:
			if !open {
				break loop
			}
			if l.Type != "frame" {
				continue
			}
			if l.Loader != nil {
				rates = append(rates, l.Loader.SamplesPerSec)
			}
			if l.Verdict != nil && len(l.Verdict.Evidence) > 0 {
				last = l
			}
		case <-deadline:
			break loop
		}
	}
	if last.Verdict == nil || len(rates) < 4 {
		t.Fatalf("no verdict, or too few frames (%d)", len(rates))
	}
	var r mmapRun
	r.kind, r.first, r.metric = last.Verdict.Kind, last.Verdict.Evidence[0].Text, last.Verdict.Evidence[0].Metric
	half := rates[len(rates)/2:]
	for _, v := range half {
		r.samplesPerSec += v / float64(len(half))
	}
	return r
}

const mmapMetric = "procs.major_faults_per_sec"

// TestMmapRandomVersusSubseq runs the mmap-random preset, then the same
// run with --access subseq, each for real on this machine: the random run
// is io_bound through page faults on the mapped dataset; the subseq run is
// not, and delivers at least twice the samples per second.
func TestMmapRandomVersusSubseq(t *testing.T) {
	run := func(extra ...string) mmapRun {
		args := append([]string{"demo", "--scenario", "mmap-random", "--headless", "--json", "--duration", "25s"}, extra...)
		_, ch := startJSON(t, args...)
		return collectRun(t, ch, 90*time.Second)
	}
	random := run()
	subseq := run("--access", "subseq")
	t.Logf("mmap-random: %s, %.0f samples/s: %s", random.kind, random.samplesPerSec, random.first)
	t.Logf("with --access subseq: %s, %.0f samples/s (%.1f×): %s", subseq.kind, subseq.samplesPerSec, subseq.samplesPerSec/random.samplesPerSec, subseq.first)
	if random.kind != "io_bound" || random.metric != mmapMetric {
		t.Errorf("mmap-random: %s led by %s (%q), want io_bound led by %s", random.kind, random.metric, random.first, mmapMetric)
	}
	if subseq.kind == random.kind || subseq.metric == mmapMetric {
		t.Errorf("with subseq: %s led by %s, want a different verdict without the mmap mechanism", subseq.kind, subseq.metric)
	}
	if subseq.samplesPerSec < 2*random.samplesPerSec {
		t.Errorf("subseq %.0f samples/s, random %.0f: want at least 2×", subseq.samplesPerSec, random.samplesPerSec)
	}
}

// TestPythonHookOnAMappedDataset runs a real PyTorch DataLoader over a
// numpy.memmap (python/examples/train_mmap.py) in a container-like memory
// cgroup of 1 GiB with a 3 GiB data file, its page cache dropped first:
// the page cache cannot hold the data, as on a box whose dataset outgrows
// RAM. Read in random order, gpuwatch attached to the hook must find the
// workers' page faults (io_bound, the mmap mechanism); read as shuffled
// blocks of consecutive records it must not, and run at least 2× faster.
func TestPythonHookOnAMappedDataset(t *testing.T) {
	py := python(t, true)
	if out, err := exec.Command(py, "-c", "import numpy").CombinedOutput(); err != nil {
		t.Fatalf("numpy: %v: %s (apt-get install python3-numpy)", err, out)
	}
	procs := v1Cgroup(t, "gpuwatch-mmap-test", map[string]map[string]string{"memory": {"memory.limit_in_bytes": "1073741824"}})
	data := filepath.Join(t.TempDir(), "records.bin")
	run := func(access string) mmapRun {
		sh := exec.Command("sh", "-c", `for f in $PROCS; do echo $$ > "$f" || exit 1; done; exec "$0" "$@"`,
			py, "python/examples/train_mmap.py", "--data", data, "--size", "3221225472", "--access", access, "--drop-cache", "--port", "0", "--seconds", "150")
		sh.Env = append(os.Environ(), "PROCS="+strings.Join(procs, " "))
		stderr, err := sh.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := sh.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sh.Process.Kill(); _ = sh.Wait() }()
		r := bufio.NewReader(stderr)
		first, err := r.ReadString('\n') // after the data file is written (once) and torch loaded
		m := regexp.MustCompile(`serving (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(first)
		if err != nil || m == nil {
			t.Fatalf("the hook's first line %q (%v)", first, err)
		}
		go func() { _, _ = r.WriteTo(os.Stderr) }()
		cmd, ch := startJSON(t, "attach", m[1], "--headless", "--json", "--duration", "30s")
		res := collectRun(t, ch, 90*time.Second)
		_ = cmd.Wait()
		return res
	}
	random := run("random")
	blocks := run("blocks")
	t.Logf("random: %s, %.0f samples/s: %s", random.kind, random.samplesPerSec, random.first)
	t.Logf("blocks: %s, %.0f samples/s (%.1f×): %s", blocks.kind, blocks.samplesPerSec, blocks.samplesPerSec/random.samplesPerSec, blocks.first)
	if random.kind != "io_bound" || random.metric != mmapMetric || !strings.Contains(random.first, "loader workers take") {
		t.Errorf("random: %s led by %s (%q), want io_bound led by the workers' faults", random.kind, random.metric, random.first)
	}
	if blocks.metric == mmapMetric || slices.Contains([]string{"io_bound", "memory_pressure"}, blocks.kind) {
		t.Errorf("blocks: %s led by %s (%q), want neither the mmap mechanism nor memory pressure", blocks.kind, blocks.metric, blocks.first)
	}
	if blocks.samplesPerSec < 2*random.samplesPerSec {
		t.Errorf("blocks %.0f samples/s, random %.0f: want at least 2×", blocks.samplesPerSec, random.samplesPerSec)
	}
}
