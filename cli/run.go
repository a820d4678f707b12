package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/probes/training"
	"github.com/gpuwatch/gpuwatch/python"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session"
	"github.com/gpuwatch/gpuwatch/session/job"
	"github.com/gpuwatch/gpuwatch/session/rundir"
)

// runOptions are run's flags: the watch flags and --job-log, with the
// command's output.
type runOptions struct {
	w              watchFlags
	jobLog         string
	ceiling        time.Duration // --ceiling: the replay asked of the hook; 0 none
	gpuProfile     int           // --gpu-profile: the steps the hook records with torch.profiler; 0 none
	stdout, stderr io.Writer
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	opts := &runOptions{stdout: stdout, stderr: stderr}
	w := &opts.w
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS…]",
		Short: "Run a training command with its training DataLoader timed (no code change), and watch it",
		Long:  runLong,
		Example: `  gpuwatch run -- python train.py --epochs 3
  gpuwatch run --headless -- torchrun --nproc-per-node 8 train.py
  gpuwatch run --json --duration 2m -- python -m mypkg.train > gpuwatch.jsonl
  gpuwatch run --once -- python train.py       # a CI gate on the input pipeline
  gpuwatch run --ceiling -- python train.py    # and its rate with input free
  gpuwatch run --gpu-profile -- python train.py  # and the GPU's time per step`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("give the command to run after --: gpuwatch run -- python train.py")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := w.validate(cmd); err != nil {
				return err
			}
			if err := checkGPUProfile(cmd, opts.gpuProfile, args); err != nil {
				return err
			}
			if err := checkCeiling(cmd, opts.ceiling, args); err != nil {
				return err
			}
			return runJob(cmd, opts, args)
		},
	}
	// Flags after CMD are CMD's: gpuwatch run python train.py --lr 3 works
	// without "--" too.
	cmd.Flags().SetInterspersed(false)
	w.register(cmd, offerOnce|offerOutput|offerRecord)
	w.discover = true
	w.profileEvery, w.profileLength = runProfileEvery, 5*time.Second
	cmd.Flags().DurationVar(&w.profileEvery, "profile-every", runProfileEvery, "time between CPU profiles of the training process (of the pacing rank, with several), the first once the loop has had its first batch; 0: none")
	cmd.Flags().Var(secondsFlag{&w.profileLength}, "profile-seconds", "length of each CPU profile, in seconds (5) or as a duration (5s)")
	cmd.Flags().StringVar(&opts.jobLog, "job-log", "", "where the job's stdout and stderr go (default: gpuwatch's stderr headless, ./gpuwatch-run-TIME.log with the dashboard)")
	addCeilingFlag(cmd, &opts.ceiling, "measure the loop's rate with its input free: once it is warm it trains on kept batches, replayed, for this long (--ceiling alone: 30s; at most 10m)")
	addGPUProfileFlag(cmd, &opts.gpuProfile, "record this many steps (1-50; --gpu-profile alone: 5) with torch.profiler from the loop's 10th batch: the GPU's time per step by category and precision, and its idle gaps")
	return cmd
}

// runProfileEvery is run's profile cadence: a 5 s profile slows a busy
// Python loop by a few per cent while it runs (python/bench_hook.py), so
// the job pays a twelfth of that (bench/hook-cost.sh). The first profile
// does not wait for it: it comes as soon as the loop has had its first
// batch (endpoint.Profiler.FirstAfter), so a run shorter than a minute
// shows one too.
const runProfileEvery = 60 * time.Second

// interruptGrace is how long the job has after SIGINT before SIGTERM, and
// after SIGTERM before SIGKILL, when gpuwatch stops watching first.
const interruptGrace = 10 * time.Second

