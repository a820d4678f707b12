package endpoint

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

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/internal/bg"
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

// Ranks is the probe for the loaders of a distributed job, or of the
// jobs discovery finds on the machine: one entry per loader, each its own
// Attach and Loader. A loader is a rank of a distributed job only when it
// says so (rankOf): a discovered loader whose metrics and announcement
// give no WORLD_SIZE above 1 is a job of its own (rank 0 of 1). Every rank is read in a slot of its
// own, with its own deadline (the Attach's timeout): a tick starts each
// rank's read that is not still running, waits for them within the tick's
// budget, and takes each rank's latest completed reading. A rank whose
// read runs past the budget is marked slow (Rank.SlowSince) with its last
// figures; it never holds the others back. The frame gets every rank's
// summary (Ranks) and, as Loader and the virtual accelerator, the reading
// of the pacing rank: the one that waits most for input, which in a
// synchronous job holds every other rank back in the all-reduce. With one
// loader given and no discovery it is exactly the Loader probe: no Ranks
// in the frame.
//
// Discovery scans the announcements folder off the tick, on a goroutine
// of its own every `every` (Start starts it); a tick takes the latest
// scan. The scan and the reads in flight are the Ranks' own: Close
// cancels them and waits (docs/architecture.md, "Goroutines").
type Ranks struct {
	discover func() (Discovery, error) // nil: the URLs given only
	every    time.Duration             // between discovery scans
	g        *bg.Group                 // the scan and the reads: Close cancels and waits

	mu      sync.Mutex
	targets []*rankTarget
	scanned *Discovery // the scanner's latest, not yet applied
	note    string     // the latest scan's trouble, for the frame
	pacing  *Attach    // the latest pacing rank's, for the profiler
	focus   string     // a URL the user chose to look at (dashboard); "" none
}

type rankTarget struct {
	a     *Attach
	l     *Loader
	key   string        // the loader's URL as one loader has it (loaderKey)
	order int           // a URL given: its position among them, its rank when unreported
	given bool          // a URL the user gave (its ann may come later)
	ann   *Announcement // from discovery; nil for a URL given until announced
	// The rank as last reported, kept while the loader does not answer.
	rank, localRank, worldSize *int

	// Its slot: one read at a time, and the latest completed.
	slot    sync.Mutex
	reading bool
	started time.Time     // when the read running began
	done    chan struct{} // closed when the read running ends
	last    *reading      // the latest completed read; nil before the first
	reads   int           // reads completed
}

// reading is one completed read of a rank.
type reading struct {
	f   sample.Frame
	err error
}

// NewRanks returns the probe over the given loaders (already checked
// with NewAttach). discover, when not nil, is scanned at once and then
// every `every` on a goroutine of its own, for loaders that come up
// later.
func NewRanks(attached []*Attach, discover func() (Discovery, error), every time.Duration) *Ranks {
	r := &Ranks{discover: discover, every: every}
	r.g = bg.New(context.Background())
	for _, a := range attached {
		r.add(a, nil)
	}
	if discover != nil {
		r.applyScan(r.scanOnce())
	}
	return r
}

func (r *Ranks) add(a *Attach, ann *Announcement) {
	t := &rankTarget{a: a, l: NewLoader(a), order: len(r.targets), given: ann == nil, ann: ann, key: loaderKey(a.Source())}
	if ann != nil {
		t.key = ann.key
	}
	r.targets = append(r.targets, t)
}

// Name implements Probe.
func (r *Ranks) Name() string { return "loader" }

// Lane implements Laned: the ranks and the profile share a worker.
func (r *Ranks) Lane() string { return "attach" }

// Start implements Starter: with discovery, it scans every `every` until
// ctx ends or Close.
func (r *Ranks) Start(ctx context.Context) {
	if r.discover != nil {
		r.g.Go(func(own context.Context) { r.scanLoop(ctx, own) })
	}
}

// Close stops discovery and the reads in flight and waits for them (the
// Sampler closes probes when it stops). Each read ends at its Attach's
// deadline at the latest.
func (r *Ranks) Close() error {
	r.g.Close()
	return nil
}

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

