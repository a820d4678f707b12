// Package session owns gpuwatch's one frame loop: the Sampler's frames go
// through the Diagnoser to every observer — the headless writer, the
// recorder, the dashboard, the exporter, the kept frames for a live report
// — together with the session's notes (scenario switches, events). Commands
// configure a session (Options) and run it; nothing else loops over frames.
// NewWatch is the one assembler of a live session's sources. It also holds
// the replay player and the embedded loader's adapter. The job's
// supervision lives in session/job, tune and sweep in session/tune.
//
// It may import sample, probes, diagnose, lines, recording, report,
// exporter, tui, loader, session/job and session/predlog (tune's record of
// its predictions, said on a verdict that predicts); nothing imports it
// but the command line and session/tune. docs/architecture.md draws the map.
package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"golang.org/x/term"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/lines"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session/job"
	"github.com/gpuwatch/gpuwatch/session/predlog"
)

// Options configure a session: what to watch, how often, for how long,
// and where its frames go. Run reads them and changes nothing in them.
// Beside the clock, the thresholds and the notes, the fields come in four
// groups, each its own struct: Target (what is watched), Output (where
// frames go), Recording (the file they are kept in) and Sources (the
// loaders attached, the loop sampler, the command's own probes). The
// groups are embedded, so o.PID reads as before; a literal names its
// group: Options{Target: Target{PID: 1}}.
type Options struct {
	Interval time.Duration // between frames
	Duration time.Duration // 0: until ctx ends
	// Thresholds are the diagnosis's and the view's limits.
	Thresholds diagnose.Thresholds
	// Notes are the command's non-frame lines (scenario switches), in
	// time order with the frames; closing it is fine.
	Notes <-chan sample.Note
	Target
	Output
	Recording
	Sources
}

// Target is what a session watches: a process tree, a job's cgroup and
// GPUs, the host, read from Roots.
type Target struct {
	// PID focuses the process view on a process tree (--pid, run's job);
	// Own is the command's own process, the job when PID is 0 and no
	// loader or training process is found (the demo's embedded loader).
	PID, Own int
	// PIDWhy says why PID is the process watched (default "--pid").
	PIDWhy string
	// Job is the command gpuwatch run started: the view follows its tree
	// and says when it exits; the headless session ends with it.
	Job *job.Job
	// ExitWithJob ends the session after the first frame that sees PID's
	// process gone (--exit-with-job).
	ExitWithJob bool
	// Cgroup names the job's cgroup (--cgroup, --slurm-job) when it is not
	// the focused process's; CgroupSource says how it was found.
	Cgroup, CgroupSource string
	// GPUs are the job's GPUs (--gpus: indices or UUIDs); empty: its
	// CUDA_VISIBLE_DEVICES, else where NVML lists its processes.
	GPUs []string
	// Roots are where /proc and /sys are read (tests and containers
	// point them elsewhere).
	Roots probes.Roots
	// AllDisks and AllNet show every disk and interface, not only the
	// busy ones.
	AllDisks, AllNet bool
	// Node says gpuwatch watches the node for others (serve): its own
	// cgroup is never the job, even when it runs confined (a DaemonSet's
	// pod with resource limits); the job is the training process found.
	Node bool
}

// Output is where a session's frames go: the dashboard, lines or JSON
// lines, --once's summary, and the observers beside them.
type Output struct {
	// Title names what the dashboard watches ("demo: tour").
	Title string
	// Headless prints lines (JSON lines with JSON) instead of the
	// dashboard; it is implied when Stdout is not a terminal.
	Headless, JSON bool
	// NoColor draws the dashboard without colour (--no-color).
	NoColor bool
	// Once samples until the verdict settles (at most onceCap, or
	// Duration), prints one summary and returns ErrBottleneck when the
	// verdict is a problem.
	Once bool
	// Observers are told every frame with its verdict and every note,
	// after the recorder and the output, as they are: the exporter, serve's
	// kept Slurm frames. An error from one stops the session.
	Observers []Observer
	// Started, if set, is called once the session's sources are set up
	// (NewWatch: a loader named answered), before the first frame: serve
	// says where it serves then, and nothing when the session fails to
	// start.
	Started        func()
	Stdout, Stderr io.Writer
}

// Recording is the file a session keeps its frames, verdicts and notes in.
type Recording struct {
	// Record writes frames, verdicts and notes to this file (rotated past
	// RecordMaxSize). RecordRequired makes a failed recording fail the
	// session (the record command) instead of only stopping the recording.
	Record         string
	RecordMaxSize  int64
	RecordRequired bool
	// Version names the build in recordings and reports.
	Version string
}

// Sources say how a session reads the input pipeline beside the host's
// probes: the loaders it attaches to, the loop sampler, the command's own
// probes.
type Sources struct {
	// Attach names the loaders to attach to (URLs, discovery).
	Attach AttachTo
	// Loop samples the wait of a training loop nobody instrumented: the
	// training process in PID's tree, else the host's busiest.
	Loop bool
	// Hooked says the job runs with gpuwatch run's hook (it times every
	// DataLoader of its Python processes from its first batch): the loop
	// sampler then stands in for a Python process only before that batch.
	Hooked bool
	// Probes are the command's own sources beside the system's (the
	// embedded loader).
	Probes []probes.Probe
}

