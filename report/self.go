package report

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// SelfInfo is what gpuwatch itself cost while it recorded, from the
// frames' Self (sample.SelfCost): the CPU it used between its first and
// last reading (CPUSec) over the seconds between them (SpanSec), that as a
// mean share of one core in percent and per tick (CPUPerTickMs: CPUSec
// over the ticks it was summed over, each frame one), and its largest
// resident memory. Absent from a recording whose frames do not carry it
// (made before gpuwatch measured itself, or written by hand).
type SelfInfo struct {
	CPUSec       float64  `json:"cpu_sec"`
	SpanSec      float64  `json:"span_sec"`
	MeanCPUPct   float64  `json:"mean_cpu_pct"`
	CPUPerTickMs *float64 `json:"cpu_ms_per_tick,omitempty"`
	PeakRSSBytes *uint64  `json:"peak_rss_bytes,omitempty"`
	ticks        int      // the frames whose step was summed
}

// Line says the cost in a sentence: "gpuwatch itself: 0.4 % of a core
// on average, 4.0ms of CPU a tick (1.2s of CPU in 5m0s), at most 14MiB
// resident".
func (s *SelfInfo) Line() string {
	out := "gpuwatch itself: " + strconv.FormatFloat(s.MeanCPUPct, 'f', 1, 64) + " % of a core on average"
	if s.CPUPerTickMs != nil {
		out += ", " + sample.FormatDuration(*s.CPUPerTickMs/1000) + " of CPU a tick"
	}
	out += " (" + sample.FormatDuration(s.CPUSec) + " of CPU in " + dur(s.SpanSec) + ")"
	if s.PeakRSSBytes != nil {
		out += ", at most " + sample.FormatBytes(float64(*s.PeakRSSBytes)) + " resident"
	}
	return out
}

// selfBuilder sums gpuwatch's own CPU over the frames: each frame's total
// less the one before, so that a total that goes back (frames of two runs
// appended to one file) starts a new sum instead of subtracting.
type selfBuilder struct {
	first, last time.Time
	prev        float64
	seen        bool
	info        SelfInfo
}

func (b *selfBuilder) add(f *sample.Frame) {
	s := f.Self
	if s == nil {
		return
	}
	if !b.seen {
		b.first, b.seen = f.Time, true
	} else if s.CPUSecTotal >= b.prev {
		b.info.CPUSec += s.CPUSecTotal - b.prev
		b.info.ticks++
	}
	b.prev, b.last = s.CPUSecTotal, f.Time
	if r := s.RSSBytes; r != nil && (b.info.PeakRSSBytes == nil || *r > *b.info.PeakRSSBytes) {
		peak := *r
		b.info.PeakRSSBytes = &peak
	}
}

// result is the cost over the frames; nil before two readings a moment
// apart.
func (b *selfBuilder) result() *SelfInfo {
	span := b.last.Sub(b.first).Seconds()
	if !b.seen || span <= 0 {
		return nil
	}
	info := b.info
	info.SpanSec, info.MeanCPUPct = span, info.CPUSec/span*100
	if info.ticks > 0 {
		ms := 1000 * info.CPUSec / float64(info.ticks)
		info.CPUPerTickMs = &ms
	}
	return &info
}

// HookInfo is what the hook's own instrumentation cost inside the job
// while gpuwatch recorded, from the frames' loader.hook_cpu_sec_per_sec,
// hook_cpu_parts and samples_per_sec: the CPU it took (CPUSec) over the
// seconds the frames read it (SpanSec), that as a mean share of one core
// in percent, and per sample handed out in µs (absent without samples;
// PerBatchUs stands in where the samples were not counted), and the same
// by part, the costliest first. Absent from a recording whose frames do
// not carry it.
type HookInfo struct {
	CPUSec      float64        `json:"cpu_sec"`
	SpanSec     float64        `json:"span_sec"`
	MeanCPUPct  float64        `json:"mean_cpu_pct"`
	PerSampleUs *float64       `json:"us_per_sample,omitempty"`
	PerBatchUs  *float64       `json:"us_per_batch,omitempty"`
	Parts       []HookPartInfo `json:"parts,omitempty"`
	// GPUProfileCPUSec is what the recording of the step's time cost
	// (--gpu-profile) by its own count, where a frame said it: a recording
	// that ends before the parts' first reading is in none of the
	// intervals above, and this says it.
	GPUProfileCPUSec *float64 `json:"gpu_profile_cpu_sec,omitempty"`
	// ReplaySec is the time the ceiling's measurement replayed kept
	// batches, left out of the figures above.
	ReplaySec float64 `json:"replay_sec,omitempty"`
	per       perUnit
}

