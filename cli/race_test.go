//go:build race

package cli

// raceEnabled: the race detector slows every run several-fold; tests that
// measure a bottleneck skip under it.
const raceEnabled = true