// Started says whether the loader Pacing names has handed its loop a
// batch (its latest reading counts one), or cannot say (an endpoint with
// profiles and no loader metrics): the profiler's cue for its first turn
// (Profiler.FirstAfter).
func (r *Ranks) Started() bool {
	a := r.Pacing()
	if a == nil {
		return false
	}
	if a.NoMetrics() {
		return true
	}
	r.mu.Lock()
	targets := append([]*rankTarget(nil), r.targets...)
	decided := r.pacing != nil || r.focus != ""
	r.mu.Unlock()
	if len(targets) > 1 && (!decided || !allRead(targets)) {
		// Several ranks: which paces is known once each has been read
		// (Pacing takes the first rank before that; a hostile user's
		// review: rank 0 was profiled while a straggler rank 1 paced,
		// and --once ended on that profile), and the pacing one has said
		// how long its loop waits (below).
		return false
	}
	for _, t := range targets {
		if t.a != a {
			continue
		}
		res, _ := t.latest()
		if res == nil || res.f.Loader == nil || res.f.Loader.Batches == 0 || len(targets) > 1 && res.f.Loader.WaitShare == nil {
			return false
		}
		if w := res.f.Loader.WorldSize; w != nil && *w > len(targets) && t.readCount() < worldWaitReads {
			// A rank of a job of more ranks than found yet: discovery
			// finds each at its first batch, a scan apart, and the one
			// found first is no more the pacing one than the others (a
			// review). Not for ever: a node of a job of many sees only
			// its own ranks.
			return false
		}
		return true
	}
	return false
}

// worldWaitReads is how many reads of the loader to profile first the
// profiler's first turn waits for the ranks of its job not found yet.
const worldWaitReads = 5

// readCount is how many reads of the rank have completed.
func (t *rankTarget) readCount() int {
	t.slot.Lock()
	defer t.slot.Unlock()
	return t.reads
}

// allRead says every rank has been read at least once.
func allRead(targets []*rankTarget) bool {
	for _, t := range targets {
		if res, _ := t.latest(); res == nil {
			return false
		}
	}
	return true
}

// Focus makes the rank at url the one profiled (the dashboard's enter on
// a row); "" returns to the pacing rank.
func (r *Ranks) Focus(url string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.focus = url
}

// PacingPID is the pacing rank's process on this machine, 0 when unknown
// or remote (Attach.LocalPID): the process view's focus.
func (r *Ranks) PacingPID() int {
	if a := r.Pacing(); a != nil {
		return a.LocalPID()
	}
	return 0
}

// scanOnce reads the announcements now: what they hold, or why the folder
// was refused.
func (r *Ranks) scanOnce() Discovery {
	d, err := r.discover()
	if err != nil {
		return Discovery{Refused: []string{err.Error()}, Refusals: -1}
	}
	return d
}

// scanLoop scans every `every` until ctx or own ends, leaving each scan
// for the next tick to apply.
func (r *Ranks) scanLoop(ctx, own context.Context) {
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-own.Done():
			return
		case <-t.C:
		}
		d := r.scanOnce()
		r.mu.Lock()
		r.scanned = &d
		r.mu.Unlock()
	}
}

// applyScan adds the loaders a scan found that are not watched yet, and
// drops discovered ones that are gone: no longer announced and not
// answering. r.mu is held, or r is not shared yet.
func (r *Ranks) applyScan(d Discovery) {
	if d.Refusals < 0 { // the folder itself was refused
		r.note = "discovery: " + strings.Join(d.Refused, "; ")
		return
	}
	r.note = d.Note()
	announced := map[string]*Announcement{}
	for i := range d.Found {
		announced[d.Found[i].key] = &d.Found[i]
	}
	kept := r.targets[:0]
	for _, t := range r.targets {
		if a, ok := announced[t.key]; ok {
			t.ann = a
			t.a.Announced(*a) // a loader restarted on its port has a new token, maybe a new PID
			delete(announced, t.key)
		} else if t.ann != nil && !t.a.connectedNow() {
			continue
		}
		kept = append(kept, t)
	}
	r.targets = kept
	for i := range d.Found {
		if announced[d.Found[i].key] == nil || len(r.targets) >= sample.MaxRanks {
			continue
		}
		if a, err := NewAttach(d.Found[i].URL); err == nil {
			a.Announced(d.Found[i])
			r.add(a, &d.Found[i])
		}
	}
	// No renumbering: a given URL's position is its rank for as long as it
	// is watched (a loader dropped before it must not move it: one URL
	// read as two ranks across frames).
}

