package session

import (
	"context"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"
)

// Attach connects to the loader at raw and adds its metrics and its
// profiles (every `every`, each `length` long) to o; the loader's process,
// when it is on this host, becomes the focus. The returned stop ends the
// profiler. A URL that is not a loader's wraps probes.ErrBadURL.
func Attach(ctx context.Context, o *Options, procRoot, raw string, every, length time.Duration) (stop func(), err error) {
	a, err := probes.NewAttach(raw)
	if err != nil {
		return nil, err
	}
	if err := a.Check(ctx); err != nil {
		return nil, err
	}
	if pid := a.PID(); o.PID == 0 && pid > 0 && probes.ProcessExists(procRoot, pid) {
		o.Focus = pid
	}
	prof := probes.NewProfiler(a, every, length)
	prof.Start()
	o.Probes = append(o.Probes, probes.NewLoader(a), prof)
	o.Title = "attached to " + a.Source()
	if a.NoMetrics() {
		o.Title += " (profiles only: no loader metrics)"
	}
	return func() { _ = prof.Close() }, nil
}