// runJob writes the hook, starts the job with it, watches it, and returns
// the job's exit status as an exitError.
func runJob(cmd *cobra.Command, opts *runOptions, argv []string) error {
	w, stdout, stderr := &opts.w, opts.stdout, opts.stderr
	dashboard := !w.headless && !w.once && session.IsTerminal(stdout)
	dir, err := rundir.New("run")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := python.Write(dir); err != nil {
		return err
	}
	jo := job.Options{Argv: argv, Env: withGPUProfile(withCeiling(jobEnv(os.Environ(), dir), opts.ceiling), opts.gpuProfile), RunDir: dir}
	tellMeasurements(stderr, opts)
	if err := jobOutput(cmd, opts, &jo, dashboard); err != nil {
		return err
	}
	// Signals are the job's: from here on gpuwatch passes them on and keeps
	// watching until the job ends (the root's context would stop at once).
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, job.Forwarded()...)
	// A reader that goes away (gpuwatch run --headless … | head -2) makes
	// a write fail with EPIPE instead of killing gpuwatch by SIGPIPE before
	// it stops the job: its workers ran on, orphaned (a user's review).
	// The session ends on the failed write, the job's group is stopped,
	// and gpuwatch exits as a pipe's writer does (pipeClosed).
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	started := time.Now()
	j, err := job.Start(jo)
	if err != nil {
		signal.Stop(sigs)
		return &exitError{code: job.CannotStartStatus(err), msg: err.Error()}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopForwarding := job.Forward(sigs, j, cancel, dashboard)
	defer stopForwarding()
	// --once's summary on a terminal is written once the job has
	// stopped (at most the SIGINT's grace later): the job's last words on
	// being interrupted (a KeyboardInterrupt's traceback) come first, and
	// the verdict is the last thing on the screen. Elsewhere it is
	// written as it comes.
	var summary bytes.Buffer
	if w.once && session.IsTerminal(stdout) {
		stdout = &summary
	}
	o := w.options(stdout, stderr)
	o.PID, o.Job, o.Title = j.PID(), j, "run: "+j.Command()
	o.Hooked = true
	profiled := &gpuProfileSeen{}
	if opts.gpuProfile > 0 {
		o.Observers = append(o.Observers, profiled)
	}
	o.Attach = session.AttachTo{Discover: true, Dir: dir, Every: w.profileEvery, Length: w.profileLength, NoProfiles: w.profileEvery == 0,
		Within: func(pid int) bool { return training.Descends(w.procRoot, pid, j.PID()) }}
	onOneP(func() { err = session.Run(ctx, o) })
	// --duration ran out with the job still running: gpuwatch ends it,
	// as asked, and that is a clean stop (status 0), not the job's
	// failure (130: killed by gpuwatch's SIGINT failed CI steps).
	stoppedAtDuration := err == nil && w.duration > 0 && !w.once && !jobDone(j)
	endedItself := jobDone(j)
	j.StopThen(interruptGrace, func() {
		if _, werr := opts.stdout.Write(summary.Bytes()); werr != nil && err == nil {
			err = werr
		}
	})
	if opts.gpuProfile > 0 && endedItself && !errors.Is(err, syscall.EPIPE) {
		_, at := j.Exit()
		fmt.Fprint(stderr, profiled.unrecorded(at.Sub(started), w.once))
	}
	if dashboard && jo.Log != "" {
		tellJobLog(stderr, j)
	}
	if errors.Is(err, syscall.EPIPE) {
		tellPipeClosed(stderr, j, endedItself)
	}
	return runStatus(err, j, w, stderr, dashboard, stoppedAtDuration)
}

// tellPipeClosed says that run's output's reader went away (gpuwatch run
// … | head) and what became of the job: stopped by gpuwatch, or ended by
// itself before. The job's KeyboardInterrupt alone on stderr said
// nothing of why (a review).
func tellPipeClosed(stderr io.Writer, j *job.Job, endedItself bool) {
	how, _ := j.Exit()
	if endedItself {
		fmt.Fprintf(stderr, "gpuwatch: its output was closed (the pipe's reader went away); the job had ended (pid %d; it %s)\n", j.PID(), sample.Ended(how))
		return
	}
	fmt.Fprintf(stderr, "gpuwatch: its output was closed (the pipe's reader went away): gpuwatch stopped the job (pid %d; it %s)\n", j.PID(), sample.Ended(how))
}

// tellMeasurements says what run measures in the job that costs while
// it runs (--ceiling, --gpu-profile), before it starts.
func tellMeasurements(stderr io.Writer, opts *runOptions) {
	if opts.ceiling > 0 {
		fmt.Fprint(stderr, ceilingNotice(opts.ceiling))
	}
	if opts.gpuProfile > 0 {
		fmt.Fprint(stderr, gpuProfileNotice(opts.gpuProfile))
	}
}

