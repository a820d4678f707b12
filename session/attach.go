package session

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"
)

// AttachTo names the loaders to attach to: URLs (port ranges allowed,
// see probes.ExpandURLs) and, with Discover, every loader announced on
// this machine (probes.Discover), now and as they come up.
type AttachTo struct {
	URLs     []string
	Discover bool
	// Every and Length are the profile cadence: a Length-long CPU profile
	// of the pacing rank every Every.
	Every, Length time.Duration
}

// DiscoverEvery is how often discovery looks for loaders that came up.
const DiscoverEvery = 2 * time.Second

// Attach connects to the loaders to names and adds their metrics and the
// pacing rank's profiles to o; the pacing loader's process, when it is on
// this host, becomes the focus. One URL must answer now; of several, one
// must (the others may come up later); discovery alone waits for loaders
// to appear. The returned stop ends the profiler. A URL that is not a
// loader's wraps probes.ErrBadURL.
func Attach(ctx context.Context, o *Options, procRoot string, to AttachTo) (stop func(), err error) {
	urls, err := probes.ExpandURLs(to.URLs)
	if err != nil {
		return nil, err
	}
	attached := make([]*probes.Attach, len(urls))
	for i, u := range urls {
		if attached[i], err = probes.NewAttach(u); err != nil {
			return nil, err
		}
	}
	if err := checkAny(ctx, attached, !to.Discover); err != nil {
		return nil, err
	}
	var discover func() ([]probes.Announcement, error)
	if to.Discover {
		dir := probes.DiscoveryDir()
		discover = func() ([]probes.Announcement, error) { return probes.Discover(dir, procRoot) }
	}
	ranks := probes.NewRanks(attached, discover, DiscoverEvery)
	onHost := func(pid int) int {
		if pid > 0 && probes.ProcessExists(procRoot, pid) {
			return pid
		}
		return 0
	}
	if o.PID == 0 {
		for _, a := range attached {
			if pid := onHost(a.PID()); pid != 0 {
				o.Focus = pid
				break
			}
		}
		o.FocusOf = func() int { return onHost(ranks.PacingPID()) }
	}
	prof := probes.NewProfilerOf(ranks.Pacing, to.Every, to.Length)
	prof.Start()
	o.Probes = append(o.Probes, ranks, prof)
	o.Ranks = ranks
	switch {
	case len(attached) == 1 && !to.Discover:
		o.Title = "attached to " + attached[0].Source()
		if attached[0].NoMetrics() {
			o.Title += " (profiles only: no loader metrics)"
		}
	case len(attached) == 0:
		// Discovery alone (plain gpuwatch): the title stays the host's;
		// the loaders appear in their panel as they come up.
	default:
		o.Title = "attached to " + strconv.Itoa(len(attached)) + " loaders"
		if to.Discover {
			o.Title += " and those announced in " + probes.DiscoveryDir()
		}
	}
	return func() { _ = prof.Close() }, nil
}

// checkAny checks the loaders at once. With one, its failure is the
// error; with several, only all failing is (the others may start later);
// lenient (discovery) never fails.
func checkAny(ctx context.Context, attached []*probes.Attach, strict bool) error {
	if len(attached) == 0 {
		return nil
	}
	errs := make([]error, len(attached))
	var wg sync.WaitGroup
	for i, a := range attached {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = a.Check(ctx)
		}()
	}
	wg.Wait()
	if !strict {
		return nil
	}
	if len(attached) == 1 {
		return errs[0]
	}
	msgs := make([]string, 0, len(errs))
	for _, err := range errs {
		if err == nil {
			return nil
		}
		msgs = append(msgs, err.Error())
	}
	return fmt.Errorf("none of the %d loaders answers: %s", len(attached), strings.Join(msgs, "; "))
}
