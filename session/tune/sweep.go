package tune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/probes/endpoint"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session"
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
	Cheapest bool `json:"cheapest"`
	// CeilingShare is the configuration's samples/s as a share of the
	// loop's ceiling (--ceiling), nil without one; with one, Cheapest is
	// the fewest workers within CeilingEnough of the ceiling, not of the
	// best.
	CeilingShare *float64 `json:"ceiling_share,omitempty"`
	WallSeconds  float64  `json:"wall_seconds"`
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
	// Failed says why a configuration was not measured (how its command
	// ended and its last line); its figures are zero. ExitStatus is its
	// command's status when it ended on its own.
	Failed     string `json:"failed,omitempty"`
	ExitStatus *int   `json:"exit_status,omitempty"`
	embedded   bool
}

// ErrSweepInterrupted is returned by Sweep when its context ended (Ctrl-C,
// SIGTERM) before every configuration ran; the rows measured are returned
// with it.
var ErrSweepInterrupted = errors.New("sweep interrupted")

// GridSize is the number of configurations of a grid with these list
// lengths: their product, computed before any list is built, saturating at
// 1<<30 so that no product overflows an int on any target (32-bit ones
// included), nor does adding a configuration or two to it; any limit a
// user sets is far below it.
func GridSize(lengths []int) int {
	const most = 1 << 30
	n := 1
	for _, l := range lengths {
		if l == 0 {
			return 0
		}
		if n > most/l {
			return most
		}
		n *= l
	}
	return n
}

