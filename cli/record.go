package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/report"
)

// recordOptions are record's flags: the watch flags, the recording and
// its report.
type recordOptions struct {
	w              watchFlags
	out, reportOut string
	stdout, stderr io.Writer
}

func newRecordCmd(stdout, stderr io.Writer) *cobra.Command {
	opts := &recordOptions{stdout: stdout, stderr: stderr}
	cmd := &cobra.Command{
		Use:   "record -o FILE [--duration D] [--pid PID | --attach URL]",
		Short: "Record headless for batch jobs (Slurm, cron): frames, verdicts and events to a file",
		Long: `record watches this machine as gpuwatch does — the same sources, every
announced loader with its CPU profiles, the busiest training process when
none is announced — without a view, and writes every frame, verdict change
and event to FILE as JSON lines, until --duration passes or it is stopped
(Ctrl-C, SIGTERM). replay plays a recording back; report turns it into
HTML, Markdown or JSON. --report writes that report at the end.

It refuses an existing FILE, and past --record-max-size it rotates to
FILE.1 (one previous part kept).`,
		Example: `  gpuwatch record --duration 10m -o run.jsonl --report run.html
  # in a Slurm batch script: srun's tasks are children of slurmstepd, not
  # of this shell, so name the job (its cgroup) rather than a PID
  gpuwatch record --duration 10m -o run.jsonl --slurm-job "$SLURM_JOB_ID" &
  gpuwatch record -o run.jsonl --attach http://127.0.0.1:6060`,
		Args: noArgs("the recording's file goes after -o: gpuwatch record -o FILE"),
		RunE: func(cmd *cobra.Command, _ []string) error { return runRecord(cmd, opts) },
	}
	w := &opts.w
	w.register(cmd, offerPID|offerLoaders)
	w.recordMaxSize = 512 << 20
	cmd.Flags().Var(sizeFlag{&w.recordMaxSize}, "record-max-size", "rotate the recording to FILE.1 past this size")
	cmd.Flags().StringVarP(&opts.out, "output", "o", "", "the recording file to write (refuses an existing one)")
	cmd.Flags().StringVar(&opts.reportOut, "report", "", "at exit, also write the report (.html, .md or .json)")
	return cmd
}

// recordTaken says why a recording to path would lose or refuse a file:
// path exists (a dangling link too: the recorder opens it O_EXCL), or, with
// rotation on (maxSize > 0), the FILE.1 it would replace does.
func recordTaken(path string, maxSize int64) error {
	ps := []string{path}
	if maxSize > 0 {
		ps = append(ps, path+".1")
	}
	for _, p := range ps {
		if _, err := os.Lstat(p); err == nil {
			if p == path {
				return fmt.Errorf("%s exists: record to a new file", path)
			}
			return fmt.Errorf("%s: %s exists (the part rotation would replace): record to a new file", path, p)
		}
	}
	return nil
}

// runRecord checks record's files, records the session, and writes the
// report when asked.
func runRecord(cmd *cobra.Command, opts *recordOptions) error {
	w, out, reportOut, stderr := &opts.w, opts.out, opts.reportOut, opts.stderr
	if out == "" {
		return usageErrorf(cmd, "-o FILE is required")
	}
	if err := recordTaken(out, opts.w.recordMaxSize); err != nil {
		return usageErrorf(cmd, "-o %v", err)
	}
	if reportOut != "" {
		// Checked now, not after the recording: record has no --force.
		if err := report.CheckOutput(reportOut, true); err != nil {
			return usageErrorf(cmd, "--report %v", err)
		}
		if _, err := os.Stat(reportOut); err == nil {
			return usageErrorf(cmd, "--report %s exists: write the report to a new file", reportOut)
		}
	}
	w.record, w.headless = out, true
	if err := w.validate(cmd); err != nil {
		return err
	}
	o := w.options(io.Discard, stderr)
	o.RecordRequired = true
	if err := watch(cmd, o); err != nil || reportOut == "" {
		return err
	}
	// The recording is closed: write its report, as `report` would.
	return writeReport(cmd, &reportOptions{in: out, out: reportOut, stdout: stderr, stderr: stderr})
}
