package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/report"
	"github.com/gpuwatch/gpuwatch/session"
)

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
			if speed < session.MinSpeed || speed > session.MaxSpeed {
				return usageErrorf(cmd, "--speed %v: want %v to %v", speed, session.MinSpeed, session.MaxSpeed)
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
			if headless || asJSON || !session.IsTerminal(stdout) {
				return session.ReplayLines(rec, diagnose.DefaultThresholds(), asJSON, stdout)
			}
			return session.ReplayDashboard(cmd.Context(), rec, diagnose.DefaultThresholds(), args[0], speed, stdout)
		},
	}
	cmd.Flags().BoolVar(&headless, "headless", false, "print one line per frame, as fast as they are read (default when stdout is not a terminal)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "with --headless: JSON lines, verdicts recomputed")
	cmd.Flags().Float64Var(&speed, "speed", 1, "playback speed in the dashboard (0.5 to 64)")
	return cmd
}
