package report

import (
	"fmt"
	"strings"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// ceilingRun follows the ceiling over a recording (docs/diagnosis.md,
// "The ceiling"): the last one measured, and the loader's mean rate over
// the frames outside the measurement (while the hook keeps or replays
// batches, the real stream's rate is not the job's).
type ceilingRun struct {
	last    *sample.Ceiling
	n       int
	rateAvg float64
}

func (c *ceilingRun) add(l *sample.Loader) {
	if l.Ceiling.Measured() {
		cp := *l.Ceiling
		c.last = &cp
	}
	if l.Sampled != nil || !finite(l.SamplesPerSec) || l.SamplesPerSec <= 0 {
		return
	}
	if cl := l.Ceiling; cl != nil && (cl.State == sample.CeilingKeeping || cl.State == sample.CeilingReplaying) {
		return
	}
	c.n++
	c.rateAvg += (l.SamplesPerSec - c.rateAvg) / float64(c.n)
}

// result is the last ceiling measured and the input's cost against it
// (nil, nil when none was).
func (c *ceilingRun) result() (*sample.Ceiling, *float64) {
	if c.last == nil {
		return nil, nil
	}
	if c.n == 0 {
		return c.last, nil
	}
	cost := diagnose.InputCost(c.rateAvg, *c.last.SamplesPerSec)
	return c.last, &cost
}

// any says some bucket has a value.
func (b *bucketer) any() bool {
	for _, n := range b.counts {
		if n > 0 {
			return true
		}
	}
	return false
}

// ceilingSentence is the report's sentence on the ceiling: what was
// measured and what the input costs; for the hook's loaders never
// measured, that it was not and how to; "" otherwise.
func ceilingSentence(l *LoaderInfo) string {
	c := l.Ceiling
	if c == nil {
		if l.Hook {
			return "The ceiling was not measured (--ceiling): gpuwatch run --ceiling measures the loop's rate with its input free."
		}
		return ""
	}
	s := "With its input free the loop took " + sample.Thousands(*c.SamplesPerSec) + " samples/s"
	if c.StepMs != nil && c.StarvingStepMs != nil {
		s += fmt.Sprintf(" (step %.2g ms; %.2g ms while starving)", *c.StepMs, *c.StarvingStepMs)
	}
	if l.InputCost != nil {
		s += fmt.Sprintf(": over the rest of the run, input costs %.0f %% of it", 100**l.InputCost)
	}
	return s + "."
}

// htmlThroughput is the loader's rate over time, with the ceiling as a
// line when it was measured.
func htmlThroughput(b *strings.Builder, l *LoaderInfo, ser Series) {
	if len(ser.SamplesPerSec) == 0 {
		return
	}
	lines := []line{{ser.SamplesPerSec, "#2f7fd6", "samples/s"}}
	if l.Ceiling != nil {
		flat := make([]*float64, len(ser.T))
		for i := range flat {
			flat[i] = l.Ceiling.SamplesPerSec
		}
		lines = append(lines, line{flat, "#9b4dca", "ceiling (input free)"})
	}
	b.WriteString(`<h2>Loader: throughput</h2>`)
	if s := ceilingSentence(l); s != "" {
		fmt.Fprintf(b, "<p>%s</p>", esc(s))
	}
	b.WriteString(markedChart("chart-throughput", ser.T, lines, nil, yAxis{0, "samples/s"}, ser.CeilingReplay))
}
