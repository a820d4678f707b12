package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/probes/endpoint"
	"github.com/gpuwatch/gpuwatch/probes/gpu"
	"github.com/gpuwatch/gpuwatch/probes/host"
	"github.com/gpuwatch/gpuwatch/probes/job"
	"github.com/gpuwatch/gpuwatch/probes/training"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session"
	"github.com/gpuwatch/gpuwatch/tui"
)

// watchFlags are the flags of every command that watches this machine
// (gpuwatch, attach, record, serve, demo, run), declared once here with
// one set of defaults: discovery of announced loaders on, and CPU profiles
// of every loader however it was found. A command offers the ones that
// apply to it (record has no --once, demo no --pid); `--help` lists them
// under their own heading, apart from the command's own flags.
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

	pidsGiven   []int // --pid's PIDs, when several: pid is their root
	noColor     bool
	exitWithJob bool

	discover      bool
	attach        []string
	profileEvery  time.Duration
	profileLength time.Duration
}

// --no-color, for every command that draws the dashboard.
const (
	noColorFlag  = "no-color"
	noColorUsage = "draw the dashboard without colour (as NO_COLOR=1; TERM=dumb also draws it in plain ASCII)"
)

// offer says which of the watch flags a command takes.
type offer uint

const (
	offerOnce     offer = 1 << iota // --once (and its exit statuses)
	offerOutput                     // --headless, --json
	offerPID                        // --pid, --cgroup, --slurm-job
	offerLoaders                    // --discover, --attach, --profile-every, --profile-seconds
	offerRecord                     // --record, --record-max-size
	offerAll      = offerOnce | offerOutput | offerPID | offerLoaders | offerRecord
	watchGroupKey = "gpuwatch_group"
)

// register adds the watch flags that offer names to cmd, each marked for
// the help's "Watch flags" heading.
func (w *watchFlags) register(cmd *cobra.Command, o offer) {
	fl := pflag.NewFlagSet("watch", pflag.ContinueOnError)
	fl.DurationVarP(&w.interval, "interval", "n", time.Second, "time between samples (50ms–1h)")
	fl.DurationVarP(&w.duration, "duration", "d", 0, "stop after this long (0: run until Ctrl-C; with --once, the cap instead of 60s)")
	if o&offerOutput != 0 {
		fl.BoolVar(&w.headless, "headless", false, "print one line per interval instead of the dashboard (the default when stdout is not a terminal)")
		fl.BoolVar(&w.json, "json", false, "print one JSON object per line (implies --headless; schema: docs/json.md)")
		fl.BoolVar(&w.noColor, noColorFlag, false, noColorUsage)
	}
	if o&offerOnce != 0 {
		fl.BoolVar(&w.once, "once", false, "sample until the verdict has held "+session.SettleRule()+" (with a loader attached, and its first CPU profile in, at most "+fmt.Sprint(session.ProfileWait)+" more; at most 60s, or --duration), print one summary and exit: 0 healthy or idle, 3 a bottleneck, 4 nothing settled")
	}
	if o&offerPID != 0 {
		fl.Var(&pidFlag{pid: &w.pid, given: &w.pidsGiven}, "pid", "watch this process and its descendants (the training process and its DataLoader workers); several PIDs (1,2 or repeated) watch the root of their tree")
		fl.Lookup("pid").Shorthand = "p"
		fl.BoolVar(&w.exitWithJob, "exit-with-job", false, "end when --pid's process exits (its last frame says so): a batch wrapper or Slurm epilogue ends with the job")
		fl.StringVar(&w.cgroup, "cgroup", "", "judge the job in this cgroup (a path under /sys/fs/cgroup, e.g. /slurm/uid_1000/job_42) instead of --pid's")
		fl.StringVar(&w.slurmJob, "slurm-job", "", "judge this Slurm job: its cgroup is found under /sys/fs/cgroup")
	}
	fl.StringVar(&w.gpus, "gpus", "", "the job's GPUs, by index or UUID (0,1 or GPU-8f3…): only they are judged (default: the job's CUDA_VISIBLE_DEVICES, else the GPUs NVML lists its processes on)")
	fl.BoolVar(&w.allDisks, "all-disks", false, "also show partitions and virtual block devices (loop, ram, dm-)")
	fl.BoolVar(&w.allNet, "all-net", false, "also show virtual network interfaces (lo, ifb*, veth*)")
	fl.StringVar(&w.procRoot, "proc-root", "/proc", "where procfs is mounted (a host's /proc seen from a container)")
	fl.StringVar(&w.sysRoot, "sys-root", "/sys", "where sysfs is mounted")
	if o&offerLoaders != 0 {
		fl.BoolVar(&w.discover, "discover", true, "attach to every loader announced on this machine (the Python hook, gpuwatch loader) as they come up; =false watches the host only")
		fl.StringArrayVar(&w.attach, "attach", nil, "also attach to this loader URL (repeatable; a port range such as http://127.0.0.1:6061-6068 is every rank)")
		fl.DurationVar(&w.profileEvery, "profile-every", 15*time.Second, "time between CPU profiles of the loader (of the pacing rank, with several), the first once its loop has had its first batch; 0: none")
		w.profileLength = 5 * time.Second
		fl.Var(secondsFlag{&w.profileLength}, "profile-seconds", "length of each CPU profile, in seconds (5) or as a duration (5s)")
	}
	if o&offerRecord != 0 {
		fl.StringVar(&w.record, "record", "", "also record frames, verdicts and events to this file (JSON lines; replay with gpuwatch replay)")
		w.recordMaxSize = 512 << 20
		fl.Var(sizeFlag{&w.recordMaxSize}, "record-max-size", "rotate the recording to FILE.1 past this size")
	}
	w.th.registerOn(fl)
	fl.VisitAll(func(f *pflag.Flag) {
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[watchGroupKey] = []string{"watch"}
	})
	cmd.Flags().AddFlagSet(fl)
}

