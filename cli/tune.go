package cli

import (
	"encoding/json"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/loader"
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
			l, err := session.OpenLoaders([]loader.Config{c}, k.events, stderr)
			if err != nil {
				return err
			}
			defer l.Close()
			o := session.TuneOptions{Interval: interval, MaxRun: maxRun, MaxSteps: steps, Th: diagnose.DefaultThresholds(),
				Roots: probes.Roots{Proc: "/proc", Sys: "/sys"}, Events: l.Events}
			enc := json.NewEncoder(stdout)
			return session.Tune(cmd.Context(), o, c, l.Datasets[0], func(s session.TuneStep) error {
				if asJSON {
					return enc.Encode(s)
				}
				_, err := io.WriteString(stdout, s.String())
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
