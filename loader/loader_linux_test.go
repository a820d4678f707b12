package loader

import (
	"golang.org/x/sys/unix"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestWorkersZeroLoadsOnOneLockedThread(t *testing.T) {
	c, ds := small(t)
	c.Workers, c.Prefetch = 0, 0
	c.StepTime = 200 * time.Microsecond // each timer wake-up may resume a goroutine elsewhere
	l := New(c, ds, nil)
	var mu sync.Mutex
	tids := map[int]int{}
	l.fetchHook = func(worker, _ int) {
		if worker != -1 {
			t.Errorf("batch loaded by worker %d with workers=0", worker)
		}
		mu.Lock()
		tids[unix.Gettid()]++
		mu.Unlock()
	}
	// Churn threads: blocking syscalls make the runtime hand Ps to other
	// Ms, so an unlocked goroutine would soon run on another thread.
	stop := make(chan struct{})
	defer close(stop)
	for i := 0; i < 4*runtime.GOMAXPROCS(0); i++ {
		go func() {
			ts := unix.Timespec{Nsec: 100_000}
			for {
				select {
				case <-stop:
					return
				default:
					burn(nil, 20*time.Microsecond)
					_ = unix.Nanosleep(&ts, nil) // blocks the M, not just the goroutine
				}
			}
		}()
	}
	run(t, l)
	if len(tids) != 1 {
		t.Fatalf("batches loaded on %d threads (%v), want one", len(tids), tids)
	}
	if l.WorkerStarts() != 0 {
		t.Fatalf("%d workers started with workers=0", l.WorkerStarts())
	}
}
