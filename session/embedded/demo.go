package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/bg"
	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/probes/endpoint"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session"
	"github.com/gpuwatch/gpuwatch/tui"
)

// DemoPlan is what the demo runs: the embedded loader's configurations,
// each over its open dataset, in turn.
type DemoPlan struct {
	// Configs are run in turn, round and round when there are several.
	Configs []loader.Config
	// Datasets are the configurations' open datasets, one each, in order.
	Datasets []*loader.Dataset
	// Events is where the loaders write their events (nil: nowhere).
	Events *loader.Events
	// Every is each configuration's time in a tour of several.
	Every time.Duration
}

// Demo runs each of the plan's configurations in turn (round and round,
// every plan.Every, when there are several) over its open dataset, while a
// session with o watches this machine and the loader. A single
// configuration with a set number of epochs ends the session when done.
func Demo(ctx context.Context, o session.Options, plan DemoPlan) error {
	src := &Source{}
	notes := make(chan sample.Note, 1)
	touring := bg.New(ctx) // the tour's goroutine: stopped and waited for on every return
	defer touring.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	loaderErr := make(chan error, 1)
	touring.Go(func(ctx context.Context) {
		defer close(notes)
		defer func() {
			// A loader bug must not leave the terminal in raw mode: report
			// it as an error, and the session stops cleanly.
			if r := recover(); r != nil {
				loaderErr <- fmt.Errorf("loader panicked: %v", r)
			}
		}()
		loaderErr <- tour(ctx, src, notes, plan)
	})
	o.Probes = append(o.Probes, endpoint.NewLoader(src))
	o.Own, o.Notes = os.Getpid(), notes
	if o.Title == "" {
		o.Title = demoTitle(plan.Configs)
	}
	done := make(chan error, 1)
	go func() { done <- session.Run(ctx, o) }()
	select {
	case err := <-done:
		return err
	case err := <-loaderErr:
		cancel() // a loader error, or a configuration's epochs done: stop watching too
		if werr := <-done; err == nil {
			return werr
		}
		return err
	}
}

// tour runs the plan's configurations, telling notes of each switch. It
// returns nil when ctx ends or a single configuration finishes its epochs.
func tour(ctx context.Context, src *Source, notes chan<- sample.Note, plan DemoPlan) error {
	cfgs, every := plan.Configs, plan.Every
	for i := 0; ; i = (i + 1) % len(cfgs) {
		c := cfgs[i]
		l := loader.New(c, plan.Datasets[i], plan.Events)
		src.Set(l)
		sc := sample.Scenario{Time: time.Now(), Name: c.Name(), Knobs: c.Knobs()}
		if len(cfgs) > 1 {
			until := sc.Time.Add(every)
			sc.Until = &until
		}
		select {
		case notes <- sc:
		case <-ctx.Done():
			return nil
		}
		runCtx, stop := context.WithCancel(ctx)
		if len(cfgs) > 1 {
			runCtx, stop = context.WithTimeout(ctx, every)
		}
		err := l.Run(runCtx)
		stop()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("loader: %w", err)
		case len(cfgs) == 1:
			return nil // the configuration's epochs are done
		}
	}
}

// demoTitle is what the dashboard says it watches for these configurations.
func demoTitle(cfgs []loader.Config) string {
	if len(cfgs) > 1 {
		return tui.DemoTour
	}
	return "demo: " + cfgs[0].Name()
}
