package loader

import (
	"hash/crc32"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The decode step is real CPU work: CRC-32C over the sample's bytes,
// repeated until a calibrated number of bytes has been hashed. A fixed
// amount of work, not a fixed time: under CPU contention it takes longer,
// as a real decoder would.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var (
	calibrateOnce sync.Once
	rateBits      atomic.Uint64 // bytes per ns, as float64 bits
)

// hashRate is how many bytes per nanosecond one core hashes: at first the
// best of a few runs over 1 MiB, then raised whenever a decode runs
// faster. A start measured while the process (or the machine) was busy
// — CI saw 5.7× too low a rate, and a 2 ms decode took 0.35 ms — would
// otherwise shrink every decode for the whole run.
func hashRate() float64 {
	calibrateOnce.Do(func() {
		buf := make([]byte, 1<<20)
		best := time.Duration(math.MaxInt64)
		for i := 0; i < 5; i++ {
			t := time.Now()
			crc32.Update(0, castagnoli, buf)
			best = min(best, time.Since(t))
		}
		rateBits.Store(math.Float64bits(float64(len(buf)) / float64(max(best, 1))))
	})
	return math.Float64frombits(rateBits.Load())
}

// observeRate raises the hash rate to what a decode of n bytes in d
// achieved, if that is faster (runs under 20 µs are left out: timer
// noise).
func observeRate(n int64, d time.Duration) {
	if d < 20*time.Microsecond {
		return
	}
	r := float64(n) / float64(d)
	for {
		old := rateBits.Load()
		if r <= math.Float64frombits(old) || rateBits.CompareAndSwap(old, math.Float64bits(r)) {
			return
		}
	}
}

// scratch is hashed in place of a sample that is too small to repeat
// cheaply.
var scratch = make([]byte, 4096)

// lookEvery is about how much CPU time a decode or a start-up burns
// between two looks at its done channel (and, on a worker, a yield). A
// goroutine that waits in Go's global run queue (a signal's, one back from
// a system call) waits for every burning worker's turn: 4,096 workers
// looking every 1 ms kept SIGTERM waiting 4.5 s on 2 cores, every 50 µs
// 0.12 s.
const lookEvery = 50 * time.Microsecond

// decode burns cost of CPU (times mul, the jitter) hashing data, and returns
// the checksum so the work cannot be optimized away. It gives up once done
// is closed (a nil done never is), looking every lookEvery of work, and
// then returns ok false.
//
// A worker's decode (yield) lets the goroutines waiting for a P run at
// each look. Go gives a busy goroutine 10 ms before it preempts it, and
// queues the rest in turn: 4,096 workers burning on 2 Ps left the demo's
// timers, its watcher and q a wait of ~20 s each, where PyTorch's worker
// processes share the cores under the kernel's finer slices. The training
// loop does not yield: it is locked to its thread, and a yield there would
// hand its P off and back, two thread switches each time.
func decode(done <-chan struct{}, yield bool, data []byte, cost time.Duration, mul float64) (crc uint32, ok bool) {
	if cost <= 0 {
		return 0, true
	}
	rate := hashRate()
	target := int64(float64(cost) * mul * rate)
	look := max(int64(float64(lookEvery)*rate), 1)
	src := data
	if len(src) < len(scratch) {
		src = scratch
	}
	start := time.Now()
	var hashed, sinceLook int64
	off := 0
	for hashed < target {
		if sinceLook >= look {
			sinceLook = 0
			if yield {
				runtime.Gosched()
			}
			select {
			case <-done:
				observeRate(hashed, time.Since(start))
				return crc, false
			default:
			}
		}
		// A chunk never spans more than one look, so a sample larger than
		// ~10 MB is hashed in pieces, from where the last piece ended.
		n := int(min(int64(len(src)-off), target-hashed, look-sinceLook))
		crc = crc32.Update(crc, castagnoli, src[off:off+n])
		off = (off + n) % len(src)
		hashed += int64(n)
		sinceLook += int64(n)
	}
	observeRate(hashed, time.Since(start))
	return crc, true
}

// jitterMul draws a lognormal multiplier with mean 1: exp(σZ − σ²/2).
func jitterMul(rng *rand.Rand, sigma float64) float64 {
	if sigma == 0 {
		return 1
	}
	return math.Exp(sigma*rng.NormFloat64() - sigma*sigma/2)
}

// burn spends d of CPU on a worker (its start-up: imports, dataset
// set-up), yielding as a worker's decode does, or less if done is closed
// first; ok says it spent all of d.
func burn(done <-chan struct{}, d time.Duration) (ok bool) {
	_, ok = decode(done, true, nil, d, 1)
	return ok
}