// Collect implements Probe.
func (r *Ranks) Collect(ctx context.Context, f *sample.Frame) error {
	r.mu.Lock()
	if r.scanned != nil {
		r.applyScan(*r.scanned)
		r.scanned = nil
	}
	targets := append([]*rankTarget(nil), r.targets...)
	note, last := r.note, r.pacing
	r.mu.Unlock()
	if note != "" {
		if f.Unavailable == nil {
			f.Unavailable = map[sample.Source]string{}
		}
		f.Unavailable[sample.SourceDiscovery] = note
	}
	if len(targets) == 0 {
		return nil // discovery has found none yet; it looks again in `every`
	}
	r.readAll(ctx, targets, f.Time)
	results := make([]*reading, len(targets))
	slow := make([]*time.Time, len(targets))
	for i, t := range targets {
		results[i], slow[i] = t.latest()
	}
	if len(targets) == 1 && r.discover == nil {
		res := results[0]
		if res == nil {
			return fmt.Errorf("no answer from %s within the tick", targets[0].a.Source())
		}
		f.Loader, f.Accel = res.f.Loader, res.f.Accel
		r.setPacing(targets[0].a)
		if slow[0] != nil {
			return fmt.Errorf("%s is slow: its read has not answered since %s (its last figures shown)", targets[0].a.Source(), slow[0].Format("15:04:05"))
		}
		if note := targets[0].a.ProofNote(); res.err == nil && note != "" {
			return errors.New(note) // read, but not proven the loader's: said
		}
		return res.err
	}
	ranks := make([]sample.Rank, len(targets))
	firstErr := error(nil)
	for i, t := range targets {
		var l *sample.Loader
		if res := results[i]; res != nil {
			l = res.f.Loader
			if res.err != nil && firstErr == nil {
				firstErr = res.err
			}
		}
		ranks[i] = rankOf(t, l)
		ranks[i].SlowSince = slow[i]
	}
	pace := paceOf(ranks, targets, last)
	if pace < 0 {
		// None answers: the loader panel and JSON still say which loader
		// went away and since when (the pacing one's, else the first's).
		f.Loader = r.lastWord(targets, results)
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
	for _, t := range targets {
		if note := t.a.ProofNote(); note != "" {
			return errors.New(note) // read, but not proven the loader's: said
		}
	}
	return nil
}

// samePace is how much more another loader must wait for input than a
// job of its own that paced the last frame to take the frame from it.
const samePace = 0.1

// paceOf is the rank whose reading the frame shows: the one that waits
// most for input, else the first that answers; -1 when none answers. A
// job of its own (rank 0 of 1) that paced the last frame (last) keeps
// the frame while it answers and no loader waits samePace more: two
// unrelated jobs that both wait (two scripts on two shared cores) took
// the frame in turns, and the verdict's window mixed their two loops.
func paceOf(ranks []sample.Rank, targets []*rankTarget, last *Attach) int {
	pace := -1
	for i, r := range ranks {
		if w := r.WaitShare; r.Connected && (pace < 0 || w != nil && (ranks[pace].WaitShare == nil || *w > *ranks[pace].WaitShare)) {
			pace = i
		}
	}
	for i, t := range targets {
		r := ranks[i]
		if t.a != last || pace < 0 || i == pace || !r.Connected || r.WorldSize == nil || *r.WorldSize > 1 {
			continue
		}
		if r.WaitShare != nil && ranks[pace].WaitShare != nil && *ranks[pace].WaitShare-*r.WaitShare < samePace {
			return i
		}
	}
	return pace
}

// lastWord is the loader to show when no rank answers: the pacing rank's
// disconnection, else the first rank's that has one (nil when none read
// yet).
func (r *Ranks) lastWord(targets []*rankTarget, results []*reading) *sample.Loader {
	r.mu.Lock()
	pacing := r.pacing
	r.mu.Unlock()
	var first *sample.Loader
	for i, t := range targets {
		res := results[i]
		if res == nil || res.f.Loader == nil {
			continue
		}
		if t.a == pacing {
			return res.f.Loader
		}
		if first == nil {
			first = res.f.Loader
		}
	}
	return first
}

// readBudget is how long a tick waits for the ranks' reads when its
// context has no deadline.
const readBudget = 400 * time.Millisecond

// readAll starts the read of every rank whose slot is free, each under
// the Ranks' group with its Attach's own deadline, and waits for the reads running
// until the tick's budget: its context's deadline, less a margin for the
// rest of the tick.
func (r *Ranks) readAll(ctx context.Context, targets []*rankTarget, now time.Time) {
	budget := readBudget
	if d, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(d)*4/5)
	}
	timer := time.NewTimer(max(budget, 0))
	defer timer.Stop()
	var running []chan struct{}
	for _, t := range targets {
		running = append(running, t.start(r.g, now))
	}
	for _, done := range running {
		select {
		case <-done:
		case <-timer.C:
			return // the rest are slow this tick
		case <-ctx.Done():
			return
		}
	}
}

