package diagnose

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// Diagnoser classifies each new frame's window and applies hysteresis: a
// new kind is shown only once it has been the classification for
// EnterHold (none for a problem, or a change between two kinds that are
// no problem, that each of the newest frames shows on its own over
// EnterHold, two at least; LeaveHold of frames that each show the problem clear when
// it clears to healthy or idle, none where the wait that made an input
// problem one is plainly gone: fed, covered, waited below), so one odd
// frame or flapping input never flips the verdict. Time comes from the
// frames, never from a clock. Not safe for concurrent use.
type Diagnoser struct {
	th     Thresholds
	ring   []sample.Frame
	shown  Verdict
	replay sample.ReplaySkip // the replay's frames and the one after held over
	// gap is the seconds of the frames held over so far while the loop
	// is between epochs.
	gap       float64
	since     time.Time
	cand      Kind
	candSince time.Time
	haveCand  bool
	starting  int // frames still to leave out of the window after one before the loop's first batch (beforeFirstBatch)
	// exited: the shown verdict is exitedVerdict's, and before it the
	// verdict shown when the watched process exited, with its since.
	exited      bool
	before      Kind
	beforeSince time.Time
}

// NewDiagnoser returns a Diagnoser with thresholds th.
func NewDiagnoser(th Thresholds) *Diagnoser {
	return &Diagnoser{th: th, ring: make([]sample.Frame, 0, max(th.WindowFrames, th.ModelFrames, 1))}
}

// held says the verdict shown names cause id: it stays named while its
// measure is at least CauseLeaveRatio of its threshold (cause.go).
func (d *Diagnoser) held(id string) bool {
	for _, c := range d.shown.Causes {
		if c.ID == id {
			return true
		}
	}
	return false
}

// alone is how many of the newest frames in a row classify as k each on
// its own, and the time of the oldest of them: a change, not flapping
// input (whose window of three can hold two frames of a kind, the newest
// and the oldest). It stops at max frames.
func (d *Diagnoser) alone(k Kind, max int) (n int, since time.Time) {
	one := d.th
	one.MinFrames, one.WindowFrames = 1, 1
	for i := len(d.ring) - 1; i >= 0 && n < max; i-- {
		if classify(d.ring[i:i+1], d.ring[:i+1], one, d.shown.Kind, d.held).Kind != k {
			break
		}
		n, since = n+1, d.ring[i].Time
	}
	return n, since
}

// aloneFor says the newest frames, two at least, each classify as k on
// its own (alone) and their intervals cover sec.
func (d *Diagnoser) aloneFor(k Kind, sec float64) bool {
	n := 2
	for ; n <= len(d.ring) && d.span(n) < sec*0.99; n++ { // an interval's own jitter
	}
	got, _ := d.alone(k, n)
	return got == n && n <= len(d.ring)
}

// span is the newest n frames' intervals, in seconds.
func (d *Diagnoser) span(n int) float64 {
	sec := 0.0
	for i := len(d.ring) - min(n, len(d.ring)); i < len(d.ring); i++ {
		sec += d.ring[i].IntervalSec
	}
	return sec
}

// An input problem clears without LeaveHold where the wait that made it
// one is plainly gone: the newest frames, two at least, each say the new
// kind alone and cover FastClearSpan; in the newest the loop waited under
// WaitShareModerate (fed: not even moderately input-bound; the frame
// before it often holds a restarted loader's first batches); and before
// them the loop waited at least WaitShareStarved in every frame of the
// ring that measured it (waited: the problem was the wait, and steadily
// so). A loop with fed frames among its starved ones is bursty and keeps
// the hold, as does a problem decided on other evidence beside a loop
// that barely waits (memory pressure, a throttled quota). One loader
// only: with several, the rank that paces the frame may not be the one
// that starved.

// fed says the newest frame has the loop's wait share measured and
// under WaitShareModerate.
func (d *Diagnoser) fed() bool {
	if len(d.ring) == 0 {
		return false
	}
	l := d.ring[len(d.ring)-1].Loader
	return l != nil && l.WaitShare != nil && *l.WaitShare < d.th.WaitShareModerate
}