// tellJobLog says where the job's output went while the dashboard drew,
// and its last lines.
func tellJobLog(stderr io.Writer, j *job.Job) {
	fmt.Fprintf(stderr, "gpuwatch: the job's output is in %s\n", j.LogNote())
	for _, l := range j.Tail(10) {
		fmt.Fprintf(stderr, "  │ %s\n", l)
	}
}

// pipeClosed is run's status where its output's reader went away: a
// shell's for a process SIGPIPE ended (128 + 13), said once the job is
// stopped.
const pipeClosed = 141

// runStatus is run's exit status once the job has stopped: the session's
// error (--once gates on its verdict), a clean stop where --duration ran
// out and gpuwatch stopped the job (stopped), else the job's own status.
func runStatus(err error, j *job.Job, w *watchFlags, stderr io.Writer, dashboard, stopped bool) error {
	switch {
	case errors.Is(err, syscall.EPIPE):
		return &exitError{code: pipeClosed} // the reader went away: the job is stopped, and said so (tellPipeClosed)
	case errors.Is(err, session.ErrJobEndedFirst) && j.ExitCode() != 0:
		return &exitError{code: j.ExitCode(), msg: err.Error()} // the command's failure, said and passed on
	case errors.Is(err, session.ErrJobEndedFirst) && w.once:
		return &exitError{code: ExitUnsettled, msg: err.Error()} // it succeeded too soon for a verdict: nothing settled, as a job that ends after a few frames
	case w.once && errors.Is(err, session.ErrJobEnded) && j.ExitCode() != 0:
		return &exitError{code: j.ExitCode()} // it failed before a verdict held: the summary said how; its status passed on
	case w.once && (err == nil || errors.Is(err, session.ErrBottleneck) || errors.Is(err, session.ErrUnsettled)):
		return err // --once gates on its verdict: its own status
	case err != nil:
		return err
	}
	how, _ := j.Exit()
	code := j.ExitCode()
	if stopped {
		// Ended by gpuwatch's signals (128 + SIGINT, SIGTERM, SIGKILL,
		// killed by one or exiting with its number), or cleanly: the stop
		// asked for. Any other status is the job's failure on the way
		// out (a checkpoint that failed to save): passed on.
		if code == 0 || code == 128+int(syscall.SIGINT) || code == 128+int(syscall.SIGTERM) || code == 128+int(syscall.SIGKILL) {
			fmt.Fprintf(stderr, "gpuwatch: --duration %v is up: gpuwatch stopped the job (pid %d; it %s)\n", w.duration, j.PID(), sample.Ended(how))
			return nil
		}
		return &exitError{code: code, msg: fmt.Sprintf("--duration %v is up: gpuwatch stopped the job (pid %d), and it %s on the way out", w.duration, j.PID(), sample.Ended(how))}
	}
	if code != 0 && !dashboard {
		return &exitError{code: code}
	}
	if code != 0 {
		return &exitError{code: code, msg: fmt.Sprintf("the job (pid %d) %s", j.PID(), sample.Ended(how))}
	}
	return nil
}

// jobDone says whether the job has ended.
func jobDone(j *job.Job) bool {
	select {
	case <-j.Done():
		return true
	default:
		return false
	}
}

// jobOutput says where the job's output goes: the dashboard's log file
// (gpuwatch draws on the terminal), --job-log's file through pipes
// gpuwatch drains (a full disk costs the log, never the job: issue 57
// item 3), or gpuwatch's stderr (its lines are stdout).
func jobOutput(cmd *cobra.Command, opts *runOptions, jo *job.Options, dashboard bool) error {
	jobLog, stderr := opts.jobLog, opts.stderr
	switch {
	case dashboard:
		jo.Log = jobLog
		if jo.Log == "" {
			jo.Log = "gpuwatch-run-" + time.Now().Format("20060102-150405") + ".log"
		}
	case jobLog != "":
		// Pipes gpuwatch drains into the file, as the dashboard's terminal
		// is: a full disk costs the log, never the job (issue 57 item 3).
		if _, err := os.Lstat(jobLog); err == nil {
			return usageErrorf(cmd, "--job-log: open %s: %v", jobLog, fs.ErrExist)
		}
		jo.Log, jo.Pipe, jo.Stdin = jobLog, true, os.Stdin
		jo.LogFailed = func(err error) {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			fmt.Fprintf(stderr, "gpuwatch: writing the job's log to %s failed (%v): the job goes on\n", sample.Printable(jobLog), err)
		}
	default:
		// gpuwatch's lines are stdout; the job's output is stderr.
		errFile, ok := stderr.(*os.File)
		if !ok {
			errFile = os.Stderr
		}
		jo.Stdin, jo.Stdout, jo.Stderr, jo.Foreground = os.Stdin, errFile, errFile, true
	}
	return nil
}

