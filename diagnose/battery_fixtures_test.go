package diagnose

import (
	"path/filepath"
	"testing"
)

// The causes battery's mmap loop, a pair of its runs back to back
// (testdata/battery): random reads of a mapped file its 2 workers fault
// in, and its fix, the file read in blocks.
var (
	mmapUnfixed = filepath.Join("testdata", "battery", "mmap-unfixed.jsonl")
	mmapFixed   = filepath.Join("testdata", "battery", "mmap-fixed.jsonl")
)

// randomReadsFree is the random_reads cause's free bound on the last
// verdict of a replayed recording.
func randomReadsFree(t *testing.T, lines []recLine) float64 {
	t.Helper()
	segs := replay(lines, DefaultThresholds())
	last := segs[len(segs)-1].verdicts[len(segs[len(segs)-1].verdicts)-1]
	for _, c := range last.Causes {
		if c.ID == "random_reads" && c.Bound != nil && last.Kind == IOBound {
			return c.Bound.FreeSamples
		}
	}
	t.Fatalf("%s, causes %+v: want io_bound with a random_reads bound", last.Kind, last.Causes)
	return 0
}

// fastestFrame is the highest samples/s a recording's frames read.
func fastestFrame(t *testing.T, path string) float64 {
	t.Helper()
	fastest := 0.0
	for _, l := range readRecording(t, path) {
		if l.Loader != nil {
			fastest = max(fastest, l.Loader.SamplesPerSec)
		}
	}
	if fastest == 0 {
		t.Fatalf("%s: no loader rate", path)
	}
	return fastest
}

// TestMmapFreeBoundHoldsOverItsFix: the model's rate for the unfixed
// run's stages as measured was 9 % over the measured one, and a free bound
// whose gain was taken over the model's rate read 19,272 samples/s where
// the fix's fastest frame ran 20,160 (another run on the dev VM read
// 17,889 against 16,255, and CI failed on the loop). The free gain is over
// the smaller of the two rates, and the fix stays under it.
func TestMmapFreeBoundHoldsOverItsFix(t *testing.T) {
	free, fixed := randomReadsFree(t, readRecording(t, mmapUnfixed)), fastestFrame(t, mmapFixed)
	t.Logf("free bound %.0f samples/s; the fix's fastest frame %.0f samples/s", free, fixed)
	if free < fixed {
		t.Errorf("the fix ran %.0f samples/s, over the free bound %.0f", fixed, free)
	}
}

// TestABusyBoxDoesNotFreeTheLoopsStep replays the same unfixed run with
// every CPU read busy (another job beside it): the loop then shares the
// CPUs with its workers, and the time freed on either side counts for
// both. Its step is a sleep: the free bound may grow by the loop thread's
// own wait for a CPU (its run delay), not by the workers' faults freed,
// which made it 134,359 samples/s (the battery read 136,406 and 146,991
// on the dev VM while another test loaded it, 2026-12-03). It reads 24,648
// now, against 20,950 as recorded, and stays over what the fix ran.
func TestABusyBoxDoesNotFreeTheLoopsStep(t *testing.T) {
	lines := readRecording(t, mmapUnfixed)
	quiet := randomReadsFree(t, lines)
	for i := range lines {
		if c := lines[i].CPU; c != nil {
			c.BusyPct = 97
			for k := range c.Cores {
				c.Cores[k].BusyPct = 97
			}
		}
	}
	busy, fixed := randomReadsFree(t, lines), fastestFrame(t, mmapFixed)
	t.Logf("free bound %.0f samples/s as recorded, %.0f with every CPU busy; the fix ran %.0f", quiet, busy, fixed)
	if busy > 1.5*quiet {
		t.Errorf("a busy box raised the free bound from %.0f to %.0f samples/s: the loop's step is a sleep", quiet, busy)
	}
	if busy < fixed {
		t.Errorf("with every CPU busy the free bound is %.0f samples/s, under the fix's %.0f", busy, fixed)
	}
}
