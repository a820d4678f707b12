package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/session"
)

// The profile cadence of attach, and of record and serve with --attach.
const (
	defaultProfileEvery  = 15 * time.Second
	defaultProfileLength = 5 * time.Second
)

func newAttachCmd(stdout, stderr io.Writer) *cobra.Command {
	var w watchFlags
	var every, length time.Duration
	cmd := &cobra.Command{
		Use:   "attach URL",
		Short: "Watch this machine and a running loader: its metrics and its CPU profile",
		Long: `attach connects to a loader's debug server — the embedded loader
(gpuwatch loader), the Python hook, or any program serving the loader protocol
— and folds its wait times into the frames and the diagnosis. Every
--profile-every it takes a --profile-seconds CPU profile from
URL/debug/pprof/profile and shows where the loader's CPU goes.

A Go program that only imports net/http/pprof works too: profiles, no wait
times. When the loader reports its PID and that process is on this host,
the process view focuses on it (as --pid does).`,
		Example: `  gpuwatch attach http://127.0.0.1:6060
  gpuwatch attach http://127.0.0.1:6061 --profile-every 30s --headless --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := w.validate(cmd); err != nil {
				return err
			}
			if length < time.Second || every <= length {
				return usageErrorf(cmd, "want --profile-seconds ≥ 1s and --profile-every longer than it (have %v and %v)", length, every)
			}
			o := w.options(stdout, stderr)
			stop, err := attachTo(cmd, &o, w.procRoot, args[0], every, length)
			if err != nil {
				return err
			}
			defer stop()
			return session.Run(cmd.Context(), o)
		},
	}
	w.register(cmd)
	cmd.Flags().DurationVar(&every, "profile-every", defaultProfileEvery, "time between CPU profiles of the loader")
	length = defaultProfileLength
	cmd.Flags().Var(secondsFlag{&length}, "profile-seconds", "length of each CPU profile, in seconds (5) or as a duration (5s)")
	return cmd
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

// attachTo attaches o to the loader at raw (attach, record --attach,
// serve --attach); a URL that is not one is a usage error.
func attachTo(cmd *cobra.Command, o *session.Options, procRoot, raw string, every, length time.Duration) (func(), error) {
	stop, err := session.Attach(cmd.Context(), o, procRoot, raw, every, length)
	if errors.Is(err, probes.ErrBadURL) {
		return nil, usageErrorf(cmd, "%v", err)
	}
	return stop, err
}
