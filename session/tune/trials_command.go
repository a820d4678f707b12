package tune

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/probes/training"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session"
	"github.com/gpuwatch/gpuwatch/session/job"
)

// CommandTrials run the user's own command — a PyTorch script, say — with
// its placeholders set, under gpuwatch run's instrumentation: tune and
// sweep over the user's script. A placeholder in an argument,
// {num_workers:1}, names a DataLoader knob and its starting value; each
// run substitutes the value the setting gives.
type CommandTrials struct {
	argv []string
	env  []string
	dir  string // the hook's folder
	// LogDir holds each run's output (run-N.log), LogMax caps each part of
	// it (0: no cap). A measured run's log is removed; a failed one's kept.
	LogDir   string
	LogMax   int64
	Interval time.Duration
	Th       diagnose.Thresholds
	Roots    probes.Roots
	// RunFor is how long sweep runs each configuration; Warmup how much
	// of its start (importing torch, starting workers) is not measured.
	RunFor, Warmup time.Duration
	runs           int
	style          map[string]string // each boolean knob's spelling: "true", "True" or "1"
}

var placeholderRE = regexp.MustCompile(`\{([A-Za-z_]+):([^{}]*)\}`)

// NewCommandTrials reads argv's placeholders and returns the trials and
// the starting setting (empty: no placeholder, nothing tune can set).
// env is the job's environment (with the hook on PYTHONPATH), dir the
// hook's folder.
func NewCommandTrials(argv, env []string, dir string) (*CommandTrials, Setting, error) {
	c := &CommandTrials{argv: argv, env: env, dir: dir, style: map[string]string{}}
	start := Setting{}
	for _, a := range argv {
		for _, m := range placeholderRE.FindAllStringSubmatch(a, -1) {
			name, val := m[1], m[2]
			if k := sample.KnobNamed(name); k == nil || !k.PyTorch || k.Name != name {
				return nil, nil, fmt.Errorf("placeholder {%s:…}: not a knob gpuwatch sets (%s)", name, strings.Join(sample.PyTorchKnobs(), ", "))
			}
			v, err := c.normalize(name, val)
			if err != nil {
				return nil, nil, fmt.Errorf("placeholder {%s:%s}: %w", name, val, err)
			}
			if old, ok := start[name]; ok && old != v {
				return nil, nil, fmt.Errorf("placeholder {%s:…} starts at %s and at %s: give it one starting value", name, old, v)
			}
			start[name] = v
		}
	}
	return c, start, nil
}

// normalize checks a knob's value, and remembers how a boolean was
// spelled so that substitutions spell it the same way.
func (c *CommandTrials) normalize(name, v string) (string, error) {
	k := sample.KnobNamed(name)
	if k.Type == sample.KnobInt {
		n, err := k.Parse(v)
		if err != nil || k == sample.KnobPrefetch && n == "0" {
			return "", errors.New("want a whole number (num_workers ≥ 0, prefetch_factor ≥ 1)")
		}
		return n, nil
	}
	b, err := k.Parse(v)
	if err != nil {
		return "", errors.New("want true or false")
	}
	if _, ok := c.style[name]; !ok {
		c.style[name] = v
	}
	return b, nil
}

// spell writes a value as the command's placeholder spelled its start.
func (c *CommandTrials) spell(name, v string) string {
	b, err := strconv.ParseBool(v)
	if k := sample.KnobNamed(name); err != nil || k == nil || k.Type != sample.KnobBool {
		return v
	}
	switch c.style[name] {
	case "True", "False":
		return map[bool]string{true: "True", false: "False"}[b]
	case "1", "0":
		return map[bool]string{true: "1", false: "0"}[b]
	}
	return strconv.FormatBool(b)
}

// argvFor is the command with s's values in its placeholders.
func (c *CommandTrials) argvFor(s Setting) []string {
	out := make([]string, len(c.argv))
	for i, a := range c.argv {
		out[i] = placeholderRE.ReplaceAllStringFunc(a, func(m string) string {
			sub := placeholderRE.FindStringSubmatch(m)
			if v, ok := s[sub[1]]; ok {
				return c.spell(sub[1], v)
			}
			return sub[2]
		})
	}
	return out
}