// HookPartInfo is one part of the hook's cost over the recording (its
// name as the frames give it: loop, payload, server…): its CPU, its mean
// share of one core in percent, its Share of the hook's CPU (of all the
// parts', 0–1), and its µs per sample (or per batch, where the samples
// were not counted).
type HookPartInfo struct {
	Part        string   `json:"part"`
	CPUSec      float64  `json:"cpu_sec"`
	MeanCPUPct  float64  `json:"mean_cpu_pct"`
	Share       float64  `json:"share"`
	PerSampleUs *float64 `json:"us_per_sample,omitempty"`
	PerBatchUs  *float64 `json:"us_per_batch,omitempty"`
	per         perUnit
}

// perUnit sums µs per sample weighted by the samples (and per batch by
// the batches) of the frames that had both.
type perUnit struct{ samples, sampleUs, batches, batchUs float64 }

func (p *perUnit) add(perSample, perBatch *float64, l *sample.Loader, sec float64) {
	if perSample != nil && l.SamplesPerSec > 0 {
		p.samples += l.SamplesPerSec * sec
		p.sampleUs += *perSample * l.SamplesPerSec * sec
	}
	if perBatch != nil && l.BatchesPerSec > 0 {
		p.batches += l.BatchesPerSec * sec
		p.batchUs += *perBatch * l.BatchesPerSec * sec
	}
}

// means are the weighted means: per sample where any frame had it, else
// per batch.
func (p perUnit) means() (perSample, perBatch *float64) {
	switch {
	case p.samples > 0:
		v := p.sampleUs / p.samples
		return &v, nil
	case p.batches > 0:
		v := p.batchUs / p.batches
		return nil, &v
	}
	return nil, nil
}

// maxHookParts bounds the parts a report lists: the hook has eight, and a
// recording's frames (each cut at 16) may name others.
const maxHookParts = 16

// Line says the cost in a sentence: "The hook inside the job: 0.3 % of a
// core on average, 2.1 µs per sample (0.9s of CPU in 5m0s); by part:
// server 1.6 µs (74 %), loop 0.4 µs (19 %); no CPU counted in profiler,
// stages" (parts that took none over the recording).
func (h *HookInfo) Line() string {
	out := "The hook inside the job: " + strconv.FormatFloat(h.MeanCPUPct, 'f', 1, 64) + " % of a core on average"
	switch {
	case h.PerSampleUs != nil:
		out += ", " + strconv.FormatFloat(*h.PerSampleUs, 'f', 1, 64) + " µs per sample"
	case h.PerBatchUs != nil:
		out += ", " + strconv.FormatFloat(*h.PerBatchUs, 'f', 1, 64) + " µs per batch (samples not counted)"
	}
	out += " (" + sample.FormatDuration(h.CPUSec) + " of CPU in " + dur(h.SpanSec) + ")"
	var by, idle []string
	for _, p := range h.Parts {
		name := sample.Printable(p.Part)
		if p.CPUSec <= 0 {
			idle = append(idle, name)
			continue
		}
		part := name
		switch {
		case p.PerSampleUs != nil:
			part += " " + strconv.FormatFloat(*p.PerSampleUs, 'f', 1, 64) + " µs per sample"
		case p.PerBatchUs != nil:
			part += " " + strconv.FormatFloat(*p.PerBatchUs, 'f', 1, 64) + " µs per batch"
		}
		by = append(by, part+" ("+strconv.FormatFloat(100*p.Share, 'f', 0, 64)+" %, "+strconv.FormatFloat(p.MeanCPUPct, 'f', 2, 64)+" % of a core)")
	}
	if len(by) > 0 {
		out += "; by part: " + strings.Join(by, ", ")
	}
	if g := h.GPUProfileCPUSec; g != nil {
		// The recording's own count stands where the part read less
		// (it ended before the part's first reading).
		idle = slices.DeleteFunc(idle, func(n string) bool { return n == "gpu_profile" })
		if h.partCPU("gpu_profile") < *g {
			out += "; the --gpu-profile recording took " + sample.FormatDuration(*g) + " of CPU by its own count, before the first reading of the parts"
		}
	}
	if len(idle) > 0 {
		slices.Sort(idle)
		out += "; no CPU counted in " + strings.Join(idle, ", ")
	}
	if h.ReplaySec > 0 {
		out += "; the ceiling's replay (" + dur(h.ReplaySec) + ") left out: its batches are not the job's"
	}
	return out
}

