package sample

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// SelfCost is what gpuwatch itself costs the machine it watches: its own
// process, every goroutine together (the sampler and its probes, the
// dashboard's drawing, serve's scrapes, and in `gpuwatch demo` the
// embedded loader it runs in-process). The sampler reads it at the end of
// each tick (probes/self.go). Nil where it was not read.
type SelfCost struct {
	// CPUPct is gpuwatch's CPU time over the last interval, user and
	// system, in percent of one core (two busy threads read 200). Nil on
	// the first reading: a rate needs two.
	CPUPct *float64 `json:"cpu_pct,omitempty" check:"0,1e6"`
	// CPUSecTotal is gpuwatch's CPU time since it started, user and
	// system, in seconds (getrusage RUSAGE_SELF).
	CPUSecTotal float64 `json:"cpu_sec_total"`
	// RSSBytes is gpuwatch's resident memory now (/proc/self/statm's
	// resident pages × the page size); nil where there is no /proc.
	RSSBytes *uint64 `json:"rss_bytes,omitempty"`
	// TickSec is the wall time the sampler's tick took, from handing the
	// probes their call to the frame assembled, in seconds: how long this
	// frame took to gather, not CPU.
	TickSec *float64 `json:"tick_sec,omitempty"`
}

// Summary says gpuwatch's cost in a few words for the dashboard's footer
// and the report: "gpuwatch 0.4 % CPU · 14MiB". What was not read is left
// out; "" when nothing was.
func (s *SelfCost) Summary() string { return s.Words(0, false, false, true) }

// CPUSecPerTick is gpuwatch's CPU time in the tick that made its frame,
// in seconds: CPUPct's share of a core over intervalSec, the frame's
// interval (the meter's rate runs from one tick's end to the next's). Nil
// where CPUPct is, or the interval is not known (0: the first frame).
func (s *SelfCost) CPUSecPerTick(intervalSec float64) *float64 {
	if s == nil || s.CPUPct == nil || !(intervalSec > 0) {
		return nil
	}
	v := *s.CPUPct / 100 * intervalSec
	return &v
}

// Words says gpuwatch's cost as the footer does, with its CPU per tick
// of intervalSec seconds (tick: "(4.0ms/tick)", where CPUSecPerTick is
// known) and in all since it started (total: "3.2s total"), and its
// resident memory where rss is set: "gpuwatch 0.4 % CPU (4.0ms/tick),
// 3.2s total · 14MiB". What was not read is left out; "" when nothing
// was.
func (s *SelfCost) Words(intervalSec float64, tick, total, rss bool) string {
	if s == nil {
		return ""
	}
	var figs []string
	if s.CPUPct != nil {
		cpu := tenths(*s.CPUPct) + " % CPU"
		if t := s.CPUSecPerTick(intervalSec); tick && t != nil {
			cpu += " (" + FormatDuration(*t) + "/tick)" // the share's CPU, a tick's worth
		}
		figs = append(figs, cpu)
	}
	if total && s.CPUSecTotal > 0 {
		figs = append(figs, FormatDuration(s.CPUSecTotal)+" total")
	}
	out := strings.Join(figs, ", ")
	if rss && s.RSSBytes != nil {
		if out != "" {
			out += " ·"
		}
		out += " " + FormatBytes(float64(*s.RSSBytes))
	}
	if out == "" {
		return ""
	}
	return "gpuwatch " + strings.TrimPrefix(out, " ")
}

// tenths is a figure to one decimal below 10, whole above: "0.4", "12"
// (a share of a core in percent, µs).
func tenths(v float64) string {
	if v >= 10 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// HookCPUPart is one part of the hook's own CPU time inside the training
// process over the interval (python/gpuwatch_hook/_cost.py's parts: loop,
// payload, settings, syncs, stages, profiler, gpu_profile, server).
type HookCPUPart struct {
	// Part is the part's name, as the hook says it ([a-z_]{1,32}).
	Part string `json:"part"`
	// PerSampleUs is its CPU time per sample handed out, in µs; nil
	// without samples. PerBatchUs stands in where the loader's samples are
	// not counted (Loader.HookCPUPerBatchUs); nil otherwise.
	PerSampleUs *float64 `json:"us_per_sample,omitempty" check:"0,1e9"`
	PerBatchUs  *float64 `json:"us_per_batch,omitempty" check:"0,1e9"`
	// Cores is its CPU time per wall second: 0.002 is 0.2 % of a core.
	Cores float64 `json:"cores" check:"0,1e4"`
}

// HookCost says the hook's own cost in a few words for the dashboard's
// footer, beside gpuwatch's ("hook 0.3 % CPU, 2.1 µs/sample", or "…, 9.3
// µs/batch" where the samples are not counted); "" when the loader does
// not say it.
func (l *Loader) HookCost() string { return l.HookCostTop(0) }

// HookCostTop is HookCost with its n costliest parts, in its unit (µs per
// sample, or per batch): "hook 0.3 % CPU, 2.1 µs/sample (server 1.6, loop
// 0.3)". Parts under 0.05 µs are left out; "" when the loader does not
// say the cost.
func (l *Loader) HookCostTop(n int) string {
	if l == nil || l.HookCPUSecPerSec == nil {
		return ""
	}
	out := "hook " + tenths(100**l.HookCPUSecPerSec) + " % CPU"
	us, unit, of := l.HookCPUPerSampleUs, " µs/sample", func(p *HookCPUPart) *float64 { return p.PerSampleUs }
	if us == nil && l.HookCPUPerBatchUs != nil {
		us, unit, of = l.HookCPUPerBatchUs, " µs/batch", func(p *HookCPUPart) *float64 { return p.PerBatchUs }
	}
	if us == nil {
		return out
	}
	out += ", " + tenths(*us) + unit
	var top []string
	for _, p := range l.HookCPUPartsByCost() {
		if v := of(&p); len(top) < n && v != nil && *v >= 0.05 {
			top = append(top, Printable(p.Part)+" "+tenths(*v))
		}
	}
	if len(top) > 0 {
		out += " (" + strings.Join(top, ", ") + ")"
	}
	return out
}

// HookCPUPartsByCost is HookCPUParts, the costliest first (ties by name):
// a recorded frame's list may come in any order.
func (l *Loader) HookCPUPartsByCost() []HookCPUPart {
	if l == nil || len(l.HookCPUParts) == 0 {
		return nil
	}
	parts := slices.Clone(l.HookCPUParts)
	slices.SortStableFunc(parts, func(a, b HookCPUPart) int {
		if c := cmp.Compare(b.Cores, a.Cores); c != 0 {
			return c
		}
		return strings.Compare(a.Part, b.Part)
	})
	return parts
}
