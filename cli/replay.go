package cli

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/session"
)

// replayOptions are replay's flags.
type replayOptions struct {
	headless, asJSON, noColor, once bool
	speed                           float64
	last                            time.Duration
	th                              thresholdFlags
	stdout, stderr                  io.Writer
}

func newReplayCmd(stdout, stderr io.Writer) *cobra.Command {
	opts := &replayOptions{stdout: stdout, stderr: stderr}
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Play a recording back, in the dashboard or as lines; verdicts are recomputed from the recorded frames",
		Example: `  gpuwatch replay run.jsonl
  gpuwatch replay run.jsonl --speed 8
  gpuwatch replay run.jsonl --headless --json > verdicts.jsonl
  gpuwatch replay /var/lib/gpuwatch/slurm/4242.jsonl --once --last 1m  # a Slurm job's last minute`,
		Args: oneArg("one recording to play", ""),
		RunE: func(cmd *cobra.Command, args []string) error { return runReplay(cmd, opts, args) },
	}
	cmd.Flags().BoolVar(&opts.headless, "headless", false, "print one line per frame, as fast as they are read (default when stdout is not a terminal)")
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "print one JSON object per line, verdicts recomputed (implies --headless; schema: docs/json.md)")
	cmd.Flags().BoolVar(&opts.once, "once", false, "judge the recording as --once judges a live session and print one summary: 0 healthy or idle, 3 a bottleneck, 4 nothing settled")
	cmd.Flags().DurationVar(&opts.last, "last", 0, "with --once, judge only the recording's last stretch this long (the frames before it warm the diagnosis up); 0: all of it")
	cmd.Flags().Float64Var(&opts.speed, "speed", 1, "playback speed in the dashboard (0.5 to 64)")
	cmd.Flags().BoolVar(&opts.noColor, noColorFlag, false, noColorUsage)
	opts.th.register(cmd)
	return cmd
}

// runReplay plays the recording args[0] as replay's flags say.
func runReplay(cmd *cobra.Command, opts *replayOptions, args []string) error {
	headless, asJSON, noColor, once := opts.headless, opts.asJSON, opts.noColor, opts.once
	speed, last, th, stdout, stderr := opts.speed, opts.last, &opts.th, opts.stdout, opts.stderr
	if last < 0 {
		return usageErrorf(cmd, "--last %v: must not be negative", last)
	}
	if last > 0 && !once {
		return usageErrorf(cmd, "--last needs --once: it names the stretch --once judges")
	}
	if !(speed >= session.MinSpeed && speed <= session.MaxSpeed) { // NaN is neither
		return usageErrorf(cmd, "--speed %v: want %v to %v", speed, session.MinSpeed, session.MaxSpeed)
	}
	rec, err := openRecording(args[0], stderr)
	if err != nil {
		return err
	}
	defer rec.Close()
	thresholds, err := th.apply(cmd, recordedThresholds(rec))
	if err != nil {
		return err
	}
	if once {
		return session.ReplayOnce(cmd.Context(), rec, thresholds, last, asJSON, stdout)
	}
	if headless || asJSON || !session.IsTerminal(stdout) {
		return session.ReplayLines(rec, thresholds, asJSON, stdout)
	}
	return session.ReplayDashboard(cmd.Context(), session.ReplayOptions{
		Recording: rec, Name: args[0], Thresholds: thresholds, Speed: speed, NoColor: noColor, Stdout: stdout})
}
