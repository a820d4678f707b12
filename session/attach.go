package session

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/probes/endpoint"
	"github.com/gpuwatch/gpuwatch/probes/host"
)

// AttachTo names the loaders to attach to: URLs (port ranges allowed,
// see endpoint.ExpandURLs) and, with Discover, every loader announced on
// this machine (endpoint.Discover), now and as they come up.
type AttachTo struct {
	URLs     []string
	Discover bool
	// Dir is the folder where loaders announce themselves (default
	// endpoint.DiscoveryDir()): run, tune and sweep give their private run
	// folder, where the hook under them announces itself too, so that a
	// discovery folder another user took first changes nothing for them.
	Dir string
	// Within, when set, keeps only the announcements of processes it
	// accepts (gpuwatch run: its job's tree).
	Within func(pid int) bool
	// RanksOfURLs: discovery keeps only the URLs' own loaders and the
	// other ranks of their distributed job (endpoint.RanksOf): the
	// attach command, whose URLs name the job. Plain gpuwatch's --attach
	// adds its URLs to every loader discovered.
	RanksOfURLs bool
	// Every and Length are the profile cadence: a Length-long CPU profile
	// of the pacing rank every Every (defaults: 15 s and 5 s); NoProfiles
	// takes none (tune and sweep measure, and a profile costs the job).
	Every, Length time.Duration
	NoProfiles    bool
	// Ceiling, when set, asks each loader named by URL to measure its
	// ceiling with a replay that long once attached (endpoint.AskCeiling);
	// Told hears each loader's answer, or why it could not.
	Ceiling time.Duration
	Told    func(string)
	// Later: the loaders named may all come up later (serve, the node's
	// service, whose ARGS name the ports its jobs will take): none
	// answering at the start is said to Told and watched for, not an
	// error (a review: the unit the README advises exited between jobs
	// and restarted every 5 s, serving no host metrics).
	Later bool
}

// Profile cadence defaults: a 5 s profile of the pacing rank every 15 s.
const (
	defaultProfileEvery  = 15 * time.Second
	defaultProfileLength = 5 * time.Second
)

// discoverEvery is how often discovery looks for loaders that came up.
const discoverEvery = 2 * time.Second

// Attached is what Attach connected to: the ranks' probe, the pacing
// rank's profiler (started by the session, under its context), and how
// to name it.
type Attached struct {
	Ranks    *endpoint.Ranks
	Profiler *endpoint.Profiler
	// Title names what is attached ("" for discovery alone: the loaders
	// appear in their panel as they come up).
	Title    string
	procRoot string
	first    int // the first given loader's process on this host, 0 if none
}

// PacingPID is the pacing rank's process when it is on this host (the
// first given loader's before any reading), else 0.
func (a *Attached) PacingPID() int {
	if a == nil {
		return 0
	}
	if pid := a.Ranks.PacingPID(); pid > 0 && host.ProcessExists(a.procRoot, pid) {
		return pid
	}
	return a.first
}

