package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/probes/endpoint"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestEmbeddedLoaderStartingIsRetriedNextTick: a first tick that comes
// before the demo sets its loader must not rest the loader probe for the
// sampler's 30 s retry (CI saw a demo whose frames said "starting"
// throughout): the next tick reads the loader.
func TestEmbeddedLoaderStartingIsRetriedNextTick(t *testing.T) {
	c := loader.Default()
	c.Dataset, c.DatasetSize = t.TempDir(), 4<<20
	ds, err := loader.OpenDataset(c.Dataset, c.DatasetSize, c.Seed)
	if err != nil {
		t.Fatal(err)
	}
	src := &Source{}
	s := probes.NewSampler([]probes.Probe{endpoint.NewLoader(src)}, probes.SamplerOptions{})
	defer s.Close()
	ctx := context.Background()
	if f := s.Tick(ctx); f.Unavailable[sample.SourceLoader] != "the embedded loader is starting" {
		t.Fatalf("first tick: unavailable %v", f.Unavailable)
	}
	src.Set(loader.New(c, ds, nil))
	if f := s.Tick(ctx); f.Unavailable[sample.SourceLoader] != "" || f.Loader == nil {
		t.Fatalf("second tick: loader %+v, unavailable %v", f.Loader, f.Unavailable)
	}
}

// The embedded loader's wait under way reaches the probe's counters.
func TestCountersCarryTheWaitUnderWay(t *testing.T) {
	c := loader.Default()
	got := countersFromSnapshot(loader.Snapshot{Waiting: 3 * time.Second}, c)
	if got.Waiting == nil || *got.Waiting != 3 {
		t.Fatalf("waiting %v, want 3 s", got.Waiting)
	}
}

// TestLoaderHangWaitIsTheWatchers: the embedded loader says an epoch's
// first wait as a wait under way from loader.HangWait, and the watcher
// calls a wait of sample.HangWait a hang (loader imports nothing of
// gpuwatch, so it cannot take the figure from sample).
func TestLoaderHangWaitIsTheWatchers(t *testing.T) {
	if loader.HangWait != sample.HangWait {
		t.Errorf("loader.HangWait %v, sample.HangWait %v", loader.HangWait, sample.HangWait)
	}
}
