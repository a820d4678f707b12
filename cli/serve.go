package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync/atomic"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/exporter"
	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session"
)

// serveOptions are serve's flags: the watch flags, where /metrics is
// served and how many may connect, and the Slurm folders.
type serveOptions struct {
	w                         watchFlags
	listen, jobDir, framesDir string
	maxConns                  int
	framesMax                 int64
	auth                      exporter.Auth
	stdout, stderr            io.Writer
}

func newServeCmd(stdout, stderr io.Writer) *cobra.Command {
	opts := &serveOptions{framesMax: 16 << 20, stdout: stdout, stderr: stderr}
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
  gpuwatch serve --listen 0.0.0.0:9400 --discover=false  # the host only
  gpuwatch serve --listen 0.0.0.0:9400 --tls-cert tls.crt --tls-key tls.key --token-file token  # HTTPS, /metrics with the token only
  gpuwatch serve --slurm-job-dir /run/gpuwatch/jobs --slurm-frames-dir /var/lib/gpuwatch/slurm  # deploy/slurm`,
		Args: noArgs("the address is --listen HOST:PORT"),
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, opts) },
	}
	opts.w.register(cmd, offerPID|offerLoaders|offerRecord)
	cmd.Flags().StringVar(&opts.jobDir, "slurm-job-dir", "", "label the series with the Slurm job a prolog mapped here (files JOBID holding user= and gpus= lines; deploy/slurm/prolog.sh)")
	cmd.Flags().StringVar(&opts.framesDir, "slurm-frames-dir", "", "keep each mapped job's frames in this folder (JOBID.jsonl) for its epilog to judge (deploy/slurm/epilog.sh)")
	cmd.Flags().Var(sizeFlag{&opts.framesMax}, "slurm-frames-max-size", "rotate a job's kept frames to JOBID.jsonl.1 past this size")
	cmd.Flags().StringVar(&opts.listen, "listen", "127.0.0.1:9400", "address to serve /metrics on (loopback unless you say otherwise)")
	cmd.Flags().StringVar(&opts.auth.CertFile, "tls-cert", "", "serve HTTPS with this certificate (PEM; with --tls-key; read again when it changes)")
	cmd.Flags().StringVar(&opts.auth.KeyFile, "tls-key", "", "the private key of --tls-cert (PEM)")
	cmd.Flags().StringVar(&opts.auth.TokenFile, "token-file", "", "answer /metrics only to requests with this file's token (Authorization: Bearer TOKEN; 401 otherwise; / stays open for probes); the file must be readable by serve's user (and group) only")
	cmd.Flags().IntVar(&opts.maxConns, "max-connections", exporter.DefaultLimits().MaxConns, "the most connections open at once (a quarter of them from one user of this machine, or one remote host); idle ones close after 30 s")
	return cmd
}

// runServe serves /metrics and runs the session that feeds it, with the
// exporter (and the kept Slurm frames) as the session's observers.
func runServe(cmd *cobra.Command, opts *serveOptions) error {
	w, jobDir, framesDir := &opts.w, opts.jobDir, opts.framesDir
	maxConns, framesMax, stderr := opts.maxConns, opts.framesMax, opts.stderr
	w.headless = true
	if err := w.validate(cmd); err != nil {
		return err
	}
	if framesDir != "" && jobDir == "" {
		return usageErrorf(cmd, "--slurm-frames-dir needs --slurm-job-dir: the jobs whose frames are kept")
	}
	exp := &exporter.Exporter{}
	if jobDir != "" {
		exp.SlurmJobs = func() exporter.SlurmJobs { return exporter.ReadSlurmJobs(jobDir) }
	}
	if maxConns < 1 {
		return usageErrorf(cmd, "--max-connections %d: want at least 1", maxConns)
	}
	if err := opts.auth.Check(); err != nil {
		return usageErrorf(cmd, "%v", err)
	}
	opts.auth.Warn = func(s string) { fmt.Fprintln(stderr, "gpuwatch: "+s) }
	stop, serving, err := serveMetrics(opts, exp)
	if err != nil {
		return err
	}
	defer stop()
	defer smallHeap()()
	o := w.options(io.Discard, stderr)
	o.Node, o.Observers, o.Started = true, []session.Observer{exp}, serving
	// A node's service names the ports its jobs will take: none answering
	// now is a node between jobs, served all the same (host metrics, the
	// ranks down).
	o.Attach.Later = true
	if o.Attach.Told == nil {
		o.Attach.Told = func(s string) { fmt.Fprintln(stderr, "gpuwatch: "+sample.Printable(s)) }
	}
	if framesDir != "" {
		if err := privateFolder(framesDir); err != nil {
			return fmt.Errorf("--slurm-frames-dir %s: %w", framesDir, err)
		}
		sf := &session.SlurmFrames{MapDir: jobDir, FramesDir: framesDir, MaxBytes: framesMax, Version: version, Th: w.thresholds,
			Warn: func(s string) { fmt.Fprintln(stderr, "gpuwatch: "+sample.Printable(s)) }}
		defer sf.Close()
		o.Observers = append(o.Observers, sf)
	}
	return watch(cmd, o)
}

