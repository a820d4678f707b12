package tui

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// snapshot is the model's state and screen right after it handled a
// message.
type snapshot struct {
	frames int
	screen string
	paused bool
}

// spy wraps the model and reports a snapshot after every message, so flows
// wait on what the model did, not on how the renderer diffed the screen.
type spy struct {
	*Model
	snaps chan snapshot
}

func (s spy) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := s.Model.Update(msg)
	s.snaps <- snapshot{frames: s.Model.hist.Len(), screen: ansi.Strip(s.Model.Render()), paused: s.Model.paused}
	return s, cmd
}

type flowT struct {
	t     *testing.T
	tm    *teatest.TestModel
	ch    chan Feed
	snaps chan snapshot
	last  snapshot
	m     *Model
}

// flow starts the dashboard in teatest at 100×30 with an ASCII colour
// profile, fed through its channel like the live session.
func flow(t *testing.T, opt Options) *flowT {
	t.Helper()
	ch := make(chan Feed)
	opt.Updates = ch
	if opt.Interval == 0 {
		opt.Interval = time.Second
	}
	m := New(opt)
	snaps := make(chan snapshot, 1024)
	tm := teatest.NewTestModel(t, spy{m, snaps}, teatest.WithInitialTermSize(100, 30),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	return &flowT{t: t, tm: tm, ch: ch, snaps: snaps, m: m}
}

// until reads snapshots until one satisfies ok; five seconds without one
// fails the test.
func (f *flowT) until(what string, ok func(snapshot) bool) {
	f.t.Helper()
	if ok(f.last) {
		return
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case s := <-f.snaps:
			f.last = s
			if ok(s) {
				return
			}
		case <-deadline:
			f.t.Fatalf("never saw %s; last screen:\n%s", what, f.last.screen)
		}
	}
}

func (f *flowT) sees(text string) {
	f.t.Helper()
	f.until(text, func(s snapshot) bool { return strings.Contains(s.screen, text) })
}

// frame sends a frame and waits until the model has taken it.
func (f *flowT) frame(i int, kind diagnose.Kind, evidence string) {
	f.t.Helper()
	n := f.last.frames
	fr := &sample.Frame{Time: t0.Add(time.Duration(i) * time.Second), Unavailable: map[sample.Source]string{sample.SourceGPU: "none"},
		CPU: &sample.CPU{BusyPct: 20, Cores: []sample.Core{{ID: 0, BusyPct: 20}, {ID: 1, BusyPct: 20}}}}
	f.ch <- Feed{Frame: fr, Verdict: diagnose.Verdict{Kind: kind, Since: fr.Time, Confidence: 0.9, Evidence: []diagnose.Evidence{{Text: evidence}}}}
	f.until("the frame taken", func(s snapshot) bool { return s.frames > n })
}

