package host

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/sample"
)

// sectorBytes is the unit of the sector columns of /proc/diskstats: always
// 512 bytes, whatever the device's real sector size (Documentation/block/stat.rst).
const sectorBytes = 512

// diskCounters are the cumulative /proc/diskstats columns the disk probe
// uses (Documentation/admin-guide/iostats.rst). Times are milliseconds.
type diskCounters struct {
	reads, sectorsRead, readMs   uint64
	writes, sectorsWritten, wrMs uint64
	inFlight, ioMs               uint64
}

// parseDiskstatsLine parses one line of /proc/diskstats. Kernels since 4.18
// add discard columns and 5.5 flush columns; only the first 14 are needed.
func parseDiskstatsLine(line []byte, scratch *probes.FieldBuf) (name []byte, c diskCounters, err error) {
	f := scratch.Split(line)
	if len(f) < 14 {
		return nil, c, fmt.Errorf("short diskstats line %q", line)
	}
	dst := [...]*uint64{&c.reads, nil, &c.sectorsRead, &c.readMs, &c.writes, nil, &c.sectorsWritten, &c.wrMs, &c.inFlight, &c.ioMs}
	for i, p := range dst {
		if p == nil {
			continue // merged requests
		}
		v, ok := probes.ParseUint(f[3+i])
		if !ok {
			return nil, c, fmt.Errorf("bad number %q in diskstats", f[3+i])
		}
		*p = v
	}
	return f[2], c, nil
}

// diskRates turns two readings sec seconds apart into a sample.Disk, or false
// when a counter went backwards (a wrap of the 32-bit counters of 32-bit
// kernels, or a device re-created under the same name).
func diskRates(name string, prev, cur diskCounters, sec float64) (sample.Disk, bool) {
	d := sample.Disk{Name: name, InFlight: cur.inFlight}
	if sec <= 0 || cur.reads < prev.reads || cur.writes < prev.writes ||
		cur.sectorsRead < prev.sectorsRead || cur.sectorsWritten < prev.sectorsWritten ||
		cur.readMs < prev.readMs || cur.wrMs < prev.wrMs || cur.ioMs < prev.ioMs {
		return d, false
	}
	ios := (cur.reads - prev.reads) + (cur.writes - prev.writes)
	d.ReadIOPS = float64(cur.reads-prev.reads) / sec
	d.WriteIOPS = float64(cur.writes-prev.writes) / sec
	d.ReadBytesPerSec = float64((cur.sectorsRead-prev.sectorsRead)*sectorBytes) / sec
	d.WriteBytesPerSec = float64((cur.sectorsWritten-prev.sectorsWritten)*sectorBytes) / sec
	// io_ticks counts milliseconds with at least one request in flight:
	// iostat's %util. It can run a little ahead of wall time; clamp.
	d.BusyPct = min(100, float64(cur.ioMs-prev.ioMs)/(sec*10))
	if ios > 0 {
		d.AwaitMs = probes.Ptr(float64((cur.readMs-prev.readMs)+(cur.wrMs-prev.wrMs)) / float64(ios))
	}
	return d, true
}

// DiskOptions choose which block devices are shown.
type DiskOptions struct {
	// All includes partitions and virtual devices (loop, ram, dm-).
	All bool
}

// skipVirtual says whether a device is one of the virtual kinds left out
// by default.
func skipVirtual(name []byte) bool {
	return bytes.HasPrefix(name, []byte("loop")) || bytes.HasPrefix(name, []byte("ram")) ||
		bytes.HasPrefix(name, []byte("dm-")) || bytes.HasPrefix(name, []byte("zram"))
}

type diskEntry struct {
	name  string // interned: one allocation per device, not per tick
	whole bool   // a whole device, not a partition
	c     diskCounters
	seen  uint64 // the collect round that last saw it
}

// Disk is the probe for block device throughput, busy time and latency.
type Disk struct {
	statsPath, sysBlock string
	opt                 DiskOptions
	r                   probes.FileReader
	scratch             *probes.FieldBuf
	devs                map[string]*diskEntry
	round               uint64
	prevTime            time.Time
	sysBlockExists      bool
}

// NewDisk returns the disk probe reading Proc/diskstats; it tells whole
// devices from partitions by Sys/block/NAME, which exists only for whole
// devices.
func NewDisk(r probes.Roots, opt DiskOptions) *Disk {
	r = r.WithDefaults()
	p := &Disk{
		statsPath: filepath.Join(r.Proc, "diskstats"),
		sysBlock:  filepath.Join(r.Sys, "block"),
		opt:       opt,
		scratch:   new(probes.FieldBuf),
		devs:      make(map[string]*diskEntry),
	}
	_, err := os.Stat(p.sysBlock)
	p.sysBlockExists = err == nil
	return p
}

// Name implements Probe.
func (p *Disk) Name() string { return "disk" }

// Close closes the files the probe keeps open (FileReader.ReadKept).
func (p *Disk) Close() error { return p.r.Close() }

// isWhole reports whether name is a whole device. Without /sys it falls back
// to the kernel's naming: partitions end in a digit (sda1, vda2) or pN
// (nvme0n1p1, mmcblk0p1).
func (p *Disk) isWhole(name string) bool {
	if p.sysBlockExists {
		_, err := os.Stat(filepath.Join(p.sysBlock, name))
		return err == nil
	}
	last := name[len(name)-1]
	if last < '0' || last > '9' {
		return true
	}
	for _, pre := range []string{"nvme", "mmcblk", "loop", "ram", "dm-", "md", "zram", "nbd"} {
		if len(name) > len(pre) && name[:len(pre)] == pre {
			i := len(name) - 1
			for i > 0 && name[i] >= '0' && name[i] <= '9' {
				i--
			}
			return name[i] != 'p' // nvme0n1p1 → partition, nvme0n1 → whole
		}
	}
	return false
}

// Collect implements Probe.
func (p *Disk) Collect(_ context.Context, f *sample.Frame) error {
	b, err := probes.ReadRequired(&p.r, p.statsPath)
	if err != nil {
		return err
	}
	p.round++
	sec := f.Time.Sub(p.prevTime).Seconds()
	p.prevTime = f.Time
	out := make([]sample.Disk, 0, len(p.devs))
	for len(b) > 0 {
		var line []byte
		line, b = probes.NextLine(b)
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		name, c, err := parseDiskstatsLine(line, p.scratch)
		if err != nil {
			return fmt.Errorf("parse %s: %w", p.statsPath, err)
		}
		e, ok := p.devs[string(name)]
		if !ok {
			n := string(name)
			e = &diskEntry{name: n, whole: p.isWhole(n)}
			p.devs[n] = e
			e.c, e.seen = c, p.round
			continue // no baseline yet
		}
		fresh := e.seen == p.round-1
		prev := e.c
		e.c, e.seen = c, p.round
		if !fresh || !(p.opt.All || e.whole && !skipVirtual(name)) {
			continue
		}
		if d, ok := diskRates(e.name, prev, c, sec); ok {
			out = append(out, d)
		}
	}
	// A device that disappeared is forgotten, so one that reappears under
	// the same name starts from a new baseline.
	for n, e := range p.devs {
		if e.seen != p.round {
			delete(p.devs, n)
		}
	}
	f.Disks = out
	return nil
}

// Lane implements Laned: a /proc reader, it shares the procfs worker.
func (p *Disk) Lane() string { return "procfs" }
