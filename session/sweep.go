package session

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/sample"
)

// SweepResult is one row of the table and of --out.
type SweepResult struct {
	Workers       int     `json:"workers"`
	Prefetch      int     `json:"prefetch"`
	Persistent    bool    `json:"persistent"`
	Batches       uint64  `json:"batches"`
	SamplesPerSec float64 `json:"samples_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"`
	WaitMeanMs    float64 `json:"wait_mean_ms"`
	WaitP50Ms     float64 `json:"wait_p50_ms"`
	WaitP99Ms     float64 `json:"wait_p99_ms"`
	AccelBusyPct  float64 `json:"accel_busy_pct"`
	FirstBatchMs  float64 `json:"first_batch_ms"`
	EpochStallMs  float64 `json:"epoch_boundary_stall_ms"` // mean time to the first batch of epochs 2…
	WorkerStarts  int     `json:"worker_starts"`
	Best          bool    `json:"best"`
	WallSeconds   float64 `json:"wall_seconds"`
}

// Sweep runs the loader over ds once per configuration of grid, prints
// the table to stdout (progress to stderr) and, with out, writes it as
// JSON. One events log serves the whole sweep: each run is a "run start"
// … "run end" block, in grid order.
func Sweep(ctx context.Context, base loader.Config, grid []loader.Config, ds *loader.Dataset, events *loader.Events, out string, stdout, stderr io.Writer) error {
	bar := newProgress(stderr, len(grid))
	results := make([]SweepResult, 0, len(grid))
	for i, c := range grid {
		bar.show(i, fmt.Sprintf("workers=%d prefetch=%d persistent=%v", c.Workers, c.Prefetch, c.Persistent))
		l := loader.New(c, ds, events)
		start := time.Now()
		if err := l.Run(ctx); err != nil {
			bar.done()
			return err
		}
		results = append(results, summarize(c, l, time.Since(start)))
	}
	bar.done()
	best := 0
	for i, r := range results {
		if r.SamplesPerSec > results[best].SamplesPerSec {
			best = i
		}
	}
	results[best].Best = true
	printSweep(stdout, base, results)
	if out != "" {
		b, _ := json.MarshalIndent(struct {
			Knobs   map[string]string `json:"knobs"`
			Results []SweepResult     `json:"results"`
		}{base.Knobs(), results}, "", "  ")
		if err := os.WriteFile(out, append(b, '\n'), 0o666); err != nil { // less the umask
			return fmt.Errorf("--out: %w", err)
		}
	}
	return nil
}

func summarize(c loader.Config, l *loader.Loader, wall time.Duration) SweepResult {
	s := l.Snapshot()
	sec := wall.Seconds()
	r := SweepResult{
		Workers: c.Workers, Prefetch: c.Prefetch, Persistent: c.Persistent, Batches: s.Batches,
		SamplesPerSec: float64(s.Samples) / sec, MBPerSec: float64(s.BytesRead) / sec / 1e6,
		AccelBusyPct: 100 * s.Step.Sum / sec, WorkerStarts: l.WorkerStarts(), WallSeconds: sec,
	}
	if s.Wait.Count > 0 {
		r.WaitMeanMs = 1000 * s.Wait.Sum / float64(s.Wait.Count)
	}
	waits := make([]float64, 0, len(s.Recent))
	for _, b := range s.Recent {
		waits = append(waits, 1000*b.Wait.Seconds())
	}
	if uint64(len(waits)) == s.Batches && len(waits) > 0 {
		slices.Sort(waits)
		r.WaitP50Ms, r.WaitP99Ms = sample.NearestRank(waits, 0.5), sample.NearestRank(waits, 0.99)
	} else if v, ok := probes.BucketQuantile(0.5, loader.Buckets, s.Wait.Counts, s.Wait.Count); ok {
		r.WaitP50Ms = 1000 * v
		v, _ = probes.BucketQuantile(0.99, loader.Buckets, s.Wait.Counts, s.Wait.Count)
		r.WaitP99Ms = 1000 * v
	}
	if len(s.FirstBatch) > 0 {
		r.FirstBatchMs = float64(s.FirstBatch[0].Microseconds()) / 1000
	}
	if len(s.FirstBatch) > 1 {
		var sum time.Duration
		for _, d := range s.FirstBatch[1:] {
			sum += d
		}
		r.EpochStallMs = float64(sum.Microseconds()) / 1000 / float64(len(s.FirstBatch)-1)
	}
	return r
}

func printSweep(w io.Writer, base loader.Config, rs []SweepResult) {
	fmt.Fprintf(w, "batch %d × %s, decode %v, step %v, access %s, %d epochs × %d batches\n",
		base.BatchSize, loader.FormatSize(base.SampleSize), base.DecodeCost, base.StepTime, base.Access, base.Epochs, base.BatchesPerEpoch())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tworkers\tprefetch\tpersistent\tsamples/s\tMB/s\twait mean\tp50\tp99\taccel busy\tfirst batch\tepoch stall\t")
	for _, r := range rs {
		mark := ""
		if r.Best {
			mark = "*"
		}
		stall := "-"
		if r.EpochStallMs > 0 {
			stall = fmt.Sprintf("%.0fms", r.EpochStallMs)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%.0f\t%.1f\t%.1fms\t%.1fms\t%.1fms\t%.0f%%\t%.0fms\t%s\t\n",
			mark, r.Workers, r.Prefetch, r.Persistent, r.SamplesPerSec, r.MBPerSec,
			r.WaitMeanMs, r.WaitP50Ms, r.WaitP99Ms, r.AccelBusyPct, r.FirstBatchMs, stall)
	}
	tw.Flush()
	fmt.Fprintln(w, "* most samples/s")
}

// progress is a one-line progress bar on a terminal, plain lines elsewhere.
type progress struct {
	w     io.Writer
	n     int
	isTTY bool
}

func newProgress(w io.Writer, n int) *progress {
	p := &progress{w: w, n: n}
	if IsTerminal(w) {
		p.isTTY = true
	}
	return p
}

func (p *progress) show(i int, what string) {
	if !p.isTTY {
		fmt.Fprintf(p.w, "[%d/%d] %s\n", i+1, p.n, what)
		return
	}
	const width = 24
	fill := width * i / p.n
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d %s", strings.Repeat("#", fill), strings.Repeat(" ", width-fill), i+1, p.n, what)
}

func (p *progress) done() {
	if p.isTTY {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// SweepGrid lists the configurations: 0 workers once (no prefetch, no
// persistence), every other count with each prefetch and persistence.
func SweepGrid(base loader.Config, ws, ps []int, pers []bool) []loader.Config {
	var grid []loader.Config
	for _, w := range ws {
		if w == 0 {
			c := base
			c.Workers, c.Prefetch, c.Persistent = 0, 0, false
			grid = append(grid, c)
			continue
		}
		for _, p := range ps {
			for _, per := range pers {
				c := base
				c.Workers, c.Prefetch, c.Persistent = w, p, per
				grid = append(grid, c)
			}
		}
	}
	return grid
}
