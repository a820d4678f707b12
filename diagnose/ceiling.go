package diagnose

import (
	"fmt"
	"strconv"

	"github.com/gpuwatch/gpuwatch/sample"
)

// The ceiling (issue 40; docs/diagnosis.md, "The ceiling"): the loop's
// rate with its input free, measured by the hook (gpuwatch run
// --ceiling). It is evidence (what the input costs) and the most any
// prediction may promise. A job never measured has none, and nothing here
// guesses one.

// newestCeiling is the newest frame's loader whose ceiling was measured,
// and whether any frame of the window was replaying kept batches (its
// rates then are not the real stream's).
func newestCeiling(frames []sample.Frame) (l *sample.Loader, replayed bool) {
	for i := len(frames) - 1; i >= 0; i-- {
		fl := frames[i].Loader
		if fl == nil || fl.Ceiling == nil {
			continue
		}
		if s := fl.Ceiling.State; s == sample.CeilingReplaying || s == sample.CeilingKeeping {
			replayed = true
		}
		if l == nil && fl.Ceiling.Measured() {
			l = fl
		}
	}
	return l, replayed
}

// ceilingNow is the loop's rate now against its ceiling: the window's
// mean samples/s, or the hook's rate before the replay when the window
// holds the replay (or has no rate).
func ceilingNow(l *sample.Loader, w *window, replayed bool) (now float64, ok bool) {
	if !replayed && w.meanSamplesPerSec.ok && w.meanSamplesPerSec.v > 0 {
		return w.meanSamplesPerSec.v, true
	}
	if b := l.Ceiling.BeforeSamplesPerSec; b != nil && *b > 0 {
		return *b, true
	}
	return 0, false
}

// ceilingEvidence is the verdict's line on the ceiling, when one was
// measured: "with its input free the loop took 2,960 samples/s (step
// 2.1 ms; 2.9 ms while starving): input costs 57 %". None otherwise.
func ceilingEvidence(frames []sample.Frame, w *window) []Evidence {
	l, replayed := newestCeiling(frames)
	if l == nil {
		return nil
	}
	c := l.Ceiling
	free := *c.SamplesPerSec
	text := "with its input free the loop took " + groupThousands(free) + " samples/s"
	switch {
	case c.StepMs != nil && c.StarvingStepMs != nil:
		text += " (step " + fmtMs(*c.StepMs) + "; " + fmtMs(*c.StarvingStepMs) + " while starving)"
	case c.StepMs != nil:
		text += " (step " + fmtMs(*c.StepMs) + ")"
	}
	now, ok := ceilingNow(l, w, replayed)
	if !ok {
		return []Evidence{evidence("loader.ceiling.samples_per_sec", free, ">=", 0, "samples/s", text)}
	}
	cost := InputCost(now, free)
	text += fmt.Sprintf(": input costs %.0f %% over the window", 100*cost)
	if cost < 0.05 {
		text += " (nothing left to gain in the input pipeline)"
	}
	return []Evidence{evidence("loader.input_cost_ratio", cost, ">=", 0, "ratio", text)}
}

// InputCost is the share of the loop's rate its input costs: 1 − now ÷
// free, within 0–1 (a rate now above the ceiling, noise, costs nothing).
func InputCost(now, free float64) float64 {
	if free <= 0 {
		return 0
	}
	return min(1, max(0, 1-now/free))
}

func fmtMs(ms float64) string {
	return strconv.FormatFloat(ms, 'g', 2, 64) + " ms"
}

// CapByCeiling caps a predicted samples/s at the ceiling measured in the
// window's frames (the pipeline model never promises more than the loop
// took with its input free). It returns the capped rate and, when it
// capped, the sentence saying so: "then the step is the limit: 2,960
// samples/s measured with input free". With no ceiling measured, or a
// relative prediction (0), the rate comes back as it was.
func CapByCeiling(predicted float64, frames []sample.Frame) (float64, string) {
	l, _ := newestCeiling(frames)
	if l == nil || predicted <= 0 {
		return predicted, ""
	}
	free := *l.Ceiling.SamplesPerSec
	if predicted < free {
		return predicted, ""
	}
	return free, "then the step is the limit: " + groupThousands(free) + " samples/s measured with input free"
}

// capModel applies CapByCeiling to the model's answer: its prediction
// (which the verdict's Predicted points at) — each side of its range —,
// its limit, and the advice line its changes gave (advise writes it
// first). It returns the advice.
func capModel(frames []sample.Frame, m *modelAdvice, advice []string) []string {
	if m == nil || len(m.changes) == 0 || len(advice) == 0 {
		return advice
	}
	high, say := CapByCeiling(m.predicted.HighSamplesPerSec, frames)
	if say == "" || advice[0] != changeLine(m.changes, m.predicted, m.pipeline.Measured) {
		return advice // nothing to cap, or advise no longer writes the changes' line first
	}
	pr := &m.predicted
	pr.HighSamplesPerSec, pr.Limit, pr.ContendedLimit = high, "", "" // the ceiling's sentence says the limit
	if low, capped := CapByCeiling(pr.SamplesPerSec, frames); capped != "" {
		pr.SamplesPerSec, pr.WaitShare = low, 0 // at its rate with input free the loop does not wait
	}
	if measured := m.pipeline.Measured.SamplesPerSec; pr.Gain > 0 && measured > 0 {
		pr.Gain, pr.HighGain = pr.SamplesPerSec/measured, pr.HighSamplesPerSec/measured
	}
	line := changeLine(m.changes, *pr, m.pipeline.Measured) + "; " + say
	m.limit, pr.Limit = LimitStep, LimitStep.String()
	advice[0] = line
	return advice
}

// capBound caps a cause's bound (cause.go) at the measured ceiling, as
// CapByCeiling does the model's predictions: no fix in the input pipeline
// takes the loop past its rate with input free. The gains follow.
func capBound(frames []sample.Frame, b *Bound) {
	if b == nil {
		return
	}
	for _, p := range []struct{ rate, gain *float64 }{{&b.SamplesPerSec, &b.Gain}, {&b.FreeSamples, &b.FreeGain}} {
		if capped, say := CapByCeiling(*p.rate, frames); say != "" && *p.rate > 0 {
			*p.gain *= capped / *p.rate
			*p.rate = capped
		}
	}
}
