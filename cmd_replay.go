package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/report"
	"github.com/gpuwatch/gpuwatch/tui"
)

func newRecordCmd(stdout, stderr io.Writer) *cobra.Command {
	var w watchFlags
	var out, attach, reportOut string
	cmd := &cobra.Command{
		Use:   "record -o FILE [--duration D] [--pid PID | --attach URL]",
		Short: "Record headless for batch jobs (SLURM, cron): frames, verdicts and events to a file",
		Example: `  gpuwatch record --duration 10m -o run.jsonl --report run.html --pid "$SLURM_TASK_PID"
  gpuwatch record -o run.jsonl --attach http://127.0.0.1:6060`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageErrorf(cmd, "-o FILE is required")
			}
			if attach != "" && w.pid != 0 {
				return usageErrorf(cmd, "--pid and --attach: choose one (attach focuses on the loader's PID itself)")
			}
			w.record, w.headless = out, true
			if err := w.validate(cmd); err != nil {
				return err
			}
			var err error
			if attach != "" {
				err = runAttach(cmd, &w, attach, 15*time.Second, 5*time.Second, io.Discard, stderr)
			} else {
				err = runSession(cmd.Context(), &w, session{}, io.Discard, stderr)
			}
			if err != nil || reportOut == "" {
				return err
			}
			// The recording is closed: write its report, as `report` would.
			return writeReport(out, reportOut, false, stderr, stderr)
		},
	}
	w.register(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "the recording file to write (refuses an existing one)")
	cmd.Flags().StringVar(&attach, "attach", "", "also attach to this loader URL (as gpuwatch attach)")
	cmd.Flags().StringVar(&reportOut, "report", "", "at exit, also write the report (.html, .md or .json)")
	_ = cmd.Flags().MarkHidden("headless")
	_ = cmd.Flags().MarkHidden("record")
	return cmd
}

func newReplayCmd(stdout, stderr io.Writer) *cobra.Command {
	var headless, asJSON bool
	var speed float64
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Play a recording back, in the dashboard or as lines; verdicts are recomputed from the recorded frames",
		Example: `  gpuwatch replay run.jsonl
  gpuwatch replay run.jsonl --speed 8
  gpuwatch replay run.jsonl --headless --json > verdicts.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if speed <= 0 || speed > 64 {
				return usageErrorf(cmd, "--speed %v: want more than 0 and at most 64", speed)
			}
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			rec, err := report.ReadRecording(f)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			for _, w := range rec.Warnings {
				fmt.Fprintf(stderr, "gpuwatch: %s: %s\n", args[0], w)
			}
			if len(rec.Frames) == 0 {
				return fmt.Errorf("%s: no frame recorded", args[0])
			}
			if headless || asJSON || !isTerminal(stdout) {
				return replayLines(rec, asJSON, stdout)
			}
			return replayDashboard(cmd.Context(), rec, args[0], speed, stdout)
		},
	}
	cmd.Flags().BoolVar(&headless, "headless", false, "print one line per frame, as fast as they are read (default when stdout is not a terminal)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "with --headless: JSON lines, verdicts recomputed")
	cmd.Flags().Float64Var(&speed, "speed", 1, "playback speed in the dashboard (0.5 to 64)")
	return cmd
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// replayLines recomputes each frame's verdict with a fresh Diagnoser and
// prints the frames with their scenario lines in time order.
func replayLines(rec *report.Recording, asJSON bool, stdout io.Writer) error {
	d := diagnose.NewDiagnoser(diagnose.DefaultThresholds())
	jw := report.NewJSONWriter(stdout)
	notes := rec.Scenarios
	for i := range rec.Frames {
		f := &rec.Frames[i].Frame
		for len(notes) > 0 && !notes[0].Time.After(f.Time) {
			var err error
			if asJSON {
				err = jw.WriteNote(notes[0])
			} else {
				err = report.WriteNoteLine(stdout, notes[0])
			}
			if err != nil {
				return err
			}
			notes = notes[1:]
		}
		v := d.Observe(f)
		var err error
		if asJSON {
			err = jw.WriteFrame(f, &v)
		} else {
			err = report.WriteLine(stdout, f, &v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// replayDashboard plays the recording in the dashboard, with the replay
// keys: pause, seek, speed.
func replayDashboard(ctx context.Context, rec *report.Recording, name string, speed float64, stdout io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates := make(chan tui.Update)
	pl := &player{frames: rec.Frames, speed: speed, cmds: make(chan playerCmd, 16)}
	model := tui.New(tui.Options{Updates: updates, Title: "replay of " + name, Interval: time.Second, Replay: &tui.Replay{
		Pause: func(p bool) { pl.send(playerCmd{pause: &p}) },
		Seek:  func(by time.Duration) { pl.send(playerCmd{seek: by}) },
		Speed: pl.scale,
	}})
	p := tea.NewProgram(model, tea.WithContext(ctx), tea.WithOutput(stdout), tea.WithFPS(10), tea.WithoutSignalHandler()) // see runDashboard
	go pl.run(ctx, updates)
	_, err := p.Run()
	if err == nil || errors.Is(err, tea.ErrProgramKilled) || errors.Is(err, tea.ErrInterrupted) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// player plays recorded frames at their recorded pace × speed. Its waits
// between frames are the playback clock.
type player struct {
	frames []report.Recorded
	cmds   chan playerCmd
	mu     sync.Mutex
	speed  float64
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

// scale multiplies the speed (kept within ×0.5 … ×16) and returns it.
func (pl *player) scale(f float64) float64 {
	pl.mu.Lock()
	pl.speed = min(16, max(0.5, pl.speed*f))
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
func (pl *player) run(ctx context.Context, updates chan<- tui.Update) {
	defer close(updates)
	frames := pl.frames
	d := diagnose.NewDiagnoser(diagnose.DefaultThresholds())
	send := func(i int, reset bool) bool {
		f := &frames[i].Frame
		select {
		case updates <- tui.Update{Frame: f, Verdict: d.Observe(f), Reset: reset}:
			return true
		case <-ctx.Done():
			return false
		}
	}
	seekTo := func(i int) bool {
		d = diagnose.NewDiagnoser(diagnose.DefaultThresholds())
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
