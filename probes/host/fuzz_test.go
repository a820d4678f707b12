package host

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

// The fuzzers feed the parsers of kernel text arbitrary bytes: they must
// never panic, and whatever they accept must give shares in range.

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("cpu 1 2 3 4 5 6 7 8 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nctxt 5\nprocs_running 1\n"),
		[]byte("cpu 2 2 3 9 5 6 7 8 0 0\ncpu0 2 2 3 9 5 6 7 8 0 0\nctxt 9\n"))
	f.Add([]byte("cpu  1 2\n"), []byte("cpu 1 2 3 4\n"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var s0, s1 procStat
		if parseProcStat(a, &s0, nil) != nil || parseProcStat(b, &s1, nil) != nil {
			return
		}
		sh := shares(s1.all.delta(s0.all))
		for _, v := range []float64{sh.busy, sh.user, sh.system, sh.iowait, sh.steal, sh.irq} {
			if v < 0 || v > 100.0000001 {
				t.Fatalf("share %v out of range", v)
			}
		}
	})
}

func FuzzParseDiskstatsLine(f *testing.F) {
	f.Add([]byte(" 252 0 vda 1000 0 20000 500 200 0 4000 300 0 10000 800 0 0 0 0"), []byte(" 252 0 vda 1100 0 22048 700 250 0 5024 400 2 10250 800 0 0 0 0"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		_, c0, err0 := parseDiskstatsLine(a, nil)
		_, c1, err1 := parseDiskstatsLine(b, nil)
		if err0 != nil || err1 != nil {
			return
		}
		d, ok := diskRates("x", c0, c1, 1)
		if ok && (d.BusyPct < 0 || d.BusyPct > 100 || d.ReadBytesPerSec < 0 || d.AwaitMs != nil && *d.AwaitMs < 0) {
			t.Fatalf("bad rates %+v", d)
		}
	})
}

func FuzzParseNetDevLine(f *testing.F) {
	f.Add([]byte("  eth0: 1000 10 0 0 0 0 0 0 2000 10 0 0 0 0 0 0"))
	f.Add([]byte("Inter-|   Receive"))
	f.Fuzz(func(t *testing.T, line []byte) {
		_, _, _, _, _ = parseNetDevLine(line, nil)
	})
}

func FuzzParsePressure(f *testing.F) {
	f.Add([]byte("some avg10=0.12 avg60=0.05 avg300=0.01 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _, _ = ParsePressure(b, nil)
	})
}

func FuzzParsePidStat(f *testing.F) {
	f.Add([]byte("100 (python (main)) R 1 100 100 0 -1 4194304 1000 0 0 0 1095 100 0 0 20 0 3 0 5000 1000000000 256000 0 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parsePidStat(b, nil)
	})
}

// FuzzParseMaps: any maps file gives a bounded, printable answer.
func FuzzParseMaps(f *testing.F) {
	f.Add([]byte("7f0000000000-7f0040000000 r--s 00000000 fd:00 200 /data/x.arrow\n"))
	f.Add([]byte("ffffffffffffffff-0 r--s ffffffffffffffff fd:00 1 /a\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := parseMaps(bytes.NewReader(b))
		if utf8.RuneCountInString(m.largest) > mapsPathMax+1 || m.largestBytes > m.total {
			t.Fatalf("parsed %+v", m)
		}
		for _, r := range m.largest {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("control character in %q", m.largest)
			}
		}
	})
}

func FuzzParseMeminfo(f *testing.F) {
	f.Add([]byte("MemTotal: 1000 kB\nMemAvailable: 500 kB\nSwapTotal: 0 kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMeminfo(b, nil)
		if err == nil && m.total == 0 {
			t.Fatal("accepted meminfo without a total")
		}
		_ = parseVmstat(b, nil)
		_, _ = parsePidIO(b, nil)
		_, _, _, _ = parseLoadavg(b, nil)
	})
}

// FuzzParseMountinfo: any mount table parses without a panic, into at
// most one mount a line.
func FuzzParseMountinfo(f *testing.F) {
	f.Add([]byte("120 29 0:52 / /mnt/my\\040data rw shared:60 - fuse.sshfs u@h:/srv rw\n"))
	f.Add([]byte("1 1 0:1 / / rw - - - -\n\\\\\\0777 - x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := parseMountinfo(bytes.NewReader(b))
		if len(m) > bytes.Count(b, []byte("\n"))+1 {
			t.Fatalf("%d mounts from %d lines", len(m), bytes.Count(b, []byte("\n"))+1)
		}
	})
}
