package probes

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// selfMeter measures gpuwatch's own cost once a tick, on the sampler's
// goroutine: its CPU time (getrusage RUSAGE_SELF, one syscall) and its
// resident memory (/proc/self/statm, one small read). It is no Probe: it
// costs a few µs, needs no lane, and the sampler's own tick time, which it
// publishes beside them, is known only once the lanes have answered.
//
// getrusage, not /proc/self/stat: the kernel computes both from the same
// scheduler runtime, but stat's utime and stime are in USER_HZ ticks
// (10 ms; proc(5)), a whole percent of a core in a 1 s interval, while
// getrusage gives microseconds — the difference between "0 %" and
// "0.4 %" for a process as light as this one should be.
type selfMeter struct {
	// cpu is the process's CPU time since it started (user + system), ns.
	cpu func() (uint64, error)
	// statm is the file resident memory is read from; pageSize its unit.
	statm    string
	pageSize uint64
	files    FileReader
	fields   FieldBuf
	prevNs   uint64
	prevAt   time.Time
}

// newSelfMeter measures this process.
func newSelfMeter() *selfMeter {
	return &selfMeter{cpu: rusageSelfNs, statm: "/proc/self/statm", pageSize: uint64(os.Getpagesize())}
}

// rusageSelfNs is the calling process's CPU time, user + system, in ns.
func rusageSelfNs() (uint64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return uint64(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// read returns the cost at now: CPU over the time since the previous read,
// in total, resident memory, and tick, the wall time of the sampler's tick
// (negative: not known). Nil when the CPU time cannot be read.
func (m *selfMeter) read(now time.Time, tick time.Duration) *sample.SelfCost {
	ns, err := m.cpu()
	if err != nil {
		return nil
	}
	s := &sample.SelfCost{CPUSecTotal: float64(ns) / 1e9}
	if !m.prevAt.IsZero() {
		if r, ok := Rate(m.prevNs, ns, now.Sub(m.prevAt).Seconds()); ok {
			s.CPUPct = Ptr(r / 1e9 * 100)
		}
	}
	m.prevNs, m.prevAt = ns, now
	if b, err := m.files.Read(m.statm); err == nil {
		if pages, err := parseStatmResident(b, &m.fields); err == nil {
			s.RSSBytes = Ptr(pages * m.pageSize)
		}
	}
	if tick >= 0 {
		s.TickSec = Ptr(tick.Seconds())
	}
	return s
}

// errStatm is a /proc/PID/statm that is not seven numbers.
var errStatm = errors.New("statm: not the kernel's format")

// parseStatmResident is the resident pages of a /proc/PID/statm: its second
// field ("size resident shared text lib data dt", in pages; proc(5)).
func parseStatmResident(b []byte, fb *FieldBuf) (uint64, error) {
	line, _ := NextLine(b)
	f := fb.Split(line)
	if len(f) < 2 {
		return 0, errStatm
	}
	v, ok := ParseUint(f[1])
	if !ok {
		return 0, errStatm
	}
	return v, nil
}
