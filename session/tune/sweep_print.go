package tune

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/gpuwatch/gpuwatch/sample"
)

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
		if r.Disturbed != "" {
			mark += "?"
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
			mark, deref(r.Workers), deref(r.Prefetch), deref(r.Persistent), r.SamplesPerSec, r.MBPerSec,
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
		if r.Disturbed != "" {
			fmt.Fprintf(w, "? disturbed: %s: %s\n", knobsLine(r.Knobs), sample.Printable(r.Disturbed))
		}
	}
	for _, r := range rs {
		if r.Cheapest {
			fmt.Fprintf(w, "cheapest within 95 %%: %s\n", r.Command)
		}
	}
}

// deref is *p, or T's zero for nil (the embedded loader's rows set every
// knob).
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
