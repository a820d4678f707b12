package loader

import (
	"hash/crc32"
	"math"
	"math/rand/v2"
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

// decode burns cost of CPU (times mul, the jitter) hashing data, and returns
// the checksum so the work cannot be optimized away.
func decode(data []byte, cost time.Duration, mul float64) uint32 {
	if cost <= 0 {
		return 0
	}
	target := int64(float64(cost) * mul * hashRate())
	src := data
	if len(src) < len(scratch) {
		src = scratch
	}
	var crc uint32
	start, total := time.Now(), target
	for target > 0 {
		n := min(int64(len(src)), target)
		crc = crc32.Update(crc, castagnoli, src[:n])
		target -= n
	}
	observeRate(total, time.Since(start))
	return crc
}

// jitterMul draws a lognormal multiplier with mean 1: exp(σZ − σ²/2).
func jitterMul(rng *rand.Rand, sigma float64) float64 {
	if sigma == 0 {
		return 1
	}
	return math.Exp(sigma*rng.NormFloat64() - sigma*sigma/2)
}

// burn spends d of CPU (a worker's start-up: imports, dataset set-up).
func burn(d time.Duration) { decode(nil, d, 1) }
