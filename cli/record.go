package cli

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/report"
	"github.com/gpuwatch/gpuwatch/session"
)

func newRecordCmd(stdout, stderr io.Writer) *cobra.Command {
	var w watchFlags
	var out, reportOut string
	var attach attachFlags
	cmd := &cobra.Command{
		Use:   "record -o FILE [--duration D] [--pid PID | --attach URL]",
		Short: "Record headless for batch jobs (SLURM, cron): frames, verdicts and events to a file",
		Example: `  # in a Slurm batch script: srun's tasks are children of slurmstepd, not
  # of this shell, so name the job (its cgroup) rather than a PID
  gpuwatch record --duration 10m -o run.jsonl --report run.html --slurm-job "$SLURM_JOB_ID" &
  gpuwatch record -o run.jsonl --attach http://127.0.0.1:6060`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageErrorf(cmd, "-o FILE is required")
			}
			if (len(attach.urls) > 0 || attach.discover) && w.pid != 0 {
				return usageErrorf(cmd, "--pid and --attach: choose one (attach focuses on the loader's PID itself)")
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
			stop, err := attachTo(cmd, &o, w.procRoot, attach.to())
			if err != nil {
				return err
			}
			defer stop()
			if err := session.Run(cmd.Context(), o); err != nil || reportOut == "" {
				return err
			}
			// The recording is closed: write its report, as `report` would.
			return writeReport(cmd, out, reportOut, false, &thresholdFlags{}, stderr, stderr)
		},
	}
	w.register(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "the recording file to write (refuses an existing one)")
	attach.register(cmd)
	cmd.Flags().StringVar(&reportOut, "report", "", "at exit, also write the report (.html, .md or .json)")
	_ = cmd.Flags().MarkHidden("headless")
	_ = cmd.Flags().MarkHidden("record")
	return cmd
}
