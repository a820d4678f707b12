package sample

import "encoding/json"

// RatesUnknown says the loader's rates (batches, samples, bytes per
// second) are unknown, not zero: it is attached and does not answer
// (Down), nobody instrumented it and its loop was sampled (issue 41, item
// 3), its counters were read once so far (RatesPending), or the ceiling
// replays kept batches (Replaying).
func (l *Loader) RatesUnknown() bool {
	return l.Sampled != nil || l.Down() || l.RatesPending || l.Replaying()
}

// Replaying says the ceiling's measurement replays kept batches: the loop
// trains on them and takes none from its loader, whose counters stand
// still — the job's rate is not 0, it is not read for those seconds (a
// user's review: the exporter read 0 samples/s through every replay
// while the loop ran 17,000 a second).
func (l *Loader) Replaying() bool {
	return l != nil && l.Ceiling != nil && l.Ceiling.State == CeilingReplaying
}

// BetweenEpochs says the loop spent most of the frame's interval between
// its loader's epochs — validation, a checkpoint — where it asks for no
// batch: a pause of the script's, not of its input.
func (f *Frame) BetweenEpochs() bool {
	l := f.Loader
	if l == nil || l.BetweenEpochsSec == nil {
		return false
	}
	sec := f.IntervalSec
	if !(sec > 0) {
		sec = 1
	}
	return *l.BetweenEpochsSec > sec/2
}

// ReplaySkip leaves out of a series read frame by frame (a window's
// means, a report's) the frames the ceiling replays in, which are its
// measurement's and not the job's, and the first frame after, whose
// interval holds the replay's end. The zero value is ready.
type ReplaySkip struct{ last bool }

// Skip says whether to leave out the next frame, which replays or not.
func (s *ReplaySkip) Skip(replaying bool) bool {
	after := s.last
	s.last = replaying
	return replaying || after
}

// SamplesUnknown says the loader's samples per second is unknown, not
// zero: its rates are (RatesUnknown), or it handed out batches whose size
// the hook could not read (batches per second and no sample counted: a
// batch made on the GPU, a type without a length). Its batches per
// second stand for it then (Throughput).
func (l *Loader) SamplesUnknown() bool {
	return l.RatesUnknown() || l.SamplesPerSec == 0 && l.BatchesPerSec > 0
}

// BytesUnknown says the loader's bytes per second is unknown, not zero:
// its rates are (RatesUnknown), or it does not count the bytes it reads
// (BytesNotCounted; the Python hook never does, and a recording made
// before the flag has its 0: a review read "0B/s" of an H200 job's
// 294 MiB/s of batches).
func (l *Loader) BytesUnknown() bool {
	return l.RatesUnknown() || l.BytesNotCounted || l.Kind == "python" && l.BytesPerSec == 0
}

// SamplesUnknown says a rank's samples per second is unknown: it does not
// answer, was read once so far, its ceiling replays kept batches, or it
// counts batches and no samples.
func (r *Rank) SamplesUnknown() bool {
	return r.ratesUnknown() || r.SamplesPerSec == 0 && r.BatchesPerSec > 0
}

// ratesUnknown says a rank's batches and samples per second are both
// unknown: it does not answer, was read once so far, or replays kept
// batches (its Loader is read live only, and recordings keep no Loader:
// their readers look at the frame's loader for the replay).
func (r *Rank) ratesUnknown() bool {
	return !r.Connected || r.RatesPending || r.Loader != nil && r.Loader.Replaying()
}

// Down says an attached loader does not answer.
func (l *Loader) Down() bool { return l.Connected != nil && !*l.Connected }

// sampledOver says l, a sampled loop, stays when from, an attached loader
// that does not answer, comes to be merged: the sampled loop still covers
// the process, and its wait share is a fact where the endpoint's silence
// is none (issue 41, item 3). The disconnection stays in Ranks and in
// Unavailable.
func (l *Loader) sampledOver(from *Loader) bool {
	return l != nil && l.Sampled != nil && from.Sampled == nil && from.Down()
}

// MarshalJSON writes Loader as its fields, with null rates where they are
// unknown (RatesUnknown): a loader that does not answer has no rate, and a
// 0 would read as a stopped loop.
func (l Loader) MarshalJSON() ([]byte, error) {
	type plain Loader
	if !l.SamplesUnknown() && !l.BytesUnknown() {
		return json.Marshal(plain(l))
	}
	rate := func(v float64, unknown bool) *float64 {
		if unknown {
			return nil
		}
		return &v
	}
	// The rates have the JSON names of the embedded ones, one level up,
	// so they take their place (encoding/json: the shallower wins).
	return json.Marshal(struct {
		plain
		BatchesPerSec *float64 `json:"batches_per_sec"`
		SamplesPerSec *float64 `json:"samples_per_sec"`
		BytesPerSec   *float64 `json:"bytes_per_sec"`
	}{plain(l), rate(l.BatchesPerSec, l.RatesUnknown()), rate(l.SamplesPerSec, l.SamplesUnknown()), rate(l.BytesPerSec, l.BytesUnknown())})
}

// MarshalJSON writes Rank as its fields, with null rates while they are
// unknown (ratesUnknown), and null samples where only batches are counted.
func (r Rank) MarshalJSON() ([]byte, error) {
	type plain Rank
	if !r.SamplesUnknown() {
		return json.Marshal(plain(r))
	}
	if !r.ratesUnknown() { // batches counted, their samples not
		return json.Marshal(struct {
			plain
			SamplesPerSec *float64 `json:"samples_per_sec"`
		}{plain: plain(r)})
	}
	return json.Marshal(struct {
		plain
		BatchesPerSec *float64 `json:"batches_per_sec"`
		SamplesPerSec *float64 `json:"samples_per_sec"`
	}{plain: plain(r)})
}