// Observer is told every frame with its verdict, and every note. An error
// stops the session.
type Observer interface {
	Frame(f *sample.Frame, v diagnose.Verdict) error
	Note(n sample.Note) error
}

// recordTaken says why o's recording would lose or refuse a file: its
// path exists (a dangling link too: the recorder opens it O_EXCL), or,
// with rotation on, the FILE.1 it would replace.
func recordTaken(o Options) error {
	ps := []string{o.Record}
	if o.RecordMaxSize > 0 {
		ps = append(ps, o.Record+".1")
	}
	for _, p := range ps {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("recording to %s: %s exists; record to a new file", o.Record, p)
		}
	}
	return nil
}

// Run samples until ctx ends or o.Duration passes, in the dashboard when
// stdout is a terminal and o.Headless is not set, else as lines. A clean
// stop (Ctrl-C, SIGTERM, the duration) returns nil.
func Run(ctx context.Context, o Options) error {
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	dashboard := !o.Headless && !o.JSON && !o.Once && IsTerminal(o.Stdout)
	rec := newRecorder(o)
	if o.Record != "" {
		if err := recordTaken(o); err != nil {
			return err
		}
		rec.start(o.Record)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := NewWatch(ctx, o)
	if err != nil {
		return err
	}
	defer w.Close()
	w.bias = biasLines{job: predlog.Line(predlog.LoaderJob), embedded: predlog.Line(predlog.LoaderEmbedded)} // once: tune's record on this machine
	limit := o.Duration
	if o.Once && limit == 0 {
		limit = onceCap
	}
	stopped := ctx // Ctrl-C, SIGTERM, q: ended before the duration
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	var once *Settle
	o.Observers = slices.Clip(o.Observers) // appends here are this session's
	if o.Once {
		once = &Settle{stop: cancel, need: o.Thresholds.MinFrames,
			profiles: (o.Attach.Discover || len(o.Attach.URLs) > 0) && !o.Attach.NoProfiles}
		if att := w.set.attached; att != nil {
			// Where the GPU is the limit, --once asks the hook for the
			// step's GPU time by itself, once, and its verdict waits for
			// it (issue 51 item 4).
			gp := &GPUProfileWhenBound{Pacing: att.Ranks.Pacing, Told: func(s string) { fmt.Fprintln(o.Stderr, "gpuwatch: --once asked for the GPU's time per step:", s) }}
			once.gpuProfile = gp
			o.Observers = append(o.Observers, gp)
		}
	}
	if o.ExitWithJob {
		o.Observers = append(o.Observers, exitWithJob(cancel))
	}
	notes := o.Notes
	if o.Job != nil {
		var stopNotes func()
		notes, stopNotes = JobNotes(ctx, o.Job, o.Notes, !dashboard, cancel)
		defer stopNotes()
	}
	if dashboard {
		err = runDashboard(ctx, o, w, rec, notes)
	} else {
		rec.notify = func(s string) { fmt.Fprintln(o.Stderr, "gpuwatch:", s) }
		if !o.RecordRequired { // else the session's error says it
			rec.onFail = rec.notify
		}
		obs := []Observer{rec}
		var lines *headless
		if once != nil {
			obs = append(obs, once)
		} else {
			lines = newHeadless(o.Stdout, o.JSON, o.Thresholds)
			obs = append(obs, lines)
		}
		err = w.Loop(ctx, notes, append(obs, o.Observers...)...)
		if err == nil && lines != nil && lines.frames == 0 && o.Record == "" && o.Job == nil && !o.Node && stopped.Err() == nil {
			// -d under the first frame printed nothing at all. A clean
			// stop still (exit 0): the duration ended it, as asked.
			fmt.Fprintf(o.Stderr, "gpuwatch: no frame came before --duration %v ended (the first comes after --interval %v): nothing written\n", o.Duration, o.Interval)
		}
	}
	return finish(o, rec, once, dashboard, err)
}

// ErrJobEndedFirst: gpuwatch run's command ended before the first frame;
// run exits with the command's status.
var ErrJobEndedFirst = errors.New("no frame came before the end")

// finish closes the recording and says what became of it, and prints
// --once's summary.
func finish(o Options, rec *recorder, once *Settle, dashboard bool, err error) error {
	path, n, recErr := rec.stop()
	if err == nil && once != nil {
		if o.Job != nil && !once.settled {
			select {
			case <-o.Job.Done():
				once.jobEnded, _ = o.Job.Exit()
			default:
			}
		}
		err = once.summary(o.Stdout, o.JSON)
		if once.frames == 0 && o.Job != nil {
			select {
			case <-o.Job.Done():
				// The command ended first (a missing module, a bad
				// argument): it, not gpuwatch, is what to look at.
				how, _ := o.Job.Exit()
				where := "its output, if any, is above"
				if n := o.Job.LogNote(); n != "" {
					where = "its output is in " + n // --job-log
				}
				err = fmt.Errorf("%w: the command %s before the first (after --interval %v); %s", ErrJobEndedFirst, how, o.Interval, where)
			default:
			}
		}
	}
	switch {
	case err != nil && !errors.Is(err, ErrBottleneck) && !errors.Is(err, ErrUnsettled):
		return err
	case recErr != nil && o.RecordRequired:
		return fmt.Errorf("recording %w", recErr)
	case recErr != nil:
		fmt.Fprintf(o.Stderr, "gpuwatch: recording %v\n", recErr)
	case path != "" && n == 0 && o.RecordRequired:
		return fmt.Errorf("no frame came before the end (the first comes after --interval %v): %s not written", o.Interval, path)
	case path != "" && n == 0:
		fmt.Fprintf(o.Stderr, "gpuwatch: no frame came before the end: %s not written\n", path)
	case path != "": // after the dashboard too: r's file is named on quit
		fmt.Fprintf(o.Stderr, "gpuwatch: recorded %s to %s\n", sample.Plural(n, "frame"), path)
	}
	return err
}

// loop is the session's one frame loop: each frame through the diagnoser
// to every observer, each note to every observer, until the sampler stops
// or an observer fails. bias, when not "", is an advice line added to
// every verdict that predicts (predlog.Line: how tune's predictions on
// this machine compared with what it measured). It owns the sampler's
// Run goroutine: on every return it cancels it and waits for it, so the
// caller may Close the sampler at once (docs/architecture.md,
// "Goroutines").
func loop(ctx context.Context, sampler *probes.Sampler, diag *diagnose.Diagnoser, bias biasLines, notes <-chan sample.Note, obs []Observer) error {
	frames := make(chan *sample.Frame, 1)
	errc := make(chan error, 1)
	ctx, cancel := context.WithCancel(ctx)
	go func() { errc <- sampler.Run(ctx, frames) }()
	ran, err := observe(diag, bias, notes, obs, frames, errc)
	cancel()
	if ran { // an observer's error: the sampler still runs
		<-errc
	}
	return err
}

// biasLines are tune's record on this machine in words, one for the
// steps over gpuwatch's own loader and one for those over users' jobs
// (predlog.Line); "" where there is nothing to say.
type biasLines struct{ job, embedded string }

// of is the line for frame f's loader: gpuwatch's own (demo, loader)
// or a job's.
func (b biasLines) of(f *sample.Frame) string {
	if l := f.Loader; l != nil && (l.Kind == "embedded" || l.Kind == "go") {
		return b.embedded
	}
	return b.job
}

// observe hands frames and notes to the observers until the sampler's Run
// returns (its error arrives on errc) or an observer fails; running says
// whether Run was still running then.
func observe(diag *diagnose.Diagnoser, bias biasLines, notes <-chan sample.Note, obs []Observer, frames <-chan *sample.Frame, errc <-chan error) (running bool, err error) {
	for {
		select {
		case n, ok := <-notes:
			if !ok {
				notes = nil // closed: never selected again
				continue
			}
			for _, o := range obs {
				if err := o.Note(n); err != nil {
					return true, err
				}
			}
		case f := <-frames:
			v := diag.Observe(f)
			if b := bias.of(f); b != "" && v.Predicted != nil {
				v.Advice = append(slices.Clip(v.Advice), b) // the diagnoser's slice is its own
			}
			for _, o := range obs {
				if err := o.Frame(f, v); err != nil {
					return true, err
				}
			}
		case err := <-errc:
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return false, nil // Ctrl-C, SIGTERM or the duration: a clean stop
			}
			return false, err
		}
	}
}

