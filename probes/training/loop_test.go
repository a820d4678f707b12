package training

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestClassifyLoop: what each reading of the loop's thread means, with and
// without workers, by syscall where it is readable and by wchan where not.
func TestClassifyLoop(t *testing.T) {
	tests := []struct {
		name    string
		s       loopSample
		workers int
		pin     bool
		want    loopClass
	}{
		{"running with workers is the step", loopSample{state: 'R'}, 2, false, loopStep},
		{"running inline is loading", loopSample{state: 'R'}, 0, false, loopLoad},
		{"a disk read inline is loading", loopSample{state: 'D'}, 0, false, loopLoad},
		{"a disk read with workers is the step (a checkpoint)", loopSample{state: 'D'}, 2, false, loopStep},
		{"poll on the result queue (syscall)", loopSample{state: 'S', syscall: "poll", wchan: "do_sys_poll"}, 2, false, loopWait},
		{"poll on the result queue (wchan alone)", loopSample{state: 'S', wchan: "poll_schedule_timeout.constprop.0"}, 2, false, loopWait},
		{"reading a worker's batch from a unix socket", loopSample{state: 'S', wchan: "unix_stream_read_generic"}, 1, false, loopWait},
		{"a read on a pipe", loopSample{state: 'S', syscall: "read", fdKind: "pipe"}, 1, false, loopWait},
		{"a read on a file with workers is the step", loopSample{state: 'S', syscall: "read", fdKind: "file"}, 1, false, loopStep},
		{"a read on a file inline is loading", loopSample{state: 'S', syscall: "read", fdKind: "file"}, 0, false, loopLoad},
		{"a socket wait inline is loading (remote storage)", loopSample{state: 'S', wchan: "sk_wait_data"}, 0, false, loopLoad},
		{"the step's sleep", loopSample{state: 'S', syscall: "clock_nanosleep", wchan: "hrtimer_nanosleep"}, 2, false, loopStep},
		{"the step's sleep (wchan alone)", loopSample{state: 'S', wchan: "hrtimer_nanosleep"}, 0, false, loopStep},
		{"a GPU ioctl is the step", loopSample{state: 'S', syscall: "ioctl"}, 2, true, loopStep},
		{"a futex with a pin-memory thread is the wait", loopSample{state: 'S', wchan: "futex_wait_queue"}, 2, true, loopWait},
		{"a futex without one is the step (a compute pool's barrier)", loopSample{state: 'S', syscall: "futex"}, 2, false, loopStep},
		{"a futex inline is the step", loopSample{state: 'S', syscall: "futex"}, 0, true, loopStep},
		{"stopped by a debugger is unknown", loopSample{state: 't'}, 2, false, loopUnknown},
		{"unreadable is unknown", loopSample{}, 2, false, loopUnknown},
	}
	for _, tc := range tests {
		if got := classifyLoop(tc.s, tc.workers, tc.pin); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
}

// loopScript is a training loop in miniature, with no torch: a forked
// worker writes a batch down a pipe every `produce` seconds; the loop
// blocks reading it (its wait), then sleeps `step` (its step), and prints
// its own wait share every second.
const loopScript = `
import os, sys, time
produce, step = float(sys.argv[1]), float(sys.argv[2])
r, w = os.pipe()
if os.fork() == 0:
    os.close(r)
    while True:
        time.sleep(produce)
        os.write(w, b"x" * 64)
os.close(w)
wait = work = 0.0
last = time.monotonic()
while True:
    t0 = time.perf_counter(); os.read(r, 64); t1 = time.perf_counter()
    time.sleep(step); t2 = time.perf_counter()
    wait += t1 - t0; work += t2 - t1
    if time.monotonic() - last >= 1:
        print("share %.4f" % (wait / (wait + work)), flush=True)
        wait = work = 0.0
        last = time.monotonic()
`

// TestSampledWaitOfARealLoop samples a real process's main thread from
// /proc while it waits on a pipe for its batches and sleeps for its step,
// and compares the wait share with the one the loop measures itself.
func TestSampledWaitOfARealLoop(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	for _, c := range []struct{ produce, step string }{{"0.03", "0.01"}, {"0.005", "0.02"}} {
		cmd := exec.Command(py, "-c", loopScript, c.produce, c.step)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		l := NewLoop(LoopOptions{Find: func(int) []TrainingProcess {
			return []TrainingProcess{{PID: pid, Workers: []int{pid + 1}, Python: true, Why: "test"}}
		}})
		sc := bufio.NewScanner(out)
		var own []float64
		var sampled []float64
		l.Start(context.Background())
		for len(own) < 4 && sc.Scan() {
			share, _ := strconv.ParseFloat(strings.TrimPrefix(sc.Text(), "share "), 64)
			own = append(own, share)
			var f sample.Frame
			if err := l.Collect(context.Background(), &f); err != nil {
				t.Fatal(err)
			}
			if len(own) > 1 && f.Loader != nil && f.Loader.WaitShare != nil { // the first second is start-up
				sampled = append(sampled, *f.Loader.WaitShare)
			}
		}
		_ = l.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		exec.Command("pkill", "-P", strconv.Itoa(pid)).Run()
		if len(sampled) < 2 {
			t.Fatalf("produce %s step %s: %d sampled readings (own %v)", c.produce, c.step, len(sampled), own)
		}
		mean := func(v []float64) float64 {
			s := 0.0
			for _, x := range v {
				s += x
			}
			return s / float64(len(v))
		}
		if d := math.Abs(mean(sampled) - mean(own[1:])); d > 0.15 {
			t.Errorf("produce %s step %s: sampled wait %.2f, the loop's own %.2f", c.produce, c.step, mean(sampled), mean(own[1:]))
		}
	}
}

// TestLoopStandsBackForAHook: a loader that speaks the protocol covers the
// process: the sampler publishes nothing for it.
func TestLoopStandsBackForAHook(t *testing.T) {
	scans := make(chan struct{}, 8)
	l := NewLoop(LoopOptions{Scan: time.Millisecond, Covered: func(int) bool { return true }, Find: func(int) []TrainingProcess {
		select {
		case scans <- struct{}{}:
		default:
		}
		return []TrainingProcess{{PID: 1, Python: true}}
	}})
	l.Start(context.Background())
	defer l.Close()
	var f sample.Frame
	<-scans
	<-scans // a scan has finished: the first one's result is in
	_ = l.Collect(context.Background(), &f)
	if f.Loader != nil {
		t.Fatalf("published %+v for a covered process", f.Loader)
	}
	if _, ok := l.Target(); ok {
		t.Fatal("a covered process became the target")
	}
}

// TestWakeCreditIsTheQueuedShareAfterAWait: a running sample that follows
// a wait for a batch is credited to the wait by the share of the interval
// the thread spent on the run queue (schedstat), and so is the next one
// while the thread stays mostly queued and has run less than the budget a
// batch's taking costs; a running sample after a step, or with no
// schedstat, is the step.
func TestWakeCreditIsTheQueuedShareAfterAWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schedstat")
	th := &loopThread{stat: -1, wchan: -1, sys: -1, sched: -1, buf: make([]byte, 256)}
	execNs := 123456
	set := func(delayNs int) {
		if err := os.WriteFile(path, []byte(fmt.Sprintf("%d %d 42\n", execNs, delayNs)), 0o600); err != nil {
			t.Fatal(err)
		}
		if th.sched < 0 {
			th.sched, _ = openRO(path)
		}
	}
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	set(0)
	for _, s := range []struct {
		c       loopClass
		state   byte
		delayMs int
		at      int
		want    float64
		ranMs   float64 // CPU run since the sample before
	}{
		{loopStep, 'R', 0, 0, 0, 0},        // a step: no credit
		{loopWait, 'S', 5, 20, 0, 0},       // waiting for a batch: counted as a wait already
		{loopStep, 'R', 17, 40, 0.6, 0},    // woken: 12 ms of the 20 queued
		{loopStep, 'R', 33, 60, 0.8, 1.5},  // still mostly queued, 1.5 ms run: credited again
		{loopStep, 'R', 35, 80, 0.1, 0},    // running now: 2 of 20 ms, credited, and the chain ends
		{loopStep, 'R', 55, 100, 0, 0},     // queued again, but after a step: the step's own
		{loopWait, 'S', 55, 120, 0, 0},     // waiting again: the run since starts anew
		{loopStep, 'R', 73, 140, 0.9, 1},   // woken, queued, and it ran 1 ms: credited
		{loopStep, 'R', 91, 160, 0.9, 1.5}, // 2.5 ms run since the wait: credited, and the chain ends
		{loopStep, 'R', 109, 180, 0, 0},    // queued, but in its step now (it ran past the budget)
	} {
		execNs += int(s.ranMs * 1e6)
		set(s.delayMs * 1e6)
		if got := wakeCredit(th, s.c, s.state, ms(s.at)); math.Abs(got-s.want) > 1e-9 {
			t.Errorf("at %d ms: credit %.3f, want %.3f", s.at, got, s.want)
		}
	}
	th.close()
	if got := wakeCredit(th, loopStep, 'R', ms(120)); got != 0 {
		t.Errorf("no schedstat: credit %.3f, want 0", got)
	}
}

