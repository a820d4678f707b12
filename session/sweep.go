package session

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/sample"
)

// SweepResult is one configuration of a sweep: a row of the table and of
// --out. Figures the runner cannot measure are zero and left out of JSON
// (a command's sweep has no MB/s or first batch).
type SweepResult struct {
	Knobs         Setting       `json:"knobs"`
	Command       string        `json:"command"`
	SamplesPerSec float64       `json:"samples_per_sec"`
	WaitShare     float64       `json:"wait_share"`
	Verdict       diagnose.Kind `json:"verdict,omitempty"`
	Best          bool          `json:"best"`
	// Cheapest is the configuration with the fewest workers (then the
	// smallest prefetch) within 95 % of the best.
	Cheapest    bool    `json:"cheapest"`
	WallSeconds float64 `json:"wall_seconds"`
	// The embedded loader's own figures.
	Workers      int     `json:"workers"`
	Prefetch     int     `json:"prefetch"`
	Persistent   bool    `json:"persistent"`
	Batches      uint64  `json:"batches,omitempty"`
	MBPerSec     float64 `json:"mb_per_sec,omitempty"`
	WaitMeanMs   float64 `json:"wait_mean_ms,omitempty"`
	WaitP50Ms    float64 `json:"wait_p50_ms,omitempty"`
	WaitP99Ms    float64 `json:"wait_p99_ms,omitempty"`
	AccelBusyPct float64 `json:"accel_busy_pct,omitempty"`
	FirstBatchMs float64 `json:"first_batch_ms,omitempty"`
	EpochStallMs float64 `json:"epoch_boundary_stall_ms,omitempty"` // mean time to the first batch of epochs 2…
	WorkerStarts int     `json:"worker_starts,omitempty"`
	embedded     bool
}

// Sweep runs each configuration of grid with t, in order, telling
// progress how far it is, and marks the best and the cheapest.
func Sweep(ctx context.Context, t Trials, grid []Setting, progress io.Writer) ([]SweepResult, error) {
	bar := newProgress(progress, len(grid))
	results := make([]SweepResult, 0, len(grid))
	for i, s := range grid {
		bar.show(i, t.Describe(s))
		r, err := t.Sweep(ctx, s)
		if err != nil {
			bar.done()
			return results, fmt.Errorf("%s: %w", t.Describe(s), err)
		}
		results = append(results, r)
	}
	bar.done()
	markBest(results)
	return results, nil
}

// markBest marks the most samples/s, and the fewest workers (then the
// smallest prefetch) within 95 % of it.
func markBest(rs []SweepResult) {
	if len(rs) == 0 {
		return
	}
	best := 0
	for i, r := range rs {
		if r.SamplesPerSec > rs[best].SamplesPerSec {
			best = i
		}
	}
	rs[best].Best = true
	cheap := -1
	cost := func(r SweepResult) (int, int) { return workersOf(r), prefetchOf(r) }
	for i, r := range rs {
		if r.SamplesPerSec < diagnose.GoodEnough*rs[best].SamplesPerSec {
			continue
		}
		if cheap < 0 {
			cheap = i
			continue
		}
		w, p := cost(r)
		cw, cp := cost(rs[cheap])
		if w < cw || w == cw && p < cp {
			cheap = i
		}
	}
	rs[cheap].Cheapest = true
}

func workersOf(r SweepResult) int {
	for _, k := range []string{sample.KnobWorkers.Name, sample.KnobWorkers.Flag} {
		if v, err := strconv.Atoi(r.Knobs[k]); err == nil {
			return v
		}
	}
	return r.Workers
}

func prefetchOf(r SweepResult) int {
	for _, k := range []string{sample.KnobPrefetch.Name, sample.KnobPrefetch.Flag} {
		if v, err := strconv.Atoi(r.Knobs[k]); err == nil {
			return v
		}
	}
	return r.Prefetch
}

