package session

import (
	"context"
	"errors"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/tui"
)

// ReplayLines recomputes each frame's verdict with a fresh Diagnoser and
// prints the frames with their scenario lines in time order, through the
// same writer as a live headless session.
func ReplayLines(rec *recording.Recording, th diagnose.Thresholds, asJSON bool, stdout io.Writer) error {
	d := diagnose.NewDiagnoser(th)
	h := newHeadless(stdout, asJSON)
	notes := rec.Scenarios
	return rec.Each(func(_ int, r *recording.Recorded) error {
		f := &r.Frame
		for len(notes) > 0 && !notes[0].Time.After(f.Time) {
			if err := h.Note(notes[0]); err != nil {
				return err
			}
			notes = notes[1:]
		}
		return h.Frame(f, d.Observe(f))
	})
}

// ReplayDashboard plays the recording in the dashboard, with the replay
// keys: pause, seek, speed (within tui's replay range).
func ReplayDashboard(ctx context.Context, rec *recording.Recording, th diagnose.Thresholds, name string, speed float64, noColor bool, stdout io.Writer) error {
	updates := make(chan tui.Feed)
	pl := &player{rec: rec, speed: speed, thresholds: th, cmds: make(chan playerCmd, 16)}
	model := tui.New(tui.Options{Updates: updates, Title: "replay of " + name, Interval: time.Second, Thresholds: th, Plain: PlainTerminal(), Replay: &tui.Replay{
		Pause: func(p bool) { pl.send(playerCmd{pause: &p}) },
		Seek:  func(by time.Duration) { pl.send(playerCmd{seek: by}) },
		Speed: pl.scale, InitialSpeed: speed,
	}})
	return RunProgram(ctx, model, stdout, noColor, func(ctx context.Context, _ func()) error {
		pl.run(ctx, updates) // the view stays on the last frame: q quits
		return nil
	})
}

// player plays recorded frames at their recorded pace × speed. Its waits
// between frames are the playback clock.
type player struct {
	rec        *recording.Recording // read a frame at a time, never all held
	thresholds diagnose.Thresholds
	cmds       chan playerCmd
	mu         sync.Mutex
	speed      float64
}

type playerCmd struct {
	pause *bool
	seek  time.Duration
	wake  bool // the speed changed: recompute the wait
}

func (pl *player) send(c playerCmd) {
	select {
	case pl.cmds <- c:
	default: // keys faster than playback can take them: drop
	}
}

// MinSpeed and MaxSpeed bound the replay speed, the --speed flag and the
// keys alike.
const (
	MinSpeed = 0.5
	MaxSpeed = 64
)

// scale multiplies the speed (kept within MinSpeed … MaxSpeed) and returns it.
func (pl *player) scale(f float64) float64 {
	pl.mu.Lock()
	pl.speed = min(MaxSpeed, max(MinSpeed, pl.speed*f))
	s := pl.speed
	pl.mu.Unlock()
	pl.send(playerCmd{wake: true})
	return s
}

func (pl *player) currentSpeed() float64 {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.speed
}

