package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/probes/endpoint"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session/embedded"
)

// loaderOptions are the loader command's flags and streams: cli/cli's
// options struct, with runLoader its run function.
type loaderOptions struct {
	knobs         knobFlags
	listen        string        // the debug server's address
	progressEvery time.Duration // time between progress lines
	stdout        io.Writer
	stderr        io.Writer
}

func newLoaderCmd(stdout, stderr io.Writer) *cobra.Command {
	opts := &loaderOptions{stdout: stdout, stderr: stderr}
	cmd := &cobra.Command{
		Use:   "loader",
		Short: "Run the embedded test loader alone, serving the loader protocol (/metrics, /debug/pprof/)",
		Long: `loader runs the embedded test loader in this process and serves the loader
protocol on --listen: /metrics in Prometheus text and /debug/pprof/. Attach
to it from another gpuwatch, or scrape it. It prints a progress line every
few seconds.`,
		Example: `  gpuwatch loader --scenario io-bound
  gpuwatch loader --listen 127.0.0.1:0 --workers 4 --epochs 3`,
		Args: noArgs(""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := opts.knobs.config(cmd, opts.knobs.scenario)
			if err != nil {
				return err
			}
			if opts.progressEvery <= 0 {
				return usageErrorf(cmd, "--progress-every must be positive")
			}
			return runLoader(cmd.Context(), opts, c)
		},
	}
	opts.knobs.register(cmd, false)
	cmd.Flags().StringVar(&opts.listen, "listen", "127.0.0.1:6060", "address of the debug server (loopback unless you say otherwise)")
	cmd.Flags().DurationVar(&opts.progressEvery, "progress-every", 5*time.Second, "time between progress lines")
	return cmd
}

// runLoader runs configuration c, serving the loader protocol on
// opts.listen, announces it for discovery and prints its progress until ctx
// ends.
func runLoader(ctx context.Context, opts *loaderOptions, c loader.Config) error {
	listen, stdout, stderr := opts.listen, opts.stdout, opts.stderr
	files, err := embedded.OpenLoaders([]loader.Config{c}, opts.knobs.events, stderr)
	if err != nil {
		return err
	}
	defer files.Close()
	l := loader.New(c, files.Datasets[0], files.Events)
	ln, stop, err := loader.Serve(listen, loader.Handler(l))
	if err != nil {
		return fmt.Errorf("--listen %s: %w", listen, err)
	}
	defer stop()
	if !loader.IsLoopback(listen) {
		fmt.Fprintf(stderr, "gpuwatch: warning: serving on %s, reachable from other machines (profiles show function names)\n", ln.Addr())
	}
	// Announce it, so that plain gpuwatch and attach --discover find it.
	rank, local, world := loader.Rank()
	remove, err := endpoint.Announce(endpoint.DiscoveryDir(), endpoint.Announcement{
		PID: os.Getpid(), URL: "http://" + ln.Addr().String(), Kind: "embedded", Rank: rank, LocalRank: local, WorldSize: world})
	if err != nil {
		fmt.Fprintf(stderr, "gpuwatch: warning: not announced for discovery (attach to the URL instead): %v\n", err)
	} else {
		defer remove()
	}
	fmt.Fprintf(stdout, "gpuwatch loader (%s, %s) serving http://%s/metrics and /debug/pprof/ (pid %d)\n",
		c.Name(), sample.Plural(c.Workers, "worker"), ln.Addr(), os.Getpid())
	return embedded.LoaderProgress(ctx, l, opts.progressEvery, stdout)
}
