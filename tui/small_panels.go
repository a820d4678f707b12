package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// memPanel: memory, swap activity and pressure stall information.
type memPanel struct{}

func (memPanel) want(pv *view, w int) (int, int) { return 3, 3 }

func (memPanel) draw(pv *view, w, h int) []string {
	f := pv.frame
	var lines []string
	if mem := f.Mem; mem != nil {
		used := 0.0
		if mem.TotalBytes > 0 {
			used = 100 * float64(mem.UsedBytes) / float64(mem.TotalBytes)
		}
		line := fmt.Sprintf("mem %s %s used · %s avail of %s · cache %s · swap %s",
			pv.bar(used, 10), size(float64(mem.UsedBytes)), size(float64(mem.AvailableBytes)), size(float64(mem.TotalBytes)),
			size(float64(mem.CachedBytes)), size(float64(mem.SwapUsedBytes)))
		if mem.SwapInPagesPerSec != nil && mem.SwapOutPagesPerSec != nil {
			line += fmt.Sprintf(" si %.0f so %.0f pg/s", *mem.SwapInPagesPerSec, *mem.SwapOutPagesPerSec)
		}
		if mem.MajorFaultsPerSec != nil {
			line += fmt.Sprintf(" · majflt %.0f/s", *mem.MajorFaultsPerSec)
		}
		if mem.FileRefaultsPerSec != nil && *mem.FileRefaultsPerSec >= 1 {
			line += fmt.Sprintf(" · refault %.0f/s", *mem.FileRefaultsPerSec)
		}
		lines = append(lines, line)
	} else {
		lines = append(lines, pv.st.Dim.Render("mem: "+orNone(f.Unavailable[sample.SourceMem])))
	}
	if p := f.PSI; p != nil {
		line := "pressure (some, % of time)"
		for _, r := range []struct {
			name string
			p    *sample.Pressure
			res  diagnose.PSIResource
		}{{"cpu", p.CPU, diagnose.PSICPU}, {"io", p.IO, diagnose.PSIIO}, {"mem", p.Memory, diagnose.PSIMemory}} {
			if r.p == nil {
				line += fmt.Sprintf(" · %s n/a", r.name)
				continue
			}
			v := r.p.SomeAvg10
			if r.p.SomePct != nil {
				v = *r.p.SomePct
			}
			s := fmt.Sprintf(" · %s %.1f", r.name, v)
			if pv.th.PSIHigh(r.res, v) {
				s = pv.st.Bad.Render(s)
			}
			line += s
		}
		lines = append(lines, line)
	} else {
		lines = append(lines, pv.st.Dim.Render("pressure: "+orNone(f.Unavailable[sample.SourcePSI])))
	}
	return block(lines, w, h)
}

// diskPanel: per whole device throughput, busy % and await.
type diskPanel struct{}

func (diskPanel) want(pv *view, w int) (int, int) { return 2, 1 + max(1, len(pv.frame.Disks)) }

func (diskPanel) draw(pv *view, w, h int) []string {
	f := pv.frame
	if len(f.Disks) == 0 {
		msg := "no whole block device"
		if r := f.Unavailable[sample.SourceDisk]; r != "" {
			msg = "disks: " + r
		}
		return block([]string{pv.st.Dim.Render(msg)}, w, h)
	}
	off := min(pv.scroll, max(0, len(f.Disks)-h))
	var lines []string
	for _, d := range f.Disks[off:] {
		line := fmt.Sprintf("%-9s r %7s/s w %7s/s %s%s", sample.Printable(d.Name), size(d.ReadBytesPerSec), size(d.WriteBytesPerSec), pv.bar(d.BusyPct, 8), pct(d.BusyPct))
		if d.AwaitMs != nil {
			line += " " + ms(*d.AwaitMs)
		}
		line += fmt.Sprintf(" q%d · %.0f/%.0f iops", d.InFlight, d.ReadIOPS, d.WriteIOPS)
		lines = append(lines, line)
	}
	return block(lines, w, h)
}