// run sends frame idx, waits the recorded gap, and so on; a seek rebuilds
// the diagnoser from up to 60 frames before the target and resends them,
// the first marked Reset, so sparklines and verdicts are right there.
// Frames are read from the file as they are played (the next one ahead,
// for its time). Every feed says where playback is (tui.Position). A
// frame that cannot be read (the file changed under it) ends playback,
// and the view says why.
func (pl *player) run(ctx context.Context, updates chan<- tui.Feed) {
	defer close(updates)
	n := pl.rec.Len()
	at := func(i int) (*recording.Recorded, bool) {
		r, err := pl.rec.Frame(i)
		if err != nil {
			select {
			case updates <- tui.Feed{Note: "replay stopped: " + err.Error()}:
			case <-ctx.Done():
			}
			return nil, false
		}
		return r, true
	}
	first, ok := at(0)
	if !ok {
		return
	}
	last, ok := at(n - 1)
	if !ok {
		return
	}
	start, length := first.Frame.Time, last.Frame.Time.Sub(first.Frame.Time)
	d := diagnose.NewDiagnoser(pl.thresholds)
	var cur time.Time // the time of the frame shown
	send := func(i int, r *recording.Recorded, reset bool) bool {
		f := &r.Frame
		cur = f.Time
		pos := &tui.Position{At: f.Time.Sub(start), Length: length, Frame: i + 1, Frames: n, End: i == n-1}
		select {
		case updates <- tui.Feed{Frame: f, Verdict: d.Observe(f), Reset: reset, Position: pos}:
			return true
		case <-ctx.Done():
			return false
		}
	}
	seekTo := func(i int) bool {
		d = diagnose.NewDiagnoser(pl.thresholds)
		for j := max(0, i-60); j <= i; j++ {
			r, ok := at(j)
			if !ok || !send(j, r, j == max(0, i-60)) {
				return false
			}
		}
		return true
	}
	paused := false
	idx := 0
	var next *recording.Recorded // frame idx+1, read ahead for its time
	if !send(0, first, false) {
		return
	}
	for {
		var wait <-chan time.Time
		var t *time.Timer
		if !paused && idx+1 < n { // at the end, only commands (seek back)
			if next == nil {
				if next, ok = at(idx + 1); !ok {
					return
				}
			}
			gap := min(next.Frame.Time.Sub(cur), 10*time.Second)
			t = time.NewTimer(time.Duration(float64(gap) / pl.currentSpeed()))
			wait = t.C
		}
		select {
		case <-ctx.Done():
			if t != nil {
				t.Stop()
			}
			return
		case <-wait:
			idx++
			r := next
			next = nil
			if !send(idx, r, false) {
				return
			}
		case c := <-pl.cmds:
			if t != nil {
				t.Stop()
			}
			switch {
			case c.pause != nil:
				paused = *c.pause
			case c.seek != 0:
				target, failed := cur.Add(c.seek), false
				i := sort.Search(n, func(k int) bool {
					r, ok := at(k)
					failed = failed || !ok
					return !ok || !r.Frame.Time.Before(target)
				})
				if failed {
					return
				}
				idx, next = min(max(i, 0), n-1), nil
				if !seekTo(idx) {
					return
				}
			}
		}
	}
}

// ReplayOnce judges a recording's last stretch as --once judges a live
// session: the frames of the last `last` (all with 0) are diagnosed, the
// frames before them only warm the diagnosis up, and the verdict the
// stretch ends on is printed as --once prints it (asJSON: its one summary
// object), settled when it held settleFrames frames and settleTime at
// the end. It returns ErrBottleneck or ErrUnsettled as --once does. A
// Slurm epilog judges a job's last minute this way after its processes
// are gone (deploy/slurm/epilog.sh).
func ReplayOnce(rec *recording.Recording, th diagnose.Thresholds, last time.Duration, asJSON bool, w io.Writer) error {
	n := rec.Len()
	if n == 0 {
		return errors.New("the recording holds no frame")
	}
	end, err := rec.Frame(n - 1)
	if err != nil {
		return err
	}
	from := time.Time{}
	if last > 0 {
		from = end.Frame.Time.Add(-last)
	}
	d := diagnose.NewDiagnoser(th)
	s := &settle{stop: func() {}, need: th.MinFrames}
	err = rec.Each(func(_ int, r *recording.Recorded) error {
		f := &r.Frame
		v := d.Observe(f)
		if !f.Time.Before(from) {
			return s.Frame(f, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if s.frames == 0 {
		return errors.New("no frame in the stretch asked for")
	}
	// Settled is how the stretch ends, not whether some verdict held
	// earlier in it.
	s.settled = s.verdict.Kind != diagnose.WarmingUp && s.streak >= settleFrames && s.last.Time.Sub(s.since) >= settleTime
	return s.summary(w, asJSON)
}