func (f *flowT) press(k string) {
	switch k {
	case "space":
		f.tm.Send(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
	case "tab":
		f.tm.Send(tea.KeyPressMsg{Code: tea.KeyTab})
	case "enter":
		f.tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	case "esc":
		f.tm.Send(tea.KeyPressMsg{Code: tea.KeyEscape})
	case "backspace":
		f.tm.Send(tea.KeyPressMsg{Code: tea.KeyBackspace})
	default:
		f.tm.Type(k)
	}
}

func (f *flowT) quit() {
	f.press("q")
	f.tm.WaitFinished(f.t, teatest.WithFinalTimeout(5*time.Second))
}

func TestFlowHelpDetailsFocusZoom(t *testing.T) {
	f := flow(t, Options{})
	f.frame(0, diagnose.GPUStarved, "the training loop waits 71 %")
	f.sees("GPU_STARVED")
	f.press("?")
	f.sees("gpuwatch keys")
	f.press("?")
	f.sees("waits 71 %")
	f.press("d")
	f.sees("What to change")
	f.press("esc")
	f.sees("─ GPU ")
	f.press("tab")
	f.press("enter")
	f.sees("CPU (enter: back)")
	f.until("the zoom on CPU alone", func(s snapshot) bool { return !strings.Contains(s.screen, "─ Loader") })
	f.press("enter")
	f.sees("─ Loader")
	f.press("e")
	f.sees("export: not available here")
	f.quit()
}

func TestFlowPauseFreezesTheView(t *testing.T) {
	f := flow(t, Options{})
	f.frame(0, diagnose.Healthy, "alpha evidence")
	f.press("space")
	f.until("paused", func(s snapshot) bool { return s.paused })
	f.sees("PAUSED")
	f.frame(1, diagnose.CPUSaturated, "bravo evidence")
	f.frame(2, diagnose.CPUSaturated, "charlie evidence")
	if !strings.Contains(f.last.screen, "alpha evidence") || strings.Contains(f.last.screen, "CPU_SATURATED") {
		t.Fatalf("the view moved while paused:\n%s", f.last.screen)
	}
	if f.last.frames != 3 {
		t.Fatalf("sampling stopped while paused: %d frames kept", f.last.frames)
	}
	f.press("space")
	f.sees("charlie evidence")
	f.quit()
}

// TestFlowAPausedReplaySeeks (a review): the player stops on a pause, and
// a seek while paused sends the frame sought: the view shows it (it kept
// the frame before while the position moved).
func TestFlowAPausedReplaySeeks(t *testing.T) {
	f := flow(t, Options{Replay: &Replay{Pause: func(bool) {}, Seek: func(time.Duration) {}, Speed: func(x float64) float64 { return x }}})
	f.frame(20, diagnose.IOBound, "alpha evidence")
	f.press("space")
	f.until("paused", func(s snapshot) bool { return s.paused })
	f.tm.Send(tea.KeyPressMsg{Code: tea.KeyLeft})
	f.frame(10, diagnose.CPUSaturated, "bravo evidence") // the frame the seek found
	f.sees("bravo evidence")
	f.quit()
}

func TestFlowResizeTinyAndBack(t *testing.T) {
	f := flow(t, Options{})
	f.frame(0, diagnose.IOBound, "nvme0n1 is 99 % busy")
	f.sees("IO_BOUND")
	f.tm.Send(tea.WindowSizeMsg{Width: 30, Height: 8})
	f.sees("terminal too small: 30×8")
	f.tm.Send(tea.WindowSizeMsg{Width: 120, Height: 40})
	f.sees("nvme0n1 is 99 % busy")
	f.quit()
}

func TestFlowIntervalKeys(t *testing.T) {
	var got []time.Duration
	f := flow(t, Options{SetInterval: func(d time.Duration) { got = append(got, d) }})
	f.frame(0, diagnose.Healthy, "x")
	f.press("+")
	f.sees("interval 500ms")
	f.press("-")
	f.press("-")
	f.sees("interval 2s")
	f.quit()
	if len(got) != 3 || got[0] != 500*time.Millisecond || got[2] != 2*time.Second {
		t.Fatalf("intervals asked for: %v", got)
	}
}

func TestFlowMouseWheelScrollsTheFocusedPanel(t *testing.T) {
	f := flow(t, Options{})
	f.frame(0, diagnose.Healthy, "x")
	for i := 0; i < 3; i++ {
		f.press("tab") // GPU → CPU → Loader → Processes
	}
	f.tm.Send(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	f.quit()
	if f.m.scroll[pProcs] != 3 {
		t.Fatalf("scroll = %v", f.m.scroll)
	}
}

func TestQuitRestoresTheTerminal(t *testing.T) {
	f := flow(t, Options{})
	f.frame(0, diagnose.Healthy, "x")
	teatest.WaitFor(t, f.tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("\x1b[?1049h")) },
		teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(5*time.Millisecond))
	f.press("q")
	out, err := io.ReadAll(f.tm.FinalOutput(t, teatest.WithFinalTimeout(5*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	// The alternate screen is left and the cursor shown again.
	if s := string(out); !strings.Contains(s, "\x1b[?1049l") || !strings.Contains(s, "\x1b[?25h") {
		t.Fatalf("terminal not restored; output ends %q", s[max(0, len(s)-200):])
	}
}

// TestColourProfiles: the view is drawn in full colour and the program
// downsamples to the terminal's profile — none (NO_COLOR, ASCII), 16, 256
// or 24-bit. Which profile a real terminal gets from its environment is
// checked in a real terminal by scripts/tmux-smoke.sh.
func TestColourProfiles(t *testing.T) {
	for _, tc := range []struct {
		profile       colorprofile.Profile
		colour, rgb24 bool
	}{
		{colorprofile.Ascii, false, false},
		{colorprofile.ANSI, true, false},
		{colorprofile.ANSI256, true, false},
		{colorprofile.TrueColor, true, true},
	} {
		ch := make(chan Feed, 1)
		snaps := make(chan snapshot, 64)
		tm := teatest.NewTestModel(t, spy{New(Options{Updates: ch}), snaps}, teatest.WithInitialTermSize(100, 30),
			teatest.WithProgramOptions(tea.WithColorProfile(tc.profile)))
		ch <- frameOf(0, diagnose.CPUSaturated, "all 2 cores are 99 % busy")
		for s := range snaps {
			if s.frames > 0 {
				break
			}
		}
		tm.Send(tea.KeyPressMsg{Code: 'q', Text: "q"})
		b, err := io.ReadAll(tm.FinalOutput(t, teatest.WithFinalTimeout(5*time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		out := string(b)
		if !strings.Contains(out, "CPU_SATURATED") {
			t.Fatalf("%v: the frame was not drawn", tc.profile)
		}
		rgb := strings.Contains(out, "[38;2;")
		colour := rgb || strings.Contains(out, "[38;5;") || strings.Contains(out, "[91m") || strings.Contains(out, "[31m") || strings.Contains(out, ";91m") || strings.Contains(out, ";31m")
		if colour != tc.colour || rgb != tc.rgb24 {
			t.Errorf("%v: colour %v (want %v), 24-bit %v (want %v)", tc.profile, colour, tc.colour, rgb, tc.rgb24)
		}
	}
}

func frameOf(i int, kind diagnose.Kind, text string) Feed {
	f := &sample.Frame{Time: t0.Add(time.Duration(i) * time.Second), Unavailable: map[sample.Source]string{sample.SourceGPU: "none"},
		CPU: &sample.CPU{BusyPct: 99, Cores: []sample.Core{{ID: 0, BusyPct: 99}, {ID: 1, BusyPct: 99}}}}
	return Feed{Frame: f, Verdict: diagnose.Verdict{Kind: kind, Since: f.Time, Confidence: 0.9, Evidence: []diagnose.Evidence{{Text: text}}}}
}

func TestFlowReplayKeysDriveThePlayer(t *testing.T) {
	var paused []bool
	var seeks []time.Duration
	var speeds []float64
	speed := 1.0
	f := flow(t, Options{Replay: &Replay{
		Pause: func(p bool) { paused = append(paused, p) },
		Seek:  func(by time.Duration) { seeks = append(seeks, by) },
		Speed: func(x float64) float64 { speed *= x; speeds = append(speeds, speed); return speed },
	}})
	f.frame(0, diagnose.Healthy, "x")
	f.sees("seek 10s")
	f.press("space")
	f.tm.Send(tea.KeyPressMsg{Code: tea.KeyLeft})
	f.sees("seek -10s")
	f.tm.Send(tea.KeyPressMsg{Code: tea.KeyRight})
	f.press("]")
	f.sees("speed ×2")
	f.press("[")
	f.press("[")
	f.sees("speed ×0.5")
	f.press("tab") // focus still moves
	f.press("?")
	f.sees("In a replay")
	f.quit()
	if len(paused) != 1 || !paused[0] || len(seeks) != 2 || seeks[0] != -10*time.Second || seeks[1] != 10*time.Second || len(speeds) != 3 {
		t.Fatalf("paused %v seeks %v speeds %v", paused, seeks, speeds)
	}
	if f.m.focus != pCPU {
		t.Fatalf("tab did not move focus: %v", f.m.focus)
	}
}

// TestFlowIntervalKeysKeepToTheFlagsRange: from an interval outside the
// old 250ms–10s key range, + and - move the right way and stop at
// --interval's own bounds (50ms, 1h).
func TestFlowIntervalKeysKeepToTheFlagsRange(t *testing.T) {
	var got []time.Duration
	f := flow(t, Options{Interval: 20 * time.Second, SetInterval: func(d time.Duration) { got = append(got, d) }})
	f.frame(0, diagnose.Healthy, "x")
	f.press("-")
	f.sees("interval 40s")
	f.press("=")
	f.press("=")
	f.sees("interval 10s")
	f.quit()
	if len(got) != 3 || got[0] != 40*time.Second || got[1] != 20*time.Second {
		t.Fatalf("intervals asked for: %v", got)
	}
	m := New(Options{Interval: 60 * time.Millisecond, SetInterval: func(time.Duration) {}})
	for range 3 {
		m.Update(tea.KeyPressMsg{Code: '+', Text: "+"})
	}
	if m.interval != MinInterval {
		t.Errorf("after + at 60ms: %v, want the floor %v", m.interval, MinInterval)
	}
	m = New(Options{Interval: 40 * time.Minute, SetInterval: func(time.Duration) {}})
	m.Update(tea.KeyPressMsg{Code: '-', Text: "-"})
	if m.interval != MaxInterval {
		t.Errorf("after - at 40m: %v, want the ceiling %v", m.interval, MaxInterval)
	}
}

// TestFlowRanksPanelFocusesARank: a job of two ranks shows a row each with
// the straggler marked; ↓ and enter on the loader panel detail rank 1 and
// hand its URL to FocusRank (its profile is taken); esc hands it back.
func TestFlowRanksPanelFocusesARank(t *testing.T) {
	focused := make(chan string, 4)
	f := flow(t, Options{FocusRank: func(url string) { focused <- url }})
	fr := &sample.Frame{Time: t0, Unavailable: map[sample.Source]string{sample.SourceGPU: "none"},
		CPU: &sample.CPU{BusyPct: 99, Cores: []sample.Core{{ID: 0, BusyPct: 99}, {ID: 1, BusyPct: 99}}}}
	w0, w1, s0, s1 := 0.01, 0.55, 0.044, 0.020
	l1 := &sample.Loader{Source: "http://127.0.0.1:6062", WaitShare: &w1, StepMeanMs: f64(20), BatchesPerSec: 24, Workers: iptr(0)}
	fr.Ranks = []sample.Rank{
		{Rank: 0, URL: "http://127.0.0.1:6061", PID: 100, Connected: true, WaitShare: &w0, StepSec: &s0, SamplesPerSec: 768, Workers: iptr(2),
			Loader: &sample.Loader{Source: "http://127.0.0.1:6061", WaitShare: &w0}},
		{Rank: 1, URL: "http://127.0.0.1:6062", PID: 101, Connected: true, WaitShare: &w1, StepSec: &s1, SamplesPerSec: 768, Workers: iptr(0), Pacing: true, Loader: l1},
	}
	fr.Loader = l1
	one := 1
	f.ch <- Feed{Frame: fr, Verdict: diagnose.Verdict{Kind: diagnose.SingleCoreMaxed, Since: t0, Straggler: &one,
		Evidence: []diagnose.Evidence{{Text: "rank 1 waits 55 % of its time for its next batch"}}}}
	f.sees("rank 1   ")
	f.sees("straggler: single_core_maxed ◀")
	f.sees("waits in all-reduce") // rank 0: its step is 2.2× rank 1's
	f.sees("pacing: http://127.0.0.1:6062")
	f.press("tab")
	f.press("tab") // the loader panel
	f.press("j")   // row 1
	f.press("enter")
	f.sees("rank 1 · http://127.0.0.1:6062 · pid 101")
	if got := <-focused; got != "http://127.0.0.1:6062" {
		t.Errorf("FocusRank(%q), want rank 1's URL", got)
	}
	f.press("esc")
	f.sees("pacing: ")
	if got := <-focused; got != "" {
		t.Errorf("after esc FocusRank(%q), want \"\"", got)
	}
	f.quit()
}

// TestFlowRecordingStaysInTheStatusBar: while r records, every frame's
// status bar says so with the time recorded, long after the "recording
// to" message would have faded; when it stops, the mark goes.
func TestFlowRecordingStaysInTheStatusBar(t *testing.T) {
	f := flow(t, Options{})
	rec := &Recording{Path: "gpuwatch-20261124-120000.jsonl", Since: t0}
	for i := range 50 {
		fd := frameOf(i, diagnose.Healthy, "fine")
		fd.Recording = rec
		n := f.last.frames
		f.ch <- fd
		f.until("the frame taken", func(s snapshot) bool { return s.frames > n })
	}
	f.sees("● REC 00:49 gpuwatch-20261124-120000.jsonl")
	f.ch <- frameOf(50, diagnose.Healthy, "fine")
	f.until("the mark gone", func(s snapshot) bool { return !strings.Contains(s.screen, "REC") })
	f.quit()
}

// TestFlowProcessFilterAndOrderKeys: / types a filter (other keys go to
// it, not to the dashboard: q does not quit), enter keeps it, esc clears
// it; o cycles the order and t the tree.
func TestFlowProcessFilterAndOrderKeys(t *testing.T) {
	f := flow(t, Options{})
	fr := procFrame()
	fr.Time = t0
	f.ch <- Feed{Frame: fr, Verdict: diagnose.Verdict{Kind: diagnose.Healthy, Since: t0}}
	f.sees("by CPU")
	f.press("/")
	f.press("q")
	f.press("u")
	f.sees("filter: qu▏")
	f.press("backspace")
	f.press("enter")
	f.sees(`filter "q"`)
	f.press("o")
	f.sees("by RSS")
	f.press("t")
	f.sees("· tree")
	f.press("f")
	f.press("esc")
	f.until("the filter cleared", func(s snapshot) bool { return !strings.Contains(s.screen, "filter") })
	f.quit()
}

// TestPauseFreezesTheTrainRow (a review): the loader panel's batches kept
// coming in while the rest of the view was paused.
func TestPauseFreezesTheTrainRow(t *testing.T) {
	m := New(Options{})
	feed := func(i int) Feed {
		u := frameOf(i, diagnose.Healthy, "x")
		u.Frame.Loader = &sample.Loader{Source: "embedded", Timeline: []sample.BatchTiming{{WaitMs: float64(i), StepMs: 10}}}
		return u
	}
	m.Observe(feed(0))
	m.togglePause()
	m.Observe(feed(1))
	m.Observe(feed(2))
	if got := m.view(pLoader).batches; len(got) != 1 || got[0].WaitMs != 0 {
		t.Fatalf("paused, the train row drew %+v", got)
	}
	m.togglePause()
	if got := m.view(pLoader).batches; len(got) != 3 {
		t.Fatalf("after the pause, %d batches", len(got))
	}
}

// TestOverlaysScrollOnAShortTerminal (a review): at 60×16, the smallest
// size drawn, the help stopped before its last keys and the details
// before their advice, with no way to reach them.
func TestOverlaysScrollOnAShortTerminal(t *testing.T) {
	m := New(Options{})
	u := frameOf(0, diagnose.CPUSaturated, "all 2 cores are 99 % busy")
	for i := range 14 {
		u.Verdict.Evidence = append(u.Verdict.Evidence, diagnose.Evidence{Text: fmt.Sprintf("evidence %d", i)})
	}
	u.Verdict.Advice = []string{"the advice at the end"}
	m.Observe(u)
	m.w, m.h = 60, 16
	press := func(s string) {
		code := []rune(s)[0]
		switch s {
		case "down":
			code = tea.KeyDown
		case "pgdown":
			code = tea.KeyPgDown
		}
		msg := tea.KeyPressMsg{Code: code}
		if len(s) == 1 {
			msg.Text = s
		}
		m.Update(msg)
	}
	for _, c := range []struct{ open, want string }{{"?", "quit"}, {"d", "the advice at the end"}} {
		press(c.open)
		screen := ansi.Strip(m.Render())
		all := strings.Join(map[string][]string{"?": m.helpLines(), "d": m.detailLines(60)}[c.open], "\n")
		if strings.Count(all, "\n") < 16 {
			t.Fatalf("%s: %d lines, not longer than the screen", c.open, strings.Count(all, "\n")+1)
		}
		if !strings.Contains(screen, "↑/↓ pgup/pgdn scroll") {
			t.Errorf("%s: no way to scroll said:\n%s", c.open, screen)
		}
		for range 10 {
			press("pgdown")
		}
		last := ansi.Strip(m.Render())
		lines := strings.Split(all, "\n")
		if end := []rune(strings.TrimSpace(ansi.Strip(lines[len(lines)-1]))); !strings.Contains(last, string(end[:min(len(end), 25)])) {
			t.Errorf("%s: scrolled to the end, the last line %q not shown:\n%s", c.open, string(end), last)
		}
		if strings.Contains(ansi.Strip(all), c.want) && !strings.Contains(screen+last, c.want) && !strings.Contains(ansi.Strip(m.Render()), c.want) {
			t.Errorf("%s: %q is in the overlay but not reached", c.open, c.want)
		}
		if !strings.Contains(ansi.Strip(all), c.want) {
			t.Errorf("%s: the overlay lacks %q", c.open, c.want)
		}
		press("q") // closes nothing: q quits; esc closes
		m.Update(tea.KeyPressMsg{Code: tea.KeyEscape})
	}
}
