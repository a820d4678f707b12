package session

import (
	"context"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/tui"
)

// ReplayOptions say what ReplayDashboard plays and how.
type ReplayOptions struct {
	// Recording is played a frame at a time; the caller closes it.
	Recording *recording.Recording
	// Name is the recording's file, in the dashboard's title.
	Name string
	// Thresholds diagnose the recorded frames afresh.
	Thresholds diagnose.Thresholds
	// Speed is the starting playback speed, within MinSpeed … MaxSpeed.
	Speed float64
	// NoColor draws the dashboard without colour.
	NoColor bool
	// Stdout is the terminal the dashboard draws on.
	Stdout io.Writer
}

// ReplayDashboard plays the recording in the dashboard, with the replay
// keys: pause, seek, speed (within tui's replay range).
func ReplayDashboard(ctx context.Context, o ReplayOptions) error {
	updates := make(chan tui.Feed)
	pl := &player{rec: o.Recording, speed: o.Speed, thresholds: o.Thresholds, cmds: make(chan playerCmd, 16)}
	model := tui.New(tui.Options{Updates: updates, Title: "replay of " + o.Name, Interval: time.Second, Thresholds: o.Thresholds, Plain: PlainTerminal(), Replay: &tui.Replay{
		Pause: func(p bool) { pl.send(playerCmd{pause: &p}) },
		Seek:  func(by time.Duration) { pl.send(playerCmd{seek: by}) },
		Speed: pl.scale, InitialSpeed: o.Speed,
	}})
	return RunProgram(ctx, model, o.Stdout, o.NoColor, func(ctx context.Context, _ func()) error {
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
	pb := &playback{pl: pl, updates: updates, n: pl.rec.Len()}
	first, ok := pb.at(ctx, 0)
	if !ok {
		return
	}
	last, ok := pb.at(ctx, pb.n-1)
	if !ok {
		return
	}
	pb.start, pb.length = first.Frame.Time, last.Frame.Time.Sub(first.Frame.Time)
	pb.d = diagnose.NewDiagnoser(pl.thresholds)
	if !pb.send(ctx, 0, first, false) {
		return
	}
	for pb.step(ctx) {
	}
}

// playback is where one run of the player is: the frame shown, the one
// read ahead, and the diagnoser that has seen the frames sent.
type playback struct {
	pl      *player
	updates chan<- tui.Feed
	n       int           // frames in the recording
	start   time.Time     // the first frame's time
	length  time.Duration // from the first frame to the last
	d       *diagnose.Diagnoser
	cur     time.Time // the time of the frame shown
	idx     int       // the frame shown
	next    *recording.Recorded
	paused  bool
}

// at reads frame i; one that cannot be read tells the view why playback
// stops and returns false.
func (pb *playback) at(ctx context.Context, i int) (*recording.Recorded, bool) {
	r, err := pb.pl.rec.Frame(i)
	if err != nil {
		select {
		case pb.updates <- tui.Feed{Note: "replay stopped: " + err.Error()}:
		case <-ctx.Done():
		}
		return nil, false
	}
	return r, true
}

// send diagnoses frame i (r) and feeds it to the view with its position,
// marked Reset when the view must drop what it drew before; false when ctx
// ended first.
func (pb *playback) send(ctx context.Context, i int, r *recording.Recorded, reset bool) bool {
	f := &r.Frame
	pb.cur = f.Time
	pos := &tui.Position{At: f.Time.Sub(pb.start), Length: pb.length, Frame: i + 1, Frames: pb.n, End: i == pb.n-1}
	select {
	case pb.updates <- tui.Feed{Frame: f, Verdict: pb.d.Observe(f), Reset: reset, Position: pos}:
		return true
	case <-ctx.Done():
		return false
	}
}

// step waits for the next frame's time (the recorded gap, at most 10 s,
// over the speed) or a command, and acts on it; false ends playback.
// Paused or at the end, only a command moves it.
func (pb *playback) step(ctx context.Context) bool {
	var wait <-chan time.Time
	var t *time.Timer
	if !pb.paused && pb.idx+1 < pb.n {
		if pb.next == nil {
			var ok bool
			if pb.next, ok = pb.at(ctx, pb.idx+1); !ok {
				return false
			}
		}
		gap := min(pb.next.Frame.Time.Sub(pb.cur), 10*time.Second)
		t = time.NewTimer(time.Duration(float64(gap) / pb.pl.currentSpeed()))
		wait = t.C
	}
	select {
	case <-ctx.Done():
		if t != nil {
			t.Stop()
		}
		return false
	case <-wait:
		pb.idx++
		r := pb.next
		pb.next = nil
		return pb.send(ctx, pb.idx, r, false)
	case c := <-pb.pl.cmds:
		if t != nil {
			t.Stop()
		}
		return pb.command(ctx, c)
	}
}

// command pauses, resumes or seeks by c; a speed change (wake) only makes
// step recompute its wait. False ends playback.
func (pb *playback) command(ctx context.Context, c playerCmd) bool {
	switch {
	case c.pause != nil:
		pb.paused = *c.pause
	case c.seek != 0:
		target, failed := pb.cur.Add(c.seek), false
		i := sort.Search(pb.n, func(k int) bool {
			r, ok := pb.at(ctx, k)
			failed = failed || !ok
			return !ok || !r.Frame.Time.Before(target)
		})
		if failed {
			return false
		}
		pb.idx, pb.next = min(max(i, 0), pb.n-1), nil
		return pb.seekTo(ctx, pb.idx)
	}
	return true
}

// seekTo rebuilds the diagnoser from up to 60 frames before frame i and
// resends them, the first marked Reset; false when one cannot be read or
// ctx ended.
func (pb *playback) seekTo(ctx context.Context, i int) bool {
	pb.d = diagnose.NewDiagnoser(pb.pl.thresholds)
	for j := max(0, i-60); j <= i; j++ {
		r, ok := pb.at(ctx, j)
		if !ok || !pb.send(ctx, j, r, j == max(0, i-60)) {
			return false
		}
	}
	return true
}
