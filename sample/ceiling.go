package sample

import "strconv"

// Ceiling is the training loop's rate with its input free, as the hook
// measured it in the running job (gpuwatch run --ceiling, or POST
// /ceiling?seconds=N; docs/architecture.md §6, docs/diagnosis.md): it
// kept K batches the loop took and handed them over again for Seconds,
// never asking the real iterator. A figure not measured (yet) is nil,
// never a guess.
type Ceiling struct {
	// State is the measurement's: "warming", "keeping", "replaying",
	// "done" or "refused" (Reason says why).
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Seconds is the replay asked for; MeasuredSeconds how long it lasted.
	Seconds         *float64 `json:"seconds,omitempty"`
	MeasuredSeconds *float64 `json:"measured_seconds,omitempty"`
	// LimitBytes is the most the hook may keep; KeptBatches and KeptBytes
	// what it kept.
	LimitBytes  *int64 `json:"limit_bytes,omitempty"`
	KeptBatches *int   `json:"kept_batches,omitempty"`
	KeptBytes   *int64 `json:"kept_bytes,omitempty"`
	// BeforeSamplesPerSec and BeforeBatchesPerSec are the loop's rates
	// over the warm-up, with its input as it is; StarvingStepMs its mean
	// step then.
	BeforeSamplesPerSec *float64 `json:"before_samples_per_sec,omitempty"`
	BeforeBatchesPerSec *float64 `json:"before_batches_per_sec,omitempty"`
	StarvingStepMs      *float64 `json:"starving_step_ms,omitempty"`
	// SamplesPerSec (the ceiling), BatchesPerSec and StepMs (the step at
	// full speed) are the loop's while its input was free.
	SamplesPerSec *float64 `json:"samples_per_sec,omitempty"`
	BatchesPerSec *float64 `json:"batches_per_sec,omitempty"`
	StepMs        *float64 `json:"step_ms,omitempty"`
}

// The ceiling's states, as the hook names them.
const (
	CeilingWarming   = "warming"
	CeilingKeeping   = "keeping"
	CeilingReplaying = "replaying"
	CeilingDone      = "done"
	CeilingRefused   = "refused"
)

// Measured says the ceiling's rate is known: the replay is over and
// gave a positive samples/s.
func (c *Ceiling) Measured() bool {
	return c != nil && c.State == CeilingDone && c.SamplesPerSec != nil && *c.SamplesPerSec > 0
}

// MeasuredCeiling is the loader's measured ceiling, samples/s; ok is
// false when it was not measured (never a guess).
func (l *Loader) MeasuredCeiling() (float64, bool) {
	if l == nil || !l.Ceiling.Measured() {
		return 0, false
	}
	return *l.Ceiling.SamplesPerSec, true
}

// InputCost is the share of the ceiling the input costs: 1 − now ÷ free,
// where now is the loader's samples/s over the interval (when it moved
// and the loop is not replaying), else the hook's rate before the replay.
// It is within 0–1; ok is false when the ceiling or the rate now is
// unknown.
func (l *Loader) InputCost() (cost, now float64, ok bool) {
	free, ok := l.MeasuredCeiling()
	if !ok {
		return 0, 0, false
	}
	switch {
	case l.SamplesPerSec > 0 && l.Sampled == nil:
		now = l.SamplesPerSec
	case l.Ceiling.BeforeSamplesPerSec != nil && *l.Ceiling.BeforeSamplesPerSec > 0:
		now = *l.Ceiling.BeforeSamplesPerSec
	default:
		return 0, 0, false
	}
	return min(1, max(0, 1-now/free)), now, true
}

// Thousands writes a rate rounded to a whole number with its thousands
// grouped: "2,960".
func Thousands(v float64) string {
	s := strconv.FormatFloat(v, 'f', 0, 64)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// CeilingSummary says the loader's ceiling in a few words for views:
// "ceiling 2,960 samples/s (step 2.1 ms; 2.9 ms starving), input costs
// 57 %" once measured; the measurement's state while it runs; why it was
// refused; "" when none was asked for.
func (l *Loader) CeilingSummary() string {
	if l == nil || l.Ceiling == nil {
		return ""
	}
	c := l.Ceiling
	switch {
	case c.Measured():
		s := "ceiling " + Thousands(*c.SamplesPerSec) + " samples/s"
		if c.StepMs != nil && c.StarvingStepMs != nil {
			s += " (step " + strconv.FormatFloat(*c.StepMs, 'g', 2, 64) + " ms; " + strconv.FormatFloat(*c.StarvingStepMs, 'g', 2, 64) + " ms starving)"
		}
		if cost, _, ok := l.InputCost(); ok {
			s += ", input costs " + strconv.FormatFloat(100*cost, 'f', 0, 64) + " % now"
		}
		return s
	case c.State == CeilingRefused:
		return "ceiling refused: " + Printable(c.Reason)
	case c.State == CeilingDone:
		return "ceiling measured, but its samples are unknown (the batches have no length)"
	}
	s := "ceiling: " + c.State
	if c.State == CeilingReplaying && c.Seconds != nil {
		s += " kept batches for " + strconv.FormatFloat(*c.Seconds, 'g', -1, 64) + " s (the loop trains on repeated batches)"
	}
	return s
}

// CeilingOf is the loader's ceiling measurement, nil for no loader or none
// asked for.
func (l *Loader) CeilingOf() *Ceiling {
	if l == nil {
		return nil
	}
	return l.Ceiling
}
