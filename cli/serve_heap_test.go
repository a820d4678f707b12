package cli

import (
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's setting (SetGCPercent answers the one
// before and is put straight back).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestServeRunsAtItsGCPercentUntilItEnds: serve's session runs with the
// collector at serveGCPercent, and what was set before is back after.
func TestServeRunsAtItsGCPercentUntilItEnds(t *testing.T) {
	t.Setenv("GOGC", "") // the user set none
	before := debug.SetGCPercent(137)
	defer debug.SetGCPercent(before)
	restore := smallHeap()
	if got := gcPercent(); got != serveGCPercent {
		t.Errorf("during serve: GOGC %d, want %d", got, serveGCPercent)
	}
	restore()
	if got := gcPercent(); got != 137 {
		t.Errorf("after serve: GOGC %d, want the 137 set before", got)
	}
}

// TestServeLeavesTheUsersGOGC: a GOGC the user set stands.
func TestServeLeavesTheUsersGOGC(t *testing.T) {
	t.Setenv("GOGC", "200")
	before := debug.SetGCPercent(200)
	defer debug.SetGCPercent(before)
	restore := smallHeap()
	defer restore()
	if got := gcPercent(); got != 200 {
		t.Errorf("GOGC=200 set by the user: the collector at %d", got)
	}
}
