package session

import (
	"context"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/report"
	"github.com/gpuwatch/gpuwatch/tui"
)

// ReplayLines recomputes each frame's verdict with a fresh Diagnoser and
// prints the frames with their scenario lines in time order, through the
// same writer as a live headless session.
func ReplayLines(rec *report.Recording, th diagnose.Thresholds, asJSON bool, stdout io.Writer) error {
	d := diagnose.NewDiagnoser(th)
	h := newHeadless(stdout, asJSON)
	notes := rec.Scenarios
	for i := range rec.Frames {
		f := &rec.Frames[i].Frame
		for len(notes) > 0 && !notes[0].Time.After(f.Time) {
			if err := h.Note(notes[0]); err != nil {
				return err
			}
			notes = notes[1:]
		}
		if err := h.Frame(f, d.Observe(f)); err != nil {
			return err
		}
	}
	return nil
}

// ReplayDashboard plays the recording in the dashboard, with the replay
// keys: pause, seek, speed (within tui's replay range).
func ReplayDashboard(ctx context.Context, rec *report.Recording, th diagnose.Thresholds, name string, speed float64, stdout io.Writer) error {
	updates := make(chan tui.Feed)
	pl := &player{frames: rec.Frames, speed: speed, thresholds: th, cmds: make(chan playerCmd, 16)}
	model := tui.New(tui.Options{Updates: updates, Title: "replay of " + name, Interval: time.Second, Replay: &tui.Replay{
		Pause: func(p bool) { pl.send(playerCmd{pause: &p}) },
		Seek:  func(by time.Duration) { pl.send(playerCmd{seek: by}) },
		Speed: pl.scale,
	}})
	return RunProgram(ctx, model, stdout, func(ctx context.Context, _ func()) error {
		pl.run(ctx, updates) // the view stays on the last frame: q quits
		return nil
	})
}

// player plays recorded frames at their recorded pace × speed. Its waits
// between frames are the playback clock.
type player struct {
	frames     []report.Recorded
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
func (pl *player) run(ctx context.Context, updates chan<- tui.Feed) {
	defer close(updates)
	frames := pl.frames
	d := diagnose.NewDiagnoser(pl.thresholds)
	send := func(i int, reset bool) bool {
		f := &frames[i].Frame
		select {
		case updates <- tui.Feed{Frame: f, Verdict: d.Observe(f), Reset: reset}:
			return true
		case <-ctx.Done():
			return false
		}
	}
	seekTo := func(i int) bool {
		d = diagnose.NewDiagnoser(pl.thresholds)
		for j := max(0, i-60); j <= i; j++ {
			if !send(j, j == max(0, i-60)) {
				return false
			}
		}
		return true
	}
	paused := false
	idx := 0
	if !send(0, false) {
		return
	}
	for {
		var wait <-chan time.Time
		var t *time.Timer
		if !paused && idx+1 < len(frames) { // at the end, only commands (seek back)
			gap := min(frames[idx+1].Frame.Time.Sub(frames[idx].Frame.Time), 10*time.Second)
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
			if !send(idx, false) {
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
				target := frames[idx].Frame.Time.Add(c.seek)
				i := sort.Search(len(frames), func(k int) bool { return !frames[k].Frame.Time.Before(target) })
				idx = min(max(i, 0), len(frames)-1)
				if !seekTo(idx) {
					return
				}
			}
		}
	}
}
