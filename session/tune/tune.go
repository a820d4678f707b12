// Package tune owns gpuwatch tune and sweep: the Trials that run a
// loader configuration for real (the embedded loader's, EmbeddedTrials,
// or the user's command under the hook, CommandTrials), tune's walk of
// the verdict's advice (Tune), sweep's grid (Sweep), and their printers
// (TuneTable, PrintSweep, WriteSweepJSON). Each trial watches through
// session.NewWatch, the one assembler, with session.Settle; a command's
// runs are supervised by session/job.
//
// It may import session, session/job, session/predlog (Ledger: its
// predictions' errors, kept), sample, probes, diagnose, lines and loader;
// only the command line imports it. docs/architecture.md draws
// the map.
package tune

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// Setting is one configuration of a loader's knobs, knob → value, in the
// names its Trials set: the embedded loader's (workers, prefetch,
// persistent …) or a command's placeholders (num_workers, prefetch_factor,
// persistent_workers, pin_memory).
type Setting map[string]string

// Trials run loader configurations for real, for tune and sweep: the
// embedded loader's (EmbeddedTrials) or the user's command's
// (CommandTrials). tune and sweep are one implementation over them.
type Trials interface {
	// Settle runs s until its verdict settles (at most limit) and measures
	// the settled stretch, with the verdict's changes.
	Settle(ctx context.Context, s Setting, limit time.Duration) (TuneStep, error)
	// Sweep runs s as a sweep does (a fixed stretch) and measures it.
	Sweep(ctx context.Context, s Setting) (SweepResult, error)
	// Apply returns s with the changes set, and those it cannot set.
	Apply(s Setting, cs []diagnose.Change) (Setting, []diagnose.Change, error)
	// Describe says how s is run: the loader's flags, or the command line.
	Describe(s Setting) string
}

// TuneStep is one run of `gpuwatch tune`: the configuration, what the
// previous step's model predicted for it, what was measured, and the
// verdict with the changes it computed.
type TuneStep struct {
	Type      string               `json:"type"` // "step"
	Step      int                  `json:"step"`
	Knobs     Setting              `json:"knobs"`
	Command   string               `json:"command"`
	Predicted *diagnose.Prediction `json:"predicted,omitempty"` // nil for the first
	Measured  diagnose.Prediction  `json:"measured"`
	// ErrorPct is the measured rate against the prediction's point, in %
	// (−10: 10 % below it); nil without a prediction in samples/s.
	ErrorPct *float64          `json:"error_pct,omitempty"`
	Verdict  diagnose.Kind     `json:"verdict"`
	Evidence string            `json:"evidence,omitempty"`
	Changes  []diagnose.Change `json:"changes,omitempty"`
	Advice   []string          `json:"advice,omitempty"`
	// NoChange is the verdict's why no change is advised (the model's
	// line), where it has one: the reason tune gives when it stops there.
	NoChange string               `json:"no_change,omitempty"`
	Next     *diagnose.Prediction `json:"next,omitempty"` // the model's prediction for the changes
	Settled  bool                 `json:"settled"`
	Seconds  float64              `json:"seconds"`
	// CeilingShare is the measured rate's share of the ceiling measured
	// once for the command (--ceiling); nil without one.
	CeilingShare *float64 `json:"ceiling_share,omitempty"`
	// OthersCores is the cores the processes outside the run's tree used
	// over its settled frames (diagnose.OthersCores); nil where unread.
	OthersCores *float64 `json:"others_cores,omitempty"`
	// Disturbed says, where the rest of the box took more CPU during this
	// run than during the run whose measurement predicted it, by how
	// much: the run measured the change and that load together. Such a
	// step is not kept in the ledger. "" when it was not.
	Disturbed string `json:"disturbed,omitempty"`
	// Window is the frames the verdict was taken on (not in JSON).
	Window []sample.Frame `json:"-"`
}

// disturbedCores is the least rise in the rest of the box's CPU use, in
// cores, that disturbs a step's test of its prediction, and
// disturbedShare the least as a share of the box's cores: on a 2-core CI
// VM a run that lost a quarter of a core to other processes measured a
// 1 → 2 workers change at 1.42×, its prediction 1.88×.
const (
	disturbedCores = 0.25
	disturbedShare = 0.05
)

