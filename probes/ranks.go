package probes

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// portRange matches a URL whose port is a range: http://host:6061-6068.
var portRange = regexp.MustCompile(`^(https?://[^/?#]*:)(\d{1,5})-(\d{1,5})(/[^?#]*)?$`)

// ExpandURLs expands the port ranges among raw ("http://127.0.0.1:6061-6068"
// is eight URLs) and checks every URL's form. More than sample.MaxRanks URLs,
// or a backwards range, is an error wrapping ErrBadURL.
func ExpandURLs(raw []string) ([]string, error) {
	var out []string
	for _, r := range raw {
		m := portRange.FindStringSubmatch(r)
		if m == nil {
			if _, err := NewAttach(r); err != nil {
				return nil, err
			}
			out = append(out, r)
			continue
		}
		lo, _ := strconv.Atoi(m[2])
		hi, _ := strconv.Atoi(m[3])
		if lo < 1 || hi > 65535 || hi < lo {
			return nil, fmt.Errorf("%q: want a port range low-high within 1-65535: %w", sample.RedactURL(r), ErrBadURL)
		}
		if len(out)+hi-lo+1 > sample.MaxRanks {
			return nil, fmt.Errorf("%q: more than %d loaders: %w", sample.RedactURL(r), sample.MaxRanks, ErrBadURL)
		}
		for port := lo; port <= hi; port++ {
			u := m[1] + strconv.Itoa(port) + m[4]
			if _, err := NewAttach(u); err != nil {
				return nil, err
			}
			out = append(out, u)
		}
	}
	if len(out) > sample.MaxRanks {
		return nil, fmt.Errorf("more than %d loaders: %w", sample.MaxRanks, ErrBadURL)
	}
	return out, nil
}

// Ranks is the probe for the loaders of a distributed job: one per rank,
// each its own Attach and Loader, read concurrently every tick. The frame
// gets every rank's summary (Ranks) and, as Loader and the virtual
// accelerator, the reading of the pacing rank: the one that waits most
// for input, which in a synchronous job holds every other rank back in
// the all-reduce. With one loader given and no discovery it is exactly
// the Loader probe: no Ranks in the frame.
type Ranks struct {
	discover func() ([]Announcement, error) // nil: the URLs given only
	every    time.Duration                  // between discovery scans
	nextScan time.Time

	mu      sync.Mutex
	targets []*rankTarget
	pacing  *Attach // the latest pacing rank's, for the profiler
	focus   string  // a URL the user chose to look at (dashboard); "" none
}

type rankTarget struct {
	a     *Attach
	l     *Loader
	order int           // position among the targets, the rank when unreported
	ann   *Announcement // from discovery; nil for a URL given
	// The rank as last reported, kept while the loader does not answer.
	rank, localRank, worldSize *int
}

// NewRanks returns the probe over the given loaders (already checked
// with NewAttach). discover, when not nil, is scanned at once and every
// `every` for loaders that come up later.
func NewRanks(attached []*Attach, discover func() ([]Announcement, error), every time.Duration) *Ranks {
	r := &Ranks{discover: discover, every: every}
	for _, a := range attached {
		r.add(a, nil)
	}
	return r
}

func (r *Ranks) add(a *Attach, ann *Announcement) {
	r.targets = append(r.targets, &rankTarget{a: a, l: NewLoader(a), order: len(r.targets), ann: ann})
}

// Name implements Probe.
func (r *Ranks) Name() string { return "loader" }

// Lane implements Laned: the ranks and the profile share a worker.
func (r *Ranks) Lane() string { return "attach" }

// Len is the number of loaders watched now.
func (r *Ranks) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.targets)
}

// Pacing is the Attach of the rank that paces the job, nil before the
// first reading: the one to profile first.
func (r *Ranks) Pacing() *Attach {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.focus != "" {
		for _, t := range r.targets {
			if t.a.Source() == r.focus {
				return t.a
			}
		}
	}
	if r.pacing == nil && len(r.targets) > 0 {
		return r.targets[0].a
	}
	return r.pacing
}

// Focus makes the rank at url the one profiled (the dashboard's enter on
// a row); "" returns to the pacing rank.
func (r *Ranks) Focus(url string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.focus = url
}

// PacingPID is the pacing rank's process, 0 when unknown: the process
// view's focus.
func (r *Ranks) PacingPID() int {
	if a := r.Pacing(); a != nil {
		return a.PID()
	}
	return 0
}