// minRecordMaxSize is the smallest --record-max-size: a minute of frames
// at 1 s is 1–2 MB.
const minRecordMaxSize = 1 << 20

// validate checks flag values that pflag's types do not.
func (w *watchFlags) validate(cmd *cobra.Command) error {
	if w.json {
		w.headless = true
	}
	switch {
	case w.interval < tui.MinInterval || w.interval > tui.MaxInterval:
		return usageErrorf(cmd, "--interval %v: must be between 50ms and 1h", w.interval)
	case w.duration < 0:
		return usageErrorf(cmd, "--duration %v: must not be negative", w.duration)
	case w.recordMaxSize != 0 && w.recordMaxSize < minRecordMaxSize:
		// One part before the current one is kept: a cap of a few frames
		// keeps a few seconds, rotating every frame or two.
		return usageErrorf(cmd, "--record-max-size %s: at least %s (one part before the current one is kept), or 0 for no cap",
			sample.FormatBytes(float64(w.recordMaxSize)), sample.FormatBytes(minRecordMaxSize))
	case w.profileEvery != 0 && (w.profileLength < time.Second || w.profileEvery <= w.profileLength):
		return usageErrorf(cmd, "want --profile-seconds ≥ 1s and --profile-every longer than it (have %v and %v)", w.profileLength, w.profileEvery)
	}
	th, err := w.th.apply(cmd, diagnose.DefaultThresholds())
	if err != nil {
		return err
	}
	w.thresholds = th
	if w.gpus != "" {
		if _, err := gpu.ParseGPUList(w.gpus); err != nil {
			return usageErrorf(cmd, "--gpus: %v", err)
		}
	}
	if _, err := endpoint.ExpandURLs(w.attach); err != nil {
		return usageErrorf(cmd, "%v", err) // before serve listens, record opens its file
	}
	if err := recordTaken(w.record, w.recordMaxSize); w.record != "" && err != nil {
		// As record's -o: a file in the way is a wrong value (status 2),
		// said before anything starts; the recorder opens it O_EXCL.
		return usageErrorf(cmd, "--record %v", err)
	}
	if w.exitWithJob && w.pid == 0 {
		return usageErrorf(cmd, "--exit-with-job needs --pid: the job whose end ends the session")
	}
	if w.pid != 0 && !host.ProcessExists(w.procRoot, w.pid) {
		return fmt.Errorf("--pid %d: no such process", w.pid)
	}
	if w.slurmJob != "" {
		if w.cgroup != "" {
			return usageErrorf(cmd, "--cgroup and --slurm-job: choose one")
		}
		path, err := job.SlurmJobCgroup(w.sysRoot, w.slurmJob)
		if err != nil {
			return fmt.Errorf("--slurm-job %s: %w", w.slurmJob, err)
		}
		w.cgroup = path
	}
	return nil
}

