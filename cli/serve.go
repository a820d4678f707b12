package cli

import (
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/exporter"
	"github.com/gpuwatch/gpuwatch/loader"
)

func newServeCmd(stdout, stderr io.Writer) *cobra.Command {
	var w watchFlags
	var listen string
	var maxConns int
	cmd := &cobra.Command{
		Use:   "serve [--listen 127.0.0.1:9400] [--attach URL] [--pid PID]",
		Short: "Expose this machine's frames and verdict as Prometheus metrics (one exporter per node)",
		Long: `serve samples this machine (and every announced loader) like gpuwatch does,
and serves the latest frame and verdict at /metrics in Prometheus text:
gpuwatch_verdict{kind="…"} (1 for the verdict shown now), its confidence,
per-core, per-disk, per-GPU, pressure and loader metrics. A Prometheus server
scraping every node is the way past one machine (docs/prometheus.md).`,
		Example: `  gpuwatch serve
  gpuwatch serve --listen 0.0.0.0:9400 --attach http://127.0.0.1:6060
  gpuwatch serve --listen 0.0.0.0:9400 --discover=false  # the host only`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w.headless = true
			if err := w.validate(cmd); err != nil {
				return err
			}
			exp := &exporter.Exporter{}
			reg := prometheus.NewRegistry()
			reg.MustRegister(exp)
			mux := http.NewServeMux()
			mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			mux.HandleFunc("GET /{$}", func(rw http.ResponseWriter, _ *http.Request) {
				fmt.Fprintln(rw, "gpuwatch exporter: /metrics")
			})
			if maxConns < 1 {
				return usageErrorf(cmd, "--max-connections %d: want at least 1", maxConns)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen %s: %w", listen, err)
			}
			lim := exporter.DefaultLimits()
			lim.MaxConns, lim.PerHost = maxConns, max(1, maxConns/4)
			srv := exporter.NewServer(mux, lim)
			served := make(chan struct{})
			go func() { defer close(served); _ = srv.Serve(exporter.LimitListener(ln, lim)) }()
			defer func() { srv.Close(); <-served }()
			if !loader.IsLoopback(listen) {
				fmt.Fprintf(stderr, "gpuwatch: warning: serving metrics on %s, reachable from other machines\n", ln.Addr())
			}
			fmt.Fprintf(stdout, "gpuwatch exporter on http://%s/metrics\n", ln.Addr())
			o := w.options(io.Discard, stderr)
			o.OnFrame = exp.Set
			return watch(cmd, o)
		},
	}
	w.register(cmd, offerPID|offerLoaders|offerRecord)
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:9400", "address to serve /metrics on (loopback unless you say otherwise)")
	cmd.Flags().IntVar(&maxConns, "max-connections", exporter.DefaultLimits().MaxConns, "the most connections open at once (a quarter of them from one host); idle ones close after 30 s")
	return cmd
}
