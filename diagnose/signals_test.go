package diagnose

import "testing"

// TestEverySignalHasOneHome: each signal's median goes to a window field,
// and no two signals to the same one (a new signal without its line in
// medianOf, or a copied line, fails here rather than as a wrong verdict).
func TestEverySignalHasOneHome(t *testing.T) {
	var w window
	seen := map[*level]signal{}
	for k, at := range medianOf {
		if at == nil {
			t.Fatalf("signal %d has no field in medianOf", k)
		}
		p := at(&w)
		if prev, dup := seen[p]; dup {
			t.Fatalf("signals %d and %d share a field", prev, k)
		}
		seen[p] = signal(k)
	}
}

// TestAMissingSignalIsNotZero: a window whose frames never had a metric
// reads it as missing, and one that had it reads its median.
func TestAMissingSignalIsNotZero(t *testing.T) {
	s := newSignals(3)
	for _, v := range []float64{30, 10, 20} {
		s.add(sigWaitShare, v)
	}
	var w window
	s.medians(&w)
	if !w.waitShare.ok || w.waitShare.v != 20 || w.waitShare.n != 3 {
		t.Fatalf("wait share %+v, want the median 20 of 3", w.waitShare)
	}
	if w.gpuUtil.ok || w.paging.majFaults.ok {
		t.Fatalf("signals no frame had read as present: %+v %+v", w.gpuUtil, w.paging.majFaults)
	}
}
