package cli

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/session"
)

func newReplayCmd(stdout, stderr io.Writer) *cobra.Command {
	var headless, asJSON, noColor, once bool
	var speed float64
	var last time.Duration
	var th thresholdFlags
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Play a recording back, in the dashboard or as lines; verdicts are recomputed from the recorded frames",
		Example: `  gpuwatch replay run.jsonl
  gpuwatch replay run.jsonl --speed 8
  gpuwatch replay run.jsonl --headless --json > verdicts.jsonl
  gpuwatch replay /var/lib/gpuwatch/slurm/4242.jsonl --once --last 1m  # a Slurm job's last minute`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if last < 0 {
				return usageErrorf(cmd, "--last %v: must not be negative", last)
			}
			if last > 0 && !once {
				return usageErrorf(cmd, "--last needs --once: it names the stretch --once judges")
			}
			if speed < session.MinSpeed || speed > session.MaxSpeed {
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
				return session.ReplayOnce(rec, thresholds, last, asJSON, stdout)
			}
			if headless || asJSON || !session.IsTerminal(stdout) {
				return session.ReplayLines(rec, thresholds, asJSON, stdout)
			}
			return session.ReplayDashboard(cmd.Context(), session.ReplayOptions{
				Recording: rec, Name: args[0], Thresholds: thresholds, Speed: speed, NoColor: noColor, Stdout: stdout})
		},
	}
	cmd.Flags().BoolVar(&headless, "headless", false, "print one line per frame, as fast as they are read (default when stdout is not a terminal)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line, verdicts recomputed (implies --headless; schema: docs/json.md)")
	cmd.Flags().BoolVar(&once, "once", false, "judge the recording as --once judges a live session and print one summary: 0 healthy or idle, 3 a bottleneck, 4 nothing settled")
	cmd.Flags().DurationVar(&last, "last", 0, "with --once, judge only the recording's last stretch this long (the frames before it warm the diagnosis up); 0: all of it")
	cmd.Flags().Float64Var(&speed, "speed", 1, "playback speed in the dashboard (0.5 to 64)")
	cmd.Flags().BoolVar(&noColor, noColorFlag, false, noColorUsage)
	th.register(cmd)
	return cmd
}
