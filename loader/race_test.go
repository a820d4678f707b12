//go:build race

package loader

// raceEnabled: the race detector slows memory access several-fold, which
// turns I/O-bound runs CPU-bound; tests that measure a bottleneck skip.
const raceEnabled = true