// disturbed is why s's measurement does not test the prediction made on
// prev's alone, "" when nothing says so. A rise disturbs. A fall disturbs
// only a prediction limited by the CPUs that the run then beat: the model
// counted the others' cores out of what the workers could get, so the
// run had CPUs it did not count (a run that fell short even so did not
// need them: its error stands) (a 2-core VM, a test suite beside the first run: 0 → 2
// workers predicted 1,058 samples/s from "1.3 CPUs they can get", and
// 1,562 measured once it had ended). Otherwise a fall is also what a
// change itself does where it ends work the tree does not hold (workers
// restarting every epoch exit between samples, and their CPU is counted
// outside it).
func disturbed(prev, s TuneStep) string {
	if prev.OthersCores == nil || s.OthersCores == nil {
		return ""
	}
	cores := 0
	if n := len(s.Window); n > 0 && s.Window[n-1].CPU != nil {
		cores = len(s.Window[n-1].CPU.Cores)
	}
	was, now := *prev.OthersCores, *s.OthersCores
	least := max(disturbedCores, disturbedShare*float64(cores))
	switch {
	case now-was >= least:
		return fmt.Sprintf("processes outside the job took %.1f cores during this run against %.1f during run %d, whose measurement predicted it: the run measured the change and that load together", now, was, prev.Step)
	case was-now >= least && cpuLimited(prev.Next) && prev.Next.SamplesPerSec > 0 && s.Measured.SamplesPerSec > prev.Next.SamplesPerSec:
		return fmt.Sprintf("processes outside the job took %.1f cores during run %d, whose measurement predicted this one within the CPUs they left, and %.1f during this run: the run had CPUs the prediction did not count", was, prev.Step, now)
	}
	return ""
}

// cpuLimited: the prediction meets the CPUs, on its high side or its low.
func cpuLimited(p *diagnose.Prediction) bool {
	cpus := diagnose.LimitCPU.String()
	return p != nil && (p.Limit == cpus || p.ContendedLimit == cpus)
}

// TuneResult is how tune ended: the best step, and the changes it could
// not set (no placeholder for them in the command).
type TuneResult struct {
	Type    string            `json:"type"` // "result"
	Steps   int               `json:"steps"`
	Best    int               `json:"best"` // its step number
	Command string            `json:"command"`
	Knobs   Setting           `json:"knobs"`
	Why     string            `json:"why"` // why it stopped
	Unset   []diagnose.Change `json:"unset,omitempty"`
	Advice  []string          `json:"advice,omitempty"`
	// Bias is how predictions on this machine ran, this tune's included
	// (Ledger.Bias); "" when there is nothing to say.
	Bias string `json:"bias,omitempty"`
}

// TuneOptions configure Tune.
type TuneOptions struct {
	RunFor time.Duration // the longest one configuration runs before its verdict is taken
	Runs   int           // the most configurations tried
	// Ceiling is the loop's rate with its input free, samples/s, measured
	// once for the command (MeasureCeiling); 0: none. Tune then shows each
	// run's share of it and stops at CeilingEnough.
	Ceiling float64
	// Ledger keeps each step's prediction error and says the machine's
	// bias in the result; nil keeps nothing.
	Ledger *Ledger
}

// minGain is the least measured gain for tune to go on.
const minGain = 1.05

// ErrTuneInterrupted is returned by Tune when its context ended (Ctrl-C,
// SIGTERM): the result of the runs measured before comes with it; the run
// cut short is none of them, neither printed nor kept in the ledger.
var ErrTuneInterrupted = errors.New("tune interrupted")

// Tune runs the start configuration, takes the settled verdict, applies
// its changes, and runs again, until the verdict is healthy, has no change
// to offer, the changes cannot be set, a step gains under 5 %, or Runs
// are spent. Each step goes to out as it ends. When ctx ends first, it
// returns the result so far with ErrTuneInterrupted.
func Tune(ctx context.Context, o TuneOptions, t Trials, start Setting, out func(TuneStep) error) (TuneResult, error) {
	var prevPred *diagnose.Prediction
	var res TuneResult
	best, bestRate := 0, -1.0
	cfg := start
	var last TuneStep
	for step := 1; step <= o.Runs; step++ {
		if ctx.Err() != nil {
			return interrupted(res, best, o, step)
		}
		s, err := t.Settle(ctx, cfg, o.RunFor)
		if ctx.Err() != nil { // cut short: not a measurement of cfg
			return interrupted(res, best, o, step)
		}
		if err != nil {
			return res, fmt.Errorf("run %d (%s): %w", step, t.Describe(cfg), err)
		}
		s.Type, s.Step, s.Predicted, s.Knobs, s.Command = "step", step, prevPred, cfg, t.Describe(cfg)
		s.ErrorPct = errorPct(prevPred, s.Measured)
		s.CeilingShare = ceilingShare(s.Measured.SamplesPerSec, o.Ceiling) // ceiling.go
		if step > 1 {
			s.Disturbed = disturbed(last, s)
		}
		if s.Disturbed == "" {
			o.Ledger.Keep(last, s)
		}
		if err := out(s); err != nil {
			return res, err
		}
		rate := s.Measured.SamplesPerSec
		if rate > bestRate {
			best, bestRate, res.Command, res.Knobs = step, rate, s.Command, cfg
		}
		res.Steps, res.Advice = step, s.Advice
		with := slices.IndexFunc(s.Changes, func(c diagnose.Change) bool { return c.With != "" }) // a change that needs the script's code changed too
		switch {
		case s.CeilingShare != nil && *s.CeilingShare >= CeilingEnough:
			res.Why = ceilingWhy(*s.CeilingShare, o.Ceiling)
		case step > 1 && rate < minGain*last.Measured.SamplesPerSec && s.Disturbed == "":
			res.Why = fmt.Sprintf("the last change gained under %.0f %%", 100*(minGain-1))
		case len(s.Changes) == 0 && s.Verdict == diagnose.Healthy:
			res.Why = "the verdict is healthy, with no change to offer"
		case len(s.Changes) == 0:
			res.Why = "the model has no change to offer: " + cmp.Or(s.NoChange, first(s.Advice))
		case with >= 0:
			// A knob alone would not make the change (persistent_workers
			// on a new DataLoader every epoch): measuring it would
			// measure something else.
			c := s.Changes[with]
			res.Why = fmt.Sprintf("the next change, %s, is a change to the script's code, which tune does not make", c.Words())
		}
		if res.Why != "" {
			break
		}
		next, unset, err := t.Apply(cfg, s.Changes)
		if err != nil {
			return res, err
		}
		if len(unset) > 0 {
			res.Unset = unset
			res.Why = "the command has no placeholder for " + knobNames(unset)
			break
		}
		cfg, prevPred, last = next, s.Next, s
		if step == o.Runs {
			res.Why = fmt.Sprintf("%d runs spent (--runs)", o.Runs)
		}
	}
	res.Type, res.Best, res.Bias = "result", best, o.Ledger.Bias()
	return res, nil
}

