package cli

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/session"
	"github.com/gpuwatch/gpuwatch/tui"
)

// watchFlags are the flags of every command that watches this machine.
type watchFlags struct {
	interval time.Duration
	duration time.Duration
	headless bool
	json     bool
	pid      int
	allDisks bool
	allNet   bool
	once     bool
	cgroup   string
	slurmJob string
	procRoot string
	sysRoot  string
	gpus     string

	th         thresholdFlags
	thresholds diagnose.Thresholds

	record        string
	recordMaxSize int64
}

func (w *watchFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.DurationVarP(&w.interval, "interval", "n", time.Second, "time between samples")
	fl.DurationVarP(&w.duration, "duration", "d", 0, "stop after this long (0: run until Ctrl-C; with --once, the cap instead of 60s)")
	fl.BoolVar(&w.headless, "headless", false, "print one line per interval instead of the dashboard (the default when stdout is not a terminal)")
	fl.BoolVar(&w.json, "json", false, "with --headless: print one JSON object per line (schema: docs/json.md)")
	fl.IntVarP(&w.pid, "pid", "p", 0, "watch this process and its descendants (e.g. the training process and its DataLoader workers)")
	fl.BoolVar(&w.allDisks, "all-disks", false, "also show partitions and virtual block devices (loop, ram, dm-)")
	fl.StringVar(&w.cgroup, "cgroup", "", "judge the job in this cgroup (a path under /sys/fs/cgroup, e.g. /slurm/uid_1000/job_42) instead of --pid's")
	fl.StringVar(&w.slurmJob, "slurm-job", "", "judge this Slurm job: its cgroup is found under /sys/fs/cgroup")
	fl.StringVar(&w.gpus, "gpus", "", "the job's GPUs, by index or UUID (0,1 or GPU-8f3…): only they are judged (default: the job's CUDA_VISIBLE_DEVICES, else the GPUs NVML lists its processes on)")
	fl.BoolVar(&w.allNet, "all-net", false, "also show virtual network interfaces (lo, ifb*, veth*)")
	fl.BoolVar(&w.once, "once", false, "sample until the verdict has held 5 frames and 5 s (at most 60s, or --duration), print one summary and exit: 0 healthy or idle, 3 a bottleneck")
	fl.StringVar(&w.procRoot, "proc-root", "/proc", "where procfs is mounted (a host's /proc seen from a container)")
	fl.StringVar(&w.sysRoot, "sys-root", "/sys", "where sysfs is mounted")
	w.th.register(cmd)
	fl.StringVar(&w.record, "record", "", "record frames, verdicts and events to this file (JSON lines; replay with gpuwatch replay)")
	w.recordMaxSize = 512 << 20
	fl.Var(sizeFlag{&w.recordMaxSize}, "record-max-size", "rotate the recording to FILE.1 past this size")
}

// validate checks flag values that pflag's types do not.
func (w *watchFlags) validate(cmd *cobra.Command) error {
	switch {
	case w.interval < tui.MinInterval || w.interval > tui.MaxInterval:
		return usageErrorf(cmd, "--interval %v: must be between 50ms and 1h", w.interval)
	case w.duration < 0:
		return usageErrorf(cmd, "--duration %v: must not be negative", w.duration)
	case w.pid < 0:
		return usageErrorf(cmd, "--pid %d: must be a process ID", w.pid)
	}
	th, err := w.th.apply(cmd, diagnose.DefaultThresholds())
	if err != nil {
		return err
	}
	w.thresholds = th
	if w.gpus != "" {
		if _, err := probes.ParseGPUList(w.gpus); err != nil {
			return usageErrorf(cmd, "--gpus: %v", err)
		}
	}
	if w.pid != 0 && !probes.ProcessExists(w.procRoot, w.pid) {
		return fmt.Errorf("--pid %d: no such process", w.pid)
	}
	if w.slurmJob != "" {
		if w.cgroup != "" {
			return usageErrorf(cmd, "--cgroup and --slurm-job: choose one")
		}
		path, err := probes.SlurmJobCgroup(w.sysRoot, w.slurmJob)
		if err != nil {
			return fmt.Errorf("--slurm-job %s: %w", w.slurmJob, err)
		}
		w.cgroup = path
	}
	return nil
}

// thresholdFlags are --thresholds FILE and --threshold name=value, for
// every command that diagnoses (watching, replay, report).
type thresholdFlags struct {
	file string
	sets []string
}

