package sample

import "strconv"

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
func (s *SelfCost) Summary() string {
	if s == nil || (s.CPUPct == nil && s.RSSBytes == nil) {
		return ""
	}
	out := "gpuwatch"
	if s.CPUPct != nil {
		prec := 1
		if *s.CPUPct >= 10 {
			prec = 0
		}
		out += " " + strconv.FormatFloat(*s.CPUPct, 'f', prec, 64) + " % CPU"
	}
	if s.RSSBytes != nil {
		if s.CPUPct != nil {
			out += " ·"
		}
		out += " " + FormatBytes(float64(*s.RSSBytes))
	}
	return out
}

// HookCost says the hook's own cost in a few words for the dashboard's
// footer, beside gpuwatch's ("hook 0.3 % CPU, 2.1 µs/sample"); "" when
// the loader does not say it.
func (l *Loader) HookCost() string {
	if l == nil || l.HookCPUSecPerSec == nil {
		return ""
	}
	pct := 100 * *l.HookCPUSecPerSec
	prec := 1
	if pct >= 10 {
		prec = 0
	}
	out := "hook " + strconv.FormatFloat(pct, 'f', prec, 64) + " % CPU"
	if us := l.HookCPUPerSampleUs; us != nil {
		prec = 1
		if *us >= 10 {
			prec = 0
		}
		out += ", " + strconv.FormatFloat(*us, 'f', prec, 64) + " µs/sample"
	}
	return out
}