// Describe implements Trials: the command line, quoted for a shell.
func (c *CommandTrials) Describe(s Setting) string { return shellQuote(c.argvFor(s)) }

// Apply implements Trials: a change sets the placeholder of its knob;
// a knob without one is returned, unset.
func (c *CommandTrials) Apply(s Setting, cs []diagnose.Change) (Setting, []diagnose.Change, error) {
	next := Setting{}
	for k, v := range s {
		next[k] = v
	}
	var unset []diagnose.Change
	for _, ch := range cs {
		if _, ok := s[ch.Knob]; !ok {
			unset = append(unset, ch)
			continue
		}
		v, err := c.normalize(ch.Knob, ch.To)
		if err != nil {
			return nil, nil, fmt.Errorf("change %s → %s: %w", ch.Knob, ch.To, err)
		}
		next[ch.Knob] = v
	}
	return next, unset, nil
}

// Settle implements Trials: one run, until the verdict has settled on
// frames where the loader runs, at most limit.
func (c *CommandTrials) Settle(ctx context.Context, s Setting, limit time.Duration) (TuneStep, error) {
	st, rec, err := c.run(ctx, s, limit, true)
	if err != nil {
		return TuneStep{}, err
	}
	return settledStep(st, rec)
}

// Sweep implements Trials: one run of RunFor, measured past Warmup.
func (c *CommandTrials) Sweep(ctx context.Context, s Setting) (SweepResult, error) {
	_, rec, err := c.run(ctx, s, c.RunFor, false)
	if err != nil {
		return SweepResult{}, err
	}
	skip := int(c.Warmup / max(c.Interval, time.Millisecond))
	m := rec.mean(len(rec.ls), skip)
	if len(rec.ls) <= skip {
		if rec.ended != "" { // it ended by itself: a longer --run-for cannot help
			return SweepResult{}, fmt.Errorf("the command %s after %d frames with a loader, within the warm-up (%v): a shorter --warmup, or a job that runs longer", rec.ended, len(rec.ls), c.Warmup)
		}
		return SweepResult{}, fmt.Errorf("the loader ran for %d frames, no more than the warm-up (%v): a longer --run-for", len(rec.ls), c.Warmup)
	}
	r := SweepResult{Knobs: s, Command: c.Describe(s), SamplesPerSec: m.SamplesPerSec, WaitShare: m.WaitShare, Verdict: rec.verdict.Kind,
		WallSeconds: c.RunFor.Seconds()}
	r.Workers, r.Prefetch, r.Persistent = knobsRun(s, rec.frames)
	if c, ok := diagnose.OthersCores(rec.frames); ok {
		r.OthersCores = &c
	}
	if n := len(rec.frames); n > 0 && rec.frames[n-1].CPU != nil {
		r.cores = len(rec.frames[n-1].CPU.Cores)
	}
	return r, nil
}

