package diagnose

import "testing"

// TestInlineFreeBoundKeepsTheStep: loading inline (num_workers=0), a free
// __getitem__ leaves the loop its step and collate: train_cpu.py read
// __getitem__ 46 ms of a 46.6 ms period (a mean against medians), collate
// 0.14 ms and a 0.9 ms step, and was promised 77.68× "if it cost
// nothing" (a 0.6 ms period, shorter than its step); the bound is now
// what the step and collate allow, and the 2× bound stays below it.
func TestInlineFreeBoundKeepsTheStep(t *testing.T) {
	s := stageTimes{inline: true, rate: 1 / 0.0466, batch: 32, getitem: 0.046, collate: 0.00014, step: 0.0009, ok: true}
	b := s.bound(stageCut{worker: s.getitem}, 2)
	// The gain is over the model's own period for the stages as measured
	// (here the stages' 47.04 ms, a little over the measured 46.6).
	most := 32 / (s.step + s.collate)
	if b == nil || b.FreeGain < 45.2 || b.FreeGain > 45.3 || b.FreeSamples > most*1.02 {
		t.Fatalf("free bound %+v, want 45.2× and about %.0f samples/s (the step and collate per batch)", b, most)
	}
	if b.SamplesPerSec > b.FreeSamples || b.Gain < 1.9 || b.Gain > 2.0 {
		t.Errorf("2× bound %+v", b)
	}
	// Where the measured period leaves more than the stages, it stands.
	s.rate = 1 / 0.060
	if b := s.bound(stageCut{worker: s.getitem}, 2); b.FreeSamples > 32/(0.060-0.046)*1.001 || b.FreeSamples < 32/(0.060-0.046)*0.999 {
		t.Errorf("free bound %+v, want the period less __getitem__", b)
	}
}
