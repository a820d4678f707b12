package tune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gpuwatch/gpuwatch/diagnose"
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
	// The loader's knobs: the grid's, else what the loader said it runs
	// with (the hook reads the DataLoader's); absent where neither says
	// (a sweep of a command's num_workers alone left prefetch at 0 and
	// persistent false beside a script's prefetch_factor=4).
	Workers    *int  `json:"workers,omitempty"`
	Prefetch   *int  `json:"prefetch,omitempty"`
	Persistent *bool `json:"persistent,omitempty"`
	// The embedded loader's own figures.
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
	// OthersCores is the cores the processes outside the run's tree used
	// over its last frames (diagnose.OthersCores), nil where unread (the
	// embedded loader's sweep watches no frames). Disturbed says, where
	// that was at least a quarter of a core (and 5 % of the box) above the
	// quietest configuration's, by how much: the row measured its
	// configuration and that load together. "" when it was not.
	OthersCores *float64 `json:"others_cores,omitempty"`
	Disturbed   string   `json:"disturbed,omitempty"`
	cores       int      // the box's, where its frames said
	embedded    bool
}

// ErrSweepInterrupted is returned by Sweep when its context ended (Ctrl-C,
// SIGTERM) before every configuration ran; the rows measured are returned
// with it.
var ErrSweepInterrupted = errors.New("sweep interrupted")

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
	markDisturbed(results)
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
