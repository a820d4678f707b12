package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/report"
	"github.com/gpuwatch/gpuwatch/sample"
)

// reportOptions are the report command's input, output, flags and
// streams: cli/cli's options struct, with writeReport its run function.
// record --report fills one too.
type reportOptions struct {
	in     string // the recording
	out    string // the report: .html, .md or .json
	force  bool   // replace an existing report
	th     thresholdFlags
	stdout io.Writer
	stderr io.Writer
}

func newReportCmd(stdout, stderr io.Writer) *cobra.Command {
	opts := &reportOptions{stdout: stdout, stderr: stderr}
	cmd := &cobra.Command{
		Use:   "report FILE -o OUT",
		Short: "Write a diagnosis report of a recording: HTML (charts), Markdown or JSON, by OUT's extension",
		Example: `  gpuwatch report run.jsonl -o run.html
  gpuwatch report run.jsonl -o run.md
  gpuwatch report run.jsonl -o run.json`,
		Args: oneArg("one recording to read", "the report's file goes after -o: gpuwatch report FILE -o OUT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.in = args[0]
			if opts.out == "" {
				return usageErrorf(cmd, "-o OUT is required (.html, .md or .json)")
			}
			// A wrong extension is a wrong value (exit 2), said before the
			// recording is read; an existing OUT is said by WriteFile.
			if err := report.CheckOutput(opts.out, true); err != nil {
				return usageErrorf(cmd, "-o %v", err)
			}
			return writeReport(cmd, opts)
		},
	}
	opts.th.register(cmd)
	cmd.Flags().StringVarP(&opts.out, "output", "o", "", "the report to write: .html, .md or .json")
	cmd.Flags().BoolVar(&opts.force, "force", false, "replace an existing report")
	return cmd
}

// writeReport reads the recording opts.in and writes its report to
// opts.out, diagnosed with the recording's thresholds and opts.th's
// overrides.
func writeReport(cmd *cobra.Command, opts *reportOptions) error {
	in, out := opts.in, opts.out
	rec, err := openRecording(in, opts.stderr)
	if err != nil {
		return err
	}
	defer rec.Close()
	thresholds, err := opts.th.apply(cmd, recordedThresholds(rec))
	if err != nil {
		return err
	}
	s := report.Build(rec, in, thresholds, time.Now())
	if err := report.WriteFile(out, s, opts.force); err != nil {
		return err
	}
	fmt.Fprintf(opts.stdout, "wrote %s: %s over %s\n", out, s.Dominant, s.Recording.Start.Format("15:04:05")+"–"+s.Recording.End.Format("15:04:05"))
	return nil
}

// openRecording reads a recording, printing its warnings; one without a
// frame is an error.
// Close it when done.
func openRecording(path string, stderr io.Writer) (*recording.Recording, error) {
	rec, err := recording.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, err // the error names the file
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, w := range rec.Warnings {
		fmt.Fprintf(stderr, "gpuwatch: %s: %s\n", path, sample.Printable(w))
	}
	if rec.Len() == 0 {
		rec.Close()
		return nil, fmt.Errorf("%s: no frame recorded", path)
	}
	return rec, nil
}

// recordedThresholds are the thresholds a recording was diagnosed with,
// else (an older recording, or invalid ones) the defaults.
func recordedThresholds(rec *recording.Recording) diagnose.Thresholds {
	if th := rec.Header.Thresholds; th != nil && th.Validate() == nil {
		return *th
	}
	return diagnose.DefaultThresholds()
}
