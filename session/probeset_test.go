package session

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/probes/endpoint"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestEveryProbeIsASource: every probe newProbeSet registers, with every
// option that adds one turned on (a PID, so the job's cgroup; the loop
// sampler; discovery, so the ranks and their profiler; an embedded loader
// through Options.Probes), is named after one of sample.Sources, the typed
// keys its unavailable reason is filed under and the views look up.
func TestEveryProbeIsASource(t *testing.T) {
	o := Options{Target: Target{PID: os.Getpid(), Own: os.Getpid()},
		Sources: Sources{Loop: true, Attach: AttachTo{Discover: true, Dir: t.TempDir()},
			Probes: []probes.Probe{endpoint.NewLoader(nil)}}}
	set, err := newProbeSet(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range set.probes {
		names = append(names, p.Name())
		if !slices.Contains(sample.Sources, sample.Source(p.Name())) {
			t.Errorf("probe %q is not a declared sample.Source", p.Name())
		}
	}
	// Every family is there: the host, the GPU, the job, the training
	// process, the endpoints, the profiler, and the session's own target.
	for _, want := range []sample.Source{sample.SourceCPU, sample.SourceMem, sample.SourceDisk, sample.SourceNet,
		sample.SourcePSI, sample.SourceProc, sample.SourceGPU, sample.SourceJob, sample.SourceLoop,
		sample.SourceLoader, sample.SourceProfile, sample.SourceTarget} {
		if !slices.Contains(names, string(want)) {
			t.Errorf("no %q probe among %v", want, names)
		}
	}
}