// options are the session's options for these flags.
func (w *watchFlags) options(stdout, stderr io.Writer) session.Options {
	o := session.Options{
		Interval: w.interval, Duration: w.duration, Thresholds: w.thresholds,
		Target: session.Target{PID: w.pid, Roots: probes.Roots{Proc: w.procRoot, Sys: w.sysRoot}, AllDisks: w.allDisks, AllNet: w.allNet,
			Cgroup: w.cgroup, ExitWithJob: w.exitWithJob},
		Output:    session.Output{Once: w.once, Headless: w.headless, JSON: w.json, NoColor: w.noColor, Stdout: stdout, Stderr: stderr},
		Recording: session.Recording{Record: w.record, RecordMaxSize: w.recordMaxSize, Version: version},
		// --discover=false watches the host only: no loader found by
		// itself, nor a process that maps torch taken for the job (a
		// newcomer's review: it sampled one and exited 3 on its verdict);
		// a job named with --pid or --cgroup is still the job.
		Sources: session.Sources{Loop: w.discover || w.pid != 0 || w.cgroup != "" || w.slurmJob != "",
			Attach: session.AttachTo{URLs: w.attach, Discover: w.discover, Every: w.profileEvery, Length: w.profileLength, NoProfiles: w.profileEvery == 0}},
	}
	if root, proc := w.pid, w.procRoot; root != 0 {
		// --pid names the job: the loaders announced by other processes
		// are other jobs' (a hostile user's review: another process's
		// loader, keeping up, read a starved --pid job healthy). A URL
		// given with --attach is still attached.
		o.Attach.Within = func(pid int) bool { return training.Descends(proc, pid, root) }
	}
	if w.gpus != "" {
		o.GPUs, _ = gpu.ParseGPUList(w.gpus)
	}
	if n := len(w.pidsGiven); n > 1 {
		o.PIDWhy = fmt.Sprintf("--pid: the root of the tree of the %d processes given (%s)", n, sample.JoinInts(w.pidsGiven, 6))
	}
	if w.slurmJob != "" {
		o.CgroupSource = "slurm job " + w.slurmJob
	}
	return o
}

// watch runs a session: a URL that is not a loader's is a usage error, a
// settled bottleneck and an unsettled --once have their exit statuses.
func watch(cmd *cobra.Command, o session.Options) error {
	var err error
	onOneP(func() { err = session.Run(cmd.Context(), o) })
	if errors.Is(err, endpoint.ErrBadURL) {
		return usageErrorf(cmd, "%v", err)
	}
	return err
}

// onOneP runs a watching session (the dashboard, serve, record, attach,
// run) with one P, GOMAXPROCS=1, unless the user set GOMAXPROCS, and puts
// the runtime's default back after. Its work is a few milliseconds a second, one
// goroutine at a time (the sampler's lanes, the diagnosis, the view); each
// further P only adds a thread that the scheduler wakes to look for work
// whenever one goroutine hands over to another, and on a VM each wake is
// an exit to the hypervisor. Side by side at 1 s it cost 0.77× the CPU
// (docs/architecture.md, "The dashboard's cost"). A probe stuck in a
// system call or a driver call still holds no one up: the runtime hands
// the P on. The demo keeps every P: its test loader's workers are
// goroutines of this process that must be able to fill every core.
func onOneP(f func()) {
	if os.Getenv("GOMAXPROCS") != "" {
		f()
		return
	}
	// Afterwards the runtime's own default again (it follows a
	// container's CPU limit), not a fixed count.
	defer runtime.SetDefaultGOMAXPROCS()
	runtime.GOMAXPROCS(1)
	f()
}

// pidFlag is --pid: one process, or several (1,2 or repeated: DataLoader
// workers are forks with the training process's command line, so
// `pgrep -f train.py` prints several), whose tree's root is watched. An
// empty value says so, rather than what Go's number parser thinks.
type pidFlag struct {
	pid   *int
	given *[]int // every PID given, in order
}