// WriteSweepJSON writes the results as --out's JSON.
func WriteSweepJSON(w io.Writer, header Setting, rs []SweepResult) error {
	b, err := json.MarshalIndent(struct {
		Knobs   Setting       `json:"knobs"`
		Results []SweepResult `json:"results"`
	}{header, rs}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// PrintSweep prints the table: each configuration with its samples/s,
// wait share and verdict, the embedded loader's own figures where it
// measured them, the best (*) and the cheapest within 95 % of it (~).
func PrintSweep(w io.Writer, title string, rs []SweepResult) {
	fmt.Fprintln(w, title)
	embedded := len(rs) > 0 && rs[0].embedded
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if embedded {
		fmt.Fprintln(tw, "\tworkers\tprefetch\tpersistent\tsamples/s\tMB/s\twait mean\tp50\tp99\taccel busy\tfirst batch\tepoch stall\t")
	} else {
		fmt.Fprintln(tw, "\tsamples/s\twait\tverdict\tconfiguration\t")
	}
	for _, r := range rs {
		mark := ""
		if r.Best {
			mark = "*"
		}
		if r.Cheapest {
			mark += "~"
		}
		if !embedded {
			fmt.Fprintf(tw, "%s\t%.0f\t%.0f%%\t%s\t%s\t\n", mark, r.SamplesPerSec, 100*r.WaitShare, r.Verdict, knobsLine(r.Knobs))
			continue
		}
		stall := "-"
		if r.EpochStallMs > 0 {
			stall = sample.FormatDuration(r.EpochStallMs / 1000)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%.0f\t%.1f\t%s\t%s\t%s\t%.0f%%\t%s\t%s\t\n",
			mark, r.Workers, r.Prefetch, r.Persistent, r.SamplesPerSec, r.MBPerSec,
			sample.FormatDuration(r.WaitMeanMs/1000), sample.FormatDuration(r.WaitP50Ms/1000), sample.FormatDuration(r.WaitP99Ms/1000),
			r.AccelBusyPct, sample.FormatDuration(r.FirstBatchMs/1000), stall)
	}
	tw.Flush()
	fmt.Fprintln(w, "* most samples/s   ~ the fewest workers within 95 % of it")
	for _, r := range rs {
		if r.Cheapest {
			fmt.Fprintf(w, "cheapest within 95 %%: %s\n", r.Command)
		}
	}
}

// summarize measures a finished embedded run from the loader itself.
func summarize(c loader.Config, l *loader.Loader, wall time.Duration) SweepResult {
	s := l.Snapshot()
	sec := wall.Seconds()
	r := SweepResult{
		Workers: c.Workers, Prefetch: c.Prefetch, Persistent: c.Persistent, Batches: s.Batches,
		SamplesPerSec: float64(s.Samples) / sec, MBPerSec: float64(s.BytesRead) / sec / 1e6,
		AccelBusyPct: 100 * s.Step.Sum / sec, WorkerStarts: l.WorkerStarts(), WallSeconds: sec, embedded: true,
	}
	if s.Wait.Count > 0 {
		r.WaitMeanMs = 1000 * s.Wait.Sum / float64(s.Wait.Count)
	}
	if t := s.Wait.Sum + s.Step.Sum; t > 0 {
		r.WaitShare = s.Wait.Sum / t
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

// progress is a one-line progress bar on a terminal, plain lines elsewhere.
type progress struct {
	w     io.Writer
	n     int
	isTTY bool
}

func newProgress(w io.Writer, n int) *progress {
	return &progress{w: w, n: n, isTTY: IsTerminal(w)}
}

func (p *progress) show(i int, what string) {
	if !p.isTTY {
		fmt.Fprintf(p.w, "[%d/%d] %s\n", i+1, p.n, what)
		return
	}
	const width = 24
	fill := width * i / p.n
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d %s", strings.Repeat("#", fill), strings.Repeat(" ", width-fill), i+1, p.n, sample.Printable(what))
}

func (p *progress) done() {
	if p.isTTY {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// SweepGrid lists the embedded loader's configurations: 0 workers once
// (no prefetch, no persistence), every other count with each prefetch and
// persistence.
func SweepGrid(ws, ps []int, pers []bool) []Setting {
	var grid []Setting
	for _, w := range ws {
		if w == 0 {
			grid = append(grid, Setting{sample.KnobWorkers.Flag: "0", sample.KnobPrefetch.Flag: "0", sample.KnobPersistent.Flag: "false"})
			continue
		}
		for _, p := range ps {
			for _, per := range pers {
				grid = append(grid, Setting{sample.KnobWorkers.Flag: strconv.Itoa(w), sample.KnobPrefetch.Flag: strconv.Itoa(p), sample.KnobPersistent.Flag: strconv.FormatBool(per)})
			}
		}
	}
	return grid
}

// Grid is the cartesian product of knob → values over a start setting,
// knobs in the order given.
func Grid(start Setting, knobs []string, values [][]string) []Setting {
	grid := []Setting{start}
	for i, k := range knobs {
		var next []Setting
		for _, g := range grid {
			for _, v := range values[i] {
				s := Setting{}
				for kk, vv := range g {
					s[kk] = vv
				}
				s[k] = v
				next = append(next, s)
			}
		}
		grid = next
	}
	return grid
}
