package session

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/probes/host"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session/job"
)

// target is the probe that fills Frame.Target: what the session watches,
// why, how its loader is seen, and whether it still runs. It reads the
// other sources' state (the job, the ranks, the loop sampler), never
// their frames.
type target struct {
	o      Options
	set    *probeSet
	gone   *time.Time // when --pid's process was first seen gone
	cmd    string     // cmdPID's command line, read once
	cmdPID int
	hookAt time.Time // when the run folder was last read
	hook   []int     // processes that loaded the hook (gpuwatch run)
	serves []int     // of those, the ones whose hook serves (announced in the run folder)
	served bool      // a hook of the job has served (its announcement goes at its exit, before the process)
	logs   string    // the hook's own warnings (gpuwatch run), newest
	first  time.Time // the first frame's time
}

// startGrace is how long a job that loaded the hook may start before its
// first DataLoader iterates (imports, a model, compilation: 10–20 s on a
// GPU host) while its threads are not judged as its loop. A job with no
// DataLoader is judged after it, as a process tree.
const startGrace = 30 * time.Second

func newTarget(o Options, s *probeSet) *target { return &target{o: o, set: s} }

// Name implements probes.Probe.
func (t *target) Name() string { return "target" }

// Collect implements probes.Probe.
func (t *target) Collect(_ context.Context, f *sample.Frame) error {
	var out *sample.Target
	switch {
	case t.o.Job != nil:
		j := t.o.Job
		out = &sample.Target{PID: j.PID(), Command: j.Command(), Why: "gpuwatch run"}
		select {
		case <-j.Done():
			how, at := j.Exit()
			out.ExitedAt, out.Exit = &at, how
		default:
			out.Stopped = job.Stopped(cmp.Or(t.o.Roots.Proc, "/proc"), j.PID())
		}
	case t.o.PID != 0:
		out = &sample.Target{PID: t.o.PID, Command: t.command(t.o.PID), Why: cmp.Or(t.o.PIDWhy, "--pid")}
		if t.gone == nil && !host.ProcessExists(t.o.Roots.Proc, t.o.PID) {
			now := f.Time
			t.gone = &now
		}
		out.ExitedAt = t.gone
	case t.set.attached.PacingPID() != 0:
		// The loader attached (or the pacing rank of those found) says
		// which process it is: that one, not the busiest torch process
		// the loop's finder picks among the others (a hostile user's
		// review: attached to one loader, it named another user's job).
		pid := t.set.attached.PacingPID()
		out = &sample.Target{PID: pid, Command: t.command(pid), Why: "the attached loader's process"}
	case t.set.loop != nil:
		if tp, ok := t.set.loop.Target(); ok {
			out = &sample.Target{PID: tp.PID, Command: tp.Command, Why: tp.Why}
		}
	}
	if out == nil {
		return nil
	}
	out.Loader = t.loader(out, f)
	if t.first.IsZero() {
		t.first = f.Time
	}
	// Starting until gpuwatch reads the hook, not only until it serves:
	// between the DataLoader's first batch and discovery's first answer
	// (a discovery pass every 2 s, more under load) the frames have no
	// loader, and a --once judged them by threads alone (CI: a padding loop
	// settled on single_core_maxed, "no accelerator signal").
	read := t.set.attached != nil && t.set.attached.Ranks.Connected() > 0
	out.Starting = t.o.Job != nil && out.ExitedAt == nil && len(t.hook) > 0 && f.Time.Sub(t.first) < startGrace && !read
	out.NoHook = t.o.Job != nil && out.ExitedAt == nil && len(t.hook) == 0 && len(t.serves) == 0 && !read
	t.served = t.served || read
	out.HookServes = t.o.Job != nil && t.served
	f.Target = out
	return nil
}

