package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"

	tea "charm.land/bubbletea/v2"

	"github.com/charmbracelet/colorprofile"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session/job"
	"github.com/gpuwatch/gpuwatch/tui"
)

// runDashboard runs the session's loop with the dashboard as one of its
// observers: frames reach the model over a channel the model drains with a
// command. Nothing else writes to the terminal meanwhile: logs go to a
// file. On quit, a signal or a panic in the loop, the program stops and
// the terminal is restored.
func runDashboard(ctx context.Context, o Options, w *Watch, rec *recorder, notes <-chan sample.Note) error {
	set, sampler := w.set, w.sampler
	logFile := openLog()
	if logFile != nil {
		defer logFile.Close()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	title := set.title
	if title == "" {
		title = "this machine"
	}
	d := &dashboard{updates: make(chan tui.Feed, 1), job: o.Job, rec: rec}
	rec.notify, rec.onFail = d.tell, d.tell
	kept := &keptFrames{version: o.Version, thresholds: o.Thresholds}
	opt := tui.Options{Updates: d.updates, Title: title, Interval: o.Interval, SetInterval: sampler.SetInterval, Thresholds: o.Thresholds,
		Record: rec.toggle, Export: kept.export, Plain: PlainTerminal()}
	if set.attached != nil {
		opt.FocusRank = set.attached.Ranks.Focus
	}
	if j := o.Job; j != nil {
		// The job is gpuwatch's child: a quit key interrupts it, as
		// Ctrl-C would without gpuwatch; the view stays until it ends.
		opt.Quit = func() (bool, string) {
			select {
			case <-j.Done():
				return true, ""
			default:
				return false, j.Interrupt()
			}
		}
	}
	model := tui.New(opt)
	obs := append([]Observer{rec, kept}, o.Observers...)
	obs = append(obs, d) // last: it waits for the model
	log.Printf("dashboard started: %s", title)
	err := RunProgram(ctx, model, o.Stdout, o.NoColor, func(ctx context.Context, kill func()) error {
		defer kill() // the loop ended (the duration, an error): so does the view
		d.ctx = ctx
		return w.Loop(ctx, notes, obs...)
	})
	if err != nil {
		log.Printf("dashboard stopped: %v", err)
	} else {
		log.Print("dashboard stopped")
	}
	return err
}

// dashboard is the observer that feeds the model.
type dashboard struct {
	ctx     context.Context
	updates chan tui.Feed
	job     *job.Job // gpuwatch run's command, nil otherwise
	rec     *recorder
	mu      sync.Mutex
	note    string // for the next frame's status bar
	// scenario is the demo's scenario running now, for every frame's header.
	scenario *tui.Scenario
}

func (d *dashboard) tell(s string) {
	log.Print(s)
	d.mu.Lock()
	d.note = s
	d.mu.Unlock()
}

func (d *dashboard) Frame(f *sample.Frame, v diagnose.Verdict) error {
	d.mu.Lock()
	note, scenario := d.note, d.scenario
	d.note = ""
	d.mu.Unlock()
	feed := tui.Feed{Frame: f, Verdict: v, Note: note, Scenario: scenario}
	if path, since, ok := d.rec.current(); ok {
		if since.IsZero() {
			since = f.Time
		}
		feed.Recording = &tui.Recording{Path: path, Since: since}
	}
	if j := d.job; j != nil {
		feed.Job = &tui.JobView{Command: j.Command(), PID: j.PID(), Log: j.LogNote(), Tail: j.Tail(8)}
		select {
		case <-j.Done():
			how, at := j.Exit()
			feed.Job.Exited = fmt.Sprintf("%s at %s — q quits", how, at.Format("15:04:05"))
		default:
			if t := f.Target; t != nil && t.Stopped {
				feed.Job.Exited = "is stopped (SIGSTOP): kill -CONT continues it"
			}
		}
	}
	select {
	case d.updates <- feed:
	case <-d.ctx.Done():
	}
	return nil
}

func (d *dashboard) Note(n sample.Note) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch n := n.(type) {
	case sample.Scenario:
		d.note = "scenario " + n.Name
		d.scenario = &tui.Scenario{Name: n.Name}
		if n.Until != nil {
			d.scenario.Until = *n.Until
		}
	case sample.Event:
		d.note = n.Name + ": " + sample.Printable(n.Detail)
	}
	return nil
}

// colorProfiled is a model that renders in a terminal's colours
// (tui.Styles.For).
type colorProfiled interface {
	SetColorProfile(colorprofile.Profile)
}

