package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/session/embedded"
	"github.com/gpuwatch/gpuwatch/session/predlog"
	"github.com/gpuwatch/gpuwatch/session/tune"
)

// tuneOptions are the tune command's flags and streams: cli/cli's options
// struct, with runTune its run function.
type tuneOptions struct {
	knobs    knobFlags
	asJSON   bool          // JSON lines: each run, then the result
	interval time.Duration // between samples
	runFor   time.Duration // the longest one configuration runs
	runs     int           // the most configurations tried
	ceiling  time.Duration // --ceiling: the replay of the one extra run that measures it; 0 none
	stdout   io.Writer
	stderr   io.Writer
}

func newTuneCmd(stdout, stderr io.Writer) *cobra.Command {
	opts := &tuneOptions{stdout: stdout, stderr: stderr}
	k := &opts.knobs
	cmd := &cobra.Command{
		Use:   "tune [knobs] | tune [flags] -- CMD [ARGS…]",
		Short: "Run a loader, apply the verdict's computed changes, and run again until it is healthy",
		Long:  tuneLong,
		Example: `  gpuwatch tune -- python train.py --workers {num_workers:1} --persistent {persistent_workers:false}
  gpuwatch tune --json -- python bench.py --num-workers={num_workers:0}
  gpuwatch tune --scenario starved
  gpuwatch tune --workers 0 --decode-cost 2ms --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Each limit named by its own flag and value (a user's review:
			// one message for four flags, none of them named).
			switch {
			case opts.interval < 100*time.Millisecond:
				return usageErrorf(cmd, "--interval %s: want at least 100ms", opts.interval)
			case opts.runFor < 5*opts.interval:
				return usageErrorf(cmd, "--run-for %s: want at least 5 intervals (5 × --interval %s = %s)", opts.runFor, opts.interval, 5*opts.interval)
			case opts.runs < 1:
				return usageErrorf(cmd, "--runs %d: want at least 1", opts.runs)
			}
			if err := noCommandAfterDash(cmd, args); err != nil {
				return err
			}
			if err := checkCeiling(cmd, opts.ceiling, args); err != nil {
				return err
			}
			if opts.ceiling > 0 && len(args) == 0 {
				return usageErrorf(cmd, "--ceiling measures your command's loop (the hook's): give the command after --")
			}
			var trials tune.Trials
			var start tune.Setting
			if len(args) > 0 {
				if k.anyKnob(cmd) {
					return usageErrorf(cmd, "the embedded loader's knobs (--workers …) and a command: choose one; a command's knobs are its placeholders ({num_workers:1})")
				}
				t, s, cleanup, err := commandTrials(cmd, args, opts.interval)
				if err != nil {
					return err
				}
				defer cleanup()
				trials, start = t, s
			} else {
				c, err := k.config(cmd, k.scenario)
				if err != nil {
					return err
				}
				l, err := embedded.OpenLoaders([]loader.Config{c}, k.events, opts.stderr)
				if err != nil {
					return err
				}
				defer l.Close()
				e := &tune.EmbeddedTrials{Base: c, Dataset: l.Datasets[0], Events: l.Events, Interval: opts.interval,
					Roots: probes.Roots{Proc: "/proc", Sys: "/sys"}, Th: diagnose.DefaultThresholds()}
				trials, start = e, e.Start(c)
			}
			return runTune(cmd, opts, trials, start)
		},
	}
	k.register(cmd, false)
	addCeilingFlag(cmd, &opts.ceiling, "measure the loop's rate with its input free once, in one extra run that trains on kept batches, replayed, for this long (--ceiling alone: 30s); show each run's share of it and stop at 95 %")
	registerTrialLogs(cmd)
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "one JSON object per run, then the result")
	cmd.Flags().DurationVarP(&opts.interval, "interval", "n", 500*time.Millisecond, "time between samples")
	cmd.Flags().DurationVar(&opts.runFor, "run-for", 60*time.Second, "the longest one configuration runs before its verdict is taken (a run ends once the verdict settles)")
	cmd.Flags().IntVar(&opts.runs, "runs", 5, "the most configurations tried")
	// The names before the command form.
	cmd.Flags().DurationVar(&opts.runFor, "max-run", 60*time.Second, "")
	cmd.Flags().IntVar(&opts.runs, "steps", 5, "")
	_ = cmd.Flags().MarkHidden("max-run")
	_ = cmd.Flags().MarkHidden("steps")
	return cmd
}

// ledgerKey is whose pipeline trials tune, as tune's record keys it:
// gpuwatch's own loader, or the user's command.
func ledgerKey(t tune.Trials) string {
	if _, own := t.(*tune.EmbeddedTrials); own {
		return predlog.LoaderEmbedded
	}
	return predlog.LoaderJob
}

// runTune runs tune over trials from start and prints each run as it ends,
// then the table (or JSON lines: each run, then the result).
func runTune(cmd *cobra.Command, opts *tuneOptions, t tune.Trials, start tune.Setting) error {
	asJSON, stdout := opts.asJSON, opts.stdout
	enc := json.NewEncoder(stdout)
	var steps []tune.TuneStep
	o := tune.TuneOptions{RunFor: opts.runFor, Runs: opts.runs, Ledger: tune.NewLedger(opts.stderr, ledgerKey(t))}
	if b := o.Ledger.Bias(); b != "" && !asJSON { // JSON: the result's "bias"
		fmt.Fprintf(stdout, "note: %s\n", b)
	}
	if opts.ceiling > 0 {
		free, err := measureCeiling(cmd, opts.stderr, t, start, opts.ceiling, opts.runFor)
		if err != nil && cmd.Context().Err() != nil {
			fmt.Fprintln(opts.stderr, "gpuwatch: tune interrupted while it measured the ceiling: no run measured")
			return nil // Ctrl-C: a clean stop, as during a run
		}
		if err != nil {
			return err
		}
		o.Ceiling = free
	}
	res, err := tune.Tune(cmd.Context(), o, t, start, func(s tune.TuneStep) error {
		steps = append(steps, s)
		if asJSON {
			return enc.Encode(s)
		}
		_, err := io.WriteString(stdout, s.String())
		return err
	})
	if errors.Is(err, tune.ErrTuneInterrupted) {
		// Ctrl-C: the runs measured so far, printed as a finished tune's,
		// and a clean stop (status 0), as sweep's.
		fmt.Fprintf(opts.stderr, "gpuwatch: tune %s\n", res.Why)
	} else if err != nil {
		return err
	}
	if asJSON {
		return enc.Encode(res)
	}
	_, err = fmt.Fprint(stdout, tune.TuneTable(steps, res))
	return err
}

// tuneLong is the command's --help text.
const tuneLong = `tune runs a loader, waits for the verdict to settle, applies the changes
the pipeline model computed, and runs again. It stops when the verdict is
healthy, when the model has no change to offer, when a run gains under 5 %,
or when --runs are spent, and prints a table (configuration, measured
samples/s, the prediction it was made on, wait share, verdict) and the best
configuration: a model-guided version of sweep's grid, in fewer runs.

With a command (after --), tune runs your own script under gpuwatch run's
instrumentation. Its arguments hold placeholders with their starting values:
{num_workers:1}, {prefetch_factor:2}, {persistent_workers:false},
{pin_memory:false}; each run substitutes the values the changes give. A run
lasts until the verdict has settled on frames where the DataLoader runs, at
most --run-for; then the command is interrupted as Ctrl-C would. A command
that fails is reported with its exit status and last lines. Without
placeholders, tune runs once and says which knobs it could not set, with the
advice for you to apply.

Without a command, tune runs gpuwatch's embedded loader with the knobs given.`