// headless writes a line (or a JSON line) per frame and per note.
type headless struct {
	w      io.Writer
	jw     *lines.JSONWriter
	th     diagnose.Thresholds // what the line marks hot or high
	frames int
}

func newHeadless(w io.Writer, asJSON bool, th diagnose.Thresholds) *headless {
	h := &headless{w: w, th: th}
	if asJSON {
		h.jw = lines.NewJSONWriter(w)
	}
	return h
}

func (h *headless) Frame(f *sample.Frame, v diagnose.Verdict) error {
	h.frames++
	var err error
	if h.jw != nil {
		err = h.jw.WriteFrame(f, &v)
	} else {
		err = lines.WriteLine(h.w, f, &v, h.th)
	}
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

func (h *headless) Note(n sample.Note) error {
	var err error
	if h.jw != nil {
		err = h.jw.WriteNote(n)
	} else {
		err = lines.WriteNoteLine(h.w, n)
	}
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// exitWithJob is --exit-with-job's observer: it ends the session after
// the first frame that sees the watched process gone.
type exitWithJob context.CancelFunc

func (end exitWithJob) Frame(f *sample.Frame, _ diagnose.Verdict) error {
	if t := f.Target; t != nil && t.ExitedAt != nil {
		end() // this frame, which says so, is the last
	}
	return nil
}

func (exitWithJob) Note(sample.Note) error { return nil }

// IsTerminal says whether w is a terminal (the dashboard's condition).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
