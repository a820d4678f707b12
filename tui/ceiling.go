package tui

import "github.com/gpuwatch/gpuwatch/sample"

// ceilingText is the loader panel's line on the ceiling (the loop's rate
// with its input free, docs/diagnosis.md): what was measured, or for the
// hook's loaders (the ones that can measure it) that it was not, and how
// to: never a guessed figure. "" for loaders that cannot measure it.
func ceilingText(l *sample.Loader) string {
	if s := l.CeilingSummary(); s != "" {
		return s
	}
	if l.Kind == "python" {
		return "ceiling not measured (--ceiling)"
	}
	return ""
}

// bannerCeiling is the banner head's part on the ceiling once measured:
// "  ceiling 2,960 samples/s, input costs 57 %"; "" otherwise.
func bannerCeiling(l *sample.Loader) string {
	free, ok := l.MeasuredCeiling()
	if !ok {
		return ""
	}
	s := "  ceiling " + sample.Thousands(free) + " samples/s"
	if cost, _, ok := l.InputCost(); ok {
		s += ", input costs " + sample.Thousands(100*cost) + " % now"
	}
	return s
}