// serveGCPercent is serve's GOGC. serve is a daemon left on every node
// whose live heap after a collection is under 1 MB; at the runtime's
// default (100) the collector's goal is its 4 MB floor, and the arena
// keeps what the cycles free up to about that goal resident. At 50 the
// floor is 2 MB (docs/architecture.md, "serve's heap").
const serveGCPercent = 50

// smallHeap sets the collector to serveGCPercent unless the user set
// GOGC, and returns what puts the setting before it back.
func smallHeap() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(serveGCPercent)
	return func() { debug.SetGCPercent(old) }
}

// serveMetrics serves exp at /metrics (and a line naming it at /, open
// for probes) on opts.listen, with serve's connection limits and, where
// opts.auth asks, TLS and the token; stop closes the server and waits for
// it. serving says where it serves, once the session has started: a
// session that fails to start (a loader --attach names that does not
// answer) says nothing of serving.
func serveMetrics(opts *serveOptions, exp *exporter.Exporter) (stop, serving func(), err error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(exp)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /{$}", func(rw http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(rw, "gpuwatch exporter: /metrics")
	})
	h, err := opts.auth.Guard(mux, "/metrics")
	if err != nil {
		return nil, nil, err
	}
	tlsConf, err := opts.auth.TLSConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("--tls-cert %s: %w", opts.auth.CertFile, err)
	}
	ln, err := net.Listen(listenNetwork(opts.listen), opts.listen)
	if err != nil {
		return nil, nil, fmt.Errorf("--listen %s: %w", opts.listen, err)
	}
	lim := exporter.DefaultLimits()
	lim.MaxConns, lim.PerHost = opts.maxConns, max(1, opts.maxConns/4)
	srv := exporter.NewServer(h, lim)
	srv.TLSConfig = tlsConf
	// The port is taken now (a port in use fails at once), and served
	// from the session's start: a serve whose --attach loaders never
	// answer serves nothing and says nothing of serving, and one that
	// serves says so as it begins (a review: the port answered, with no
	// warning, while the loaders were awaited).
	served := make(chan struct{})
	var started atomic.Bool
	serving = func() {
		if started.Swap(true) {
			return
		}
		go func() {
			defer close(served)
			if tlsConf != nil {
				_ = srv.ServeTLS(exporter.LimitListener(ln, lim), "", "")
				return
			}
			_ = srv.Serve(exporter.LimitListener(ln, lim))
		}()
		if !loader.IsLoopback(opts.listen) {
			fmt.Fprintf(opts.stderr, "gpuwatch: warning: serving metrics on %s, reachable from other machines\n", ln.Addr())
			if opts.auth.TokenFile == "" {
				fmt.Fprintln(opts.stderr, "gpuwatch: warning: anyone who reaches it reads every job's labels and GPU memory: --token-file, or a firewall (docs/security.md)")
			} else if tlsConf == nil {
				fmt.Fprintln(opts.stderr, "gpuwatch: warning: --token-file without --tls-cert: the token crosses the network in clear text, for anyone on the path to read and reuse (docs/security.md)")
			}
		}
		scheme := "http"
		if tlsConf != nil {
			scheme = "https"
		}
		fmt.Fprintf(opts.stdout, "gpuwatch exporter on %s://%s/metrics\n", scheme, ln.Addr())
	}
	stop = func() {
		if !started.Load() {
			ln.Close() // never served
			return
		}
		srv.Close()
		<-served
	}
	return stop, serving, nil
}

// privateFolder says why dir may not hold the frames root's epilog
// replays (issue 54, item 4): it must be a folder, not a link, owned by
// the user serve runs as, and writable by nobody else — another user who
// could write there could plant a job's frames, or a link in their place.
func privateFolder(dir string) error {
	st, err := os.Lstat(dir)
	switch {
	case err != nil:
		return err
	case st.Mode()&os.ModeSymlink != 0:
		return errors.New("a symbolic link: name the folder itself")
	case !st.IsDir():
		return errors.New("not a folder")
	case st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("others may write in it (mode %04o): chmod go-w, or use the unit's StateDirectory, /var/lib/gpuwatch/slurm (0700)", st.Mode().Perm())
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("owned by uid %d, not by the user serve runs as (uid %d)", sys.Uid, os.Geteuid())
	}
	return nil
}

// listenNetwork is the network --listen's address names: an IPv4
// address (0.0.0.0 among them) listens on IPv4 alone; anything else as
// the kernel binds it ("[::]", a host name, or none, ":9400": both
// families). A review: 0.0.0.0 listened on [::] too, open over IPv6
// where only IPv4 was firewalled.
func listenNetwork(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "tcp"
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() != nil {
		return "tcp4"
	}
	return "tcp"
}