// jobEnv is the job's environment: gpuwatch's own, with the hook's folder
// first on PYTHONPATH and GPUWATCH_RUN_DIR naming it.
func jobEnv(env []string, dir string) []string {
	out := make([]string, 0, len(env)+2)
	pythonPath := dir
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, "PYTHONPATH="):
			if old := strings.TrimPrefix(kv, "PYTHONPATH="); old != "" {
				pythonPath += string(os.PathListSeparator) + old
			}
		case strings.HasPrefix(kv, "GPUWATCH_RUN_DIR="):
		default:
			out = append(out, kv)
		}
	}
	return append(out, "PYTHONPATH="+pythonPath, "GPUWATCH_RUN_DIR="+dir)
}

// runLong is the command's --help text.
const runLong = `run starts CMD with every torch.utils.data.DataLoader of every Python
process under it timed, as the hook's watch() does, and watches it: the
training loop's wait for each batch, its step, the DataLoader's knobs and
CPU profiles of the training process, every rank of a distributed job
(torchrun, or a shell starting ranks with RANK/WORLD_SIZE), and the
machine. It needs no change to the script, no pip install and no checkout:
the hook ships inside gpuwatch and is written to a private folder that is
put first on the command's PYTHONPATH (a sitecustomize that loads the one
it shadows, and patches torch only once torch.utils.data is imported).

The job stays the job's: its environment (but PYTHONPATH and
GPUWATCH_RUN_DIR), its exit status (run exits with it; 128+N when killed
by signal N; 127 when CMD is not found, 126 when it cannot be run), and
its signals — Ctrl-C reaches it as it would without
gpuwatch, and SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to gpuwatch are
passed to its process group. gpuwatch's lines never mix into its output:

  in a terminal  the dashboard owns the screen; the job runs on a terminal
                 of its own, its output goes to --job-log (default
                 ./gpuwatch-run-TIME.log) and its last lines show under the
                 verdict. q or Ctrl-C interrupts the job (SIGINT, then
                 SIGTERM, then SIGKILL on the next presses); the view stays
                 until it ends.
  --headless,    gpuwatch's lines (or JSON) are stdout; the job keeps the
  --json         terminal's stdin and writes its stdout and stderr to
                 gpuwatch's stderr (or to --job-log), so
                 gpuwatch run --json -- python train.py > gpuwatch.jsonl
                 keeps them apart. The session ends when the job does.

With --duration or --once, gpuwatch stops watching when the time is up or
the verdict has settled, and interrupts the job as Ctrl-C would (SIGINT,
then SIGTERM and SIGKILL 10 s apart, to its whole process group: what a
launcher started is stopped with it); --duration then exits 0 where those
signals ended it (a job that ended by itself before, or failed on its way
out, passes its status on); --once prints its summary once the job has
stopped (after what the job said on being interrupted) and exits with its
own status (0, 3, 4), or, where the job failed before a verdict settled,
with the job's.
A command that is not Python, or a Python job without a DataLoader, is
watched as a process tree, and the view says nothing was instrumented.

--ceiling[=DURATION] measures the ceiling: the loop's rate with its input
free. Once the loop is warm the hook keeps a few batches (within 1 GiB or
a tenth of memory) and hands them to the loop again for DURATION (30s
alone) instead of the real iterator's, then resumes it where it was (no
batch lost, none repeated). The loop trains on repeated batches for that
long: it is opt-in. The verdict then says what the input costs
(docs/diagnosis.md).

--gpu-profile[=STEPS] records the GPU's time per step: from the loop's
10th batch the hook runs torch.profiler for STEPS steps (5 alone; at most
50), then stops it and sums its events by category (matmul and conv with
their precision, elementwise, normalization, reduction, copies,
communication) with the GPU's idle gaps and the host call before each.
Without a GPU it says the CPU's time by the same categories. The profiler
costs only while it records; the frame's loader.gpu_profile says how
much (docs/prometheus.md).`