// covered says the newest n frames' intervals add up to FastClearSpan
// (0: never, the fast clearance off).
func (d *Diagnoser) covered(n int) bool {
	span := time.Duration(d.th.FastClearSpan).Seconds()
	return span > 0 && d.span(n) >= span*0.99 // an interval's own jitter
}

// waited says every frame of the ring but the newest n that measured the
// loop's wait share has it at least WaitShareStarved, and one did.
func (d *Diagnoser) waited(n int) bool {
	seen := false
	for i := 0; i < len(d.ring)-n; i++ {
		l := d.ring[i].Loader
		if l == nil || l.WaitShare == nil || math.IsNaN(*l.WaitShare) {
			continue // a frame with no batches says nothing of the wait
		}
		if *l.WaitShare < d.th.WaitShareStarved {
			return false
		}
		seen = true
	}
	return seen
}

// heldOverReplay is the verdict shown, held while the ceiling replays
// kept batches, and said as held, as a loader that went quiet is
// (heldFromBefore): "waits 94 %" in the present beside a GPU 100 % busy
// on the replay read as a contradiction (a review).
func (d *Diagnoser) heldOverReplay() Verdict {
	out := d.shown
	out.Since = d.since
	if len(out.Evidence) > 0 && out.Kind != WarmingUp {
		out.Evidence = slices.Clone(out.Evidence)
		out.Evidence[0].Text = "held while the ceiling replays kept batches; before: " + out.Evidence[0].Text
	}
	return out
}

// heldBetweenEpochs is the verdict shown, held over frame f, which the
// loop spent mostly between epochs (validation on another loader, a
// checkpoint), and said as held: no batch is asked, and its input's
// figures say nothing of the job for those seconds — it read idle, and a
// user's `run --once` settled on that. f is left out of the window. A
// frame that holds less of the gap is kept: the loop's time between
// epochs is taken out of its rate (waitPipeline), and the wait for
// restarted workers after it is the job's.
func (d *Diagnoser) heldBetweenEpochs(f *sample.Frame) Verdict {
	d.gap += *f.Loader.BetweenEpochsSec
	out := d.shown
	out.Since = d.since
	if len(out.Evidence) > 0 && out.Kind != WarmingUp {
		out.Evidence = slices.Clone(out.Evidence)
		out.Evidence[0].Text = fmt.Sprintf("held while the loop is between epochs (%s so far: validation, a checkpoint); before: %s",
			sample.FormatDuration(d.gap), out.Evidence[0].Text)
	}
	return out
}

// Observe adds a frame and returns the verdict to show.
func (d *Diagnoser) Observe(f *sample.Frame) Verdict {
	if d.replay.Skip(f.Loader.Replaying()) {
		// The loop trains on replayed batches (the ceiling's measurement):
		// its input's figures say nothing of the job for those seconds. The
		// frame is left out of the window, and so is the first one after
		// (its interval holds the replay's end); the verdict shown stays.
		return d.heldOverReplay()
	}
	if t := f.Target; t != nil && t.ExitedAt != nil {
		// The watched process is gone: what the window holds of it is no
		// evidence now (a verdict was entered a second after the exit,
		// from the threads of the frames before it, and a bottleneck held
		// four frames past it, the host idle). Idle at once, saying so;
		// the window starts over.
		if !d.exited {
			d.exited, d.before, d.beforeSince, d.since = true, d.shown.Kind, d.since, *t.ExitedAt
		}
		d.ring, d.haveCand, d.starting = d.ring[:0], false, 0
		d.shown = exitedVerdict(t, d.before, d.beforeSince)
		out := d.shown
		out.Since = d.since
		return out
	}
	if f.BetweenEpochs() {
		return d.heldBetweenEpochs(f)
	}
	d.gap = 0
	if d.exited { // frames of a process not gone (a recording joined to another, a target that came back): judged afresh
		d.exited, d.shown, d.since = false, Verdict{Kind: WarmingUp}, time.Time{}
	}
	switch {
	case beforeFirstBatch(f):
		// The loop has not started: nothing before this frame is its
		// loop, nor this frame, nor the next, whose interval holds the
		// loop's start. Its window begins after them: one over the
		// import's last frames and the loop's first read a real H200's
		// GPU 1 % busy (the median of 0, 1 and 100) and bursty within
		// the second, beside a loop that waited 1 %.
		d.ring, d.starting = d.ring[:0], 2
	case d.starting > 0:
		d.ring, d.starting = d.ring[:0], d.starting-1
	}
	if len(d.ring) < cap(d.ring) {
		d.ring = append(d.ring, *f)
	} else {
		copy(d.ring, d.ring[1:])
		d.ring[len(d.ring)-1] = *f
	}
	v := classify(d.ring[max(0, len(d.ring)-d.th.WindowFrames):], d.ring, d.th, d.shown.Kind, d.held)
	switch {
	case d.shown.Kind == WarmingUp && v.Kind == WarmingUp && !d.since.IsZero():
		// Still warming up: since its start, not the window's first
		// frame, which moves each frame before the loop's first batch
		// (a review: "since 10:03:11", "since 10:03:12", …).
		d.shown = v
	case d.shown.Kind == WarmingUp:
		// The first real verdict needs no hold: the window is full.
		d.shown, d.since, d.haveCand = v, f.Time, false
		if v.Kind == WarmingUp && len(d.ring) > 0 {
			d.since = d.ring[0].Time
		}
	case v.Kind == d.shown.Kind:
		d.shown, d.haveCand = v, false
	default:
		if !d.haveCand || d.cand != v.Kind {
			d.cand, d.candSince, d.haveCand = v.Kind, f.Time, true
		}
		hold, from := d.hold(v.Kind, f)
		if f.Time.Sub(from) >= hold {
			d.shown, d.since, d.haveCand = v, d.candSince, false
		}
	}
	out := d.shown
	out.Since = d.since
	return out
}

