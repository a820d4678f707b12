package probes

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestParseStatmResident: the second of statm's seven numbers, in pages;
// anything else is an error, never a zero.
func TestParseStatmResident(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     uint64
		ok       bool
	}{
		{"the kernel's line: size resident shared text lib data dt", "448231 3561 1733 1086 0 52612 0\n", 3561, true},
		{"no newline at the end", "10 7 1 1 0 2 0", 7, true},
		{"one field is not the format", "448231\n", 0, false},
		{"a resident count that is no number", "448231 x 1733 1086 0 52612 0\n", 0, false},
		{"empty", "", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseStatmResident([]byte(c.in), &FieldBuf{})
			if (err == nil) != c.ok || got != c.want {
				t.Fatalf("= %d, %v; want %d (ok %v)", got, err, c.want, c.ok)
			}
		})
	}
}

// statCPUNs is this process's utime + stime from /proc/self/stat, in ns:
// a second source for the meter's getrusage, in USER_HZ ticks (100 a
// second on every Linux ABI; proc(5)).
func statCPUNs(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc/self/stat:", err)
	}
	// Fields after the command's closing parenthesis start at field 3
	// (state); utime and stime are fields 14 and 15.
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	u, _ := strconv.ParseUint(string(f[14-3]), 10, 64)
	s, _ := strconv.ParseUint(string(f[15-3]), 10, 64)
	return (u + s) * uint64(time.Second/100)
}

// TestSelfMeterReadsThisProcess burns CPU in this test process until the
// kernel's own count (/proc/self/stat) has grown by 100 ms, and touches
// 64 MiB: the meter's CPU total must grow as the kernel's did, its rate be
// above 0, and its resident memory hold at least what was touched.
func TestSelfMeterReadsThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self")
	}
	m := newSelfMeter()
	first := m.read(time.Now(), -1)
	if first == nil || first.CPUPct != nil || first.TickSec != nil || first.RSSBytes == nil {
		t.Fatalf("first reading %+v: want a total and resident memory, no rate yet", first)
	}
	statBefore := statCPUNs(t)
	deadline := time.Now().Add(20 * time.Second) // the box is shared: a busy loop at nice 19 may get little CPU
	x := 1.0
	for statCPUNs(t)-statBefore < uint64(100*time.Millisecond) && time.Now().Before(deadline) {
		for i := 0; i < 1e6; i++ {
			x = x*1.0000001 + 1e-9
		}
	}
	if statCPUNs(t)-statBefore < uint64(100*time.Millisecond) {
		t.Skip("less than 100 ms of CPU in 20 s on this box")
	}
	touched := make([]byte, 64<<20)
	for i := 0; i < len(touched); i += 4096 {
		touched[i] = byte(x)
	}
	burned := statCPUNs(t) - statBefore // the page faults' system time too
	second := m.read(time.Now(), 3*time.Millisecond)
	runtime.KeepAlive(touched)

	grew := time.Duration((second.CPUSecTotal - first.CPUSecTotal) * 1e9)
	// Both count the same scheduler runtime, stat in 10 ms ticks scaled to
	// it (the kernel's cputime_adjust): they agree within a tick or two.
	if d := grew - time.Duration(burned); d < -time.Duration(burned)/10-20*time.Millisecond || d > time.Duration(burned)/10+20*time.Millisecond {
		t.Errorf("the meter's CPU grew %v while /proc/self/stat grew %v", grew, time.Duration(burned))
	}
	if second.CPUPct == nil || *second.CPUPct <= 0 || *second.CPUPct > float64(100*runtime.NumCPU())*1.05 {
		t.Errorf("CPUPct %v after burning %v: want above 0, at most every core", second.CPUPct, time.Duration(burned))
	}
	if second.RSSBytes == nil || *second.RSSBytes < 64<<20 {
		t.Errorf("RSS %v with 64 MiB touched and alive", second.RSSBytes)
	}
	if second.TickSec == nil || *second.TickSec != 0.003 {
		t.Errorf("TickSec %v, want the 3 ms given", second.TickSec)
	}
	t.Logf("burned %v (stat) / %v (getrusage), %.1f %% of a core, RSS %d MiB", time.Duration(burned), grew, *second.CPUPct, *second.RSSBytes>>20)
}

// TestSelfMeterNeverAFalseRate: a CPU count that goes backwards, or no time
// between two readings, gives no rate rather than a negative or infinite
// one; a CPU count that cannot be read gives no part at all; no statm
// leaves memory nil.
func TestSelfMeterNeverAFalseRate(t *testing.T) {
	ns := []uint64{5e9, 4e9, 4e9, 6e9}
	i := 0
	m := &selfMeter{cpu: func() (uint64, error) { v := ns[i]; i++; return v, nil }, statm: "/nonexistent/statm", pageSize: 4096}
	t0 := time.Unix(1000, 0)
	for k, c := range []struct {
		at   time.Time
		want *float64
	}{{t0, nil}, {t0.Add(time.Second), nil}, {t0.Add(time.Second), nil}, {t0.Add(3 * time.Second), Ptr(100.0)}} {
		s := m.read(c.at, -1)
		switch {
		case (s.CPUPct == nil) != (c.want == nil), s.CPUPct != nil && *s.CPUPct != *c.want:
			t.Errorf("reading %d: CPUPct %v, want %v", k, s.CPUPct, c.want)
		case s.RSSBytes != nil:
			t.Errorf("reading %d: RSS %d without a statm", k, *s.RSSBytes)
		}
	}
	m.cpu = func() (uint64, error) { return 0, errors.New("no getrusage") }
	if s := m.read(t0.Add(4*time.Second), -1); s != nil {
		t.Errorf("unreadable CPU gave %+v", s)
	}
}

// TestSamplerFramesCarryTheirOwnCost: every frame the Sampler assembles
// has gpuwatch's own cost, with a rate from the second on.
func TestSamplerFramesCarryTheirOwnCost(t *testing.T) {
	s := NewSampler([]Probe{&fakeProbe{name: "mem"}}, SamplerOptions{Interval: 10 * time.Millisecond})
	defer s.Close()
	a := s.Tick(context.Background())
	time.Sleep(5 * time.Millisecond)
	b := s.Tick(context.Background())
	if a.Self == nil || b.Self == nil || b.Self.CPUPct == nil || b.Self.TickSec == nil || b.Self.CPUSecTotal < a.Self.CPUSecTotal {
		t.Fatalf("frames' own cost: %+v then %+v", a.Self, b.Self)
	}
}

// BenchmarkSelfMeterTick is the meter's share of a sampler tick: one
// getrusage and one read of /proc/self/statm.
func BenchmarkSelfMeterTick(b *testing.B) {
	m := newSelfMeter()
	b.ReportAllocs()
	for b.Loop() {
		if m.read(time.Now(), time.Millisecond) == nil {
			b.Fatal("no reading")
		}
	}
}
