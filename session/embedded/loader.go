package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/probes/endpoint"
	"github.com/gpuwatch/gpuwatch/sample"
)

// LoaderProgress runs l (the loader command) and prints a progress line to
// stdout every `every` until it is done or ctx ends.
func LoaderProgress(ctx context.Context, l *loader.Loader, every time.Duration, stdout io.Writer) error {
	runErr := make(chan error, 1)
	go func() { runErr <- l.Run(ctx) }()
	tick := time.NewTicker(every)
	defer tick.Stop()
	src := &Source{}
	src.Set(l)
	p := endpoint.NewLoader(src)
	f := frameAt(time.Now())
	_ = p.Collect(ctx, f)
	for {
		select {
		case err := <-runErr:
			if err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			fmt.Fprintf(stdout, "done: %d batches\n", l.Snapshot().Batches)
			return nil
		case <-tick.C:
			f := frameAt(time.Now())
			if err := p.Collect(ctx, f); err == nil {
				fmt.Fprintln(stdout, progressLine(f, l.Snapshot().Epoch))
			}
		}
	}
}

func frameAt(t time.Time) *sample.Frame { return &sample.Frame{Time: t} }

// progressLine is the loader command's periodic line.
func progressLine(f *sample.Frame, epoch int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s epoch %d", f.Time.Format("15:04:05"), epoch)
	if l := f.Loader; l != nil {
		fmt.Fprintf(&b, " batches %d | %.0f samples/s %s/s", l.Batches, l.SamplesPerSec, sample.FormatBytes(l.BytesPerSec))
		if l.WaitShare != nil {
			fmt.Fprintf(&b, " | wait %.0f%%", 100**l.WaitShare)
		}
		if l.WaitP50Ms != nil && l.WaitP99Ms != nil {
			fmt.Fprintf(&b, " p50 %.1fms p99 %.1fms", *l.WaitP50Ms, *l.WaitP99Ms)
		}
		if l.QueueDepth != nil {
			fmt.Fprintf(&b, " | queue %.0f", *l.QueueDepth)
		}
	}
	if a := f.Accel; a != nil {
		fmt.Fprintf(&b, " | accelerator busy %.0f%%", a.BusyPct)
	}
	return b.String()
}
