package loader

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"sync"
	"time"
)

// WriteMetrics writes s in the Prometheus text exposition format (0.0.4),
// with the metric names of the loader protocol (docs/architecture.md §6).
//
// gpuwatch_loader_info carries the process ID, and the training loop's thread
// ID (tid) while it loads inline, so a watcher can tell the loop's thread
// from the process's other threads.
func WriteMetrics(w io.Writer, s Snapshot, cfg Config, pid, loopTID int) error {
	bw := bufio.NewWriter(w)
	hist := func(name, help string, h Histogram) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
		for i, b := range Buckets {
			fmt.Fprintf(bw, "%s_bucket{le=\"%s\"} %d\n", name, strconv.FormatFloat(b, 'g', -1, 64), h.Counts[i])
		}
		fmt.Fprintf(bw, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %s\n%s_count %d\n",
			name, h.Count, name, strconv.FormatFloat(h.Sum, 'g', -1, 64), name, h.Count)
	}
	one := func(name, typ, help string, v float64) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", name, help, name, typ, name, strconv.FormatFloat(v, 'g', -1, 64))
	}
	hist("gpuwatch_loader_wait_seconds", "Time the training loop blocked waiting for the next batch.", s.Wait)
	hist("gpuwatch_loader_step_seconds", "Time between receiving a batch and asking for the next (the training step).", s.Step)
	one("gpuwatch_loader_batches_total", "counter", "Batches handed to the training loop.", float64(s.Batches))
	one("gpuwatch_loader_samples_total", "counter", "Samples handed to the training loop.", float64(s.Samples))
	one("gpuwatch_loader_bytes_read_total", "counter", "Bytes read from the dataset.", float64(s.BytesRead))
	one("gpuwatch_loader_read_seconds_total", "counter", "Time spent reading samples, summed over workers.", s.ReadSeconds)
	one("gpuwatch_loader_decode_seconds_total", "counter", "Time spent decoding samples, summed over workers.", s.DecodeSeconds)
	one("gpuwatch_loader_queue_depth", "gauge", "Batches ready and waiting when the training loop last asked.", float64(s.QueueDepth))
	one("gpuwatch_loader_waiting_seconds", "gauge", "How long the training loop has waited for the batch it asked for, at this read; 0 while it is not waiting, and while it waits less than 10 s for its epoch's first batch (its start-up).", s.Waiting.Seconds())
	one("gpuwatch_loader_workers", "gauge", "Loader workers (num_workers).", float64(cfg.Workers))
	one("gpuwatch_loader_prefetch", "gauge", "Batches prefetched per worker (prefetch_factor).", float64(cfg.Prefetch))
	tid := ""
	if loopTID > 0 {
		tid = fmt.Sprintf(",tid=\"%d\"", loopTID)
	}
	for _, l := range rankLabels() {
		tid += fmt.Sprintf(",%s=\"%d\"", l.name, l.v)
	}
	fmt.Fprintf(bw, "# HELP gpuwatch_loader_info The loader's process and kind.\n# TYPE gpuwatch_loader_info gauge\ngpuwatch_loader_info{pid=\"%d\",kind=\"go\"%s} 1\n", pid, tid)
	return bw.Flush()
}

type rankLabel struct {
	name string
	v    int
}

// rankLabels are the process's place in a distributed job, from the
// environment torch.distributed's launchers set (RANK, LOCAL_RANK,
// WORLD_SIZE), as gpuwatch_loader_info labels; a variable that is not a
// small non-negative number is left out.
var rankLabels = sync.OnceValue(func() []rankLabel {
	var out []rankLabel
	for _, k := range []struct{ env, name string }{{"RANK", "rank"}, {"LOCAL_RANK", "local_rank"}, {"WORLD_SIZE", "world_size"}} {
		if n, err := strconv.Atoi(os.Getenv(k.env)); err == nil && n >= 0 && n < 1<<20 {
			out = append(out, rankLabel{k.name, n})
		}
	}
	return out
})

// Rank returns RANK, LOCAL_RANK and WORLD_SIZE of this process where the
// environment sets them (nil where not).
func Rank() (rank, local, world *int) {
	for _, l := range rankLabels() {
		v := l.v
		switch l.name {
		case "rank":
			rank = &v
		case "local_rank":
			local = &v
		case "world_size":
			world = &v
		}
	}
	return rank, local, world
}

// Handler serves the loader protocol for l: /metrics and /debug/pprof/.
func Handler(l *Loader) http.Handler {
	mux := http.NewServeMux()
	pid := os.Getpid()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = WriteMetrics(w, l.Snapshot(), l.Config(), pid, l.LoopTID())
	})
	// What the loader protocol needs (profile), what `go tool pprof` asks
	// for beside it (symbol), and the index with Go's named profiles (heap,
	// goroutine). Not cmdline: a command line can hold credentials. Not
	// trace: an execution trace is heavy to take and says more than a
	// watcher needs.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", http.NotFound)
	mux.HandleFunc("GET /debug/pprof/trace", http.NotFound)
	mux.HandleFunc("GET /debug/pprof/profile", boundedProfile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "gpuwatch loader: /metrics (Prometheus text), /debug/pprof/ (Go pprof)")
	})
	return mux
}

// MaxProfileSeconds is the longest CPU profile the debug server takes, as
// the Python hook's (gpuwatch asks for 5 s; Go's pprof takes any length).
const MaxProfileSeconds = 60

// boundedProfile is pprof.Profile with its length checked: a missing
// seconds is Go's default (30), anything outside (0, MaxProfileSeconds] is
// refused, so no request holds the process's one CPU profiler for hours.
func boundedProfile(w http.ResponseWriter, r *http.Request) {
	if raw := r.FormValue("seconds"); raw != "" {
		// Go's pprof reads a whole number, and takes 30 s for anything else.
		sec, err := strconv.Atoi(raw)
		if err != nil || sec < 1 || sec > MaxProfileSeconds {
			http.Error(w, fmt.Sprintf("seconds: want a whole number of seconds from 1 to %d", MaxProfileSeconds), http.StatusBadRequest)
			return
		}
	}
	pprof.Profile(w, r)
}

// IsLoopback says whether a listen address only accepts local
// connections ("127.0.0.1:6060", "[::1]:0", "localhost:6060").
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve starts the debug server on addr and returns its listener (for the
// bound port) and a stop function.
func Serve(addr string, h http.Handler) (net.Listener, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln, func() { _ = srv.Close() }, nil
}
