package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/sample"
)

// PSILine is one line of a /proc/pressure file:
// "some avg10=0.12 avg60=0.05 avg300=0.01 total=123456" (total in µs;
// Documentation/accounting/psi.rst).
type PSILine struct {
	Avg10   float64
	TotalUs uint64
}

// ParsePressure parses a /proc/pressure/{cpu,io,memory} file. full is false
// where the kernel prints no "full" line (cpu before Linux 5.13).
func ParsePressure(b []byte, scratch *probes.FieldBuf) (some, full PSILine, haveFull bool, err error) {
	haveSome := false
	for len(b) > 0 {
		var line []byte
		line, b = probes.NextLine(b)
		f := scratch.Split(line)
		if len(f) < 5 {
			continue
		}
		var l PSILine
		var okAvg, okTotal bool
		for _, kv := range f[1:] {
			k, v, found := bytes.Cut(kv, []byte("="))
			if !found {
				continue
			}
			switch string(k) {
			case "avg10":
				l.Avg10, okAvg = probes.ParseFloat(v)
			case "total":
				l.TotalUs, okTotal = probes.ParseUint(v)
			}
		}
		if !okAvg || !okTotal {
			return some, full, false, fmt.Errorf("bad pressure line %q", line)
		}
		switch string(f[0]) {
		case "some":
			some, haveSome = l, true
		case "full":
			full, haveFull = l, true
		}
	}
	if !haveSome {
		return some, full, false, errors.New("no \"some\" line")
	}
	return some, full, haveFull, nil
}

type psiPrev struct {
	some, full PSILine
	ok         bool
}

// PSI is the probe for pressure stall information (cpu, io, memory).
type PSI struct {
	paths    [3]string
	r        probes.FileReader
	scratch  *probes.FieldBuf
	prev     [3]psiPrev
	prevTime time.Time
}

// NewPSI returns the PSI probe reading procRoot/pressure/*.
func NewPSI(procRoot string) *PSI {
	p := &PSI{scratch: new(probes.FieldBuf)}
	for i, n := range [...]string{"cpu", "io", "memory"} {
		p.paths[i] = filepath.Join(procRoot, "pressure", n)
	}
	return p
}

// Name implements Probe.
func (p *PSI) Name() string { return "psi" }

// Close closes the files the probe keeps open (FileReader.ReadKept).
func (p *PSI) Close() error { return p.r.Close() }

// Collect implements Probe. Missing PSI (a kernel before 4.20, or one booted
// with psi=0, which answers EOPNOTSUPP) is unavailable, not an error.
func (p *PSI) Collect(_ context.Context, f *sample.Frame) error {
	sec := f.Time.Sub(p.prevTime).Seconds()
	p.prevTime = f.Time
	out := &sample.PSI{}
	dst := [...]**sample.Pressure{&out.CPU, &out.IO, &out.Memory}
	got := 0
	for i, path := range p.paths {
		b, err := p.r.ReadKept(path)
		if err != nil {
			p.prev[i].ok = false
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, fs.ErrPermission) {
				continue
			}
			return err
		}
		some, full, haveFull, err := ParsePressure(b, p.scratch)
		if err != nil {
			p.prev[i].ok = false
			return fmt.Errorf("parse %s: %w", path, err)
		}
		pr := &sample.Pressure{SomeAvg10: some.Avg10}
		if haveFull {
			pr.FullAvg10 = probes.Ptr(full.Avg10)
		}
		if prev := p.prev[i]; prev.ok && sec > 0 {
			// The total counters are µs of stall; their rate over the
			// interval is the share of wall time stalled.
			if r, ok := probes.Rate(prev.some.TotalUs, some.TotalUs, sec); ok {
				pr.SomePct = probes.Ptr(min(100, r/1e4))
			}
			if r, ok := probes.Rate(prev.full.TotalUs, full.TotalUs, sec); ok && haveFull {
				pr.FullPct = probes.Ptr(min(100, r/1e4))
			}
		}
		p.prev[i] = psiPrev{some: some, full: full, ok: true}
		*dst[i] = pr
		got++
	}
	if got == 0 {
		return probes.Unavailable("no %s: kernel without PSI (needs Linux 4.20+ and psi=1)", filepath.Dir(p.paths[0]))
	}
	f.PSI = out
	return nil
}

// Lane implements Laned: a /proc reader, it shares the procfs worker.
func (p *PSI) Lane() string { return "procfs" }
