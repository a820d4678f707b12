package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/session"
)

func newTuneCmd(stdout, stderr io.Writer) *cobra.Command {
	var k knobFlags
	var asJSON bool
	var interval, maxRun time.Duration
	var steps int
	cmd := &cobra.Command{
		Use:   "tune [knobs]",
		Short: "Run the embedded loader, apply the verdict's changes, and run again until it is healthy",
		Long: `tune runs the embedded test loader with the knobs given, waits for the
verdict to settle, applies the changes the pipeline model computed, and runs
again. It stops when the verdict is healthy, when the model has no change to
offer, or when a step gains under 5 %. Each step prints the knobs, the
samples/s the model predicted for them, the samples/s measured, and the
wait share: a model-guided version of sweep's grid.`,
		Example: `  gpuwatch tune --scenario starved
  gpuwatch tune --workers 0 --decode-cost 2ms --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := k.config(cmd, k.scenario)
			if err != nil {
				return err
			}
			if interval < 100*time.Millisecond || maxRun < 5*interval || steps < 1 {
				return usageErrorf(cmd, "want --interval ≥ 100ms, --max-run ≥ 5 intervals and --steps ≥ 1")
			}
			ds, err := openDataset(c, func(s string) { fmt.Fprintln(stderr, "gpuwatch:", s) })
			if err != nil {
				return err
			}
			events, closeEvents, err := openEvents(k.events)
			if err != nil {
				return err
			}
			defer closeEvents()
			o := session.TuneOptions{Interval: interval, MaxRun: maxRun, MaxSteps: steps, Th: diagnose.DefaultThresholds(),
				Roots: probes.Roots{Proc: "/proc", Sys: "/sys"}, Events: events}
			enc := json.NewEncoder(stdout)
			return session.Tune(cmd.Context(), o, c, ds, func(s session.TuneStep) error {
				if asJSON {
					return enc.Encode(s)
				}
				_, err := io.WriteString(stdout, tuneLine(s))
				return err
			})
		},
	}
	k.register(cmd, false)
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per step")
	cmd.Flags().DurationVarP(&interval, "interval", "n", 500*time.Millisecond, "time between samples")
	cmd.Flags().DurationVar(&maxRun, "max-run", 30*time.Second, "the longest one configuration runs waiting for its verdict to settle")
	cmd.Flags().IntVar(&steps, "steps", 5, "the most configurations tried")
	return cmd
}

// tuneLine is a step in words.
func tuneLine(s session.TuneStep) string {
	var b strings.Builder
	k := s.Knobs
	fmt.Fprintf(&b, "step %d: workers %s prefetch %s persistent %s cache %s\n", s.Step, k["workers"], k["prefetch"], k["persistent"], k["cache"])
	if s.Predicted != nil {
		fmt.Fprintf(&b, "  predicted %.0f samples/s, wait %.0f %%; measured %.0f samples/s, wait %.0f %% (%+.0f %%)\n",
			s.Predicted.SamplesPerSec, 100*s.Predicted.WaitShare, s.Measured.SamplesPerSec, 100*s.Measured.WaitShare,
			100*(s.Measured.SamplesPerSec/s.Predicted.SamplesPerSec-1))
	} else {
		fmt.Fprintf(&b, "  measured %.0f samples/s, wait %.0f %%\n", s.Measured.SamplesPerSec, 100*s.Measured.WaitShare)
	}
	fmt.Fprintf(&b, "  verdict %s: %s\n", s.Verdict, s.Evidence)
	for _, c := range s.Changes {
		fmt.Fprintf(&b, "  change %s %s → %s (%s=%s): %s\n", c.Knob, c.From, c.To, c.Flag, c.To, c.Why)
	}
	if s.Next != nil {
		fmt.Fprintf(&b, "  the model predicts %.0f samples/s, wait %.0f %%\n", s.Next.SamplesPerSec, 100*s.Next.WaitShare)
	}
	return b.String()
}
