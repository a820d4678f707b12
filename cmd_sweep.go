package main

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

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/sample"
)

func newSweepCmd(stdout, stderr io.Writer) *cobra.Command {
	var k knobFlags
	var workers, prefetch, persistent, out string
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Run the embedded loader over a grid of workers × prefetch × persistent and compare",
		Long: `sweep runs the embedded test loader once per configuration of the grid
(--workers × --prefetch × --persistent), with the other knobs fixed, and
prints a table: samples/s, MB/s, wait mean/p50/p99, accelerator busy %, time
to the first batch and the stall at each epoch boundary. The best row (most
samples/s) is marked. --out writes the results as JSON.`,
		Example: `  gpuwatch sweep --workers 0,1,2,4 --prefetch 1,2,4 --decode-cost 1ms
  gpuwatch sweep --scenario starved --workers 1,2,4,8 --prefetch 2 --out sweep.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, err := parseIntList(workers)
			if err != nil {
				return usageErrorf(cmd, "--workers %v", err)
			}
			ps, err := parseIntList(prefetch)
			if err != nil {
				return usageErrorf(cmd, "--prefetch %v", err)
			}
			var pers []bool
			switch persistent {
			case "both":
				pers = []bool{false, true}
			case "true":
				pers = []bool{true}
			case "false":
				pers = []bool{false}
			default:
				return usageErrorf(cmd, "--persistent %q: want true, false or both", persistent)
			}
			base, err := k.config(cmd, k.scenario)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("epochs") {
				base.Epochs = 2
			}
			if !cmd.Flags().Changed("batches") {
				base.Batches = 30
			}
			if base.Epochs == 0 {
				return usageErrorf(cmd, "--epochs must be at least 1 for a sweep")
			}
			grid := sweepGrid(base, ws, ps, pers)
			for _, c := range grid {
				if err := c.Validate(c.Workers > 0); err != nil {
					return usageErrorf(cmd, "%v", err)
				}
			}
			return runSweep(cmd.Context(), base, grid, out, k.events, stdout, stderr)
		},
	}
	k.register(cmd, true)
	cmd.Flags().StringVar(&workers, "workers", "0,1,2,4", "num_workers values, comma-separated")
	cmd.Flags().StringVar(&prefetch, "prefetch", "2", "prefetch_factor values, comma-separated (ignored for 0 workers)")
	cmd.Flags().StringVar(&persistent, "persistent", "false", "persistent_workers: true, false or both")
	cmd.Flags().StringVar(&out, "out", "", "write the results as JSON to this file")
	return cmd
}

// sweepGrid lists the configurations: 0 workers once (no prefetch, no
// persistence), every other count with each prefetch and persistence.
func sweepGrid(base loader.Config, ws, ps []int, pers []bool) []loader.Config {
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

// sweepResult is one row of the table and of --out.
type sweepResult struct {
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

func runSweep(ctx context.Context, base loader.Config, grid []loader.Config, out, eventsPath string, stdout, stderr io.Writer) error {
	ds, err := openDataset(base, func(s string) { fmt.Fprintln(stderr, "gpuwatch:", s) })
	if err != nil {
		return err
	}
	// One events file for the whole sweep: each configuration's run is a
	// "run start" … "run end" block, in grid order.
	events, closeEvents, err := openEvents(eventsPath)
	if err != nil {
		return err
	}
	defer closeEvents()
	bar := newProgress(stderr, len(grid))
	results := make([]sweepResult, 0, len(grid))
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
			Results []sweepResult     `json:"results"`
		}{base.Knobs(), results}, "", "  ")
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	return nil
}

func summarize(c loader.Config, l *loader.Loader, wall time.Duration) sweepResult {
	s := l.Snapshot()
	sec := wall.Seconds()
	r := sweepResult{
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
		r.WaitP50Ms, r.WaitP99Ms = rank(waits, 0.5), rank(waits, 0.99)
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

func rank(sorted []float64, q float64) float64 {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func printSweep(w io.Writer, base loader.Config, rs []sweepResult) {
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
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
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

func frameAt(t time.Time) *sample.Frame { return &sample.Frame{Time: t} }

// progressLine is the loader command's periodic line.
func progressLine(f *sample.Frame, epoch int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s epoch %d", f.Time.Format("15:04:05"), epoch)
	if l := f.Loader; l != nil {
		fmt.Fprintf(&b, " batches %d | %.0f samples/s %s/s", l.Batches, l.SamplesPerSec, sample.FormatBytes(l.BytesPerSec))
		if l.WaitShare != nil {
			fmt.Fprintf(&b, " | wait %.0f%%", 100**l.WaitShare)
		}
		if l.WaitP50Ms != nil && l.WaitP99Ms != nil {
			fmt.Fprintf(&b, " p50 %.1fms p99 %.1fms", *l.WaitP50Ms, *l.WaitP99Ms)
		}
		if l.QueueDepth != nil {
			fmt.Fprintf(&b, " | queue %.0f", *l.QueueDepth)
		}
	}
	if a := f.Accel; a != nil {
		fmt.Fprintf(&b, " | accelerator busy %.0f%%", a.BusyPct)
	}
	return b.String()
}