// run runs the command with s under the hook until limit (or, with
// settle, until the verdict settles), watched by a session of the one
// probe set; then the job is interrupted as Ctrl-C would. A command that
// ends on its own before a measurement, with an error, is the error.
func (c *CommandTrials) run(ctx context.Context, s Setting, limit time.Duration, settleStop bool) (_ *session.Settle, _ *tail, err error) {
	c.runs++
	argv := c.argvFor(s)
	logDir := c.LogDir
	if logDir == "" {
		logDir = c.dir
	}
	logPath := filepath.Join(logDir, fmt.Sprintf("run-%d.log", c.runs))
	j, err := job.Start(job.Options{Argv: argv, Env: c.env, RunDir: c.dir, Log: logPath, LogMax: c.LogMax})
	if err != nil {
		return nil, nil, err
	}
	defer j.Stop(10 * time.Second)
	defer func() {
		if err == nil { // measured: its log is not needed
			j.Stop(10 * time.Second)
			os.Remove(logPath)
			os.Remove(logPath + ".1")
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	w, err := session.NewWatch(ctx, session.Options{Interval: c.Interval, Thresholds: c.Th, Target: session.Target{Roots: c.Roots, PID: j.PID(), Job: j},
		Sources: session.Sources{Loop: true, Attach: session.AttachTo{Discover: true, Dir: c.dir, NoProfiles: true, Within: func(pid int) bool { return training.Descends(c.Roots.Proc, pid, j.PID()) }}}})
	if err != nil {
		return nil, nil, err
	}
	defer w.Close()
	stop := func() {}
	if settleStop {
		stop = cancel
	}
	st := session.NewSettle(stop, c.Th.MinFrames)
	rec := &tail{}
	notes, stopNotes := session.JobNotes(ctx, j, nil, true, cancel)
	defer stopNotes()
	err = w.Loop(ctx, notes, whileLoading{st}, rec)
	if err != nil {
		return nil, nil, err
	}
	select {
	case <-j.Done():
		how, _ := j.Exit()
		if code := j.ExitCode(); code != 0 || st.Frames() == 0 {
			return nil, nil, &TrialFailed{How: how, Exited: true, Code: code, Frames: st.Frames(), Tail: j.Tail(10), Log: j.LogNote()}
		}
		rec.ended = how
	default:
	}
	if st.Frames() == 0 {
		return nil, nil, &TrialFailed{How: fmt.Sprintf("ran no DataLoader within %v", limit), Tail: j.Tail(10), Log: j.LogNote()}
	}
	return st, rec, nil
}

// TrialFailed is a run of the user's command that could not be measured:
// it ended first (Exited, with its status Code), or no DataLoader ran.
type TrialFailed struct {
	How    string // "exited with status 1", "killed by SIGKILL", "ran no DataLoader within 20s"
	Exited bool
	Code   int
	Frames int      // frames with a loader before it ended
	Tail   []string // its last lines, printable
	Log    string   // where its output is, and what became of writing it
}

func (e *TrialFailed) Error() string {
	tail := strings.Join(e.Tail, "\n  │ ")
	log := ""
	if e.Log != "" {
		log = "\n  (" + e.Log + ")"
	}
	if !e.Exited {
		return fmt.Sprintf("the command %s (is it a PyTorch job? its last lines:\n  │ %s)%s", e.How, tail, log)
	}
	return fmt.Sprintf("the command %s before it was measured (%d frames with a loader); its last lines:\n  │ %s%s", e.How, e.Frames, tail, log)
}

// whileLoading passes on only the frames where the hook's loader hands
// out batches: the command's start (importing torch, starting workers)
// settles nothing, and neither does the loop sampler's reading of the job
// before the hook's endpoint is found — it has no rates to measure a step
// by (tail keeps the same frames), and a verdict settled on it once ended
// a run after 2.5 s on "idle".
type whileLoading struct{ o session.Observer }

func (w whileLoading) Frame(f *sample.Frame, v diagnose.Verdict) error {
	if l := f.Loader; l == nil || l.Sampled != nil || l.Batches == 0 {
		return nil
	}
	return w.o.Frame(f, v)
}

func (w whileLoading) Note(n sample.Note) error { return w.o.Note(n) }

// shellQuote joins argv as a shell would read it back.
func shellQuote(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:=,+@%-", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return sample.Printable(strings.Join(out, " "))
}

// knobsRun is what a command's run ran with: each knob the grid's, else
// what the loader said in the run's last frame that says (the hook reads
// the DataLoader's), else nil.
func knobsRun(s Setting, frames []sample.Frame) (workers, prefetch *int, persistent *bool) {
	if v, ok := gridInt(s, sample.KnobWorkers); ok {
		workers = &v
	}
	if v, ok := gridInt(s, sample.KnobPrefetch); ok {
		prefetch = &v
	}
	for _, name := range []string{sample.KnobPersistent.Name, sample.KnobPersistent.Flag} {
		if v, err := strconv.ParseBool(s[name]); err == nil {
			persistent = &v
			break
		}
	}
	for i := len(frames) - 1; i >= 0 && (workers == nil || prefetch == nil || persistent == nil); i-- {
		l := frames[i].Loader
		if l == nil {
			continue
		}
		if workers == nil && l.Workers != nil {
			workers = probes.Ptr(*l.Workers)
		}
		if prefetch == nil && l.Prefetch != nil {
			prefetch = probes.Ptr(*l.Prefetch)
		}
		if v, err := strconv.ParseBool(l.Knobs[sample.KnobPersistent.Flag]); persistent == nil && err == nil {
			persistent = &v
		}
	}
	return workers, prefetch, persistent
}
