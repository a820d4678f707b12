package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/report"
)

func newReportCmd(stdout, stderr io.Writer) *cobra.Command {
	var out string
	var force bool
	cmd := &cobra.Command{
		Use:   "report FILE -o OUT",
		Short: "Write a diagnosis report of a recording: HTML (charts), Markdown or JSON, by OUT's extension",
		Example: `  gpuwatch report run.jsonl -o run.html
  gpuwatch report run.jsonl -o run.md
  gpuwatch report run.jsonl -o run.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErrorf(cmd, "-o OUT is required (.html, .md or .json)")
			}
			return writeReport(args[0], out, force, stdout, stderr)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the report to write: .html, .md or .json")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing report")
	return cmd
}

// writeReport reads a recording and writes its report.
func writeReport(in, out string, force bool, stdout, stderr io.Writer) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	rec, err := report.ReadRecording(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	for _, w := range rec.Warnings {
		fmt.Fprintf(stderr, "gpuwatch: %s: %s\n", in, w)
	}
	if len(rec.Frames) == 0 {
		return fmt.Errorf("%s: no frame recorded", in)
	}
	s := report.Build(rec, in, diagnose.DefaultThresholds(), time.Now())
	if err := report.WriteFile(out, s, force); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %s over %s\n", out, s.Dominant, s.Recording.Start.Format("15:04:05")+"–"+s.Recording.End.Format("15:04:05"))
	return nil
}