// TestAnAnnouncedProcessIsARunningLoop: under run's hook, a Python process
// the hook has not announced is before its first batch; one it announced
// is a running loop, sampled as one, even while the hook does not answer
// (its connections taken: issue 57, item 2). It read before_first_batch,
// then idle, while the loop ran 70 batches/s.
func TestAnAnnouncedProcessIsARunningLoop(t *testing.T) {
	for _, announced := range []bool{false, true} {
		scans := make(chan struct{}, 8)
		l := NewLoop(LoopOptions{Scan: time.Millisecond, Hooked: true, Serves: func(int) bool { return announced },
			Find: func(int) []TrainingProcess {
				select {
				case scans <- struct{}{}:
				default:
				}
				return []TrainingProcess{{PID: os.Getpid(), Workers: []int{1}, Python: true, Why: "test"}}
			}})
		l.Start(context.Background())
		<-scans
		<-scans
		var f sample.Frame
		_ = l.Collect(context.Background(), &f)
		_ = l.Close()
		if f.Loader == nil || f.Loader.Sampled == nil {
			t.Fatalf("announced %v: no sampled loop: %+v", announced, f.Loader)
		}
		if got := f.Loader.Sampled.BeforeFirstBatch; got == announced {
			t.Errorf("announced %v: before_first_batch %v", announced, got)
		}
		if announced && f.Loader.Workers == nil {
			t.Errorf("an announced loop has no worker count")
		}
	}
}