// loader says how the job's loader is seen.
func (t *target) loader(out *sample.Target, f *sample.Frame) string {
	now := f.Time
	if a := t.set.attached; a != nil {
		if n := a.Ranks.Connected(); n > 0 {
			what := "the hook or a loader's own server"
			if t.o.Job != nil {
				what = "the hook (gpuwatch run)"
			}
			if n > 1 {
				return loadersLine(what, n, ownJobsIn(f.Ranks))
			}
			return what
		}
	}
	var s string
	if t.set.loop != nil {
		if tp, ok := t.set.loop.Target(); ok {
			s = fmt.Sprintf("sampled from pid %d's main thread (nobody instrumented it)", tp.PID)
		}
	}
	if t.o.Job == nil {
		if s == "" {
			if n := t.hiddenProcs(); n > 0 {
				what := fmt.Sprintf("%d busy processes of other users", n)
				if n == 1 {
					what = "a busy process of another user"
				}
				return "nothing instrumented, no training process (torch or CUDA) found among the processes gpuwatch may read: " + what +
					" could not be read (run it as root, or as the job's user): watched as a process tree"
			}
			return "nothing instrumented, no training process (torch or CUDA) found: watched as a process tree"
		}
		return s
	}
	// Every 2 s; every tick while no hook serves (a read of a private
	// folder), so that the frame the hook loads in, and the one a
	// DataLoader first iterates in, say so.
	if now.Sub(t.hookAt) >= 2*time.Second || len(t.serves) == 0 {
		t.hookAt = now
		t.hook, t.serves, t.logs = t.o.Job.HookState()
		t.served = t.served || len(t.serves) > 0
	}
	var why string
	switch {
	case out.ExitedAt != nil:
		why = "the job has exited"
	case len(t.serves) > 0:
		// A DataLoader has iterated (the hook serves from its first
		// epoch): the loop runs, gpuwatch cannot read it (issue 41, item 4).
		why = fmt.Sprintf("the hook serves (pid %s); gpuwatch does not read it now: its rates are unknown", sample.JoinInts(t.serves, 4))
	case len(t.hook) > 0:
		why = fmt.Sprintf("the hook is loaded (pid %s); no DataLoader has iterated yet", sample.JoinInts(t.hook, 4))
	default:
		why = "nothing instrumented: no Python process loaded the hook (a program that is not Python, or python -I or -S): watched as a process tree"
	}
	if t.logs != "" {
		why += "; the hook says: " + t.logs
	}
	if s != "" {
		return s + "; " + why
	}
	return why
}

// loadersLine says what n loaders that answer are: one job's ranks, or
// separate jobs (own of them a job of its own: a discovered loader with
// no torch.distributed WORLD_SIZE above 1, diagnose's "separate jobs").
func loadersLine(what string, n, own int) string {
	own = min(own, n)
	switch {
	case own == 0:
		return fmt.Sprintf("%s: %d ranks", what, n)
	case own == n:
		return fmt.Sprintf("%s: %d loaders (separate jobs, not ranks of one)", what, n)
	}
	return fmt.Sprintf("%s: %d loaders (%d ranks of a distributed job, %d of separate jobs)", what, n, n-own, own)
}

// ownJobsIn counts the loaders of ranks that answer and are jobs of their
// own, as the ranks probe has them (endpoint.rankOf) and diagnose reads
// them: a world size of 1 read (a discovered loader with no
// torch.distributed WORLD_SIZE above 1, from its metrics or its
// announcement); a URL the user gave, whose world was not read, is not
// one. From the frame's own ranks, not the announcements (a review: a
// spawned DDP job announced before its process group was up, and its two
// ranks of world 2 read "2 loaders (separate jobs, not ranks of one)").
func ownJobsIn(ranks []sample.Rank) int {
	n := 0
	for _, r := range ranks {
		if r.Connected && r.WorldSize != nil && *r.WorldSize <= 1 {
			n++
		}
	}
	return n
}

// command reads a process's command line once: printable, at most 120
// bytes.
func (t *target) command(pid int) string {
	if t.cmd != "" && t.cmdPID == pid {
		return t.cmd
	}
	b, err := os.ReadFile(filepath.Join(cmp.Or(t.o.Roots.Proc, "/proc"), strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return ""
	}
	b = bytes.ReplaceAll(bytes.TrimRight(b[:min(len(b), 4096)], "\x00"), []byte{0}, []byte{' '})
	s := sample.Printable(string(b))
	if len(s) > 120 {
		s = s[:117] + "…"
	}
	t.cmd, t.cmdPID = s, pid
	return s
}

// hiddenProcs is how many busy processes the loop's finder could not read
// (another user's), 0 without a loop sampler.
func (t *target) hiddenProcs() int {
	if t.set.loop == nil {
		return 0
	}
	return t.set.loop.Hidden()
}
