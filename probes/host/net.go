package host

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/sample"
)

// parseNetDevLine parses one interface line of /proc/net/dev:
// "  eth0: rxbytes rxpackets … (8 rx columns) txbytes …".
func parseNetDevLine(line []byte, scratch *probes.FieldBuf) (name []byte, rx, tx uint64, ok bool, err error) {
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return nil, 0, 0, false, nil // a header line
	}
	name = bytes.TrimSpace(line[:i])
	f := scratch.Split(line[i+1:])
	if len(f) < 9 || len(name) == 0 {
		return nil, 0, 0, false, fmt.Errorf("short net/dev line %q", line)
	}
	var okRx, okTx bool
	rx, okRx = probes.ParseUint(f[0])
	tx, okTx = probes.ParseUint(f[8])
	if !okRx || !okTx {
		return nil, 0, 0, false, fmt.Errorf("bad number in net/dev line %q", line)
	}
	return name, rx, tx, true, nil
}

type netEntry struct {
	name   string
	rx, tx uint64
	seen   uint64
}

// Net is the probe for per-interface network throughput.
type Net struct {
	path     string
	r        probes.FileReader
	scratch  *probes.FieldBuf
	ifs      map[string]*netEntry
	round    uint64
	prevTime time.Time
	opt      NetOptions
}

// NetOptions choose which interfaces are shown.
type NetOptions struct {
	// All includes the virtual interfaces left out by default: loopback
	// (lo), traffic shapers (ifb*) and container veth pairs (veth*), whose
	// traffic is counted again on a real interface or is no machine's I/O.
	All bool
}

// virtualNet says whether an interface is one of the virtual kinds left
// out by default.
func virtualNet(name []byte) bool {
	return string(name) == "lo" || bytes.HasPrefix(name, []byte("ifb")) || bytes.HasPrefix(name, []byte("veth"))
}

// NewNet returns the network probe reading procRoot/net/dev.
func NewNet(procRoot string, opt NetOptions) *Net {
	return &Net{path: filepath.Join(procRoot, "net", "dev"), scratch: new(probes.FieldBuf), ifs: make(map[string]*netEntry), opt: opt}
}

// Name implements Probe.
func (p *Net) Name() string { return "net" }

// Close closes the files the probe keeps open (FileReader.ReadKept).
func (p *Net) Close() error { return p.r.Close() }

// Collect implements Probe.
func (p *Net) Collect(_ context.Context, f *sample.Frame) error {
	b, err := probes.ReadRequired(&p.r, p.path)
	if err != nil {
		return err
	}
	p.round++
	sec := f.Time.Sub(p.prevTime).Seconds()
	p.prevTime = f.Time
	out := make([]sample.NetIf, 0, len(p.ifs))
	for len(b) > 0 {
		var line []byte
		line, b = probes.NextLine(b)
		name, rx, tx, ok, err := parseNetDevLine(line, p.scratch)
		if err != nil {
			return fmt.Errorf("parse %s: %w", p.path, err)
		}
		if !ok || (!p.opt.All && virtualNet(name)) {
			continue
		}
		e, known := p.ifs[string(name)]
		if !known {
			n := string(name)
			p.ifs[n] = &netEntry{name: n, rx: rx, tx: tx, seen: p.round}
			continue
		}
		rxRate, okRx := probes.Rate(e.rx, rx, sec)
		txRate, okTx := probes.Rate(e.tx, tx, sec)
		e.rx, e.tx, e.seen = rx, tx, p.round
		if okRx && okTx {
			out = append(out, sample.NetIf{Name: e.name, RxBytesPerSec: rxRate, TxBytesPerSec: txRate})
		}
	}
	for n, e := range p.ifs {
		if e.seen != p.round {
			delete(p.ifs, n)
		}
	}
	f.Net = out
	return nil
}

// Lane implements Laned: a /proc reader, it shares the procfs worker.
func (p *Net) Lane() string { return "procfs" }
