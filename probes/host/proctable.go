package host

import (
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"
)

// ProcTable is every process's parent, start time and CPU ticks as the
// Proc probe last read them, for the loop sampler's TrainingFinder: the
// probe reads every /proc/PID/stat each tick anyway, and the finder, which
// needs the same four numbers, would otherwise read them all again on each
// of its scans. It is safe for concurrent use.
type ProcTable struct {
	mu   sync.Mutex
	at   time.Time // when the rows were read; zero: never
	rows []ProcRow
}

// ProcRow is one process's parent, start time (clock ticks since boot,
// /proc/PID/stat column 22) and CPU time (utime + stime, USER_HZ ticks).
type ProcRow struct {
	PID, PPID    int
	Start, Ticks uint64
}

// put replaces the rows with procs, read at at.
func (t *ProcTable) put(at time.Time, procs map[int]*procEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows = t.rows[:0]
	for _, e := range procs {
		t.rows = append(t.rows, ProcRow{PID: e.pid, PPID: e.ppid, Start: e.start, Ticks: e.ticks})
	}
	t.at = at
}

// AppendSince appends the rows to dst when they were read after after;
// false when they are older (the probe is not running, or is stuck) or the
// table is nil.
func (t *ProcTable) AppendSince(dst []ProcRow, after time.Time) ([]ProcRow, bool) {
	if t == nil {
		return dst, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.at.IsZero() || !t.at.After(after) {
		return dst, false
	}
	return append(dst, t.rows...), true
}

// Store replaces the rows with rows, read at at: for a reader of /proc
// other than the Proc probe (and tests).
func (t *ProcTable) Store(at time.Time, rows []ProcRow) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows = append(t.rows[:0], rows...)
	t.at = at
}

// StatRow is process pid's row from b, the contents of its
// /proc/PID/stat; false when b does not parse. scratch may be nil.
func StatRow(pid int, b []byte, scratch *probes.FieldBuf) (ProcRow, bool) {
	st, err := parsePidStat(b, scratch)
	if err != nil {
		return ProcRow{}, false
	}
	return ProcRow{PID: pid, PPID: st.ppid, Start: st.starttime, Ticks: st.ticks}, true
}