// interrupted is the result of a tune whose context ended during run
// step (or before it began).
func interrupted(res TuneResult, best int, o TuneOptions, step int) (TuneResult, error) {
	res.Type, res.Best, res.Bias = "result", best, o.Ledger.Bias()
	res.Why = fmt.Sprintf("interrupted during run %d: %d measured", step, step-1)
	return res, ErrTuneInterrupted
}

func first(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return ss[0]
}

func knobNames(cs []diagnose.Change) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Knob
	}
	return strings.Join(names, ", ")
}

// String is the step in words, as tune prints it.
func (s TuneStep) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %d: %s\n", s.Step, s.Command)
	if s.Predicted != nil {
		fmt.Fprintf(&b, "  predicted %s, wait %.0f %%; measured %s, wait %.0f %%",
			rangeOrGain(*s.Predicted), 100*s.Predicted.WaitShare, rateOrGain(s.Measured), 100*s.Measured.WaitShare)
		if s.ErrorPct != nil {
			fmt.Fprintf(&b, " (%+.0f %% of the point)", *s.ErrorPct)
		}
		b.WriteString("\n")
	} else {
		fmt.Fprintf(&b, "  measured %s, wait %.0f %%\n", rateOrGain(s.Measured), 100*s.Measured.WaitShare)
	}
	if s.CeilingShare != nil {
		fmt.Fprintf(&b, "  %.0f %% of the ceiling\n", 100**s.CeilingShare)
	}
	if s.Disturbed != "" {
		fmt.Fprintf(&b, "  disturbed: %s\n", s.Disturbed)
	}
	if !s.Settled {
		b.WriteString("  (the verdict did not settle within the run: its last one)\n")
	}
	fmt.Fprintf(&b, "  verdict %s: %s\n", s.Verdict, sample.Printable(s.Evidence))
	for _, c := range s.Changes {
		fmt.Fprintf(&b, "  change %s %s → %s (%s=%s): %s\n", c.Knob, c.From, c.To, c.Flag, c.To, sample.Printable(c.Why))
	}
	if s.Next != nil {
		fmt.Fprintf(&b, "  the model predicts %s, wait %.0f %%\n", rangeOrGain(*s.Next), 100*s.Next.WaitShare)
	}
	return b.String()
}

// errorPct is measured against p's point, in % to a tenth; nil where
// either has no rate.
func errorPct(p *diagnose.Prediction, measured diagnose.Prediction) *float64 {
	if p == nil || !(p.SamplesPerSec > 0) || !(measured.SamplesPerSec > 0) {
		return nil
	}
	e := math.Round(1000*(measured.SamplesPerSec/p.SamplesPerSec-1)) / 10 // to a tenth of a percent
	return &e
}

// rangeOrGain is a prediction as its range, "1219–1509 samples/s", where
// its high side is above its point; else as rateOrGain.
func rangeOrGain(p diagnose.Prediction) string {
	if p.SamplesPerSec > 0 && p.HighSamplesPerSec >= p.SamplesPerSec+0.5 {
		return fmt.Sprintf("%.0f–%.0f samples/s", p.SamplesPerSec, p.HighSamplesPerSec)
	}
	if p.SamplesPerSec == 0 && p.Gain > 0 && p.HighGain >= p.Gain+0.05 {
		return fmt.Sprintf("%.1f–%.1f× the first run", p.Gain, p.HighGain)
	}
	return rateOrGain(p)
}

