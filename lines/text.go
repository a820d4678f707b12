package lines

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// WriteLine writes f as one human-readable line for --headless:
//
//	20:21:03 cpu 51% max cpu1 99% 1/2≥90% iow 0% load 1.02 run 2 | mem 2.1GiB used 21.0GiB avail swap 0B | vda r 0B/s w 12KiB/s 1% | eth0 rx 1.2KiB/s tx 300B/s | psi cpu 0.1 io 0.0 mem 0.0 | top yes(812) 99%
//
// Parts a probe could not fill are left out; the reasons end the line.
// With a verdict, the line starts with it: kind, confidence, since when and
// the strongest evidence. th says what is marked hot (the cores at or over
// its HotPct) and which profile categories are listed.
func WriteLine(w io.Writer, f *sample.Frame, v *diagnose.Verdict, th diagnose.Thresholds) error {
	var b strings.Builder
	writeVerdictAndCPU(&b, f, v, th)
	writeSources(&b, f)
	writeProcsAndMore(&b, f, th)
	// Names come from outside (processes, threads, disks, loaders): no
	// control character of theirs reaches the terminal.
	_, err := io.WriteString(w, sample.Printable(b.String())+"\n")
	return err
}

func writeVerdictAndCPU(b *strings.Builder, f *sample.Frame, v *diagnose.Verdict, th diagnose.Thresholds) {
	b.WriteString(f.Time.Format("15:04:05"))
	if t := f.Target; t != nil && t.ExitedAt != nil {
		fmt.Fprintf(b, " [pid %d exited at %s", t.PID, t.ExitedAt.Format("15:04:05"))
		if t.Exit != "" {
			b.WriteString(": " + t.Exit)
		}
		b.WriteString("]")
	}
	if t := f.Target; t != nil && t.Stopped {
		fmt.Fprintf(b, " [pid %d: the job is stopped (Ctrl-Z or SIGSTOP); it runs again on SIGCONT]", t.PID)
	}
	if v != nil {
		fmt.Fprintf(b, " [%s %.0f%%", v.Kind, 100*v.Confidence)
		if !v.Since.IsZero() {
			fmt.Fprintf(b, " since %s", v.Since.Format("15:04:05"))
		}
		b.WriteString("]")
		if len(v.Evidence) > 0 {
			fmt.Fprintf(b, " %s", v.Evidence[0].Text)
		}
		b.WriteString(" |")
	}
	if c := f.CPU; c != nil {
		fmt.Fprintf(b, " cpu %.0f%%", c.BusyPct)
		if len(c.Cores) > 0 {
			top, hot := c.Cores[0], 0
			for _, k := range c.Cores {
				if k.BusyPct > top.BusyPct {
					top = k
				}
				if th.Hot(k.BusyPct) {
					hot++
				}
			}
			fmt.Fprintf(b, " max cpu%d %.0f%% %d/%d≥%.0f%%", top.ID, top.BusyPct, hot, len(c.Cores), th.HotPct())
		}
		fmt.Fprintf(b, " iow %.0f%% load %.2f run %d", c.IowaitPct, c.Load1, c.ProcsRunning)
	}
}

