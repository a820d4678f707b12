package cli

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
	var discover bool
	cmd := &cobra.Command{
		Use:   "attach URL [URL…] | --discover",
		Short: "Watch this machine and running loaders (every rank of a job): their metrics and CPU profiles",
		Long: `attach connects to a loader's debug server — the embedded loader
(gpuwatch loader), the Python hook, or any program serving the loader protocol
— and folds its wait times into the frames and the diagnosis. Every
--profile-every it takes a --profile-seconds CPU profile from
URL/debug/pprof/profile and shows where the loader's CPU goes.

A Go program that only imports net/http/pprof works too: profiles, no wait
times. When the loader reports its PID and that process is on this host,
the process view focuses on it (as --pid does).

Several URLs, or a port range (http://127.0.0.1:6061-6068: the Python
hook serves 6061 + LOCAL_RANK), watch every rank of a distributed job:
frames carry ranks[], the verdict names the rank that holds the others
back (the straggler), and profiles are taken from that rank. --discover
attaches to every loader announced on this machine (the hook and
gpuwatch loader announce themselves in ` + "`$XDG_RUNTIME_DIR/gpuwatch`" + `),
as they come up; plain gpuwatch does that too.`,
		Example: `  gpuwatch attach http://127.0.0.1:6060
  gpuwatch attach http://127.0.0.1:6061-6068
  gpuwatch attach --discover
  gpuwatch attach http://127.0.0.1:6061 --profile-every 30s --headless --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !discover {
				return fmt.Errorf("give the loaders' URLs, or --discover")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := w.validate(cmd); err != nil {
				return err
			}
			if length < time.Second || every <= length {
				return usageErrorf(cmd, "want --profile-seconds ≥ 1s and --profile-every longer than it (have %v and %v)", length, every)
			}
			o := w.options(stdout, stderr)
			stop, err := attachTo(cmd, &o, w.procRoot, session.AttachTo{URLs: args, Discover: discover, Every: every, Length: length})
			if err != nil {
				return err
			}
			defer stop()
			return session.Run(cmd.Context(), o)
		},
	}
	w.register(cmd)
	cmd.Flags().BoolVar(&discover, "discover", false, "also attach to every loader announced on this machine, as they come up")
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

// attachTo attaches o to the loaders to names (attach, record --attach,
// serve --attach, discovery); none named is nothing to do; a URL that is
// not a loader's is a usage error.
func attachTo(cmd *cobra.Command, o *session.Options, procRoot string, to session.AttachTo) (func(), error) {
	if len(to.URLs) == 0 && !to.Discover {
		return func() {}, nil
	}
	if to.Every == 0 {
		to.Every, to.Length = defaultProfileEvery, defaultProfileLength
	}
	stop, err := session.Attach(cmd.Context(), o, procRoot, to)
	if errors.Is(err, probes.ErrBadURL) {
		return nil, usageErrorf(cmd, "%v", err)
	}
	return stop, err
}

// attachFlags are --attach URL (repeatable, port ranges allowed) and
// --discover, for the commands that watch (record, serve).
type attachFlags struct {
	urls     []string
	discover bool
}

func (a *attachFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&a.urls, "attach", nil, "also attach to this loader URL (repeatable; a port range such as http://127.0.0.1:6061-6068 is every rank), as gpuwatch attach")
	cmd.Flags().BoolVar(&a.discover, "discover", false, "also attach to every loader announced on this machine, as they come up")
}

func (a *attachFlags) to() session.AttachTo {
	return session.AttachTo{URLs: a.urls, Discover: a.discover}
}
