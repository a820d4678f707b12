package session

import (
	"context"

	"github.com/gpuwatch/gpuwatch/probes/endpoint"
)

// askCeiling asks each loader attached by URL that serves metrics to
// measure its ceiling (to.Ceiling > 0; docs/architecture.md §6, POST
// /ceiling), and tells to.Told each answer: a loader that refuses is a
// line, never the end of the session.
func askCeiling(ctx context.Context, attached []*endpoint.Attach, to AttachTo) {
	if to.Ceiling <= 0 {
		return
	}
	tell := to.Told
	if tell == nil {
		tell = func(string) {}
	}
	for _, a := range attached {
		if a.NoMetrics() {
			tell(a.Source() + ": serves no loader metrics: no ceiling to measure")
			continue
		}
		line, err := a.AskCeiling(ctx, to.Ceiling)
		if err != nil {
			tell(err.Error())
			continue
		}
		tell(a.Source() + ": " + line)
	}
}
