package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/sample"
)

// meminfo holds the /proc/meminfo fields the memory probe uses, in bytes
// (the file says kB and means KiB; proc(5)).
type meminfo struct {
	total, free, available, cached, swapTotal, swapFree uint64
	haveAvailable                                       bool
}

func parseMeminfo(b []byte, scratch *probes.FieldBuf) (meminfo, error) {
	var m meminfo
	for len(b) > 0 {
		var line []byte
		line, b = probes.NextLine(b)
		f := scratch.Split(line)
		if len(f) < 2 {
			continue
		}
		var dst *uint64
		switch string(f[0]) {
		case "MemTotal:":
			dst = &m.total
		case "MemFree:":
			dst = &m.free
		case "MemAvailable:":
			dst, m.haveAvailable = &m.available, true
		case "Cached:":
			dst = &m.cached
		case "SwapTotal:":
			dst = &m.swapTotal
		case "SwapFree:":
			dst = &m.swapFree
		default:
			continue
		}
		v, ok := probes.ParseUint(f[1])
		if !ok {
			return m, fmt.Errorf("bad number in %q", line)
		}
		if len(f) > 2 && string(f[2]) == "kB" {
			v *= 1024
		}
		*dst = v
	}
	if m.total == 0 {
		return m, errors.New("no MemTotal")
	}
	if !m.haveAvailable {
		// Kernels before 3.14 lack MemAvailable; free memory is the
		// conservative stand-in.
		m.available = m.free
	}
	return m, nil
}

// vmstat holds the /proc/vmstat counters the memory probe turns into rates.
type vmstat struct {
	pswpin, pswpout, pgmajfault uint64
	// pgstealFile and refaultFile: file pages reclaimed, and reclaimed
	// pages read back (workingset_refault_file; workingset_refault before
	// Linux 5.9). haveSteal and haveRefault say the kernel has them.
	pgstealFile, refaultFile uint64
	haveSteal, haveRefault   bool
}

func parseVmstat(b []byte, scratch *probes.FieldBuf) vmstat {
	var v vmstat
	for len(b) > 0 {
		var line []byte
		line, b = probes.NextLine(b)
		f := scratch.Split(line)
		if len(f) != 2 {
			continue
		}
		switch string(f[0]) {
		case "pswpin":
			v.pswpin, _ = probes.ParseUint(f[1])
		case "pswpout":
			v.pswpout, _ = probes.ParseUint(f[1])
		case "pgmajfault":
			v.pgmajfault, _ = probes.ParseUint(f[1])
		case "pgsteal_file":
			v.pgstealFile, v.haveSteal = probes.ParseUint(f[1])
		case "workingset_refault_file", "workingset_refault":
			v.refaultFile, v.haveRefault = probes.ParseUint(f[1])
		}
	}
	return v
}

// Mem is the probe for host memory and swap activity.
type Mem struct {
	meminfoPath, vmstatPath string
	r                       probes.FileReader
	scratch                 *probes.FieldBuf
	prev                    vmstat
	prevTime                time.Time
	havePrev                bool
}

// NewMem returns the memory probe reading procRoot/meminfo and procRoot/vmstat.
func NewMem(procRoot string) *Mem {
	return &Mem{
		meminfoPath: filepath.Join(procRoot, "meminfo"),
		vmstatPath:  filepath.Join(procRoot, "vmstat"),
		scratch:     new(probes.FieldBuf),
	}
}

// Name implements Probe.
func (p *Mem) Name() string { return "mem" }

// Close closes the files the probe keeps open (FileReader.ReadKept).
func (p *Mem) Close() error { return p.r.Close() }

// Collect implements Probe. Used memory is total minus available, as free(1)
// counts it since procps-ng 3.3.10.
func (p *Mem) Collect(_ context.Context, f *sample.Frame) error {
	b, err := probes.ReadRequired(&p.r, p.meminfoPath)
	if err != nil {
		return err
	}
	m, err := parseMeminfo(b, p.scratch)
	if err != nil {
		return fmt.Errorf("parse %s: %w", p.meminfoPath, err)
	}
	out := &sample.Mem{
		TotalBytes:     m.total,
		AvailableBytes: m.available,
		CachedBytes:    m.cached,
		SwapTotalBytes: m.swapTotal,
	}
	if m.total > m.available {
		out.UsedBytes = m.total - m.available
	}
	if m.swapTotal > m.swapFree {
		out.SwapUsedBytes = m.swapTotal - m.swapFree
	}
	if b, err := p.r.ReadKept(p.vmstatPath); err == nil {
		cur := parseVmstat(b, p.scratch)
		if p.havePrev {
			sec := f.Time.Sub(p.prevTime).Seconds()
			if r, ok := probes.Rate(p.prev.pswpin, cur.pswpin, sec); ok {
				out.SwapInPagesPerSec = probes.Ptr(r)
			}
			if r, ok := probes.Rate(p.prev.pswpout, cur.pswpout, sec); ok {
				out.SwapOutPagesPerSec = probes.Ptr(r)
			}
			if r, ok := probes.Rate(p.prev.pgmajfault, cur.pgmajfault, sec); ok {
				out.MajorFaultsPerSec = probes.Ptr(r)
			}
			if r, ok := probes.Rate(p.prev.pgstealFile, cur.pgstealFile, sec); ok && cur.haveSteal && p.prev.haveSteal {
				out.FileStealPagesPerSec = probes.Ptr(r)
			}
			if r, ok := probes.Rate(p.prev.refaultFile, cur.refaultFile, sec); ok && cur.haveRefault && p.prev.haveRefault {
				out.FileRefaultsPerSec = probes.Ptr(r)
			}
		}
		p.prev, p.prevTime, p.havePrev = cur, f.Time, true
	}
	f.Mem = out
	return nil
}

// Lane implements Laned: a /proc reader, it shares the procfs worker.
func (p *Mem) Lane() string { return "procfs" }
