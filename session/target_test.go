package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/probes/endpoint"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session/job"
)

// TestTargetStartsUntilTheHookIsRead: gpuwatch run's job is starting
// while its hook is loaded and no loader is read — before its first
// DataLoader iterates, and also once the hook serves but discovery has
// not connected (the frames then have no loader: judged by threads
// alone, a --once settled on single_core_maxed, "no accelerator
// signal"). Past the start-up grace it is judged, whatever it serves.
func TestTargetStartsUntilTheHookIsRead(t *testing.T) {
	dir := t.TempDir()
	j, err := job.Start(job.Options{Argv: []string{"sleep", "30"}, RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Stop(time.Second) })
	tg := newTarget(Options{Target: Target{Job: j}}, &probeSet{})
	at := time.Now()
	collect := func(after time.Duration) *sample.Target {
		f := &sample.Frame{Time: at.Add(after)}
		if err := tg.Collect(context.Background(), f); err != nil || f.Target == nil {
			t.Fatalf("no target: %v", err)
		}
		return f.Target
	}
	starting := func(after time.Duration) bool { return collect(after).Starting }
	if tgt := collect(0); tgt.Starting || !tgt.NoHook {
		t.Errorf("before the hook was loaded: starting %v (a program that is not Python would never be judged), no hook %v", tgt.Starting, tgt.NoHook)
	}
	mark := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mark(fmt.Sprintf("py-%d", j.PID()))
	if tgt := collect(time.Second); !tgt.Starting || tgt.NoHook {
		t.Errorf("the hook is loaded and no DataLoader iterates: starting %v, no hook %v", tgt.Starting, tgt.NoHook)
	}
	mark(fmt.Sprintf("%d-0.json", j.PID())) // the hook serves
	if tgt := collect(2 * time.Second); !tgt.Starting || !tgt.HookServes {
		t.Errorf("the hook serves and gpuwatch does not read it yet: starting %v, serves %v", tgt.Starting, tgt.HookServes)
	}
	// The hook's announcement goes at its exit, before its process: it
	// served all the same.
	if err := os.Remove(filepath.Join(dir, fmt.Sprintf("%d-0.json", j.PID()))); err != nil {
		t.Fatal(err)
	}
	if tgt := collect(3 * time.Second); !tgt.HookServes {
		t.Error("its announcement gone, the hook no longer read as having served")
	}
	if starting(startGrace + time.Second) {
		t.Error("still starting past the grace")
	}
}

// TestTheAttachedLoadersProcessIsTheTarget (a hostile user's review):
// attached to one loader, the target was the busiest torch process the
// loop's finder picked among the others, another user's job. The
// loader's own process is watched, and the reason says so.
func TestTheAttachedLoadersProcessIsTheTarget(t *testing.T) {
	att := &Attached{Ranks: endpoint.NewRanks(nil, nil, 0), procRoot: "/proc", first: os.Getpid()}
	tg := newTarget(Options{}, &probeSet{attached: att})
	f := &sample.Frame{Time: time.Now()}
	if err := tg.Collect(context.Background(), f); err != nil || f.Target == nil {
		t.Fatalf("no target: %v", err)
	}
	if f.Target.PID != os.Getpid() || f.Target.Why != "the attached loader's process" || f.Target.Command == "" {
		t.Fatalf("target = %+v: want pid %d, the attached loader's process, with its command line", f.Target, os.Getpid())
	}
}

// TestTargetLoaderLineSaysSeparateJobs (a review: two unrelated scripts
// read "the hook or a loader's own server: 2 ranks"): two discovered
// loaders that announce no WORLD_SIZE above 1 are two loaders of separate
// jobs; two ranks of one job of two are ranks, as before; a URL the user
// gave is a rank by the user's word, and a loader that does not answer
// is not counted.
func TestTargetLoaderLineSaysSeparateJobs(t *testing.T) {
	one, two := 1, 2
	own := []sample.Rank{{PID: 5816, WorldSize: &one, Connected: true}, {PID: 5817, WorldSize: &one, Connected: true}, {PID: 9, WorldSize: &one}}
	if n := ownJobsIn(own); n != 2 {
		t.Fatalf("two jobs of their own that answer: %d", n)
	}
	ranks := []sample.Rank{{PID: 5816, WorldSize: &two, Connected: true}, {PID: 5817, Rank: 1, WorldSize: &two, Connected: true}, {URL: "given", Connected: true}}
	if n := ownJobsIn(ranks); n != 0 {
		t.Fatalf("two ranks of one job, and a URL given whose world was not read, counted as jobs of their own: %d", n)
	}
	what := "the hook or a loader's own server"
	for _, c := range []struct {
		n, own int
		want   string
	}{
		{2, 2, what + ": 2 loaders (separate jobs, not ranks of one)"},
		{2, 0, what + ": 2 ranks"},
		{3, 1, what + ": 3 loaders (2 ranks of a distributed job, 1 of separate jobs)"},
	} {
		if got := loadersLine(what, c.n, c.own); got != c.want {
			t.Errorf("%d loaders, %d own: %q, want %q", c.n, c.own, got, c.want)
		}
	}
}