// start begins the rank's read on a goroutine of g unless one is running,
// and returns the channel closed when the running read ends (at once when
// g is closed: nothing is read).
func (t *rankTarget) start(g *bg.Group, now time.Time) chan struct{} {
	t.slot.Lock()
	defer t.slot.Unlock()
	if t.reading {
		return t.done
	}
	t.reading, t.started, t.done = true, now, make(chan struct{})
	done := t.done
	started := g.Go(func(ctx context.Context) {
		res := &reading{f: sample.Frame{Time: now}}
		res.err = t.l.Collect(ctx, &res.f)
		t.slot.Lock()
		t.reading, t.last = false, res
		t.reads++
		t.slot.Unlock()
		close(done)
	})
	if !started {
		t.reading = false
		close(done)
	}
	return done
}

// latest is the rank's latest completed reading (nil before the first),
// and since when its running read has been slow (nil when none runs).
func (t *rankTarget) latest() (*reading, *time.Time) {
	t.slot.Lock()
	defer t.slot.Unlock()
	if t.reading {
		since := t.started
		return t.last, &since
	}
	return t.last, nil
}

func (r *Ranks) setPacing(a *Attach) {
	r.mu.Lock()
	r.pacing = a
	r.mu.Unlock()
}

// rankOf summarizes one rank's reading. Its rank is the one its metrics
// or announcement report; a URL given that reports none is its position
// among those given (the user named them as one job's ranks). A
// discovered loader with no WORLD_SIZE above 1 is not a rank of anyone's
// distributed job, whatever its neighbours: it is rank 0 of a world of 1,
// a job of its own, the same in every frame (diagnose names no straggler
// between such loaders).
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
	if !t.given && (out.WorldSize == nil || *out.WorldSize <= 1) {
		out.Rank, out.LocalRank, out.WorldSize = 0, nil, probes.Ptr(1)
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
		out.StepSec = probes.Ptr(*l.StepMeanMs / 1000)
	}
	out.BatchesPerSec, out.SamplesPerSec, out.RatesPending = l.BatchesPerSec, l.SamplesPerSec, l.RatesPending
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

// Announces says whether a loader watched now, answering or not, reports
// or was announced by process pid: the hook announces a process from its
// DataLoader's first batch on, so its loop has started even while it does
// not answer (its connections are taken: issue 57, item 2).
func (r *Ranks) Announces(pid int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.targets {
		if t.a.PID() == pid || (t.ann != nil && t.ann.PID == pid) {
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
