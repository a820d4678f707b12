package loader

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is this process's user+system CPU time.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// threadCPU reads a thread's utime+stime from /proc (USER_HZ = 100).
func threadCPU(t *testing.T, tid int) time.Duration {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+2:])
	ut, _ := strconv.Atoi(string(f[11]))
	st, _ := strconv.Atoi(string(f[12]))
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// diskReadBytes is what this process read from storage (not the page
// cache), from /proc/self/io.
func diskReadBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("read_bytes: ")); ok {
			n, _ := strconv.ParseInt(string(v), 10, 64)
			return n
		}
	}
	t.Fatal("no read_bytes in /proc/self/io")
	return 0
}

// waitShare is wait / (wait + step) over the batches after the very first
// (which also pays the workers' start-up).
func waitShare(s Snapshot) float64 {
	var w, st time.Duration
	for _, b := range s.Recent {
		if b.Seq == 1 {
			continue
		}
		w += b.Wait
		st += b.Step
	}
	if w+st == 0 {
		return 0
	}
	return float64(w) / float64(w+st)
}

// TestScenariosProduceTheirBottleneck runs each preset for 3 s, for real,
// and checks its signature in the loader's numbers and the kernel's.
func TestScenariosProduceTheirBottleneck(t *testing.T) {
	// It measures the machine (cores busy, disk reads), so it must have
	// the machine to itself: not beside other packages' tests, which
	// `go test ./...` runs in parallel. CI runs it alone with this set.
	if os.Getenv("GPUWATCH_BOTTLENECK_TESTS") == "" {
		t.Skip("measures real bottlenecks and needs the machine to itself: GPUWATCH_BOTTLENECK_TESTS=1 go test -run Scenarios ./loader/")
	}
	if raceEnabled {
		t.Skip("measures bottlenecks: the race detector's slowdown makes every run CPU-bound (CI runs this without -race)")
	}
	cpus := float64(runtime.NumCPU())
	for _, name := range Scenarios {
		t.Run(name, func(t *testing.T) {
			c, err := Scenario(name, 8<<30)
			if err != nil {
				t.Fatal(err)
			}
			c.Dataset = DefaultDatasetDir(c.DatasetSize) // generated once, shared with the demo
			ds, err := OpenDataset(c.Dataset, c.DatasetSize, c.Seed)
			if err != nil {
				t.Fatal(err)
			}
			if c.DirectIO {
				if err := ds.CheckDirectIO(); err != nil {
					t.Skipf("this filesystem refuses O_DIRECT: %v", err)
				}
			}
			l := New(c, ds, nil)
			var loopTid atomic.Int64
			var tcpu0 time.Duration
			l.fetchHook = func(worker, _ int) {
				// With workers=0 the training loop's own thread loads:
				// take its CPU reading at the first batch.
				if worker == -1 && loopTid.Load() == 0 {
					tid := unix.Gettid()
					tcpu0 = threadCPU(t, tid)
					loopTid.Store(int64(tid))
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			cpu0, disk0, start := processCPU(t), diskReadBytes(t), time.Now()
			if err := l.Run(ctx); err != context.DeadlineExceeded {
				t.Fatalf("Run = %v", err)
			}
			wall := time.Since(start).Seconds()
			cores := (processCPU(t) - cpu0).Seconds() / wall
			disk := diskReadBytes(t) - disk0
			s := l.Snapshot()
			share := waitShare(s)
			t.Logf("%s: %d batches, wait share %.0f%%, %.2f cores busy, read %.2fs decode %.2fs, %s/s read, %s from disk",
				name, s.Batches, 100*share, cores, s.ReadSeconds, s.DecodeSeconds,
				FormatSize(int64(float64(s.BytesRead)/wall)), FormatSize(disk))
			switch name {
			case "healthy":
				if share > 0.05 {
					t.Errorf("wait share %.0f%%: the loader should keep up", 100*share)
				}
			case "starved":
				if share < 0.3 || cores > 0.5 {
					t.Errorf("want the loop waiting (%.0f%%) with the CPU idle (%.2f cores)", 100*share, cores)
				}
			case "single-core":
				tid := loopTid.Load()
				busy := (threadCPU(t, int(tid)) - tcpu0).Seconds() / wall
				t.Logf("training loop thread %d: %.0f%% of a core", tid, 100*busy)
				if busy < 0.8 || share < 0.5 {
					t.Errorf("want one pegged thread (%.0f%%) and a waiting loop (%.0f%%)", 100*busy, 100*share)
				}
			case "cpu-bound":
				if cores < 0.8*cpus || share < 0.3 {
					t.Errorf("want every core busy (%.2f of %.0f) and the loop waiting (%.0f%%)", cores, cpus, 100*share)
				}
			case "io-bound":
				if share < 0.2 || s.ReadSeconds < 10*s.DecodeSeconds || float64(disk) < 0.5*float64(s.BytesRead) {
					t.Errorf("want a waiting loop (%.0f%%), read ≫ decode (%.2fs vs %.2fs), reads from the disk (%s of %s)",
						100*share, s.ReadSeconds, s.DecodeSeconds, FormatSize(disk), FormatSize(int64(s.BytesRead)))
				}
			case "mmap-random":
				// Faults, not read calls: the disk reads more than the
				// samples hold (read-around), and the loop waits. On a cold
				// CI disk a 3 s run may take 2 batches: the second was
				// prefetched beside the first (its wait 0 %, the first's
				// left out), so the run's own time tells too — 2 steps of
				// 10 ms in 3.45 s is a loop that waited 99 % of it.
				if whole := 1 - float64(s.Batches)*c.StepTime.Seconds()/wall; whole > share {
					t.Logf("the loop stepped %d × %s in %.2fs: it waited %.0f%% of the run", s.Batches, c.StepTime, wall, 100*whole)
					share = whole
				}
				if share < 0.3 || s.ReadSeconds < 10*s.DecodeSeconds || float64(disk) < float64(s.BytesRead) {
					t.Errorf("want a waiting loop (%.0f%%), read ≫ decode (%.2fs vs %.2fs), the disk reading more than the samples (%s for %s)",
						100*share, s.ReadSeconds, s.DecodeSeconds, FormatSize(disk), FormatSize(int64(s.BytesRead)))
				}
			case "remote-storage":
				rate := float64(s.BytesRead) / wall
				if share < 0.3 || rate > 1.1*float64(c.ReadBandwidth) || cores > 0.5 {
					t.Errorf("want a waiting loop (%.0f%%) at the link's bandwidth (%.0f B/s of %d) with the CPU idle (%.2f)",
						100*share, rate, c.ReadBandwidth, cores)
				}
			}
		})
	}
}
