package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/report"
)

func newDemoCmd(stdout, stderr io.Writer) *cobra.Command {
	var w watchFlags
	var k knobFlags
	var tourEvery time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch the embedded test loader make a bottleneck happen for real",
		Long: `demo runs gpuwatch's embedded test loader in this process — real files, real
reads, real CPU work per sample, a simulated accelerator step — and watches it.

With no --scenario and no knob it tours every scenario, switching every 45 s,
so each verdict shows up in turn. With knobs and no --scenario it runs that one
custom configuration (defaults for the rest).`,
		Example: `  gpuwatch demo
  gpuwatch demo --scenario single-core --headless
  gpuwatch demo --workers 0 --decode-cost 2ms --headless --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := w.validate(cmd); err != nil {
				return err
			}
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
					return err
				}
				cfgs[i] = c
			}
			if tourEvery <= 0 {
				return usageErrorf(cmd, "--tour-every must be positive")
			}
			return runDemo(cmd.Context(), &w, cfgs, k.events, tourEvery, stdout, stderr)
		},
	}
	w.register(cmd)
	k.register(cmd, false)
	cmd.Flags().DurationVar(&tourEvery, "tour-every", 45*time.Second, "with the tour: time per scenario")
	return cmd
}

// runDemo runs each configuration in turn (round and round for the tour)
// while the session watches the machine and the loader.
func runDemo(ctx context.Context, w *watchFlags, cfgs []loader.Config, eventsPath string, every time.Duration, stdout, stderr io.Writer) error {
	events, closeEvents, err := openEvents(eventsPath)
	if err != nil {
		return err
	}
	defer closeEvents()
	// Open every dataset before watching, so generation is not mistaken
	// for the loader's work.
	datasets := make([]*loader.Dataset, len(cfgs))
	for i, c := range cfgs {
		ds, err := openDataset(c, func(s string) { fmt.Fprintln(stderr, "gpuwatch:", s) })
		if err != nil {
			return err
		}
		datasets[i] = ds
	}
	src := &embeddedSource{}
	notes := make(chan any, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	loaderErr := make(chan error, 1)
	go func() {
		defer close(notes)
		defer func() {
			// A loader bug must not leave the terminal in raw mode: report
			// it as an error, and the session stops cleanly.
			if r := recover(); r != nil {
				loaderErr <- fmt.Errorf("loader panicked: %v", r)
			}
		}()
		for i := 0; ; i = (i + 1) % len(cfgs) {
			c := cfgs[i]
			l := loader.New(c, datasets[i], events)
			src.set(l)
			name := c.ScenarioName
			if name == "" {
				name = "custom"
			}
			select {
			case notes <- report.Scenario{Time: time.Now(), Name: name, Knobs: c.Knobs()}:
			case <-ctx.Done():
				loaderErr <- nil
				return
			}
			runCtx, stop := context.WithCancel(ctx)
			if len(cfgs) > 1 {
				runCtx, stop = context.WithTimeout(ctx, every)
			}
			err := l.Run(runCtx)
			stop()
			if ctx.Err() != nil {
				loaderErr <- nil
				return
			}
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				loaderErr <- fmt.Errorf("loader: %w", err)
				return
			}
			if len(cfgs) == 1 {
				loaderErr <- nil // the configuration's epochs are done
				return
			}
		}
	}()
	title := "demo: tour of every scenario"
	if len(cfgs) == 1 {
		title = "demo: " + cfgs[0].ScenarioName
		if cfgs[0].ScenarioName == "" {
			title = "demo: custom loader"
		}
	}
	sess := session{probes: []probes.Probe{probes.NewLoader(src)}, focus: os.Getpid(), notes: notes, title: title}
	done := make(chan error, 1)
	go func() { done <- runSession(ctx, w, sess, stdout, stderr) }()
	select {
	case err := <-done:
		cancel()
		return err
	case err := <-loaderErr:
		if err != nil {
			cancel()
			<-done
			return err
		}
		// A configuration with --epochs finished: stop watching too.
		cancel()
		return <-done
	}
}
