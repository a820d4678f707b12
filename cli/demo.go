package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session/embedded"
)

// demoOptions are the demo command's flags and streams: cli/cli's options
// struct, with runDemo its run function.
type demoOptions struct {
	watch     watchFlags
	knobs     knobFlags
	tourEvery time.Duration // with a tour: time per scenario
	clean     bool          // remove the datasets instead
	stdout    io.Writer
	stderr    io.Writer
}

func newDemoCmd(stdout, stderr io.Writer) *cobra.Command {
	opts := &demoOptions{stdout: stdout, stderr: stderr}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch the embedded test loader make a bottleneck happen for real",
		Long: `demo runs gpuwatch's embedded test loader in this process — real files, real
reads, real CPU work per sample, a simulated accelerator step — and watches it.

With no --scenario and no knob it tours every scenario, switching every 45 s,
so each verdict shows up in turn. With knobs and no --scenario it runs that one
custom configuration (defaults for the rest).

Its datasets are written once to ~/.cache/gpuwatch/dataset-SIZE (about 1.3 GB
after a tour, in the cache folder of $XDG_CACHE_HOME) and reused after;
gpuwatch demo --clean removes them.`,
		Example: `  gpuwatch demo
  gpuwatch demo --scenario single-core --headless
  gpuwatch demo --workers 0 --decode-cost 2ms --headless --json`,
		Args: noArgs("a scenario is --scenario NAME (gpuwatch demo --help lists them)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.clean {
				// Alone: with --dataset DIR it removed the cache's datasets,
				// not DIR, and dropped --scenario, -d and the rest unsaid.
				var other []string
				cmd.Flags().Visit(func(f *pflag.Flag) {
					if f.Name != "clean" && cmd.InheritedFlags().Lookup(f.Name) == nil { // the root's hidden --memprofile and such stand
						other = append(other, "--"+f.Name)
					}
				})
				if len(other) > 0 {
					return usageErrorf(cmd, "--clean removes the demo's own datasets (~/.cache/gpuwatch/dataset-*) and takes no other flag (%s); a --dataset folder of yours is yours to remove", strings.Join(other, ", "))
				}
				return removeDatasets(opts.stdout)
			}
			if err := opts.watch.validate(cmd); err != nil {
				return err
			}
			cfgs, err := opts.configs(cmd)
			if err != nil {
				return err
			}
			if opts.tourEvery <= 0 {
				return usageErrorf(cmd, "--tour-every must be positive")
			}
			return runDemo(cmd.Context(), opts, cfgs)
		},
	}
	opts.watch.register(cmd, offerOnce|offerOutput|offerRecord)
	opts.knobs.register(cmd, false)
	cmd.Flags().DurationVar(&opts.tourEvery, "tour-every", 45*time.Second, "with the tour: time per scenario")
	cmd.Flags().BoolVar(&opts.clean, "clean", false, "remove the demo's datasets from the cache folder (~/.cache/gpuwatch/dataset-*: about 1.3 GB after a tour) and exit")
	return cmd
}

// removeDatasets is demo --clean: it removes the demo's datasets from the
// cache folder and says what it freed.
func removeDatasets(stdout io.Writer) error {
	dirs, freed, err := loader.RemoveDefaultDatasets()
	if len(dirs) == 0 && err == nil {
		fmt.Fprintln(stdout, "no demo dataset to remove")
	}
	for _, d := range dirs {
		fmt.Fprintf(stdout, "removed %s\n", d)
	}
	if len(dirs) > 0 {
		fmt.Fprintf(stdout, "freed %s\n", sample.FormatBytes(float64(freed)))
	}
	return err
}

// configs are the configurations the demo runs: the --scenario given, one
// custom configuration from the knobs given, or else the tour of every
// scenario.
func (opts *demoOptions) configs(cmd *cobra.Command) ([]loader.Config, error) {
	k := &opts.knobs
	var plan []string
	switch {
	case k.scenario != "":
		plan = []string{k.scenario}
	case k.anyKnob(cmd):
		plan = []string{""} // one custom configuration
	default:
		plan = loader.Scenarios
	}
	cfgs := make([]loader.Config, len(plan))
	for i, name := range plan {
		c, err := k.config(cmd, name)
		if err != nil {
			return nil, err
		}
		cfgs[i] = c
	}
	return cfgs, nil
}

// runDemo opens every configuration's dataset, then runs the demo.
func runDemo(ctx context.Context, opts *demoOptions, cfgs []loader.Config) error {
	l, err := embedded.OpenLoaders(cfgs, opts.knobs.events, opts.stderr)
	if err != nil {
		return err
	}
	defer l.Close()
	o := opts.watch.options(opts.stdout, opts.stderr)
	o.Loop = false // the loader is the embedded one, in this process
	return embedded.Demo(ctx, o, embedded.DemoPlan{Configs: cfgs, Datasets: l.Datasets, Events: l.Events, Every: opts.tourEvery})
}
