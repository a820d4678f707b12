package tui

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// loaderPanel is the "train row": a timeline strip of the latest batches,
// each drawn as its wait (░, red) then its step (█, green) in proportion to
// time — the timeline plots of DataLoader benchmarks — then wait p50/p95/
// p99, queue depth, throughput and the knobs.
type loaderPanel struct{}

func (p loaderPanel) want(pv *view, w int) (int, int) {
	if pv.frame.Loader == nil {
		return 2, 3
	}
	// Its lines wrap instead of ending in "…" when there is room; with
	// several ranks, every rank's row (up to 8) and the train row show.
	least := 3
	if n := len(pv.frame.Ranks); n > 0 {
		least = 3 + min(n, 8)
	}
	return least, 1 + len(p.lines(pv, w))
}

func (p loaderPanel) draw(pv *view, w, h int) []string {
	return block(p.lines(pv, w), w, h)
}

// lines are the panel's lines at width w, each wrapped to fit.
func (loaderPanel) lines(pv *view, w int) []string {
	l := pv.frame.Loader
	var lines []string
	if note := pv.frame.Unavailable[sample.SourceDiscovery]; note != "" {
		// Announcements refused, a folder too full: said, never silent.
		lines = append(lines, wrap(pv.st.Warn.Render("discovery: ")+sample.Printable(note), w, "  ")...)
	}
	if l == nil {
		msg := "no loader watched: `gpuwatch demo` runs the embedded one; attaching to yours comes with `gpuwatch attach`"
		if r := pv.frame.Unavailable[sample.SourceLoader]; r != "" {
			msg = "loader: " + r
		}
		return append(lines, pv.st.Dim.Render(sample.Printable(msg)))
	}
	if len(pv.frame.Ranks) > 0 {
		// A job of several ranks: one row each; below, the pacing rank's
		// reading (zoomed: the selected rank's).
		lines = append(lines, pv.rankRows(w)...)
		if pv.zoomed {
			return append(lines, pv.rankDetails(w)...)
		}
		lines = append(lines, pv.st.Dim.Render(fit("pacing: "+sample.Printable(l.Source)+" (↑/↓ choose a rank, enter: its details and profile)", w)))
	}
	if l.Connected != nil && !*l.Connected {
		since := ""
		if l.DisconnectedSince != nil {
			since = " since " + l.DisconnectedSince.Format("15:04:05")
		}
		return append(lines, wrap(pv.st.Bad.Render("disconnected"+since+": retrying ")+pv.st.Dim.Render(sample.Printable(l.Source)), w, "  ")...)
	}
	if sl := l.Sampled; sl != nil {
		return append(lines, sampledLines(pv, l, sl, w)...)
	}
	lines = append(lines, pv.trainRow(w-2))
	lines = append(lines, wrap(pv.loaderStats(l), w, "  ")...)
	if c := ceilingText(l); c != "" {
		lines = append(lines, wrap(pv.st.Dim.Render(sample.Printable(c)), w, "  ")...)
	}
	if l.Stages != nil {
		lines = append(lines, wrap(pv.stageBar(l.Stages, 20), w, "  ")...)
	}
	if l.Payload != nil {
		lines = append(lines, wrap(pv.st.Dim.Render(payloadLine(l.Payload)), w, "  ")...)
		if c := l.Payload.Copy; c != nil {
			lines = append(lines, wrap(pv.st.Dim.Render("copy "+c.Summary()), w, "  ")...)
		}
	}
	lines = append(lines, pv.stepLines(l, w)...)
	if l.ReadSecPerSec != nil && l.DecodeSecPerSec != nil {
		line := fmt.Sprintf("reading %.2f s/s · decoding %.2f s/s (summed over workers)", *l.ReadSecPerSec, *l.DecodeSecPerSec)
		if l.DatasetBytes != nil && l.DatasetCachedBytes != nil && *l.DatasetBytes > 0 {
			line += fmt.Sprintf(" · %.0f %% of the %s dataset in the page cache", 100*float64(*l.DatasetCachedBytes)/float64(*l.DatasetBytes), size(float64(*l.DatasetBytes)))
		}
		lines = append(lines, wrap(line, w, "  ")...)
	}
	if k := l.Knobs; k["workers"] != "" { // the embedded loader's knobs, every one
		read := ""
		if r := k["read"]; r != "" && r != "pread" {
			read = " read " + r
		}
		lines = append(lines, wrap(pv.st.Dim.Render(sample.Printable(fmt.Sprintf("workers %s prefetch %s batch %s × %s persistent %s pin %s access %s%s decode %s step %s",
			k["workers"], k["prefetch"], k["batch_size"], k["sample_size"], k["persistent"], k["pin"], k["access"], read, k["decode_cost"], k["step_time"]))), w, "  ")...)
	} else if knobs := knobsRead(l); knobs != "" {
		lines = append(lines, wrap(pv.st.Dim.Render(sample.Printable(knobs)), w, "  ")...)
	}
	return lines
}