// hold is how long kind k, the classification since candSince, must last
// before it is shown, and from when that is counted.
func (d *Diagnoser) hold(k Kind, f *sample.Frame) (time.Duration, time.Time) {
	hold, from := time.Duration(d.th.EnterHold), d.candSince
	switch {
	case k == WarmingUp && beforeFirstBatch(f):
		// Not a problem clearing: the job restarts its loop (run's
		// start-up grace), and what was judged before is not its
		// loop. Shown at once, not held on stale evidence.
		hold = 0
	case d.shown.Kind.Problem() && !k.Problem():
		// A problem must be clear LeaveHold: counted from the first
		// of the newest frames that each say so alone, where that
		// is earlier than the window's median turned.
		hold = time.Duration(d.th.LeaveHold)
		n, since := d.alone(k, len(d.ring))
		if n > 0 && since.Before(from) {
			from = since
		}
		if situationOf(d.shown.Kind).InputBound && n >= 2 && len(f.Ranks) <= 1 && d.fed() && d.covered(n) && d.waited(n) {
			hold = 0 // the wait that was the problem is plainly gone (fed, waited)
		}
	case k.Problem() || !d.shown.Kind.Problem():
		// The rule's own evidence, unambiguous: the window's median
		// and each of its newest frames alone say it, two at least
		// and EnterHold of them (eight at a quarter-second). So too
		// between two kinds that are no problem (idle to healthy as
		// the loop resumes after its validation).
		if d.aloneFor(k, time.Duration(d.th.EnterHold).Seconds()) {
			hold = 0
		}
	}
	return hold, from
}

// exitedVerdict is the verdict once the watched process t has exited:
// idle, with when, and how where it is known, and the verdict shown
// until then (before, since then) where there was one.
func exitedVerdict(t *sample.Target, before Kind, since time.Time) Verdict {
	text := fmt.Sprintf("pid %d exited at %s", t.PID, t.ExitedAt.Format("15:04:05"))
	if how := sample.Printable(t.Exit); how != "" { // "exited with status 0", "killed by SIGINT"
		text = fmt.Sprintf("pid %d %s at %s", t.PID, sample.Ended(how), t.ExitedAt.Format("15:04:05"))
	}
	v := Verdict{Kind: Idle, Severity: Info, Confidence: 1,
		Evidence: []Evidence{{Metric: "target.exited", Text: text + ": the watched job is gone, and nothing of it is left to judge"}}}
	if before != WarmingUp && before != Idle {
		v.Evidence = append(v.Evidence, Evidence{Metric: "target.verdict_before_exit",
			Text: fmt.Sprintf("until then the verdict was %s (since %s)", situationOf(before).ID, since.Format("15:04:05"))})
	}
	return v
}