// partCPU is a part's CPU seconds over the recording (0 where absent).
func (h *HookInfo) partCPU(name string) float64 {
	for _, p := range h.Parts {
		if p.Part == name {
			return p.CPUSec
		}
	}
	return 0
}

// hookBuilder sums the hook's CPU over the frames: each frame's rate
// times the time since the frame before (at most maxHookGap: a gap in the
// recording is not filled in), in all and by part.
type hookBuilder struct {
	last  time.Time
	info  HookInfo
	parts map[string]*HookPartInfo
}

// maxHookGap is the longest time between two frames that one frame's
// rate stands for.
const maxHookGap = time.Minute

func (b *hookBuilder) add(f *sample.Frame) {
	prev := b.last
	b.last = f.Time
	l := f.Loader
	if l != nil {
		if g := l.GPUProfile; g != nil && g.State == sample.GPUProfileDone && g.CostCPUSeconds != nil && finite(*g.CostCPUSeconds) && *g.CostCPUSeconds >= 0 {
			b.info.GPUProfileCPUSec = g.CostCPUSeconds
		}
	}
	if l == nil || (l.HookCPUSecPerSec == nil && len(l.HookCPUParts) == 0) || prev.IsZero() {
		return
	}
	dt := f.Time.Sub(prev)
	if dt <= 0 || dt > maxHookGap {
		return
	}
	sec := dt.Seconds()
	if l.Replaying() {
		// The ceiling's replay: the loop trains on kept batches and hands
		// out none of the job's, so its CPU has no sample to be per; left
		// out of the shares as of the µs per sample (a user's review: loop
		// 9.3 µs a sample at 46 % beside profiler 16.1 µs at 44 %).
		b.info.ReplaySec += sec
		return
	}
	if l.HookCPUSecPerSec != nil {
		b.info.CPUSec += *l.HookCPUSecPerSec * sec
		b.info.SpanSec += sec
		b.info.per.add(l.HookCPUPerSampleUs, l.HookCPUPerBatchUs, l, sec)
	}
	for _, p := range l.HookCPUParts {
		part := b.parts[p.Part]
		if part == nil {
			if len(b.parts) == maxHookParts {
				continue
			}
			if b.parts == nil {
				b.parts = map[string]*HookPartInfo{}
			}
			part = &HookPartInfo{Part: p.Part}
			b.parts[p.Part] = part
		}
		part.CPUSec += p.Cores * sec
		part.per.add(p.PerSampleUs, p.PerBatchUs, l, sec)
	}
}

// result is the cost over the frames; nil where none carried it.
func (b *hookBuilder) result() *HookInfo {
	if b.info.SpanSec <= 0 {
		return nil
	}
	info := b.info
	info.MeanCPUPct = info.CPUSec / info.SpanSec * 100
	info.PerSampleUs, info.PerBatchUs = info.per.means()
	all := 0.0
	for _, p := range b.parts {
		all += p.CPUSec
	}
	for _, p := range b.parts {
		part := *p
		part.MeanCPUPct = part.CPUSec / info.SpanSec * 100
		if all > 0 {
			part.Share = part.CPUSec / all
		}
		part.PerSampleUs, part.PerBatchUs = part.per.means()
		info.Parts = append(info.Parts, part)
	}
	slices.SortFunc(info.Parts, func(a, b HookPartInfo) int {
		return cmp.Or(cmp.Compare(b.CPUSec, a.CPUSec), strings.Compare(a.Part, b.Part))
	})
	return &info
}
