package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/sample"
)

// cpuTimes are the cumulative times of one cpu line of /proc/stat, in
// USER_HZ ticks (1/100 s on every Linux architecture; proc(5)). guest and
// guest_nice are left out: the kernel already counts them in user and nice.
type cpuTimes struct {
	user, nice, system, idle, iowait, irq, softirq, steal uint64
}

// procStat is what the CPU probe takes from /proc/stat.
type procStat struct {
	all          cpuTimes
	ids          []int // logical CPU number of each entry of cores
	cores        []cpuTimes
	ctxt         uint64
	procsRunning uint64
	procsBlocked uint64
}

// parseProcStat parses /proc/stat into st, reusing its slices.
func parseProcStat(b []byte, st *procStat, scratch *probes.FieldBuf) error {
	st.ids, st.cores = st.ids[:0], st.cores[:0]
	sawAll := false
	for len(b) > 0 {
		var line []byte
		line, b = probes.NextLine(b)
		// Split only the lines used: "intr" alone holds a counter per
		// interrupt, thousands on a large machine.
		if !bytes.HasPrefix(line, []byte("cpu")) && !bytes.HasPrefix(line, []byte("ctxt")) &&
			!bytes.HasPrefix(line, []byte("procs_")) {
			continue
		}
		f := scratch.Split(line)
		if len(f) < 2 {
			continue
		}
		key := f[0]
		switch {
		case bytes.HasPrefix(key, []byte("cpu")):
			if len(f) < 5 {
				return fmt.Errorf("short cpu line %q", line)
			}
			var t cpuTimes
			dst := [...]*uint64{&t.user, &t.nice, &t.system, &t.idle, &t.iowait, &t.irq, &t.softirq, &t.steal}
			for i, p := range dst {
				if i+1 >= len(f) {
					break // older kernels have fewer columns
				}
				v, ok := probes.ParseUint(f[i+1])
				if !ok {
					return fmt.Errorf("bad number %q in %q", f[i+1], line)
				}
				*p = v
			}
			if len(key) == 3 {
				st.all, sawAll = t, true
				continue
			}
			id, ok := probes.ParseUint(key[3:])
			if !ok {
				return fmt.Errorf("bad cpu name %q", key)
			}
			st.ids = append(st.ids, int(id))
			st.cores = append(st.cores, t)
		case string(key) == "ctxt":
			st.ctxt, _ = probes.ParseUint(f[1])
		case string(key) == "procs_running":
			st.procsRunning, _ = probes.ParseUint(f[1])
		case string(key) == "procs_blocked":
			st.procsBlocked, _ = probes.ParseUint(f[1])
		}
	}
	if !sawAll {
		return errors.New("no cpu line")
	}
	return nil
}

// delta is cur-prev per field, 0 where a field went backwards: iowait can
// decrease on tickless kernels (proc(5)), and that must not read as a
// negative share.
func (cur cpuTimes) delta(prev cpuTimes) cpuTimes {
	d := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	return cpuTimes{
		user: d(cur.user, prev.user), nice: d(cur.nice, prev.nice),
		system: d(cur.system, prev.system), idle: d(cur.idle, prev.idle),
		iowait: d(cur.iowait, prev.iowait), irq: d(cur.irq, prev.irq),
		softirq: d(cur.softirq, prev.softirq), steal: d(cur.steal, prev.steal),
	}
}

func (t cpuTimes) total() uint64 {
	return t.user + t.nice + t.system + t.idle + t.iowait + t.irq + t.softirq + t.steal
}

// cpuShares turns one interval's ticks into percentages. Busy is all but idle
// and iowait, as mpstat and top count it. An interval with no ticks is all
// zeros.
type cpuShares struct{ busy, user, system, iowait, steal, irq float64 }

func shares(d cpuTimes) cpuShares {
	tot := float64(d.total())
	if tot == 0 {
		return cpuShares{}
	}
	pct := func(v uint64) float64 { return 100 * float64(v) / tot }
	return cpuShares{
		busy:   pct(d.total() - d.idle - d.iowait),
		user:   pct(d.user + d.nice),
		system: pct(d.system),
		iowait: pct(d.iowait),
		steal:  pct(d.steal),
		irq:    pct(d.irq + d.softirq),
	}
}