func (p *pidFlag) String() string {
	if p.pid == nil || *p.pid == 0 {
		return ""
	}
	return strconv.Itoa(*p.pid)
}

func (p *pidFlag) Set(v string) error {
	pids, err := parsePIDs(v)
	if err != nil {
		return err
	}
	*p.given = append(*p.given, pids...)
	*p.pid = training.TreeRoot("/proc", *p.given)
	return nil
}

func (p *pidFlag) Type() string { return "pid" }

// parsePIDs reads "4100", "4100,4101" or "4100\n4101" (pgrep's output).
func parsePIDs(v string) ([]int, error) {
	fields := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
	if len(fields) == 0 {
		return nil, errors.New("empty: give a process ID (did $(pgrep …) match nothing?)")
	}
	out := make([]int, 0, len(fields))
	for _, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 || n > math.MaxInt32 {
			return nil, fmt.Errorf("%q is not a process ID", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// thresholdFlags are --thresholds FILE and --threshold name=value, for
// every command that diagnoses (watching, replay, report).
type thresholdFlags struct {
	file string
	sets []string
}

func (t *thresholdFlags) register(cmd *cobra.Command) { t.registerOn(cmd.Flags()) }

func (t *thresholdFlags) registerOn(fl *pflag.FlagSet) {
	fl.StringVar(&t.file, "thresholds", "", "JSON file overriding diagnosis thresholds (names: docs/diagnosis.md)")
	fl.StringArrayVar(&t.sets, "threshold", nil, "override one diagnosis threshold, name=value (repeatable), e.g. wait_share_starved=0.3")
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
			return base, usageErrorf(cmd, "--threshold: %v (names: %s)", err, strings.Join(diagnose.ThresholdNames(), ", "))
		}
	}
	return base, nil
}

func usageErrorf(cmd *cobra.Command, format string, args ...any) error {
	return &usageError{cmd: cmd.CommandPath(), err: fmt.Errorf(format, args...)}
}

// secondsFlag is a duration given as whole seconds ("5", as pprof's
// ?seconds=) or with a unit ("5s", "1m").
type secondsFlag struct{ d *time.Duration }

func (f secondsFlag) String() string {
	if f.d == nil {
		return "5"
	}
	return strconv.Itoa(int(f.d.Seconds()))
}

func (f secondsFlag) Set(v string) error {
	if n, err := strconv.Atoi(v); err == nil {
		*f.d = time.Duration(n) * time.Second
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q: want seconds (5) or a duration (5s)", v)
	}
	*f.d = d
	return nil
}

func (f secondsFlag) Type() string { return "seconds" }

// usage is cobra's usage text, with the watch flags under their own
// heading after the command's own. It is Go, not a text/template as
// cobra's SetUsageTemplate takes: a template reaches reflect's
// MethodByName, and the linker then keeps every exported method of every
// type in the binary, 3.8 MB of it (docs/architecture.md, "What gpuwatch
// costs").
func usage(c *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		b.WriteString("\n  " + c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n  " + c.CommandPath() + " [command]")
	}
	if len(c.Aliases) > 0 {
		b.WriteString("\n\nAliases:\n  " + c.NameAndAliases())
	}
	if c.HasExample() {
		b.WriteString("\n\nExamples:\n" + c.Example)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	if own := flagGroup(c, false); own != "" {
		b.WriteString("\n\nFlags:\n" + trimRight(own))
	}
	if watch := flagGroup(c, true); watch != "" {
		b.WriteString("\n\nWatch flags (the same in every command that watches):\n" + trimRight(watch))
	}
	if c.HasAvailableInheritedFlags() {
		b.WriteString("\n\nGlobal Flags:\n" + trimRight(c.InheritedFlags().FlagUsages()))
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\nUse \"" + c.CommandPath() + " [command] --help\" for more information about a command.")
	}
	b.WriteString("\n")
	_, err := io.WriteString(c.OutOrStderr(), b.String())
	return err
}

func trimRight(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) }

// flagGroup is the usage of cmd's local flags in (watch) or out of the
// watch group.
func flagGroup(cmd *cobra.Command, watch bool) string {
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		_, in := f.Annotations[watchGroupKey]
		if in == watch && !f.Hidden {
			fs.AddFlag(f)
		}
	})
	return fs.FlagUsages()
}
