package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/session"
)

func newSweepCmd(stdout, stderr io.Writer) *cobra.Command {
	var k knobFlags
	var workers, prefetch, persistent, out string
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Run the embedded loader over a grid of workers × prefetch × persistent and compare",
		Long: `sweep runs the embedded test loader once per configuration of the grid
(--workers × --prefetch × --persistent), with the other knobs fixed, and
prints a table: samples/s, MB/s, wait mean/p50/p99, accelerator busy %, time
to the first batch and the stall at each epoch boundary. The best row (most
samples/s) is marked. --out writes the results as JSON.`,
		Example: `  gpuwatch sweep --workers 0,1,2,4 --prefetch 1,2,4 --decode-cost 1ms
  gpuwatch sweep --scenario starved --workers 1,2,4,8 --prefetch 2 --out sweep.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, err := parseIntList(workers)
			if err != nil {
				return usageErrorf(cmd, "--workers %v", err)
			}
			ps, err := parseIntList(prefetch)
			if err != nil {
				return usageErrorf(cmd, "--prefetch %v", err)
			}
			var pers []bool
			switch persistent {
			case "both":
				pers = []bool{false, true}
			case "true":
				pers = []bool{true}
			case "false":
				pers = []bool{false}
			default:
				return usageErrorf(cmd, "--persistent %q: want true, false or both", persistent)
			}
			base, err := k.config(cmd, k.scenario)
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
			grid := session.SweepGrid(base, ws, ps, pers)
			for _, c := range grid {
				if err := c.Validate(c.Workers > 0); err != nil {
					return usageErrorf(cmd, "%v", err)
				}
			}
			return runSweepCmd(cmd.Context(), base, grid, out, k.events, stdout, stderr)
		},
	}
	k.register(cmd, true)
	cmd.Flags().StringVar(&workers, "workers", "0,1,2,4", "num_workers values, comma-separated")
	cmd.Flags().StringVar(&prefetch, "prefetch", "2", "prefetch_factor values, comma-separated (ignored for 0 workers)")
	cmd.Flags().StringVar(&persistent, "persistent", "false", "persistent_workers: true, false or both")
	cmd.Flags().StringVar(&out, "out", "", "write the results as JSON to this file")
	return cmd
}

func runSweepCmd(ctx context.Context, base loader.Config, grid []loader.Config, out, eventsPath string, stdout, stderr io.Writer) error {
	// One dataset and one events log for the whole sweep.
	l, err := session.OpenLoaders([]loader.Config{base}, eventsPath, stderr)
	if err != nil {
		return err
	}
	defer l.Close()
	return session.Sweep(ctx, base, grid, l.Datasets[0], l.Events, out, stdout, stderr)
}