// TestWorkersThatRestartKeepTheirCount: a DataLoader without persistent
// workers has none between two epochs. Once a generation of a process's
// workers whose start was seen ends within shortLife (a look finds none,
// or finds only new PIDs), a look that finds none stands for their count,
// and the looks say they restart, for restartMemory. The first
// generation's life is not measured (its start was not seen); a
// validation loader's workers that lived longer than shortLife before a
// num_workers=0 loop resumed are not taken for restarting; the memory is
// by process, and survives a look at another (the target moving between
// ranks).
func TestWorkersThatRestartKeepTheirCount(t *testing.T) {
	ls := workerLives{}
	t0 := time.Unix(1000, 0)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	job := func(pid int, workers ...int) *TrainingProcess { return &TrainingProcess{PID: pid, Workers: workers} }
	for i, c := range []struct {
		p        *TrainingProcess
		sec      int
		n        int
		restarts bool
	}{
		{job(1), 0, 0, false},          // none yet: num_workers=0, or before the first epoch
		{job(1, 11, 12), 1, 0, false},  // the first generation: its start unseen
		{job(1), 2, 0, false},          // it ended: its life unmeasured, nothing known yet
		{job(1, 13, 14), 3, 0, false},  // a second, its start seen
		{job(1, 15, 16), 4, 0, true},   // replaced by a third 1 s on: they restart
		{job(2, 21), 5, 0, false},      // another rank looked at
		{job(1), 6, 2, true},           // back, between epochs: still two
		{job(1), 36, 0, false},         // none for longer than the memory
		{job(3, 31, 32), 40, 0, false}, // a validation loader's workers, first seen
		{job(3), 41, 0, false},         // gone: their start was not seen
		{job(3, 33, 34), 42, 0, false}, // validation again
		{job(3), 60, 0, false},         // gone after 18 s: not a short life
	} {
		n, restarts := ls.restarting(c.p, at(c.sec))
		if n != c.n || restarts != c.restarts {
			t.Errorf("look %d: %d workers remembered, restarting %v; want %d, %v", i, n, restarts, c.n, c.restarts)
		}
	}
	if _, kept := ls[2]; kept {
		t.Error("a process not looked at for the memory's length is still kept")
	}
}

// TestLoopSaysItsWorkersComeAndGo: the sampler's frame for a process
// whose workers restart keeps their count at a look that finds none, and
// says they come and go.
func TestLoopSaysItsWorkersComeAndGo(t *testing.T) {
	scans := make(chan int, 64)
	n := 0
	looks := [][]int{{11, 12}, nil, {13, 14}, nil}
	l := NewLoop(LoopOptions{Scan: time.Millisecond, Covered: func(int) bool { return false }, Find: func(int) []TrainingProcess {
		n++
		select {
		case scans <- n:
		default:
		}
		return []TrainingProcess{{PID: os.Getpid(), Python: true, Workers: looks[min(n, len(looks))-1]}}
	}})
	l.Start(context.Background())
	defer l.Close()
	for <-scans < len(looks)+1 { // the last look, which found none, has finished
	}
	var f sample.Frame
	_ = l.Collect(context.Background(), &f)
	if f.Loader == nil || f.Loader.Workers == nil || *f.Loader.Workers != 2 || !f.Loader.Sampled.WorkersRestart || f.Loader.Sampled.Inline ||
		!strings.Contains(f.Loader.Sampled.Read, "come and go") {
		t.Fatalf("loader %+v, sampled %+v", f.Loader, f.Loader.Sampled)
	}
}
