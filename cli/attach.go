package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/session"
)

func newAttachCmd(stdout, stderr io.Writer) *cobra.Command {
	var w watchFlags
	var ceiling time.Duration
	var gpuProfile int
	cmd := &cobra.Command{
		Use:   "attach URL [URL…]",
		Short: "Watch this machine and running loaders (every rank of a job): their metrics and CPU profiles",
		Long: `attach connects to a loader's debug server — the embedded loader
(gpuwatch loader), the Python hook, or any program serving the loader protocol
— and folds its wait times into the frames and the diagnosis. Every
--profile-every it takes a --profile-seconds CPU profile from
URL/debug/pprof/profile and shows where the loader's CPU goes.

A Go program that only imports net/http/pprof works too: profiles, no wait
times. When the loader reports its PID and that process is on this host,
the process view focuses on it (as --pid does) — only if that process
holds the loader's port; a PID that does not is not used, and the loader's
line says so.

Several URLs, or a port range (http://127.0.0.1:6061-6068: the Python
hook serves 6061 + LOCAL_RANK), watch every rank of a distributed job:
frames carry ranks[], the verdict names the rank that holds the others
back (the straggler), and profiles are taken from that rank. The other
ranks of a distributed job a URL names, announced on this machine (the
hook, gpuwatch run and gpuwatch loader announce themselves in
` + "`$XDG_RUNTIME_DIR/gpuwatch`" + `, the hook with RANK and WORLD_SIZE), are
attached to as they come up: a loader of the same WORLD_SIZE, above 1.
Another job's loader is not (plain gpuwatch attaches to every announced
loader); --discover=false attaches to the URLs given only.

--ceiling[=DURATION] asks each loader given (POST /ceiling, with its token)
to measure its ceiling: its training loop trains on kept batches, replayed,
for DURATION (30s alone), and the verdict says what the input costs.

--gpu-profile[=STEPS] asks each loader given (POST /gpu-profile, with its
token) to record its next STEPS steps (5 alone; at most 50) with
torch.profiler: the GPU's time per step by category and precision, and its
idle gaps. The profiler costs only while it records.`,
		Example: `  gpuwatch attach http://127.0.0.1:6060
  gpuwatch attach http://127.0.0.1:6061-6068
  gpuwatch attach http://127.0.0.1:6061 --profile-every 30s --headless --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("give the loaders' URLs (plain gpuwatch attaches to every announced loader)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// A bare --gpu-profile or --ceiling before a number makes the
			// number a URL: say how to write the flag, not that the URL is
			// not a loader's (validate checks the URLs).
			if err := checkGPUProfile(cmd, gpuProfile, args); err != nil {
				return err
			}
			if err := checkCeiling(cmd, ceiling, args); err != nil {
				return err
			}
			w.attach = append(args, w.attach...)
			if err := w.validate(cmd); err != nil {
				return err
			}
			o := w.options(stdout, stderr)
			if gpuProfile > 0 {
				session.AskGPUProfile(cmd.Context(), o.Attach.URLs, o.Attach.Dir, gpuProfile, func(s string) { fmt.Fprintln(stderr, "gpuwatch: --gpu-profile:", s) })
			}
			o.Attach.Ceiling = ceiling
			o.Attach.RanksOfURLs = true // the URLs name the job: discovery adds its other ranks only
			o.Attach.Told = func(s string) { fmt.Fprintln(stderr, "gpuwatch: --ceiling:", s) }
			return watch(cmd, o)
		},
	}
	w.register(cmd, offerAll)
	addCeilingFlag(cmd, &ceiling, "ask each loader given (the Python hook) to measure its rate with its input free: once warm it trains on kept batches, replayed, for this long (--ceiling alone: 30s; at most 10m)")
	addGPUProfileFlag(cmd, &gpuProfile, "ask each loader given (the Python hook) to record this many steps (1-50; --gpu-profile alone: 5) with torch.profiler: the GPU's time per step by category and precision")
	return cmd
}