func writeSources(b *strings.Builder, f *sample.Frame) {
	var mfu *sample.MFU
	if l := f.Loader; l != nil {
		mfu = l.MFU
	}
	for _, g := range f.GPUs {
		writeGPU(b, &g, mfu)
	}
	if a := f.Accel; a != nil {
		fmt.Fprintf(b, " | accel(virtual) %.0f%%", a.BusyPct)
	}
	writeLoader(b, f.Loader)
	writeJobSettings(b, f.Loader)
	if m := f.Mem; m != nil {
		fmt.Fprintf(b, " | mem %s used %s avail swap %s", sample.FormatBytes(float64(m.UsedBytes)),
			sample.FormatBytes(float64(m.AvailableBytes)), sample.FormatBytes(float64(m.SwapUsedBytes)))
		if m.SwapInPagesPerSec != nil && m.SwapOutPagesPerSec != nil && *m.SwapInPagesPerSec+*m.SwapOutPagesPerSec > 0 {
			fmt.Fprintf(b, " si/so %.0f/%.0f pg/s", *m.SwapInPagesPerSec, *m.SwapOutPagesPerSec)
		}
	}
	for _, d := range f.Disks {
		fmt.Fprintf(b, " | %s r %s/s w %s/s %.0f%%", d.Name, sample.FormatBytes(d.ReadBytesPerSec),
			sample.FormatBytes(d.WriteBytesPerSec), d.BusyPct)
		if d.AwaitMs != nil {
			fmt.Fprintf(b, " %.1fms", *d.AwaitMs)
		}
	}
	for _, n := range f.Net {
		fmt.Fprintf(b, " | %s rx %s/s tx %s/s", n.Name, sample.FormatBytes(n.RxBytesPerSec), sample.FormatBytes(n.TxBytesPerSec))
	}
	if p := f.PSI; p != nil {
		b.WriteString(" | psi")
		for _, r := range []struct {
			name string
			p    *sample.Pressure
		}{{"cpu", p.CPU}, {"io", p.IO}, {"mem", p.Memory}} {
			if v, ok := r.p.Some(); ok {
				fmt.Fprintf(b, " %s %.1f", r.name, v)
			}
		}
	}
}

// writeLoader writes the loader's part: disconnected, sampled, replaying
// the ceiling's kept batches, or its rates and waits.
func writeLoader(b *strings.Builder, l *sample.Loader) {
	if l != nil && l.Connected != nil && !*l.Connected {
		b.WriteString(" | loader disconnected")
		if l.DisconnectedSince != nil {
			fmt.Fprintf(b, " since %s", l.DisconnectedSince.Format("15:04:05"))
		}
	} else if l != nil && l.Sampled != nil {
		b.WriteString(" | loop sampled")
		if l.WaitShare != nil {
			fmt.Fprintf(b, " wait %.0f%%", 100**l.WaitShare)
		}
		if l.Workers != nil {
			fmt.Fprintf(b, " workers %d", *l.Workers)
		}
	} else if l != nil && l.Ceiling != nil && l.Ceiling.State == sample.CeilingReplaying {
		// Its 0 samples/s is the measurement's, not the job's (a review).
		b.WriteString(" | loader " + l.CeilingSummary())
	} else if l != nil {
		if l.RatesPending {
			b.WriteString(" | loader read once: rates at the next reading")
		} else {
			if l.BytesUnknown() {
				fmt.Fprintf(b, " | loader %s", l.Throughput())
			} else {
				fmt.Fprintf(b, " | loader %s %s/s", l.Throughput(), sample.FormatBytes(l.BytesPerSec))
			}
		}
		if l.WaitShare != nil {
			fmt.Fprintf(b, " wait %.0f%%", 100**l.WaitShare)
		}
		if l.WaitP95Ms != nil {
			fmt.Fprintf(b, " p95 %.1fms", *l.WaitP95Ms)
		}
		if l.QueueDepth != nil {
			fmt.Fprintf(b, " queue %.0f", *l.QueueDepth)
		}
		if w := l.WaitingMs; w != nil && *w >= 1000 {
			fmt.Fprintf(b, " waiting %s for a batch", sample.FormatDuration(*w/1000))
		}
		if c := l.CeilingSummary(); c != "" {
			b.WriteString(" | " + c)
		}
	}
}

