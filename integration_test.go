//go:build integration

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPerCoreAgreesWithMpstat pins a busy loop to the last CPU, then runs
// the real binary (gpuwatch --headless --json) and sysstat's mpstat side by
// side for five one-second intervals, and checks that both see the same
// per-core busy share: the pinned core near 100 %, and every core within
// 10 points of mpstat's figure averaged over the run.
func TestPerCoreAgreesWithMpstat(t *testing.T) {
	if _, err := exec.LookPath("mpstat"); err != nil {
		t.Skip("mpstat (Debian sysstat) not installed")
	}
	bin := filepath.Join(t.TempDir(), "gpuwatch")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
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
	bin := filepath.Join(t.TempDir(), "gpuwatch")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
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
