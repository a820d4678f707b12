package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/python"
	"github.com/gpuwatch/gpuwatch/session/rundir"
	"github.com/gpuwatch/gpuwatch/session/tune"
)

// commandTrials prepares tune's and sweep's runs of the user's command:
// the hook written to a private folder (as gpuwatch run does), the job's
// environment, the placeholders read, and a folder for the runs' logs. The
// returned cleanup removes the hook's folder, and the logs' folder unless
// a failed run's log is in it (then it says where).
func commandTrials(cmd *cobra.Command, argv []string, interval time.Duration) (*tune.CommandTrials, tune.Setting, func(), error) {
	dir, err := rundir.New("tune")
	if err != nil {
		return nil, nil, nil, err
	}
	logs, err := trialLogDir(cmd)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	cleanup := func() {
		os.RemoveAll(dir)
		if os.Remove(logs) != nil { // not empty: a failed run's log
			fmt.Fprintf(cmd.ErrOrStderr(), "gpuwatch: the failed runs' logs are in %s\n", logs)
		}
	}
	if err := python.Write(dir); err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	t, start, err := tune.NewCommandTrials(argv, jobEnv(os.Environ(), dir), dir)
	if err != nil {
		cleanup()
		return nil, nil, nil, usageErrorf(cmd, "%v", err)
	}
	t.Interval, t.Th, t.Roots = interval, diagnose.DefaultThresholds(), probes.Roots{Proc: "/proc", Sys: "/sys"}
	t.LogDir, t.LogMax = logs, trialLogMax
	return t, start, cleanup, nil
}

// trialLogMax caps each part of a run's log: the last 8 to 16 MiB of a
// run are kept (the log rotates once to .1), ample for a traceback.
const trialLogMax = 8 << 20

// registerTrialLogs declares --logs, where tune's and sweep's runs of a
// command write their output.
func registerTrialLogs(cmd *cobra.Command) {
	cmd.Flags().String("logs", "", "a command: the folder for each run's output, capped at 16 MiB a run; a measured run's is removed, a failed run's kept (default: gpuwatch/trials in the user's cache folder, not the RAM-backed runtime folder)")
}

// trialLogDir makes this invocation's folder for the runs' logs (0700),
// inside --logs, else inside gpuwatch/trials of the user's cache folder
// (~/.cache: on disk, where $XDG_RUNTIME_DIR is a small RAM tmpfs that a
// chatty training log fills), else the current folder.
func trialLogDir(cmd *cobra.Command) (string, error) {
	base, _ := cmd.Flags().GetString("logs")
	if base == "" {
		base = "."
		if c, err := os.UserCacheDir(); err == nil {
			base = filepath.Join(c, "gpuwatch", "trials")
			if err := os.MkdirAll(base, 0o700); err != nil {
				return "", fmt.Errorf("a folder for the runs' logs: %w", err)
			}
		}
	}
	d, err := os.MkdirTemp(base, cmd.Name()+"-"+time.Now().Format("20060102-150405")+"-")
	if err != nil {
		return "", fmt.Errorf("--logs: %w", err)
	}
	return d, nil
}

// progressTo is where run-by-run progress goes: stderr.
func progressTo(stderr io.Writer) io.Writer { return stderr }

// noCommandAfterDash refuses a "--" with nothing after it: tune and sweep
// without a command measure the embedded loader, and "tune --" ran it as
// if the user's command had been left out on purpose (a user's review).
func noCommandAfterDash(cmd *cobra.Command, args []string) error {
	if cmd.ArgsLenAtDash() >= 0 && (len(args) == 0 || strings.TrimSpace(args[0]) == "") { // "tune -- ''" too
		return usageErrorf(cmd, "-- with no command after it: give the command to measure (%s -- python train.py …), or leave out -- for the embedded loader", cmd.CommandPath())
	}
	return nil
}