// scan adds the loaders discovery finds that are not watched yet, and
// drops discovered ones that are gone: no longer announced and not
// answering.
func (r *Ranks) scan(now time.Time) {
	if r.discover == nil || now.Before(r.nextScan) {
		return
	}
	r.nextScan = now.Add(r.every)
	found, err := r.discover()
	if err != nil {
		return
	}
	announced := map[string]*Announcement{}
	for i := range found {
		announced[found[i].URL] = &found[i]
	}
	kept := r.targets[:0]
	for _, t := range r.targets {
		if a, ok := announced[t.a.Source()]; ok {
			t.ann = a
			delete(announced, t.a.Source())
		} else if t.ann != nil && !t.a.connectedNow() {
			continue
		}
		kept = append(kept, t)
	}
	r.targets = kept
	for i := range found {
		if announced[found[i].URL] == nil || len(r.targets) >= sample.MaxRanks {
			continue
		}
		if a, err := NewAttach(found[i].URL); err == nil {
			r.add(a, &found[i])
		}
	}
	for i, t := range r.targets {
		t.order = i
	}
}

// Collect implements Probe.
func (r *Ranks) Collect(ctx context.Context, f *sample.Frame) error {
	r.mu.Lock()
	r.scan(f.Time)
	targets := append([]*rankTarget(nil), r.targets...)
	r.mu.Unlock()
	if len(targets) == 0 {
		return nil // discovery has found none yet; it looks again in `every`
	}
	type result struct {
		f   sample.Frame
		err error
	}
	results := make([]result, len(targets))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16) // a bounded number of reads at once
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i].f.Time = f.Time
			results[i].err = t.l.Collect(ctx, &results[i].f)
		}()
	}
	wg.Wait()
	if len(targets) == 1 && r.discover == nil {
		f.Loader, f.Accel = results[0].f.Loader, results[0].f.Accel
		r.setPacing(targets[0].a)
		return results[0].err
	}
	ranks := make([]sample.Rank, len(targets))
	pace, firstErr := -1, error(nil)
	for i, t := range targets {
		ranks[i] = rankOf(t, results[i].f.Loader)
		if results[i].err != nil && firstErr == nil {
			firstErr = results[i].err
		}
		if w := ranks[i].WaitShare; ranks[i].Connected && w != nil && (pace < 0 || ranks[pace].WaitShare == nil || *w > *ranks[pace].WaitShare) {
			pace = i
		}
		if pace < 0 && ranks[i].Connected {
			pace = i
		}
	}
	if pace < 0 {
		f.Ranks = sortRanks(ranks)
		if firstErr == nil {
			firstErr = errors.New("no rank answers")
		}
		return fmt.Errorf("%d loaders, none answering: %w", len(targets), firstErr)
	}
	ranks[pace].Pacing = true
	f.Loader, f.Accel = results[pace].f.Loader, results[pace].f.Accel
	r.setPacing(targets[pace].a)
	f.Ranks = sortRanks(ranks)
	return nil
}

func (r *Ranks) setPacing(a *Attach) {
	r.mu.Lock()
	r.pacing = a
	r.mu.Unlock()
}

// rankOf summarizes one rank's reading.
func rankOf(t *rankTarget, l *sample.Loader) sample.Rank {
	out := sample.Rank{Rank: t.order, URL: t.a.Source(), PID: t.a.PID()}
	if ann := t.ann; ann != nil {
		out.LocalRank, out.WorldSize = ann.LocalRank, ann.WorldSize
		if ann.Rank != nil {
			out.Rank = *ann.Rank
		}
		if out.PID == 0 {
			out.PID = ann.PID
		}
	}
	if l != nil && l.Rank != nil {
		t.rank, t.localRank, t.worldSize = l.Rank, l.LocalRank, l.WorldSize
	}
	if t.rank != nil {
		out.Rank, out.LocalRank, out.WorldSize = *t.rank, t.localRank, t.worldSize
	}
	if l == nil {
		return out
	}
	out.Connected = l.Connected == nil || *l.Connected
	out.DisconnectedSince = l.DisconnectedSince
	if !out.Connected {
		return out
	}
	out.WaitShare, out.Workers = l.WaitShare, l.Workers
	if l.StepMeanMs != nil {
		out.StepSec = ptr(*l.StepMeanMs / 1000)
	}
	out.BatchesPerSec, out.SamplesPerSec = l.BatchesPerSec, l.SamplesPerSec
	out.Loader = l
	return out
}

// sortRanks orders ranks by rank number, then URL.
func sortRanks(ranks []sample.Rank) []sample.Rank {
	slices.SortStableFunc(ranks, func(a, b sample.Rank) int {
		if a.Rank != b.Rank {
			return a.Rank - b.Rank
		}
		return strings.Compare(a.URL, b.URL)
	})
	return ranks
}

// connectedNow says whether the last read succeeded.
func (a *Attach) connectedNow() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.connected
}

// Covers says whether a loader watched now, answering, reports process
// pid: its wait is then measured, not sampled.
func (r *Ranks) Covers(pid int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.targets {
		p := t.a.PID()
		if p == 0 && t.ann != nil {
			p = t.ann.PID
		}
		if p == pid && t.a.connectedNow() {
			return true
		}
	}
	return false
}

// Connected counts the loaders that answer now.
func (r *Ranks) Connected() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, t := range r.targets {
		if t.a.connectedNow() {
			n++
		}
	}
	return n
}