// netPanel: per interface receive and transmit rates.
type netPanel struct{}

func (netPanel) want(pv *view, w int) (int, int) { return 2, 1 + max(1, len(pv.frame.Net)) }

func (netPanel) draw(pv *view, w, h int) []string {
	f := pv.frame
	if len(f.Net) == 0 {
		msg := "no interface but loopback"
		if r := f.Unavailable[sample.SourceNet]; r != "" {
			msg = "network: " + r
		}
		return block([]string{pv.st.Dim.Render(msg)}, w, h)
	}
	var lines []string
	for _, n := range f.Net {
		lines = append(lines, fmt.Sprintf("%-10s rx %8s/s  tx %8s/s", sample.Printable(n.Name), size(n.RxBytesPerSec), size(n.TxBytesPerSec)))
	}
	return block(lines, w, h)
}

// profilePanel is the place for the loader's CPU profile summary, which
// comes with attaching to a loader's pprof endpoint.
type profilePanel struct{}

func (profilePanel) want(pv *view, w int) (int, int) {
	if p := pv.frame.Profile; p != nil {
		return 3, 3 + len(p.Top)
	}
	return 2, 2
}

func (profilePanel) draw(pv *view, w, h int) []string {
	p := pv.frame.Profile
	if p == nil {
		msg := "no profile: `gpuwatch attach URL` takes the loader's CPU profile from URL/debug/pprof/profile"
		switch l := pv.frame.Loader; {
		case pv.replay:
			msg = "this recording holds no CPU profile here"
		case l != nil && l.Sampled != nil:
			// A loop read from /proc serves no profile (a review: it waited
			// for one 34 frames and more).
			msg = "no CPU profile: the loop is sampled from /proc, and nothing serves one (gpuwatch run -- python train.py profiles it and its workers)"
		case l != nil && l.Source != "embedded":
			msg = "taking the first CPU profile of the loader…"
		}
		return block([]string{pv.st.Dim.Render(msg)}, w, h)
	}
	var lines []string
	if len(p.Categories) > 0 {
		line := fmt.Sprintf("%.1f s CPU in %.0f s", p.CPUSec, p.DurationSec)
		if p.Samples > 0 {
			line += " (" + sample.Plural(int(min(p.Samples, math.MaxInt32)), "sample") + ")"
		}
		line += ", taken " + p.TakenAt.Format("15:04:05")
		if r := pv.frame.ProfiledRank(); r != nil { // several ranks: whose it is
			line += " of " + strings.TrimSpace(pv.rankLabel(*r))
		}
		line += ":"
		// Eleven categories: the ones that round to 0 % are left out.
		for _, c := range p.Categories {
			if pct := fmt.Sprintf("%.0f%%", 100*c.Share); pct != "0%" {
				line += " " + sample.Printable(c.Name) + " " + pct
			}
		}
		lines = append(lines, line)
		lines = append(lines, pv.st.Label.Render(fmt.Sprintf("%6s %6s  %s", "FLAT", "CUM", "FUNCTION")))
		// A tenth of a percent only where a thousand samples or more
		// support it (unknown counts, from older recordings, keep it).
		share := func(v float64) string { return fmt.Sprintf("%5.1f%%", 100*v) }
		if p.Samples > 0 && p.Samples < 1000 {
			share = func(v float64) string { return fmt.Sprintf("%5.0f%%", 100*v) }
		}
		for _, f := range p.Top {
			line := share(f.Flat) + " " + share(f.Cum) + "  " + sample.Printable(f.Name)
			if where := f.Where(); where != "" {
				line += "  " + sample.Printable(where)
			}
			lines = append(lines, line)
		}
	}
	if p.Error != "" {
		lines = append([]string{pv.st.Warn.Render(p.Error)}, lines...)
	}
	return block(lines, w, h)
}