// knobsRead is what a loader other than the embedded one says of its
// knobs, only what it says: "workers 2 prefetch 2 persistent false pin
// false" (a review: the hook's loader read "workers  prefetch  batch  ×
// persistent false pin false", the embedded loader's names with no
// values).
func knobsRead(l *sample.Loader) string {
	var parts []string
	if l.Workers != nil {
		parts = append(parts, fmt.Sprintf("workers %d", *l.Workers))
	}
	if l.Prefetch != nil {
		parts = append(parts, fmt.Sprintf("prefetch %d", *l.Prefetch))
	}
	for _, k := range slices.Sorted(maps.Keys(l.Knobs)) {
		parts = append(parts, k+" "+l.Knobs[k])
	}
	return strings.Join(parts, " ")
}

// loaderStats is a loader's interval in a line: wait share (red when
// input-bound), wait percentiles, step, queue and throughput.
func (pv *view) loaderStats(l *sample.Loader) string {
	stats := "wait"
	if l.WaitShare != nil {
		share := fmt.Sprintf(" %.0f%%", 100**l.WaitShare)
		if *l.WaitShare >= pv.th.WaitShareStarved {
			share = pv.st.Bad.Render(share)
		}
		stats += share
	}
	if l.WaitP50Ms != nil && l.WaitP95Ms != nil && l.WaitP99Ms != nil {
		stats += fmt.Sprintf(" · p50 %s p95 %s p99 %s", ms(*l.WaitP50Ms), ms(*l.WaitP95Ms), ms(*l.WaitP99Ms))
	}
	if l.StepMeanMs != nil {
		stats += " · step " + ms(*l.StepMeanMs)
	}
	if l.QueueDepth != nil {
		stats += fmt.Sprintf(" · queue %.0f", *l.QueueDepth)
	}
	if w := l.WaitingMs; w != nil && *w >= 1000 { // a second and more: stuck, not a wait between batches
		stats += " · " + pv.st.Bad.Render("waiting "+sample.FormatDuration(*w/1000)+" for a batch")
	}
	if l.RatesPending {
		return stats + " · rates at the next reading"
	}
	if l.Replaying() { // its rates are the measurement's, not the job's: unknown, not 0 (a review)
		return stats + " · the ceiling replays kept batches"
	}
	if l.BytesUnknown() {
		return stats + " · " + l.Throughput()
	}
	return stats + fmt.Sprintf(" · %s %s/s", l.Throughput(), size(l.BytesPerSec))
}

// trainRow draws the newest batches that fit in w cells, oldest left.
func (pv *view) trainRow(w int) string {
	if w <= 0 {
		return ""
	}
	bs := pv.batches
	if len(bs) == 0 {
		return pv.meanBatchRow(w)
	}
	// Take batches from the newest back until about w cells' worth, with
	// the scale set so the slowest batch still gets at least two cells.
	total := 0.0
	start := len(bs)
	for start > 0 && len(bs)-start < w/2 {
		start--
		total += bs[start].WaitMs + bs[start].StepMs
	}
	if total <= 0 {
		return pv.st.Dim.Render("no batch yet")
	}
	perCell := total / float64(w)
	var b strings.Builder
	cells := 0
	for _, bt := range bs[start:] {
		wc := int(float64(w)*unit(bt.WaitMs/perCell/float64(w)) + 0.5)
		sc := max(1, int(float64(w)*unit(bt.StepMs/perCell/float64(w))+0.5))
		if cells+wc+sc > w {
			break
		}
		// Each run painted once, not each cell.
		b.WriteString(pv.st.wait.Render(repeat("░", wc)))
		b.WriteString(pv.st.step.Render(repeat("█", sc)))
		cells += wc + sc
	}
	return "▕" + b.String() + repeat(" ", w-cells) + "▏"
}

