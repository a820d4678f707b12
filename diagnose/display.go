package diagnose

import "github.com/gpuwatch/gpuwatch/sample"

// The display predicates: how the views (tui/, lines/, report/, fleet/)
// mark a figure hot, bursty or under pressure, with the numbers the
// verdict uses, so a view never says "bursty" where the diagnosis would
// not. TestViewsCompareNoBareNumbers fails on a view that compares a
// metric with a literal instead.

// Bursty says a GPU's utilization samples show the sawtooth of a waiting
// accelerator: p95 ≥ BurstyP95 with p5 < BurstyP5 (SageMaker Debugger's
// rule, docs/diagnosis.md). nil is not bursty.
func (th Thresholds) Bursty(s *sample.UtilSamples) bool {
	return s != nil && s.P95 >= th.BurstyP95 && s.P5 < th.BurstyP5
}

// PSIResource names one of the three pressure stall figures.
type PSIResource int

// The PSI resources.
const (
	PSICPU PSIResource = iota
	PSIIO
	PSIMemory
)

// PSIHigh says a resource's pressure (some, % of time) counts toward a
// verdict: cpu ≥ PSICPUSomePct, io ≥ PSIIOSomePct, memory ≥ PSIMemSomePct.
func (th Thresholds) PSIHigh(r PSIResource, somePct float64) bool {
	switch r {
	case PSICPU:
		return somePct >= th.PSICPUSomePct
	case PSIIO:
		return somePct >= th.PSIIOSomePct
	case PSIMemory:
		return somePct >= th.PSIMemSomePct
	}
	return false
}

// HotPct is the share of a core (%) at which a core or thread is pegged:
// SingleThreadPct, the single_core_maxed mark.
func (th Thresholds) HotPct() float64 { return th.SingleThreadPct }

// Hot says a core or thread at busyPct (% of one core) is pegged.
func (th Thresholds) Hot(busyPct float64) bool { return busyPct >= th.SingleThreadPct }

// listedShare is the least share of a loader profile's CPU a one-line
// summary lists: the headless line stays a line; the dashboard and the
// report list every category.
const listedShare = 0.05

// Listed says a profile category of this share belongs in a one-line
// summary.
func (Thresholds) Listed(share float64) bool { return share >= listedShare }
