package sample

import (
	"slices"
	"testing"
)

// A replay's frames and the first one after are left out; the frames
// before and from the second after are kept.
func TestReplaySkipLeavesOutTheReplayAndTheFrameAfter(t *testing.T) {
	replaying := []bool{false, true, true, false, false, true, false, false}
	want := []bool{false, true, true, true, false, true, true, false}
	var s ReplaySkip
	var got []bool
	for _, r := range replaying {
		got = append(got, s.Skip(r))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("skipped %v, want %v", got, want)
	}
	var l *Loader
	if l.Replaying() {
		t.Fatal("a frame without a loader read as replaying")
	}
}
