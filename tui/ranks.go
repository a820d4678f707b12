package tui

import (
	"fmt"
	"strconv"

	"github.com/gpuwatch/gpuwatch/sample"
)

// rankRows are the loader panel's rows for a job of several ranks, one per
// rank: the selection mark, the rank, its wait as a bar, step, samples/s,
// workers, and its state; the straggler the verdict names is marked. A
// loader of world size 1 (a job of its own that discovery found beside
// others) is named by its process (rankLabel), never "rank 0".
// selected is the row ↑/↓ chose (the panel's scroll), clamped.
func (pv *view) rankRows(w int) []string {
	ranks := pv.frame.Ranks
	sel := pv.selectedRank()
	out := make([]string, 0, len(ranks))
	barW := max(4, min(20, w-58)) // the rest of the row is about 58 cells
	for i, r := range ranks {
		mark := "  "
		if i == sel {
			mark = "› "
		}
		line := mark + pv.rankLabel(r) + " "
		switch {
		case !r.Connected:
			since := ""
			if r.DisconnectedSince != nil {
				since = " since " + r.DisconnectedSince.Format("15:04:05")
			}
			line += pv.st.Bad.Render("not answering"+since) + " " + pv.st.Dim.Render(sample.Printable(r.URL))
		case r.WaitShare == nil && r.SlowSince != nil:
			line += pv.st.Warn.Render("slow: no answer since "+r.SlowSince.Format("15:04:05")) + " " + pv.st.Dim.Render(sample.Printable(r.URL))
		case r.WaitShare == nil:
			line += pv.st.Dim.Render("no batch yet ") + pv.st.Dim.Render(sample.Printable(r.URL))
		default:
			filled := int(float64(barW)*unit(*r.WaitShare) + 0.5)
			line += "▕" + pv.st.wait.Render(repeat("░", filled)) + repeat(" ", barW-filled) + "▏"
			line += fmt.Sprintf(" wait %3.0f%%", 100**r.WaitShare)
			if r.StepSec != nil {
				line += " step " + ms(1000**r.StepSec)
			}
			switch {
			case !r.SamplesUnknown():
				line += fmt.Sprintf(" %.0f/s", r.SamplesPerSec)
			case !r.RatesPending && r.BatchesPerSec > 0:
				line += fmt.Sprintf(" %.1f batches/s", r.BatchesPerSec)
			}
			if r.Workers != nil {
				line += fmt.Sprintf(" w%d", *r.Workers)
			}
			line += "  " + pv.rankRole(r)
			if r.SlowSince != nil {
				line += pv.st.Warn.Render(" slow since " + r.SlowSince.Format("15:04:05") + ": last figures")
			}
		}
		if s := pv.straggler; s != nil && *s == r.Rank && !ownJob(r) {
			line = pv.st.Bad.Render(line + " ◀")
		}
		out = append(out, fit(line, w))
	}
	return out
}

// rankRole is the rank's role as the diagnosis names it
// (Thresholds.RankRole), the straggler's with the verdict's kind.
func (pv *view) rankRole(r sample.Rank) string {
	straggler := pv.straggler
	if ownJob(r) {
		straggler = nil // no all-reduce ties a job of its own to the others
	}
	role := pv.th.RankRole(pv.frame.Ranks, straggler, r)
	if role == sample.RoleStraggler {
		return string(role) + ": " + pv.kind
	}
	return string(role)
}

// selectedRank is the index of the rank row chosen with ↑/↓.
func (pv *view) selectedRank() int {
	if len(pv.frame.Ranks) == 0 {
		return -1
	}
	return min(pv.scroll, len(pv.frame.Ranks)-1)
}

// rankDetails are the zoomed loader panel's lines for the selected rank:
// its own loader reading (the panel otherwise shows the pacing rank's).
func (pv *view) rankDetails(w int) []string {
	i := pv.selectedRank()
	if i < 0 {
		return nil
	}
	r := pv.frame.Ranks[i]
	var head string
	switch {
	case ownJob(r):
		head = pv.loaderName(r) + " · a job of its own, not a rank of a distributed job"
		if r.PID > 0 {
			head += " · " + sample.Printable(r.URL)
		}
	default:
		head = fmt.Sprintf("rank %d · %s", r.Rank, sample.Printable(r.URL))
		if r.PID > 0 {
			head += fmt.Sprintf(" · pid %d", r.PID)
		}
		if r.WorldSize != nil {
			head += fmt.Sprintf(" · world size %d", *r.WorldSize)
		}
	}
	lines := wrap(head+" (its profile is taken while zoomed)", w, "  ")
	if r.Loader == nil {
		return lines
	}
	return append(lines, wrap(pv.loaderStats(r.Loader), w, "  ")...)
}

// ownJob says whether a loader is a job of its own (it reports a world of
// one), no rank of a distributed job: diagnose's rule.
func ownJob(r sample.Rank) bool { return r.WorldSize != nil && *r.WorldSize <= 1 }

// rankLabel is a rank row's name: "rank N" padded as before for a rank
// of a distributed job, the loader's process for a job of its own
// (loaderName).
func (pv *view) rankLabel(r sample.Rank) string {
	if !ownJob(r) {
		return fmt.Sprintf("rank %-3d", r.Rank)
	}
	return pv.loaderName(r)
}

// loaderName names a job of its own by its process and command, "pid
// 5816 (python3 slowin.py)" — the target's command line where it is that
// process, else its name in the process list —, or by its URL where the
// PID is unknown. Printable, bounded.
func (pv *view) loaderName(r sample.Rank) string {
	if r.PID <= 0 {
		return clipRunes(sample.Printable(r.URL), 40)
	}
	name := "pid " + strconv.Itoa(r.PID)
	cmd := ""
	if t := pv.frame.Target; t != nil && t.PID == r.PID {
		cmd = t.Command
	} else if p := pv.frame.Procs; p != nil {
		for _, pr := range p.List {
			if pr.PID == r.PID {
				cmd = pr.Name
				break
			}
		}
	}
	if cmd != "" {
		name += " (" + clipRunes(sample.Printable(cmd), 32) + ")"
	}
	return name
}

// clipRunes bounds s to n runes, an ellipsis ending what was cut.
func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