// meanBatchRow stands in for the train row when the loader reports
// totals, not each batch (an attached loader, the Python hook): the
// interval's mean batch, its wait then its step in proportion, labelled
// as a mean.
func (pv *view) meanBatchRow(w int) string {
	l := pv.frame.Loader
	if l == nil || l.WaitMeanMs == nil || l.StepMeanMs == nil || *l.WaitMeanMs+*l.StepMeanMs <= 0 {
		switch {
		case l != nil && l.Ceiling != nil && l.Ceiling.State == sample.CeilingReplaying:
			return pv.st.Dim.Render("the ceiling replays kept batches")
		case l != nil && l.Batches > 0:
			// "no batch yet" after 110 batches (a review).
			return pv.st.Dim.Render("no batch in this interval")
		}
		return pv.st.Dim.Render("no batch yet")
	}
	label := "mean batch "
	if w < 3*len(label) {
		label = ""
	}
	cells := w - len(label)
	wc := int(float64(cells)*unit(*l.WaitMeanMs/(*l.WaitMeanMs+*l.StepMeanMs)) + 0.5)
	wc = max(0, min(wc, cells-1)) // a step always shows
	return pv.st.Dim.Render(label) + "▕" + pv.st.wait.Render(repeat("░", wc)) + pv.st.step.Render(repeat("█", cells-wc)) + "▏"
}

func ms(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.1fs", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0fms", v)
	}
	return fmt.Sprintf("%.1fms", v)
}

