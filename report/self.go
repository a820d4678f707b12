package report

import (
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// SelfInfo is what gpuwatch itself cost while it recorded, from the
// frames' Self (sample.SelfCost): the CPU it used between its first and
// last reading (CPUSec) over the seconds between them (SpanSec), that as a
// mean share of one core in percent, and its largest resident memory.
// Absent from a recording whose frames do not carry it (made before
// gpuwatch measured itself, or written by hand).
type SelfInfo struct {
	CPUSec       float64 `json:"cpu_sec"`
	SpanSec      float64 `json:"span_sec"`
	MeanCPUPct   float64 `json:"mean_cpu_pct"`
	PeakRSSBytes *uint64 `json:"peak_rss_bytes,omitempty"`
}

// Line says the cost in a sentence: "gpuwatch itself: 0.4 % of a core
// on average (1.2s of CPU in 5m0s), at most 14MiB resident".
func (s *SelfInfo) Line() string {
	out := "gpuwatch itself: " + strconv.FormatFloat(s.MeanCPUPct, 'f', 1, 64) + " % of a core on average (" +
		sample.FormatDuration(s.CPUSec) + " of CPU in " + dur(s.SpanSec) + ")"
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
	return &info
}

// HookInfo is what the hook's own instrumentation cost inside the job
// while gpuwatch recorded, from the frames' loader.hook_cpu_sec_per_sec
// and samples_per_sec: the CPU it took (CPUSec) over the seconds the
// frames read it (SpanSec), that as a mean share of one core in percent,
// and per sample handed out in µs (absent without samples). Absent from a
// recording whose frames do not carry it.
type HookInfo struct {
	CPUSec        float64  `json:"cpu_sec"`
	SpanSec       float64  `json:"span_sec"`
	MeanCPUPct    float64  `json:"mean_cpu_pct"`
	PerSampleUs   *float64 `json:"us_per_sample,omitempty"`
	samples, usum float64  // the samples, and their µs, of the frames that had both
}

// Line says the cost in a sentence: "The hook inside the job: 0.3 % of a
// core on average, 2.1 µs per sample (0.9s of CPU in 5m0s)".
func (h *HookInfo) Line() string {
	out := "The hook inside the job: " + strconv.FormatFloat(h.MeanCPUPct, 'f', 1, 64) + " % of a core on average"
	if h.PerSampleUs != nil {
		out += ", " + strconv.FormatFloat(*h.PerSampleUs, 'f', 1, 64) + " µs per sample"
	}
	return out + " (" + sample.FormatDuration(h.CPUSec) + " of CPU in " + dur(h.SpanSec) + ")"
}

// hookBuilder sums the hook's CPU over the frames: each frame's rate
// times the time since the frame before (at most maxHookGap: a gap in the
// recording is not filled in).
type hookBuilder struct {
	last time.Time
	info HookInfo
}

// maxHookGap is the longest time between two frames that one frame's
// rate stands for.
const maxHookGap = time.Minute

func (b *hookBuilder) add(f *sample.Frame) {
	prev := b.last
	b.last = f.Time
	l := f.Loader
	if l == nil || l.HookCPUSecPerSec == nil || prev.IsZero() {
		return
	}
	dt := f.Time.Sub(prev)
	if dt <= 0 || dt > maxHookGap {
		return
	}
	sec := dt.Seconds()
	b.info.CPUSec += *l.HookCPUSecPerSec * sec
	b.info.SpanSec += sec
	if l.HookCPUPerSampleUs != nil && l.SamplesPerSec > 0 {
		b.info.samples += l.SamplesPerSec * sec
		b.info.usum += *l.HookCPUPerSampleUs * l.SamplesPerSec * sec
	}
}

// result is the cost over the frames; nil where none carried it.
func (b *hookBuilder) result() *HookInfo {
	if b.info.SpanSec <= 0 {
		return nil
	}
	info := b.info
	info.MeanCPUPct = info.CPUSec / info.SpanSec * 100
	if info.samples > 0 {
		us := info.usum / info.samples
		info.PerSampleUs = &us
	}
	return &info
}