func (t *thresholdFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.file, "thresholds", "", "JSON file overriding diagnosis thresholds (names: docs/diagnosis.md)")
	cmd.Flags().StringArrayVar(&t.sets, "threshold", nil, "override one diagnosis threshold, name=value (repeatable), e.g. wait_share_starved=0.3")
}

// apply puts the file's and then each --threshold's overrides on base.
func (t *thresholdFlags) apply(cmd *cobra.Command, base diagnose.Thresholds) (diagnose.Thresholds, error) {
	if t.file != "" {
		if err := diagnose.LoadThresholds(t.file, &base); err != nil {
			return base, usageErrorf(cmd, "--thresholds: %v", err)
		}
	}
	for _, kv := range t.sets {
		if err := base.Set(kv); err != nil {
			return base, usageErrorf(cmd, "--threshold: %v", err)
		}
	}
	return base, nil
}

func usageErrorf(cmd *cobra.Command, format string, args ...any) error {
	return &usageError{cmd: cmd.CommandPath(), err: fmt.Errorf(format, args...)}
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	var w watchFlags
	discover := true
	root := &cobra.Command{
		Use:   "gpuwatch",
		Short: "Why is my GPU idle? A live view of GPU, CPU, disks, memory and the data loader",
		Long: `gpuwatch watches this machine live — per-core CPU, memory and swap, disks,
network, pressure stall information and processes — to tell why a training
job's accelerator is not busy.

It attaches to every data loader announced on this machine — training
processes running the Python hook, gpuwatch loader — as they come up, so
the training job's wait times are there with no URL typed (--discover=false
to watch the host only).

With --headless (or when stdout is not a terminal) it prints one line per
interval; with --json one JSON object per line.`,
		Example: `  gpuwatch --headless
  gpuwatch --headless --json --duration 30s > run.jsonl
  gpuwatch --pid $(pgrep -f train.py) --headless`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := w.validate(cmd); err != nil {
				return err
			}
			o := w.options(stdout, stderr)
			stop, err := attachTo(cmd, &o, w.procRoot, session.AttachTo{Discover: discover})
			if err != nil {
				return err
			}
			defer stop()
			return session.Run(cmd.Context(), o)
		},
	}
	w.register(root)
	root.Flags().BoolVar(&discover, "discover", true, "attach to every loader announced on this machine (the Python hook, gpuwatch loader), as they come up")
	var cpuProfile string
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of gpuwatch itself to this file (for developers)")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	var stopProfile func()
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if cpuProfile == "" {
			return nil
		}
		f, err := os.Create(cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
		return nil
	}
	root.PersistentPostRun = func(*cobra.Command, []string) {
		if stopProfile != nil {
			stopProfile()
		}
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{cmd: cmd.CommandPath(), err: err}
	})
	root.AddCommand(newVersionCmd(stdout), newDemoCmd(stdout, stderr), newLoaderCmd(stdout, stderr), newSweepCmd(stdout, stderr), newTuneCmd(stdout, stderr), newAttachCmd(stdout, stderr),
		newRecordCmd(stdout, stderr), newReplayCmd(stdout, stderr), newReportCmd(stdout, stderr), newServeCmd(stdout, stderr), newFleetCmd(stdout, stderr), newManCmd(stdout))
	wrapArgs(root)
	return root
}

// wrapArgs makes argument validation failures usage errors (exit 2).
func wrapArgs(cmd *cobra.Command) {
	for _, c := range append(cmd.Commands(), cmd) {
		if c.Args == nil {
			continue
		}
		check := c.Args
		c.Args = func(cc *cobra.Command, args []string) error {
			if err := check(cc, args); err != nil {
				return &usageError{cmd: cc.CommandPath(), err: err}
			}
			return nil
		}
	}
}

// options are the session's options for these flags.
func (w *watchFlags) options(stdout, stderr io.Writer) session.Options {
	o := session.Options{
		Interval: w.interval, Duration: w.duration, PID: w.pid,
		Roots: probes.Roots{Proc: w.procRoot, Sys: w.sysRoot}, AllDisks: w.allDisks, AllNet: w.allNet, Once: w.once,
		Thresholds: w.thresholds, Record: w.record, RecordMaxSize: w.recordMaxSize,
		Headless: w.headless, JSON: w.json, Version: version, Stdout: stdout, Stderr: stderr,
		Cgroup: w.cgroup,
	}
	if w.gpus != "" {
		o.GPUs, _ = probes.ParseGPUList(w.gpus)
	}
	if w.slurmJob != "" {
		o.CgroupSource = "slurm job " + w.slurmJob
	}
	return o
}