// Dedupe returns vs without repeats, first one kept, in order.
func Dedupe[T comparable](vs []T) []T {
	seen := make(map[T]bool, len(vs))
	out := vs[:0:0]
	for _, v := range vs {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// Sweep runs each configuration of grid with t, in order, telling
// progress how far it is, and marks the best and the cheapest. A
// configuration that fails is a row saying why (Failed), and the sweep
// goes on. When ctx ends first, the rows measured so far come back, marked,
// with ErrSweepInterrupted; the configuration cut short is not one of them.
func Sweep(ctx context.Context, t Trials, grid []Setting, progress io.Writer) ([]SweepResult, error) {
	bar := newProgress(progress, len(grid))
	results := make([]SweepResult, 0, len(grid))
	for i, s := range grid {
		if ctx.Err() != nil {
			break
		}
		bar.show(i, t.Describe(s))
		r, err := t.Sweep(ctx, s)
		if ctx.Err() != nil {
			break // cut short: not a measurement of s
		}
		if err != nil {
			r = failedRow(t, s, err)
			bar.failed(i, t.Describe(s), r.Failed)
		}
		results = append(results, r)
	}
	bar.done()
	markBest(results)
	if len(results) < len(grid) {
		return results, ErrSweepInterrupted
	}
	return results, nil
}

// failedRow is the row of a configuration that could not be measured:
// how its command ended (with its status) and its last line.
func failedRow(t Trials, s Setting, err error) SweepResult {
	r := SweepResult{Knobs: s, Command: t.Describe(s)}
	var tf *TrialFailed
	if errors.As(err, &tf) {
		r.Failed = tf.How
		if tf.Exited {
			code := tf.Code
			r.ExitStatus = &code
		}
		if n := len(tf.Tail); n > 0 {
			r.Failed += ": " + tf.Tail[n-1]
		}
	} else {
		r.Failed, _, _ = strings.Cut(err.Error(), "\n")
	}
	if len(r.Failed) > 300 {
		r.Failed = r.Failed[:297] + "…"
	}
	return r
}

// markBest marks the most samples/s, and the fewest workers (then the
// smallest prefetch) within 95 % of it.
func markBest(rs []SweepResult) {
	if len(rs) == 0 {
		return
	}
	best := -1
	for i, r := range rs {
		if r.Failed == "" && (best < 0 || r.SamplesPerSec > rs[best].SamplesPerSec) {
			best = i
		}
	}
	if best < 0 {
		return // every configuration failed
	}
	rs[best].Best = true
	cheap := -1
	cost := func(r SweepResult) (int, int) { return workersOf(r), prefetchOf(r) }
	for i, r := range rs {
		if r.Failed != "" || r.SamplesPerSec < diagnose.GoodEnough*rs[best].SamplesPerSec {
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

// WriteSweepJSON writes the results as --out's JSON; of, when the sweep was
// interrupted, is how many configurations the grid had (0: it ran them all).
func WriteSweepJSON(w io.Writer, header Setting, rs []SweepResult, of int) error {
	b, err := json.MarshalIndent(struct {
		Knobs       Setting       `json:"knobs"`
		Results     []SweepResult `json:"results"`
		Interrupted bool          `json:"interrupted,omitempty"`
		Planned     int           `json:"planned_configurations,omitempty"`
	}{header, rs, of > 0, of}, "", "  ")
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
	embedded := slices.ContainsFunc(rs, func(r SweepResult) bool { return r.embedded })
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
		switch {
		case r.Failed != "" && embedded:
			fmt.Fprintf(tw, "!\t%s\t%s\t%s\tfailed\t\t\t\t\t\t\t\t\n", r.Knobs["workers"], r.Knobs["prefetch"], r.Knobs["persistent"])
			continue
		case r.Failed != "":
			fmt.Fprintf(tw, "!\t-\t-\tfailed\t%s\t\n", knobsLine(r.Knobs))
			continue
		case !embedded:
			rate := fmt.Sprintf("%.0f", r.SamplesPerSec)
			if r.CeilingShare != nil {
				rate += fmt.Sprintf(" (%.0f %%)", 100**r.CeilingShare)
			}
			fmt.Fprintf(tw, "%s\t%s\t%.0f%%\t%s\t%s\t\n", mark, rate, 100*r.WaitShare, r.Verdict, knobsLine(r.Knobs))
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
	if ceiling := ceilingOf(rs); ceiling > 0 {
		fmt.Fprintf(w, "* most samples/s   ~ the fewest workers within 95 %% of the ceiling (%s samples/s measured with input free)\n", sample.Thousands(ceiling))
		if !slices.ContainsFunc(rs, func(r SweepResult) bool { return r.Cheapest }) {
			fmt.Fprintf(w, "no configuration within 95 %% of the ceiling: the best reaches %.0f %%: the input still costs the rest (a wider grid, or a fix inside the dataset code)\n", 100*bestShare(rs))
		}
	} else {
		fmt.Fprintln(w, "* most samples/s   ~ the fewest workers within 95 % of it")
	}
	for _, r := range rs {
		if r.Failed != "" {
			fmt.Fprintf(w, "! failed: %s: %s\n", knobsLine(r.Knobs), sample.Printable(r.Failed))
		}
	}
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
	} else if v, ok := endpoint.BucketQuantile(0.5, loader.Buckets, s.Wait.Counts, s.Wait.Count); ok {
		r.WaitP50Ms = 1000 * v
		v, _ = endpoint.BucketQuantile(0.99, loader.Buckets, s.Wait.Counts, s.Wait.Count)
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
	return &progress{w: w, n: n, isTTY: session.IsTerminal(w)}
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

// failed says on a line of its own that run i failed, and why.
func (p *progress) failed(i int, what, why string) {
	p.done()
	fmt.Fprintf(p.w, "[%d/%d] %s failed: %s\n", i+1, p.n, sample.Printable(what), sample.Printable(why))
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

// MarkCeiling sets each measured configuration's share of the loop's
// ceiling (samples/s with its input free, measured once for the sweep)
// and marks as cheapest the fewest workers (then the smallest prefetch)
// within CeilingEnough of it — none when no configuration gets there.
func MarkCeiling(rs []SweepResult, ceiling float64) {
	if ceiling <= 0 {
		return
	}
	cheap := -1
	for i := range rs {
		rs[i].Cheapest = false
		if rs[i].Failed != "" {
			continue
		}
		rs[i].CeilingShare = ceilingShare(rs[i].SamplesPerSec, ceiling)
		if *rs[i].CeilingShare < CeilingEnough {
			continue
		}
		if cheap < 0 || workersOf(rs[i]) < workersOf(rs[cheap]) || workersOf(rs[i]) == workersOf(rs[cheap]) && prefetchOf(rs[i]) < prefetchOf(rs[cheap]) {
			cheap = i
		}
	}
	if cheap >= 0 {
		rs[cheap].Cheapest = true
	}
}

// ceilingOf is the ceiling the rows were marked against (MarkCeiling), 0
// for none.
func ceilingOf(rs []SweepResult) float64 {
	for _, r := range rs {
		if r.CeilingShare != nil && *r.CeilingShare > 0 {
			return r.SamplesPerSec / *r.CeilingShare
		}
	}
	return 0
}

// bestShare is the largest share of the ceiling among the rows.
func bestShare(rs []SweepResult) float64 {
	best := 0.0
	for _, r := range rs {
		if r.CeilingShare != nil {
			best = max(best, *r.CeilingShare)
		}
	}
	return best
}