func writeProcsAndMore(b *strings.Builder, f *sample.Frame, th diagnose.Thresholds) {
	if t := f.Target; t != nil {
		fmt.Fprintf(b, " | watching pid %d", t.PID)
		if t.Command != "" {
			fmt.Fprintf(b, " (%s)", t.Command)
		}
		fmt.Fprintf(b, ": %s", t.Why)
		if t.Loader != "" {
			b.WriteString("; loader: " + t.Loader)
		}
	}
	if j := f.Job; j != nil {
		b.WriteString(" | job " + j.Summary())
	}
	if p := f.Procs; p != nil && len(p.List) > 0 {
		if p.FocusPID != 0 {
			fmt.Fprintf(b, " | pid %d tree %d procs", p.FocusPID, len(p.List))
		} else {
			b.WriteString(" | top")
		}
		for _, pr := range p.List[:min(3, len(p.List))] {
			fmt.Fprintf(b, " %s(%d) %.0f%%", pr.Name, pr.PID, pr.CPUPct)
		}
		if len(p.Threads) > 0 {
			t := p.Threads[0]
			fmt.Fprintf(b, " hottest thread %s(%d) %.0f%%", t.Name, t.TID, t.CPUPct)
		}
	}
	if p := f.Profile; p != nil && len(p.Categories) > 0 {
		b.WriteString(" | profile")
		switch r := f.ProfiledRank(); { // several loaders: whose it is
		case r == nil:
		case r.WorldSize != nil && *r.WorldSize <= 1 && r.PID > 0: // a job of its own
			fmt.Fprintf(b, " of pid %d", r.PID)
		case r.WorldSize == nil || *r.WorldSize > 1:
			fmt.Fprintf(b, " of rank %d", r.Rank)
		}
		for _, c := range p.Categories {
			if th.Listed(c.Share) {
				fmt.Fprintf(b, " %s %.0f%%", c.Name, 100*c.Share)
			}
		}
	}
	if len(f.Unavailable) > 0 {
		keys := make([]sample.Source, 0, len(f.Unavailable))
		for k := range f.Unavailable {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(b, " | %s: %s", k, f.Unavailable[k])
		}
	}
}

// writeJobSettings writes what the hook read of the job, as --once and
// the dashboard show it: " | job: bf16 autocast · … | GPU time per step
// (5 steps, profiled): matmul bf16 61 %, …" (issue 51: a GPU-bound job
// headless, on ssh or in a CI log, reads what it already does).
func writeJobSettings(b *strings.Builder, l *sample.Loader) {
	if l == nil {
		return
	}
	if s := l.Settings.Summary(); s != "" {
		b.WriteString(" | job: " + s)
	}
	if p := l.GPUProfile.Summary(); p != "" {
		b.WriteString(" | " + p)
	}
}

// writeGPU writes " | gpu0 util 100% sm 82% tensor 12% dram 40% mfu 31%
// bf16 p5-p95 0-100 mem 12/40GiB 250W 61C": utilization says a kernel
// ran, GPM's SM and tensor activity how much of the GPU it used, and the
// step's MFU (sample.MFU) where the loop runs on this GPU.
func writeGPU(b *strings.Builder, g *sample.GPU, mfu *sample.MFU) {
	fmt.Fprintf(b, " | gpu%d", g.Index)
	if g.Lost {
		b.WriteString(" LOST")
		return
	}
	if g.UtilPct != nil {
		fmt.Fprintf(b, " util %.0f%%", *g.UtilPct)
	}
	if m := g.GPM; m != nil {
		for _, r := range []struct {
			name string
			v    *float64
		}{{"sm", m.SMActivityPct}, {"tensor", m.TensorActivityPct}, {"dram", m.DRAMBWUtilPct}} {
			if r.v != nil {
				fmt.Fprintf(b, " %s %.0f%%", r.name, *r.v)
			}
		}
	}
	if mfu != nil && mfu.GPUIndex == g.Index {
		fmt.Fprintf(b, " mfu %s%% %s", sample.PercentWords(mfu.Ratio), mfu.Dtype)
	}
	if s := g.UtilSamples; s != nil {
		fmt.Fprintf(b, " p5-p95 %.0f-%.0f", s.P5, s.P95)
	}
	if g.MemUsedBytes != nil && g.MemTotalBytes != nil {
		fmt.Fprintf(b, " mem %s/%s", sample.FormatBytes(float64(*g.MemUsedBytes)), sample.FormatBytes(float64(*g.MemTotalBytes)))
	}
	if g.PowerWatts != nil {
		fmt.Fprintf(b, " %.0fW", *g.PowerWatts)
	}
	if g.TempC != nil {
		fmt.Fprintf(b, " %.0fC", *g.TempC)
	}
	if g.PCIeRxBytesPerSec != nil && g.PCIeTxBytesPerSec != nil {
		fmt.Fprintf(b, " pcie rx %s/s tx %s/s", sample.FormatBytes(*g.PCIeRxBytesPerSec), sample.FormatBytes(*g.PCIeTxBytesPerSec))
	}
}
