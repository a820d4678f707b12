package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/report"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session/embedded"
	"github.com/gpuwatch/gpuwatch/session/tune"
)

// sweepOptions are sweep's flags and outputs (cli/cli's options struct).
type sweepOptions struct {
	k                                           knobFlags
	workers, prefetch, persistent, out, htmlOut string
	grid                                        []string
	asJSON                                      bool
	maxRuns                                     int
	interval, runFor, warmup                    time.Duration
	ceiling                                     time.Duration // --ceiling: the replay of the one extra run that measures it; 0 none
	stdout, stderr                              io.Writer
}

func newSweepCmd(stdout, stderr io.Writer) *cobra.Command {
	opts := &sweepOptions{stdout: stdout, stderr: stderr}
	cmd := &cobra.Command{
		Use:   "sweep [knobs] | sweep --grid KNOB=V1,V2… [flags] -- CMD [ARGS…]",
		Short: "Run a loader over a grid of configurations and compare: the DataLoader tuning benchmark",
		Long: `sweep runs a loader once per configuration of a grid and prints a table:
samples/s, the loop's wait share and the verdict per configuration, the best
(most samples/s, *) and the cheapest within 95 % of it (fewest workers, ~).
--out writes the results as JSON, --json prints them, --report writes an
HTML page with the chart.

With a command (after --), sweep runs your own script under gpuwatch run's
instrumentation, each configuration for --run-for (the first --warmup not
measured), with the placeholders tune uses ({num_workers:1},
{prefetch_factor:2}, {persistent_workers:false}, {pin_memory:false}) set
from --grid KNOB=V1,V2,… (repeatable: the grid is every combination).

Without a command, sweep runs gpuwatch's embedded loader over --workers ×
--prefetch × --persistent (2 epochs × 30 batches each unless told), with
its own figures too: MB/s, wait mean/p50/p99, accelerator busy %, time to
the first batch and the stall at each epoch boundary.`,
		Example: `  gpuwatch sweep --grid num_workers=0,1,2,4 --grid prefetch_factor=2,4 -- python bench.py -w {num_workers:1} -p {prefetch_factor:2}
  gpuwatch sweep --grid persistent_workers=false,true --report sweep.html -- python train.py --persistent {persistent_workers:false}
  gpuwatch sweep --workers 0,1,2,4 --prefetch 1,2,4 --decode-cost 1ms
  gpuwatch sweep --scenario starved --workers 1,2,4,8 --prefetch 2 --out sweep.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.checkReport(cmd); err != nil {
				return err
			}
			if err := checkCeiling(cmd, opts.ceiling, args); err != nil {
				return err
			}
			if err := noCommandAfterDash(cmd, args); err != nil {
				return err
			}
			if opts.ceiling > 0 && len(args) == 0 {
				return usageErrorf(cmd, "--ceiling measures your command's loop (the hook's): give the command after --")
			}
			if len(args) > 0 {
				return runCommandSweep(cmd, opts, args)
			}
			if len(opts.grid) > 0 {
				return usageErrorf(cmd, "--grid sets a command's placeholders: give the command after --")
			}
			return runEmbeddedSweep(cmd, opts)
		},
	}
	opts.register(cmd)
	return cmd
}

// register declares sweep's flags.
func (o *sweepOptions) register(cmd *cobra.Command) {
	o.k.register(cmd, true)
	fl := cmd.Flags()
	fl.StringVar(&o.workers, sample.KnobWorkers.Flag, "0,1,2,4", "the embedded loader: "+sample.KnobWorkers.Name+" values, comma-separated")
	fl.StringVar(&o.prefetch, sample.KnobPrefetch.Flag, "2", "the embedded loader: "+sample.KnobPrefetch.Name+" values, comma-separated (ignored for 0 workers)")
	fl.StringVar(&o.persistent, sample.KnobPersistent.Flag, "false", "the embedded loader: "+sample.KnobPersistent.Name+": true, false or both")
	fl.StringArrayVar(&o.grid, "grid", nil, "a command's knob and its values, KNOB=V1,V2,… (repeatable; knobs: "+strings.Join(sample.PyTorchKnobs(), ", ")+")")
	fl.DurationVar(&o.runFor, "run-for", 20*time.Second, "a command: how long each configuration runs")
	fl.DurationVar(&o.warmup, "warmup", 5*time.Second, "a command: how much of each run's start is not measured (importing torch, starting workers)")
	fl.DurationVarP(&o.interval, "interval", "n", 500*time.Millisecond, "a command: time between samples")
	registerTrialLogs(cmd)
	fl.IntVar(&o.maxRuns, "max-runs", defaultMaxRuns, "refuse a grid of more configurations than this (counted before anything runs)")
	fl.StringVar(&o.out, "out", "", "write the results as JSON to this file (the rows measured so far on Ctrl-C)")
	fl.BoolVar(&o.asJSON, "json", false, "print the results as JSON instead of the table")
	fl.StringVar(&o.htmlOut, "report", "", "write an HTML page with the results' chart and table to this new file")
	addCeilingFlag(cmd, &o.ceiling, "a command: measure the loop's rate with its input free once, in one extra run that trains on kept batches, replayed, for this long (--ceiling alone: 30s); show each configuration's share of it and mark the cheapest within 95 % of it")
}

// checkReport refuses a --report that is not a new .html file, before
// anything runs.
func (o *sweepOptions) checkReport(cmd *cobra.Command) error {
	if o.htmlOut == "" {
		return nil
	}
	if err := report.CheckOutput(o.htmlOut, true); err != nil || !strings.HasSuffix(o.htmlOut, ".html") {
		return usageErrorf(cmd, "--report %s: want a new .html file", o.htmlOut)
	}
	if _, err := os.Stat(o.htmlOut); err == nil {
		return usageErrorf(cmd, "--report %s exists: write the report to a new file", o.htmlOut)
	}
	return nil
}

// runCommandSweep sweeps the user's command over --grid.
func runCommandSweep(cmd *cobra.Command, o *sweepOptions, args []string) error {
	if o.k.anyKnob(cmd) || cmd.Flags().Changed(sample.KnobWorkers.Flag) || cmd.Flags().Changed(sample.KnobPrefetch.Flag) || cmd.Flags().Changed(sample.KnobPersistent.Flag) {
		return usageErrorf(cmd, "the embedded loader's knobs and a command: choose one; a command's grid is --grid KNOB=V1,V2")
	}
	if o.runFor < 2*o.warmup || o.runFor < 5*o.interval {
		return usageErrorf(cmd, "want --run-for at least twice --warmup and 5 intervals (have %v, %v)", o.runFor, o.warmup)
	}
	t, start, cleanup, err := commandTrials(cmd, args, o.interval)
	if err != nil {
		return err
	}
	defer cleanup()
	t.RunFor, t.Warmup = o.runFor, o.warmup
	g, err := commandGrid(cmd, t, start, o.grid, o.maxRuns)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.stderr, "gpuwatch: %s × --run-for %v: about %v, plus each start and stop\n",
		sample.Plural(len(g), "configuration"), o.runFor, time.Duration(len(g))*o.runFor)
	r := sweepRun{trials: t, header: start, grid: g, title: "sweep of " + t.Describe(start)}
	if o.ceiling > 0 {
		if r.ceiling, err = measureCeiling(cmd, o.stderr, t, start, o.ceiling, o.runFor); err != nil {
			return err
		}
	}
	return finishSweep(cmd, o, r)
}

// persistentValues reads --persistent: true, false or both.
func persistentValues(v string) ([]bool, bool) {
	switch v {
	case "both":
		return []bool{false, true}, true
	case "true":
		return []bool{true}, true
	case "false":
		return []bool{false}, true
	}
	return nil, false
}

// runEmbeddedSweep sweeps the embedded loader over --workers × --prefetch ×
// --persistent.
func runEmbeddedSweep(cmd *cobra.Command, o *sweepOptions) error {
	ws, err := parseIntList(o.workers)
	if err != nil {
		return usageErrorf(cmd, "--workers %v", err)
	}
	ps, err := parseIntList(o.prefetch)
	if err != nil {
		return usageErrorf(cmd, "--prefetch %v", err)
	}
	pers, ok := persistentValues(o.persistent)
	if !ok {
		return usageErrorf(cmd, "--persistent %q: want true, false or both", o.persistent)
	}
	base, err := o.k.config(cmd, o.k.scenario)
	if err != nil {
		return err
	}
	if !cmd.Flags().Changed("epochs") {
		base.Epochs = 2
	}
	if !cmd.Flags().Changed("batches") {
		base.Batches = 30
	}
	if base.Epochs == 0 {
		return usageErrorf(cmd, "--epochs must be at least 1 for a sweep")
	}
	l, err := embedded.OpenLoaders([]loader.Config{base}, o.k.events, o.stderr)
	if err != nil {
		return err
	}
	defer l.Close()
	e := &tune.EmbeddedTrials{Base: base, Dataset: l.Datasets[0], Events: l.Events, Interval: o.interval,
		Roots: probes.Roots{Proc: "/proc", Sys: "/sys"}, Th: diagnose.DefaultThresholds()}
	ws, ps = tune.Dedupe(ws), tune.Dedupe(ps)
	if n := embeddedGridSize(ws, ps, pers); n > o.maxRuns {
		return tooManyRuns(cmd, n, o.maxRuns, 0) // each runs its epochs, for no time known before
	}
	g := tune.SweepGrid(ws, ps, pers)
	for _, s := range g {
		if _, _, err := e.Apply(s, nil); err != nil {
			return usageErrorf(cmd, "%v", err)
		}
	}
	title := fmt.Sprintf("batch %d × %s, decode %v, step %v, access %s, %d epochs × %d batches",
		base.BatchSize, loader.FormatSize(base.SampleSize), base.DecodeCost, base.StepTime, base.Access, base.Epochs, base.BatchesPerEpoch())
	return finishSweep(cmd, o, sweepRun{trials: e, header: base.Knobs(), grid: g, title: title})
}

// sweepRun is one sweep to run: its trials, the setting its results are
// headed by, the grid, and the table's title.
type sweepRun struct {
	trials  tune.Trials
	header  tune.Setting
	grid    []tune.Setting
	title   string
	ceiling float64 // samples/s with input free (--ceiling), 0: not measured
}

// finishSweep runs the grid and writes the table (or JSON), --out and
// --report. A failed configuration is a row; Ctrl-C (or SIGTERM) stops the
// sweep, and the rows measured so far are printed and written all the
// same: a clean stop, status 0, as the README's exit statuses say. A sweep
// where no configuration could be measured fails (status 1).
func finishSweep(cmd *cobra.Command, o *sweepOptions, r sweepRun) error {
	g, title, stdout, stderr := r.grid, r.title, o.stdout, o.stderr
	results, err := tune.Sweep(cmd.Context(), r.trials, g, progressTo(stderr))
	of := 0
	if errors.Is(err, tune.ErrSweepInterrupted) {
		of = len(g)
		title += fmt.Sprintf(" — interrupted after %d of %s", len(results), sample.Plural(len(g), "configuration"))
		fmt.Fprintf(stderr, "gpuwatch: sweep interrupted: %d of %s measured\n", len(results), sample.Plural(len(g), "configuration"))
	} else if err != nil {
		return err
	}
	tune.MarkCeiling(results, r.ceiling)
	if o.asJSON {
		if err := tune.WriteSweepJSON(stdout, r.header, results, of); err != nil {
			return err
		}
	} else {
		tune.PrintSweep(stdout, title, results)
	}
	if o.out != "" {
		var b bytes.Buffer
		if err := tune.WriteSweepJSON(&b, r.header, results, of); err != nil {
			return err
		}
		if err := os.WriteFile(o.out, b.Bytes(), 0o666); err != nil { // less the umask
			return fmt.Errorf("--out: %w", err)
		}
	}
	if o.htmlOut != "" && len(results) > 0 {
		if err := writeSweepHTML(o.htmlOut, title, results); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "gpuwatch: wrote %s\n", o.htmlOut)
	}
	if of == 0 && !slices.ContainsFunc(results, func(r tune.SweepResult) bool { return r.Failed == "" }) {
		return errors.New("no configuration could be measured: each one's reason is in the table")
	}
	return nil
}

// writeSweepHTML writes --report's page.
func writeSweepHTML(path, title string, results []tune.SweepResult) error {
	rows := make([]report.SweepRow, len(results))
	for i, r := range results {
		verdict := r.Verdict.String()
		if r.Failed != "" {
			verdict = "failed: " + r.Failed
		}
		if r.Disturbed != "" {
			verdict += " (disturbed: " + r.Disturbed + ")"
		}
		rows[i] = report.SweepRow{Configuration: tune.KnobsLine(r.Knobs), Command: r.Command, SamplesPerSec: r.SamplesPerSec, WaitShare: r.WaitShare,
			Verdict: verdict, Best: r.Best, Cheapest: r.Cheapest}
	}
	if err := report.WriteSweepHTML(path, title, rows); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}

// defaultMaxRuns is --max-runs: 256 configurations at sweep's default
// --run-for of 20 s are about an hour and a half; a grid above it is more
// likely a typo (a list pasted twice, a range written out) than a plan.
const defaultMaxRuns = 256

// commandGrid reads --grid into the grid of configurations: a knob given
// twice has its lists merged, each value is checked and written as the
// placeholder takes it, repeats (1 and 01) are dropped, and the number of
// configurations is counted from the list lengths, refused above maxRuns,
// before any list of configurations is built.
func commandGrid(cmd *cobra.Command, t *tune.CommandTrials, start tune.Setting, grid []string, maxRuns int) ([]tune.Setting, error) {
	knobs, values, err := parseGrid(grid, start)
	if err != nil {
		return nil, usageErrorf(cmd, "%v", err)
	}
	lengths := make([]int, len(knobs))
	for i, kn := range knobs {
		for j, v := range values[i] {
			if values[i][j], err = checkKnob(t, kn, v); err != nil {
				return nil, usageErrorf(cmd, "--grid %s=%s: %v", kn, sample.Printable(v), err)
			}
		}
		values[i] = tune.Dedupe(values[i])
		lengths[i] = len(values[i])
	}
	if n := tune.GridSize(lengths); n > maxRuns {
		return nil, tooManyRuns(cmd, n, maxRuns, t.RunFor)
	}
	return tune.Grid(start, knobs, values), nil
}

// embeddedGridSize counts SweepGrid's configurations: 0 workers once,
// every other count × prefetch × persistence.
func embeddedGridSize(ws, ps []int, pers []bool) int {
	zero := 0
	if slices.Contains(ws, 0) {
		zero = 1
	}
	return zero + tune.GridSize([]int{len(ws) - zero, len(ps), len(pers)})
}

// unknownGridKnob is --grid's message for a knob that is no DataLoader
// keyword: the embedded loader's flag for one (workers) names the keyword,
// a knob only the embedded loader has (cache) says so.
func unknownGridKnob(k string) error {
	knobs := strings.Join(sample.PyTorchKnobs(), ", ")
	switch kn := sample.KnobNamed(k); {
	case kn != nil && kn.PyTorch:
		return fmt.Errorf("--grid %s: a command's knobs are the DataLoader's keywords: %s (--%s is the embedded loader's flag)", k, kn.Name, kn.Flag)
	case kn != nil:
		return fmt.Errorf("--grid %s: only the embedded loader has it (its --%s); a command's knobs: %s", k, kn.Flag, knobs)
	}
	return fmt.Errorf("--grid %s: not a knob gpuwatch sets (%s)", sample.Printable(k), knobs)
}

// parseGrid reads --grid KNOB=V1,V2 into knobs and their values; every
// knob must be one gpuwatch sets (a misspelt one read "no placeholder",
// as if the command were wrong: a user's review) and have a placeholder
// in the command.
func parseGrid(grid []string, start tune.Setting) ([]string, [][]string, error) {
	var knobs []string
	var values [][]string
	for _, g := range grid {
		k, vs, ok := strings.Cut(g, "=")
		if !ok || vs == "" {
			return nil, nil, fmt.Errorf("--grid %q: want KNOB=V1,V2", g)
		}
		if !slices.Contains(sample.PyTorchKnobs(), k) {
			return nil, nil, unknownGridKnob(k)
		}
		if _, ok := start[k]; !ok {
			return nil, nil, fmt.Errorf("--grid %s: the command has no placeholder {%s:…}", k, k)
		}
		// The same knob twice: one list, merged (repeats go later).
		if i := slices.Index(knobs, k); i >= 0 {
			values[i] = append(values[i], strings.Split(vs, ",")...)
			continue
		}
		knobs = append(knobs, k)
		values = append(values, strings.Split(vs, ","))
	}
	if len(knobs) == 0 {
		return nil, nil, fmt.Errorf("give the grid: --grid num_workers=0,1,2,4 (and the command's placeholder {num_workers:1})")
	}
	return knobs, values, nil
}

// checkKnob checks one grid value as the command's placeholder takes it.
func checkKnob(t *tune.CommandTrials, knob, v string) (string, error) {
	s, _, err := t.Apply(tune.Setting{knob: "0"}, []diagnose.Change{{Knob: knob, To: v}})
	if err != nil {
		return "", err
	}
	return s[knob], nil
}

// tooManyRuns refuses a grid of n configurations above --max-runs, with
// the wall time it would have taken at runFor each (a command's; 0 for
// the embedded loader's runs, whose length is their epochs').
func tooManyRuns(cmd *cobra.Command, n, maxRuns int, runFor time.Duration) error {
	if runFor <= 0 {
		return usageErrorf(cmd, "the grid has %d configurations, more than --max-runs %d: give fewer values, or raise --max-runs", n, maxRuns)
	}
	total := fmt.Sprintf("about %v", time.Duration(n)*runFor)
	if hours := float64(n) * runFor.Hours(); hours > 24*365 { // past a year (and past what a Duration holds): in years
		total = fmt.Sprintf("about %.0f years", hours/(24*365.25))
	}
	return usageErrorf(cmd, "the grid has %d configurations, more than --max-runs %d (at --run-for %v each, %s, plus each start and stop): give fewer values, or raise --max-runs",
		n, maxRuns, runFor, total)
}
