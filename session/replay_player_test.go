package session

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/tui"
)

func recordedFrames(n int) []recording.Recorded {
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	out := make([]recording.Recorded, n)
	for i := range out {
		out[i].Frame = sample.Frame{Time: t0.Add(time.Duration(i) * 100 * time.Millisecond),
			CPU: &sample.CPU{BusyPct: 10, Cores: []sample.Core{{ID: 0, BusyPct: 10}}}, Unavailable: map[sample.Source]string{}}
	}
	return out
}

func next(t *testing.T, ch <-chan tui.Feed) tui.Feed {
	t.Helper()
	select {
	case u := <-ch:
		return u
	case <-time.After(5 * time.Second):
		t.Fatal("the player sent nothing for 5 s")
	}
	return tui.Feed{}
}

// TestPlayerSeeksAndKeepsOrder plays 400 frames 100 ms apart at ×16: in
// order, then a seek back 10 s resends from up to 60 frames before the
// target, the first marked Reset, and goes on from there.
func TestPlayerSeeksAndKeepsOrder(t *testing.T) {
	frames := recordedFrames(400)
	pl := &player{rec: recording.New(recording.Header{}, frames, nil), speed: 16, thresholds: diagnose.DefaultThresholds(), cmds: make(chan playerCmd, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan tui.Feed)
	go pl.run(ctx, ch)
	var last time.Time
	for i := 0; i < 250; i++ { // 24.9 s in
		u := next(t, ch)
		if i > 0 && !u.Frame.Time.After(last) {
			t.Fatalf("frame %d out of order", i)
		}
		last = u.Frame.Time
	}
	pl.send(playerCmd{seek: -10 * time.Second}) // to ~14.9 s, frame ~149
	var u tui.Feed
	for u = next(t, ch); !u.Reset; u = next(t, ch) {
	}
	target := last.Add(-10 * time.Second)
	if got, want := u.Frame.Time, target.Add(-6*time.Second); got.Sub(want) > 300*time.Millisecond || want.Sub(got) > 300*time.Millisecond {
		t.Fatalf("after the seek, playback restarts at %v, want ~%v (60 frames before the target)", got, want)
	}
	// The keys and --speed share one range.
	if s := pl.scale(8); s != MaxSpeed {
		t.Fatalf("speed %v, want capped at %v", s, MaxSpeed)
	}
	if s := pl.scale(1.0 / 1024); s != MinSpeed {
		t.Fatalf("speed %v, want floored at %v", s, MinSpeed)
	}
}

// TestPlayerSaysWhereItIs plays a recorded file to its end: every feed
// carries its place (frame k of n, time from the start of the 2.9 s
// recording), and only the last frame is the end of the recording.
func TestPlayerSaysWhereItIs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	w, err := recording.NewRecorder(path, recording.Header{Host: "h"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	frames := recordedFrames(30)
	for i := range frames {
		if err := w.Frame(&frames[i].Frame, nil); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	rec, err := recording.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	pl := &player{rec: rec, speed: MaxSpeed, thresholds: diagnose.DefaultThresholds(), cmds: make(chan playerCmd, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan tui.Feed)
	go pl.run(ctx, ch)
	for i := range 30 {
		p := next(t, ch).Position
		if p == nil || p.Frame != i+1 || p.Frames != 30 || p.Length != 2900*time.Millisecond ||
			p.At != time.Duration(i)*100*time.Millisecond || p.End != (i == 29) {
			t.Fatalf("feed %d: position %+v", i, p)
		}
	}
}