// Attach connects to the loaders to names: one URL must answer now; of
// several, one must (the others may come up later), unless to.Later;
// discovery alone waits for loaders to appear. Nothing named is (nil, nil). A URL that is
// not a loader's wraps endpoint.ErrBadURL.
func Attach(ctx context.Context, procRoot string, to AttachTo) (*Attached, error) {
	if len(to.URLs) == 0 && !to.Discover {
		return nil, nil
	}
	if to.Every == 0 {
		to.Every, to.Length = defaultProfileEvery, defaultProfileLength
	}
	urls, err := endpoint.ExpandURLs(to.URLs)
	if err != nil {
		return nil, err
	}
	dir := cmp.Or(to.Dir, endpoint.DiscoveryDir())
	attached := make([]*endpoint.Attach, len(urls))
	for i, u := range urls {
		if attached[i], err = endpoint.NewAttach(u); err != nil {
			return nil, err
		}
		// A URL the user gave: its token is in its announcement, if the
		// loader announced itself (the hook does).
		dirs := append([]string{dir}, endpoint.DiscoveryDirs()...)
		// Its token goes only to the process that announced it (Announced).
		attached[i].LookUpAnnouncement(func() (endpoint.Announcement, bool) { return announcedNow(dirs, procRoot, u) })
		if ann, ok := announcedNow(dirs, procRoot, u); ok {
			attached[i].Announced(ann)
		}
	}
	if unanswered, err := checkAny(ctx, attached); err != nil && !(to.Later && unanswered) {
		return nil, err
	} else if err != nil && to.Told != nil {
		to.Told(err.Error() + "; watching for them (they may start later)")
	}
	askCeiling(ctx, attached, to) // attachceiling.go
	var discover func() (endpoint.Discovery, error)
	if to.Discover {
		discover = func() (endpoint.Discovery, error) {
			d, err := endpoint.Discover(dir, procRoot)
			if err == nil {
				d.Found = joining(d, urls, to.RanksOfURLs, to.Within)
			}
			return d, err
		}
	}
	ranks := endpoint.NewRanks(attached, discover, discoverEvery)
	a := &Attached{Ranks: ranks, Profiler: endpoint.NewProfilerOf(ranks.Pacing, to.Every, to.Length), procRoot: procRoot}
	a.Profiler.FirstAfter(ranks.Started)
	for _, at := range attached {
		if pid := at.LocalPID(); pid > 0 && host.ProcessExists(procRoot, pid) {
			a.first = pid
			break
		}
	}
	switch {
	case len(attached) == 1 && !to.Discover:
		a.Title = "attached to " + attached[0].Source()
		if attached[0].NoMetrics() {
			a.Title += " (profiles only: no loader metrics)"
		}
	case len(attached) == 0:
	default:
		a.Title = "attached to " + strconv.Itoa(len(attached)) + " loaders"
		if to.Discover {
			a.Title += " and those announced in " + dir
		}
	}
	return a, nil
}

// joining is the loaders d found that join the watch: where the attach
// command named loaders (urls, ranksOf), those and other ranks of their
// distributed job (endpoint.RanksOf), and of those the ones within the
// job where run says (within: its command's process tree).
func joining(d endpoint.Discovery, urls []string, ranksOf bool, within func(pid int) bool) []endpoint.Announcement {
	found := d.Found
	if ranksOf && len(urls) > 0 {
		found = endpoint.RanksOf(d, urls)
	}
	if within == nil {
		return found
	}
	kept := found[:0]
	for _, a := range found {
		if within(a.PID) {
			kept = append(kept, a)
		}
	}
	return kept
}

// announcedNow is the loader at u as the first of dirs that announces it
// with a token says (its listener proven by Discover), false when none
// does.
func announcedNow(dirs []string, procRoot, u string) (endpoint.Announcement, bool) {
	for _, dir := range dirs {
		if d, err := endpoint.Discover(dir, procRoot); err == nil {
			if a, ok := endpoint.AnnouncedFor(d, u); ok && a.Token != "" {
				return a, true
			}
		}
	}
	return endpoint.Announcement{}, false
}

// checkAny checks the loaders named at once. With one, its failure is the
// error; with several, only all failing is (the others may start later).
// Discovery does not soften it: a URL the user typed that does not answer
// is a mistake to say now, not a rank that may come up.
//
// unanswered says every failure was no answer at all (nothing listens
// there, or nothing answered in time): a loader that has not started.
// One that answered but is no loader (a typo's port on node_exporter)
// is a mistake even to serve, which watches for loaders to come up.
func checkAny(ctx context.Context, attached []*endpoint.Attach) (unanswered bool, err error) {
	if len(attached) == 0 {
		return false, nil
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
	unanswered = true
	for _, err := range errs {
		if err != nil && !endpoint.NoAnswer(err) {
			unanswered = false
		}
	}
	if len(attached) == 1 {
		return unanswered && errs[0] != nil, errs[0]
	}
	const shown = 3 // a line, not a page: 256 loaders fail alike
	msgs := make([]string, 0, shown)
	for _, err := range errs {
		if err == nil {
			return false, nil
		}
		if len(msgs) < shown {
			msgs = append(msgs, err.Error())
		}
	}
	more := ""
	if len(errs) > shown {
		more = fmt.Sprintf("; and %d more", len(errs)-shown)
	}
	return unanswered, fmt.Errorf("none of the %d loaders answers: %s%s", len(attached), strings.Join(msgs, "; "), more)
}
