package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/fleet"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session"
	"github.com/gpuwatch/gpuwatch/tui"
)

// fleetOptions are fleet's flags.
type fleetOptions struct {
	job                    string
	every                  time.Duration
	headless, asJSON, once bool
	th                     thresholdFlags
	stdout, stderr         io.Writer
}

func newFleetCmd(stdout, stderr io.Writer) *cobra.Command {
	opts := &fleetOptions{stdout: stdout, stderr: stderr}
	cmd := &cobra.Command{
		Use:   "fleet PROMETHEUS_URL [--job J]",
		Short: "Every node's verdict and ranks from Prometheus, worst first (gpuwatch serve on each node)",
		Long: `fleet reads the gpuwatch series that a Prometheus server scrapes from
gpuwatch serve on every node (instant queries of its HTTP API) and shows one
row per node and per rank, worst first: the rank that waits most across the
fleet (the straggler), then nodes and ranks with a bottleneck verdict. See
docs/prometheus.md for the scrape config and the rules.`,
		Example: `  gpuwatch fleet http://prometheus:9090
  gpuwatch fleet http://prometheus:9090 --job gpuwatch --once --json`,
		Args: oneArg("the Prometheus server's URL", "a job is --job J"),
		RunE: func(cmd *cobra.Command, args []string) error { return runFleet(cmd, opts, args) },
	}
	cmd.Flags().StringVar(&opts.job, "job", "", "only this Prometheus job's series (its scrape job name)")
	cmd.Flags().DurationVarP(&opts.every, "interval", "n", 5*time.Second, "time between refreshes")
	cmd.Flags().BoolVar(&opts.headless, "headless", false, "print the rows each refresh instead of the dashboard")
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "print each refresh as one JSON object")
	cmd.Flags().BoolVar(&opts.once, "once", false, "print one refresh and exit")
	opts.th.register(cmd)
	return cmd
}

// fleetLines prints each refresh: the rows as text, or one JSON object.
func fleetLines(ctx context.Context, c *fleet.Client, every time.Duration, asJSON, once bool, out io.Writer) error {
	enc := json.NewEncoder(out)
	for {
		s, err := c.Snapshot(ctx)
		switch {
		case err != nil && once:
			return err
		case err != nil:
			fmt.Fprintf(out, "%s %s\n", time.Now().Format("15:04:05"), sample.Printable(err.Error()))
		case asJSON:
			if err := enc.Encode(s); err != nil {
				return err
			}
		default:
			fmt.Fprintf(out, "%s %d rows, worst first\n", s.Time.Format("15:04:05"), len(s.Rows))
			for _, r := range s.Rows {
				fmt.Fprintln(out, "  "+sample.Printable(r.Line()))
			}
			for _, d := range s.Dropped {
				fmt.Fprintln(out, "  left out: "+sample.Printable(d))
			}
		}
		if once {
			return nil
		}
		select {
		case <-time.After(every):
		case <-ctx.Done():
			return nil
		}
	}
}

// runFleet reads the fleet from the Prometheus server args[0]: lines, or
// the fleet's dashboard.
func runFleet(cmd *cobra.Command, opts *fleetOptions, args []string) error {
	job, every, th, stdout := opts.job, opts.every, &opts.th, opts.stdout
	headless, asJSON, once := opts.headless, opts.asJSON, opts.once
	if every < time.Second {
		return usageErrorf(cmd, "--interval %v: at least 1s (each refresh is several queries)", every)
	}
	thresholds, err := th.apply(cmd, diagnose.DefaultThresholds())
	if err != nil {
		return err
	}
	c, err := fleet.NewClient(args[0], job, thresholds)
	if err != nil {
		return usageErrorf(cmd, "%v", err)
	}
	ctx := cmd.Context()
	if headless || asJSON || once || !session.IsTerminal(stdout) {
		return fleetLines(ctx, c, every, asJSON, once, stdout)
	}
	updates := make(chan tui.FleetUpdate)
	return session.RunProgram(ctx, tui.NewFleet(c.Source(), updates), stdout, false, func(ctx context.Context, _ func()) error {
		for {
			s, err := c.Snapshot(ctx)
			select {
			case updates <- tui.FleetUpdate{Snapshot: s, Err: err}:
			case <-ctx.Done():
				return nil
			}
			select {
			case <-time.After(every):
			case <-ctx.Done():
				return nil
			}
		}
	})
}
