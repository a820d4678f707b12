package embedded

import (
	"fmt"
	"io"
	"os"

	"github.com/shirou/gopsutil/v4/mem"

	"github.com/gpuwatch/gpuwatch/loader"
)

// Loaders are what the loader commands (demo, loader, sweep, tune) open
// before they run: one dataset per configuration (generated once, saying
// so), and the --events writer. Close flushes the events.
type Loaders struct {
	Datasets []*loader.Dataset
	Events   *loader.Events
	close    func()
}

// Close flushes and closes the events file, if any.
func (l *Loaders) Close() {
	if l.close != nil {
		l.close()
	}
}

// OpenLoaders opens the datasets of cfgs (before any watching, so
// generation is not mistaken for the loader's work) and the events file
// ("" for none), saying on stderr when a dataset is being written.
func OpenLoaders(cfgs []loader.Config, eventsPath string, stderr io.Writer) (*Loaders, error) {
	l := &Loaders{}
	if eventsPath != "" {
		f, err := os.Create(eventsPath)
		if err != nil {
			return nil, fmt.Errorf("--events: %w", err)
		}
		ev := loader.NewEvents(f)
		l.Events, l.close = ev, func() { _ = ev.Close(); _ = f.Close() }
	}
	for _, c := range cfgs {
		if !loader.DatasetReady(c.Dataset, c.DatasetSize) {
			fmt.Fprintf(stderr, "gpuwatch: generating a %s dataset in %s (once; reused after; gpuwatch demo --clean removes the demo's datasets)\n", loader.FormatSize(c.DatasetSize), c.Dataset)
		}
		ds, err := loader.OpenDataset(c.Dataset, c.DatasetSize, c.Seed)
		if err == nil && c.DirectIO {
			err = ds.CheckDirectIO()
		}
		if err != nil {
			l.Close()
			return nil, err
		}
		l.Datasets = append(l.Datasets, ds)
	}
	return l, nil
}

// MemAvailable is the host's available memory in bytes, to scale the
// loader's presets; 0 if unknown. gopsutil reads it once: not a hot path.
func MemAvailable() int64 {
	if v, err := mem.VirtualMemory(); err == nil {
		return int64(v.Available)
	}
	return 0
}