// sampledLines are the loader panel of a loop nobody instrumented: its wait
// share as sampled, its workers, what each sample read and what it could
// not.
func sampledLines(pv *view, l *sample.Loader, sl *sample.SampledLoop, w int) []string {
	wait := "wait not split"
	if l.WaitShare != nil {
		wait = fmt.Sprintf("waits %.0f %% for its batches", 100**l.WaitShare)
	}
	workers := "workers not read"
	if l.Workers != nil {
		workers = fmt.Sprintf("%d workers", *l.Workers)
		if *l.Workers == 1 {
			workers = "1 worker"
		}
	}
	head := fmt.Sprintf("%s %s · %s · sampled at %.0f Hz (%d samples)", pv.bar(100*deref(l.WaitShare), 10), wait, workers, sl.Hz, sl.Samples)
	lines := wrap(head, w, "  ")
	src := fmt.Sprintf("%s: %s", sample.Printable(l.Source), sample.Printable(sl.Command))
	if sl.Why != "" {
		src += " (" + sample.Printable(sl.Why) + ")"
	}
	lines = append(lines, wrap(pv.st.Dim.Render(src+"; reads "+sl.Read), w, "  ")...)
	if sl.Missing != "" {
		lines = append(lines, wrap(pv.st.Dim.Render("not seen: "+sample.Printable(sl.Missing)), w, "  ")...)
	}
	return lines
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// stageBar is one bar of where a worker's time per batch goes — getitem █,
// collate ▓, hand-over ▒ in proportion, cells wide — then each stage's
// share, and the training process's own stages per batch (take, pin,
// step, first batch).
func (pv *view) stageBar(s *sample.LoaderStages, cells int) string {
	where := "workers"
	if s.Inline {
		where = "inline"
	}
	line := "stages"
	parts := []struct {
		share *float64
		glyph string
		name  string
	}{{s.GetitemShare, "█", "getitem"}, {s.CollateShare, "▓", "collate"}, {s.HandoverShare, "▒", "hand-over"}}
	if s.GetitemShare != nil || s.CollateShare != nil {
		bar, used := "", 0
		var names []string
		for i, p := range parts {
			if p.share == nil {
				continue
			}
			n := int(float64(cells)*unit(*p.share) + 0.5)
			if i == len(parts)-1 || used+n > cells {
				n = min(n, cells-used)
			}
			bar += strings.Repeat(p.glyph, n)
			used += n
			names = append(names, fmt.Sprintf("%s %.0f%%", p.name, 100**p.share))
		}
		bar += strings.Repeat(" ", max(0, cells-used))
		line += " " + where + " ▕" + bar + "▏ " + strings.Join(names, " · ")
	}
	var loop []string
	for _, v := range []struct {
		name string
		ms   *float64
	}{{"take", s.TakeMs}, {"pin", s.PinMs}, {"step", s.StepMs}, {"first batch", s.FirstBatchMs}} {
		if v.ms != nil {
			loop = append(loop, v.name+" "+ms(*v.ms))
		}
	}
	if worker := sumMs(s.GetitemMs, s.CollateMs, s.HandoverMs); worker > 0 {
		line += " · " + ms(worker) + " a batch"
	}
	if len(loop) > 0 {
		line += " │ loop: " + strings.Join(loop, " · ")
	}
	return line
}

func sumMs(vs ...*float64) float64 {
	t := 0.0
	for _, v := range vs {
		if v != nil {
			t += *v
		}
	}
	return t
}

// payloadLine says what a batch holds: its bytes, per second, the float64
// and padding shares, and whether it is pinned.
func payloadLine(p *sample.BatchPayload) string {
	line := "batch " + size(p.BytesPerBatch)
	if p.BytesPerSec != nil {
		line += " · " + size(*p.BytesPerSec) + "/s"
	}
	if p.Float64Share != nil && *p.Float64Share > 0 {
		line += fmt.Sprintf(" · float64 %.0f%% of its bytes", 100**p.Float64Share)
	}
	if p.PaddingShare != nil {
		line += fmt.Sprintf(" · padding %.0f%% of its tokens", 100**p.PaddingShare)
	}
	if p.PinnedShare != nil {
		line += fmt.Sprintf(" · pinned %.0f%%", 100**p.PinnedShare)
	}
	var shown []string
	for _, t := range p.Tensors[:min(len(p.Tensors), 3)] {
		dims := make([]string, len(t.Shape))
		for i, d := range t.Shape {
			dims[i] = fmt.Sprint(d)
		}
		shown = append(shown, sample.Printable(t.Path+" "+t.DType+" "+strings.Join(dims, "×")))
	}
	if len(shown) > 0 {
		line += " · " + strings.Join(shown, ", ")
	}
	return line
}

// syncsLine is the step's host syncs as the hook counted them, busiest
// site first: "host syncs a step: train.py:87 .item() 1 (4.1ms) · …".
func syncsLine(ss []sample.HostSync) string {
	parts := make([]string, 0, 3)
	for i, s := range ss {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more", len(ss)-3))
			break
		}
		p := fmt.Sprintf("%s .%s() %.2g", s.Site, s.Call, s.PerStep)
		if s.SecondsPerStep != nil {
			p += " (" + sample.FormatDuration(*s.SecondsPerStep) + ")"
		}
		parts = append(parts, p)
	}
	return "host syncs a step: " + strings.Join(parts, " · ")
}

// stepLines are what the hook read of the job's step: what it already
// does (the GPU advice never repeats it), its host syncs, and where the
// step's time goes by category (the hook's torch.profiler window, once
// asked for). None read, no line.
func (pv *view) stepLines(l *sample.Loader, w int) []string {
	var lines []string
	if sum := l.Settings.Summary(); sum != "" {
		lines = append(lines, wrap(pv.st.Dim.Render(sample.Printable("step "+sum)), w, "  ")...)
	}
	if len(l.Syncs) > 0 {
		lines = append(lines, wrap(pv.st.Dim.Render(sample.Printable(syncsLine(l.Syncs))), w, "  ")...)
	}
	if sum := l.GPUProfile.Summary(); sum != "" {
		lines = append(lines, wrap(pv.st.Dim.Render(sample.Printable(sum)), w, "  ")...)
	}
	return lines
}
