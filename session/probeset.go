package session

import (
	"context"
	"os"

	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/probes/gpu"
	"github.com/gpuwatch/gpuwatch/probes/host"
	"github.com/gpuwatch/gpuwatch/probes/job"
	"github.com/gpuwatch/gpuwatch/probes/training"
)

// probeSet is a session's sources, built once from its Options by
// newProbeSet, the one place probes are registered: one family after
// another (probes/host, probes/gpu, probes/job, probes/training,
// probes/endpoint), what is watched (target), and the command's own
// (Options.Probes: the embedded loader). Every session builds its set
// with it; nothing else assembles probes (TestEveryProbeIsASource checks
// what it builds).
type probeSet struct {
	probes   []probes.Probe
	attached *Attached      // nil without loaders
	loop     *training.Loop // nil unless Options.Loop
	title    string
}

// newProbeSet builds the sources for o. Nothing runs yet: the Sampler
// made of them starts what works in the background and stops it.
func newProbeSet(ctx context.Context, o Options) (*probeSet, error) {
	att, err := Attach(ctx, o.Roots.Proc, o.Attach)
	if err != nil {
		return nil, err
	}
	s := &probeSet{attached: att, title: o.Title}
	if s.title == "" && att != nil {
		s.title = att.Title
	}
	var table *host.ProcTable
	if o.Loop {
		table = new(host.ProcTable) // the Proc probe's reading, shared with the loop's finder
		lo := training.LoopOptions{Proc: o.Roots.Proc, Root: func() int { return o.PID }, Table: table, Hooked: o.Hooked}
		if att != nil {
			lo.Covered, lo.Serves = att.Ranks.Covers, att.Ranks.Announces
		}
		s.loop = training.NewLoop(lo)
	}
	pid := o.PID
	focus := s.focus(o)
	if pid == 0 {
		pid = o.Own
	}
	r := o.Roots.WithDefaults()
	// The host, in display order: CPU, memory, disks, network, PSI and
	// processes.
	ps := []probes.Probe{
		host.NewCPU(r.Proc),
		host.NewMem(r.Proc),
		host.NewDisk(r, host.DiskOptions{All: o.AllDisks}),
		host.NewNet(r.Proc, host.NetOptions{All: o.AllNet}),
		host.NewPSI(r.Proc),
		host.NewProc(r.Proc, host.ProcOptions{PID: pid, FocusOf: focus, Table: table}),
	}
	gpus := gpu.NewGPU(gpu.DefaultGPUSources(o.Roots.Sys)...)
	gpus.Select = &gpu.GPUSelect{List: o.GPUs, Proc: o.Roots.Proc, PIDOf: func() int {
		if focus != nil {
			if p := focus(); p != 0 {
				return p
			}
		}
		return pid
	}}
	ps = append(ps, gpus)
	switch {
	case o.PID != 0 || o.Cgroup != "":
		// The job, not the host: its cgroup's limits and use.
		ps = append(ps, job.NewCgroup(o.Roots, job.JobOptions{PID: pid, Cgroup: o.Cgroup, Source: o.CgroupSource, PIDOf: focus}))
	case o.Roots.Proc == "" || o.Roots.Proc == "/proc":
		// No job named, and gpuwatch looks at its own host: when it runs
		// confined (a container), its own limits are the ones that bind.
		// --proc-root/--sys-root of the host keep the host's view.
		var own *job.Cgroup
		if !o.Node {
			own = job.OwnCgroup(o.Roots, os.Getpid())
		}
		if own != nil && focus != nil {
			ps = append(ps, own.Following(focus)) // its limits, or the found job's where that lies outside them
		} else if own != nil {
			ps = append(ps, own)
		} else if focus != nil {
			// Loaders or a training process may be found later: the job is
			// then theirs.
			ps = append(ps, job.NewCgroup(o.Roots, job.JobOptions{PID: o.Own, PIDOf: focus}))
		}
	}
	if s.loop != nil {
		ps = append(ps, s.loop) // before the ranks: a loader they read wins the frame
	}
	if att != nil {
		ps = append(ps, att.Ranks)
		if !o.Attach.NoProfiles {
			ps = append(ps, att.Profiler) // the Sampler starts it (probes.Starter)
		}
	}
	ps = append(ps, newTarget(o, s))
	s.probes = append(ps, o.Probes...)
	return s, nil
}

// focus is the process tree the view follows when no PID is given: the
// pacing rank's process, else the training process the loop samples;
// nil when nothing can move it.
func (s *probeSet) focus(o Options) func() int {
	if o.PID != 0 || (s.attached == nil && s.loop == nil) {
		return nil
	}
	return func() int {
		if pid := s.attached.PacingPID(); pid != 0 {
			return pid
		}
		if s.loop != nil {
			if t, ok := s.loop.Target(); ok {
				return t.PID
			}
		}
		return 0
	}
}