// parseLoadavg parses /proc/loadavg: "0.52 0.58 0.59 2/1234 56789".
func parseLoadavg(b []byte, scratch *probes.FieldBuf) (l1, l5, l15 float64, err error) {
	line, _ := probes.NextLine(b)
	f := scratch.Split(line)
	if len(f) < 3 {
		return 0, 0, 0, fmt.Errorf("bad loadavg %q", line)
	}
	var ok1, ok5, ok15 bool
	l1, ok1 = probes.ParseFloat(f[0])
	l5, ok5 = probes.ParseFloat(f[1])
	l15, ok15 = probes.ParseFloat(f[2])
	if !ok1 || !ok5 || !ok15 {
		return 0, 0, 0, fmt.Errorf("bad loadavg %q", line)
	}
	return l1, l5, l15, nil
}

// CPU is the probe for host CPU use, per core and in total.
type CPU struct {
	statPath, loadPath string
	r                  probes.FileReader
	scratch            *probes.FieldBuf
	prev, cur          procStat
	prevTime           time.Time
	havePrev           bool
}

// NewCPU returns the CPU probe reading procRoot/stat and procRoot/loadavg.
func NewCPU(procRoot string) *CPU {
	return &CPU{
		statPath: filepath.Join(procRoot, "stat"),
		loadPath: filepath.Join(procRoot, "loadavg"),
		scratch:  new(probes.FieldBuf),
	}
}

// Name implements Probe.
func (p *CPU) Name() string { return "cpu" }

// Close closes the files the probe keeps open (FileReader.ReadKept).
func (p *CPU) Close() error { return p.r.Close() }

// Collect implements Probe. The first call only takes the baseline reading.
func (p *CPU) Collect(_ context.Context, f *sample.Frame) error {
	b, err := probes.ReadRequired(&p.r, p.statPath)
	if err != nil {
		return err
	}
	if err := parseProcStat(b, &p.cur, p.scratch); err != nil {
		return fmt.Errorf("parse %s: %w", p.statPath, err)
	}
	prev, havePrev, prevTime := p.prev, p.havePrev, p.prevTime
	p.prev, p.cur = p.cur, prev // swap buffers; p.cur is scratch next time
	p.havePrev, p.prevTime = true, f.Time
	if !havePrev {
		return nil
	}
	cur := &p.prev
	out := &sample.CPU{Cores: make([]sample.Core, 0, len(cur.cores))}
	s := shares(cur.all.delta(prev.all))
	out.BusyPct, out.UserPct, out.SystemPct = s.busy, s.user, s.system
	out.IowaitPct, out.StealPct, out.IRQPct = s.iowait, s.steal, s.irq
	j := 0
	for i, id := range cur.ids {
		// Both lists are in CPU order; a CPU that came online has no
		// baseline yet and is left out for one interval.
		for j < len(prev.ids) && prev.ids[j] < id {
			j++
		}
		if j >= len(prev.ids) || prev.ids[j] != id {
			continue
		}
		cs := shares(cur.cores[i].delta(prev.cores[j]))
		out.Cores = append(out.Cores, sample.Core{ID: id, BusyPct: cs.busy, UserPct: cs.user, SystemPct: cs.system, IowaitPct: cs.iowait})
	}
	out.ProcsRunning, out.ProcsBlocked = int(cur.procsRunning), int(cur.procsBlocked)
	if r, ok := probes.Rate(prev.ctxt, cur.ctxt, f.Time.Sub(prevTime).Seconds()); ok {
		out.ContextSwitchesPerSec = r
	}
	if b, err := p.r.ReadKept(p.loadPath); err == nil {
		out.Load1, out.Load5, out.Load15, _ = parseLoadavg(b, p.scratch)
	}
	f.CPU = out
	return nil
}

// Lane implements Laned: a /proc reader, it shares the procfs worker.
func (p *CPU) Lane() string { return "procfs" }
