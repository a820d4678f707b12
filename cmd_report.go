package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/report"
	"github.com/gpuwatch/gpuwatch/sample"
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

// sessionFrames keeps the session's frames for `e` (at most an hour at
// 1 s; older frames drop), so a report can be written without a recording.
type sessionFrames struct {
	mu     sync.Mutex
	frames []report.Recorded
	notes  []report.Scenario
	start  time.Time
}

const sessionKeep = 3600

func (s *sessionFrames) add(f *sample.Frame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.start.IsZero() {
		s.start = f.Time
	}
	if len(s.frames) >= sessionKeep {
		s.frames = append(s.frames[:0], s.frames[len(s.frames)-sessionKeep+1:]...)
	}
	s.frames = append(s.frames, report.Recorded{Frame: *f})
}

func (s *sessionFrames) note(n any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc, ok := n.(report.Scenario); ok {
		s.notes = append(s.notes, sc)
	}
}

// export writes an HTML report of the session so far to a new file in the
// current folder (the dashboard's e key).
func (s *sessionFrames) export() (string, error) {
	s.mu.Lock()
	rec := &report.Recording{Frames: append([]report.Recorded(nil), s.frames...), Scenarios: append([]report.Scenario(nil), s.notes...)}
	s.mu.Unlock()
	if len(rec.Frames) == 0 {
		return "", fmt.Errorf("no frame yet")
	}
	host, _ := os.Hostname()
	rec.Header = report.Header{Host: host, Cores: runtime.NumCPU(), GpuwatchVersion: version, Command: os.Args, Time: rec.Frames[0].Frame.Time}
	for _, g := range rec.Frames[len(rec.Frames)-1].Frame.GPUs {
		rec.Header.GPUs = append(rec.Header.GPUs, g.Name)
	}
	path := "gpuwatch-report-" + time.Now().Format("20060102-150405") + ".html"
	if err := report.WriteFile(path, report.Build(rec, "(live session)", diagnose.DefaultThresholds(), time.Now()), false); err != nil {
		return "", err
	}
	return "report written: " + path, nil
}
