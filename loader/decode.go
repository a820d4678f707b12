package loader

import (
	"hash/crc32"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// The decode step is real CPU work: CRC-32C over the sample's bytes,
// repeated until a calibrated number of bytes has been hashed. A fixed
// amount of work, not a fixed time: under CPU contention it takes longer,
// as a real decoder would.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var (
	calibrateOnce sync.Once
	bytesPerNs    float64
)

// hashRate measures how many bytes per nanosecond one core hashes: the
// best of a few runs over 1 MiB, so a busy moment does not skew it.
func hashRate() float64 {
	calibrateOnce.Do(func() {
		buf := make([]byte, 1<<20)
		best := time.Duration(math.MaxInt64)
		for i := 0; i < 5; i++ {
			t := time.Now()
			crc32.Update(0, castagnoli, buf)
			best = min(best, time.Since(t))
		}
		bytesPerNs = float64(len(buf)) / float64(max(best, 1))
	})
	return bytesPerNs
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
	for target > 0 {
		n := min(int64(len(src)), target)
		crc = crc32.Update(crc, castagnoli, src[:n])
		target -= n
	}
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
