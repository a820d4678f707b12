package cli

import (
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/python"
	"github.com/gpuwatch/gpuwatch/session"
)

// commandTrials prepares tune's and sweep's runs of the user's command:
// the hook written to a private folder (as gpuwatch run does), the job's
// environment, the placeholders read. The returned cleanup removes the
// folder.
func commandTrials(cmd *cobra.Command, argv []string, interval time.Duration) (*session.CommandTrials, session.Setting, func(), error) {
	dir, err := session.NewRunDir("tune")
	if err != nil {
		return nil, nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	if err := python.Write(dir); err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	t, start, err := session.NewCommandTrials(argv, jobEnv(os.Environ(), dir), dir)
	if err != nil {
		cleanup()
		return nil, nil, nil, usageErrorf(cmd, "%v", err)
	}
	t.Interval, t.Th, t.Roots = interval, diagnose.DefaultThresholds(), probes.Roots{Proc: "/proc", Sys: "/sys"}
	return t, start, cleanup, nil
}

// progressTo is where run-by-run progress goes: stderr.
func progressTo(stderr io.Writer) io.Writer { return stderr }