// RunProgram runs a bubbletea program on out while work runs beside it,
// and returns when both are done. work gets a context that ends with the
// program, and a kill function that stops the program. A quit key, a signal (main's context) or the end of work stops
// it cleanly (nil); a panic in work restores the terminal first and comes
// back as an error with its stack.
//
// The screen (screen.go) draws each view as the model handles a message:
// a key shows at once. Signals are ours alone: bubbletea v2.0.10's own
// handler can block forever sending a quit message to an event loop that
// our cancelled context already ended.
//
// Colour follows the terminal: colorprofile reads TERM, COLORTERM and
// NO_COLOR, and the screen's writer draws in what the terminal supports (true colour, 256, 16,
// none): a model that renders in them itself (colorProfiled) is told
// which, any other's frames are converted by colorprofile's writer.
// noColor (--no-color) draws no colour, as NO_COLOR=1 does.
func RunProgram(ctx context.Context, m tea.Model, out io.Writer, noColor bool, work func(ctx context.Context, kill func()) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The screen draws (screen.go); bubbletea reads the keys and the
	// mouse. Without its renderer it neither makes the terminal raw nor
	// follows its size: the terminal does. Its renderer's timer, which
	// cannot be stopped, looks once a second at an output it never has.
	tty, err := openTerminal(out)
	if err != nil {
		return err
	}
	defer tty.close()
	profile := colorprofile.Detect(out, os.Environ())
	if noColor || profile < colorprofile.Ascii {
		// NoTTY (TERM=dumb or unset) would strip the screen's own
		// sequences too: no colour, but a screen.
		profile = colorprofile.Ascii
	}
	// A model that renders in the terminal's colours (tui.Styles.For)
	// is written as it is; any other through colorprofile's writer, which
	// parses every frame to convert it.
	var w io.Writer = &colorprofile.Writer{Forward: out, Profile: profile}
	if pm, ok := m.(colorProfiled); ok {
		pm.SetColorProfile(profile)
		w = out
	}
	scr := &screen{out: w}
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(tty.in), tea.WithOutput(out), tea.WithoutRenderer(), tea.WithFPS(1),
		tea.WithoutSignalHandler(), tea.WithColorProfile(profile), tea.WithWindowSize(tty.w, tty.h)}
	dm := &drawnModel{Model: m, s: scr, t: tty}
	p := tea.NewProgram(dm, opts...)
	resizes := make(chan struct{})
	go func() {
		defer close(resizes)
		tty.forwardResizes(ctx, p)
	}()
	workErr := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				workErr <- fmt.Errorf("internal error (the terminal was restored): %v\n%s", r, debug.Stack())
				p.Kill() // restores the terminal
			}
		}()
		workErr <- work(ctx, p.Kill)
	}()
	_, err = p.Run()
	// The terminal back before work winds down: what it prints then
	// reads as lines, and Ctrl-C works again.
	dm.restore()
	cancel()
	<-resizes // ends with ctx: Send returns once the program has
	werr := <-workErr
	switch {
	case dm.panicked != nil:
		return dm.panicked
	case werr != nil:
		return werr
	case errors.Is(err, tea.ErrProgramPanic):
		return err
	case err == nil || errors.Is(err, tea.ErrProgramKilled) || errors.Is(err, tea.ErrInterrupted) || errors.Is(err, context.Canceled):
		return nil
	}
	return err
}

// PlainTerminal says whether the terminal draws only ASCII: TERM=dumb, or
// a locale whose character set is not UTF-8 (LC_ALL, else LC_CTYPE,
// else LANG, as C's setlocale reads them: "C" or "POSIX", and a named
// locale without UTF-8, as htop and less take them). The dashboard then
// draws no box or block glyphs. A review: LANG=C drew them all.
func PlainTerminal() bool {
	return os.Getenv("TERM") == "dumb" || !utf8Locale(os.Getenv)
}

// utf8Locale says whether the locale the environment names has UTF-8 as
// its character set; none set reads as UTF-8 (Go's strings are, and
// most terminals are).
func utf8Locale(getenv func(string) string) bool {
	loc := cmp.Or(getenv("LC_ALL"), getenv("LC_CTYPE"), getenv("LANG"))
	if loc == "" {
		return true
	}
	l := strings.ToLower(loc)
	return strings.Contains(l, "utf-8") || strings.Contains(l, "utf8")
}

// openLog points the log package at a file under the user's cache folder,
// so nothing but the view reaches the terminal. It returns nil (logs
// discarded) when the folder is not writable.
func openLog() *os.File {
	log.SetOutput(io.Discard)
	dir, err := os.UserCacheDir()
	if err != nil {
		return nil
	}
	dir = filepath.Join(dir, "gpuwatch")
	if os.MkdirAll(dir, 0o755) != nil {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(dir, "gpuwatch.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil
	}
	log.SetOutput(f)
	return f
}