func rateOrGain(p diagnose.Prediction) string {
	if p.SamplesPerSec == 0 && p.Gain > 0 {
		return fmt.Sprintf("%.1f× the first run", p.Gain)
	}
	return fmt.Sprintf("%.0f samples/s", p.SamplesPerSec)
}

// TuneTable is tune's closing table: each run's configuration, measured
// samples/s, the prediction it was made on, wait share and verdict.
func TuneTable(steps []TuneStep, res TuneResult) string {
	var b strings.Builder
	b.WriteString("\nrun  samples/s  predicted  wait  verdict            configuration\n")
	for _, s := range steps {
		pred := "-"
		if s.Predicted != nil && s.Predicted.SamplesPerSec > 0 {
			pred = fmt.Sprintf("%.0f", s.Predicted.SamplesPerSec)
		}
		mark := " "
		if s.Step == res.Best {
			mark = "*"
		}
		share := ""
		if s.CeilingShare != nil {
			share = fmt.Sprintf(" (%.0f %% of the ceiling)", 100**s.CeilingShare)
		}
		conf := knobsLine(s.Knobs)
		if conf == "" { // no placeholder in the command: its knobs are its own (a user's review: a blank column)
			conf = "as the command sets them"
		}
		fmt.Fprintf(&b, "%s%-3d %10.0f %10s %4.0f%%  %-18s %s%s\n", mark, s.Step, s.Measured.SamplesPerSec, pred, 100*s.Measured.WaitShare, s.Verdict, conf, share)
	}
	fmt.Fprintf(&b, "stopped: %s\n", sample.Printable(res.Why))
	if len(res.Unset) > 0 {
		b.WriteString("could not set (give the command a placeholder, e.g. {num_workers:1}, or apply by hand):\n")
		for _, c := range res.Unset {
			fmt.Fprintf(&b, "  %s %s → %s: %s\n", c.Knob, c.From, c.To, sample.Printable(c.Why))
		}
	}
	if len(res.Unset) > 0 || res.Steps == 1 {
		for _, a := range res.Advice {
			fmt.Fprintf(&b, "  ⇒ %s\n", sample.Printable(a))
		}
	}
	if res.Bias != "" {
		fmt.Fprintf(&b, "note: %s\n", res.Bias)
	}
	if res.Best > 0 { // none where no run was measured (Ctrl-C during the first)
		fmt.Fprintf(&b, "best (*): %s\n", res.Command)
	}
	return b.String()
}

// KnobsLine is a setting in words, in a stable order: "num_workers=4
// prefetch_factor=2".
func KnobsLine(s Setting) string { return knobsLine(s) }

// knobsLine is a setting in a stable order.
func knobsLine(s Setting) string {
	var parts []string
	for _, k := range sample.KnobTable {
		names := []string{k.Name}
		if k.Flag != k.Name {
			names = append(names, k.Flag)
		}
		for _, name := range names {
			if v, ok := s[name]; ok {
				parts = append(parts, name+"="+v)
			}
		}
	}
	return strings.Join(parts, " ")
}

// tail keeps the loader's newest readings, the newest frames, and the
// newest verdict.
type tail struct {
	ls      []sample.Loader
	frames  []sample.Frame
	verdict diagnose.Verdict
	ended   string // how the command ended by itself, with status 0 ("" while it ran)
}

func (t *tail) Frame(f *sample.Frame, v diagnose.Verdict) error {
	if f.Loader != nil && f.Loader.Sampled == nil && f.Loader.Batches > 0 {
		t.ls = append(t.ls, *f.Loader)
	}
	t.frames = append(t.frames, *f)
	if len(t.frames) > 16 {
		t.frames = append(t.frames[:0], t.frames[len(t.frames)-8:]...)
	}
	t.verdict = v
	return nil
}

func (*tail) Note(sample.Note) error { return nil }

// mean is the samples/s and wait share over the newest n readings, past
// the first skip.
func (t *tail) mean(n, skip int) diagnose.Prediction {
	ls := t.ls[min(skip, len(t.ls)):]
	ls = ls[max(0, len(ls)-n):]
	var p diagnose.Prediction
	k := 0
	for _, l := range ls {
		p.SamplesPerSec += l.SamplesPerSec
		if l.WaitShare != nil {
			p.WaitShare += *l.WaitShare
			k++
		}
	}
	if len(ls) > 0 {
		p.SamplesPerSec /= float64(len(ls))
	}
	if k > 0 {
		p.WaitShare /= float64(k)
	}
	return p
}
