package job

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/probes/host"

	"github.com/gpuwatch/gpuwatch/sample"
)

// The cgroup probe reads the watched job's confinement: cgroup v2's
// unified files or v1's cpu, cpuacct, cpuset and memory controllers
// (Documentation/admin-guide/cgroup-v2.rst, cgroup-v1/*.rst). Units as the
// kernel writes them: µs in cpu.max, cpu.cfs_*_us and cpu.stat's *_usec,
// ns in v1's cpuacct.usage and throttled_time, bytes for memory.

// JobOptions name the job: a process (its cgroup is the job's) or a
// cgroup path.
type JobOptions struct {
	PID    int    // the job's process
	Cgroup string // a cgroup path under the hierarchy root ("/slurm/uid_0/job_42"); wins over PID
	Source string // how it was found, for people ("--cgroup", "slurm job 42")
	// PIDOf, when set, names the job's process anew each tick (of several
	// ranks, the pacing one; 0: keep PID).
	PIDOf func() int
}

// cgroupPaths maps a v1 controller ("cpu", "memory" …) or "" (v2) to the
// process's cgroup path in it.
type cgroupPaths map[string]string

// parseProcCgroup parses /proc/PID/cgroup: "ID:controllers:path" lines;
// v2's line is "0::path", v1's name each controller ("4:cpu,cpuacct:/x").
func parseProcCgroup(b []byte) (cgroupPaths, error) {
	out := cgroupPaths{}
	for len(b) > 0 {
		var line []byte
		line, b = probes.NextLine(b)
		if len(line) == 0 {
			continue
		}
		parts := bytes.SplitN(line, []byte(":"), 3)
		if len(parts) != 3 || len(parts[2]) == 0 || parts[2][0] != '/' {
			return nil, fmt.Errorf("bad cgroup line %q", line)
		}
		path := string(parts[2])
		if len(parts[1]) == 0 {
			out[""] = path
			continue
		}
		for _, c := range bytes.Split(parts[1], []byte(",")) {
			out[string(c)] = path
		}
	}
	if len(out) == 0 {
		return nil, errors.New("empty cgroup file")
	}
	return out, nil
}

// parseCPUMax parses v2's cpu.max: "max 100000" (no quota) or
// "50000 100000" (µs of CPU per period).
func parseCPUMax(b []byte) (quota, period float64, limited bool, err error) {
	f := bytes.Fields(b)
	if len(f) != 2 {
		return 0, 0, false, fmt.Errorf("bad cpu.max %q", b)
	}
	p, ok := probes.ParseUint(f[1])
	if !ok || p == 0 {
		return 0, 0, false, fmt.Errorf("bad cpu.max period %q", b)
	}
	if string(f[0]) == "max" {
		return 0, float64(p), false, nil
	}
	q, ok := probes.ParseUint(f[0])
	if !ok {
		return 0, 0, false, fmt.Errorf("bad cpu.max quota %q", b)
	}
	return float64(q), float64(p), true, nil
}

// parseKeyValues parses "key value" lines (cpu.stat, memory.events,
// memory.stat) into a map of the keys wanted.
func parseKeyValues(b []byte, want ...string) map[string]uint64 {
	out := make(map[string]uint64, len(want))
	for len(b) > 0 {
		var line []byte
		line, b = probes.NextLine(b)
		k, v, ok := bytes.Cut(line, []byte(" "))
		if !ok {
			continue
		}
		for _, w := range want {
			if string(k) == w {
				if n, ok := probes.ParseUint(bytes.TrimSpace(v)); ok {
					out[w] = n
				}
			}
		}
	}
	return out
}

// parseCPUList parses a cpuset list ("0-3,8,10-11") into its CPU count.
func parseCPUList(b []byte) (int, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0, nil
	}
	n := 0
	for _, r := range bytes.Split(b, []byte(",")) {
		lo, hi, isRange := bytes.Cut(r, []byte("-"))
		a, ok1 := probes.ParseUint(lo)
		z := a
		ok2 := true
		if isRange {
			z, ok2 = probes.ParseUint(hi)
		}
		if !ok1 || !ok2 || z < a || z-a > 1<<16 {
			return 0, fmt.Errorf("bad cpu list %q", b)
		}
		n += int(z-a) + 1
	}
	return n, nil
}

// v1Unlimited: v1 writes "no limit" as the largest page-aligned int64.
const v1Unlimited = 1 << 62

// Cgroup is the probe for the watched job's cgroup.
type Cgroup struct {
	roots probes.Roots
	opt   JobOptions
	r     probes.FileReader
	// Counters at the previous reading, for rates.
	prev     cgroupCounters
	prevTime time.Time
	havePrev bool
	// prevCgroup is the job's cgroup at the previous reading.
	prevCgroup string
	identity   *sample.JobIdentity
	identPID   int
	identDone  bool
	v2         map[string]bool            // isV2's answer per path: a cgroup's version does not change
	affinity   func(pid int) (int, error) // CPUs the process may run on; nil: not known
	hostCores  int
	self       bool // the job is gpuwatch's own cgroup (OwnCgroup)
	// selfPID is gpuwatch's own process (OwnCgroup): the job while the
	// process followed (PIDOf) shares its cgroups, not where that process
	// lies outside them (a confined gpuwatch found another user's job).
	selfPID int
	// Where gpuwatch's cgroup namespace root lies in the tree at
	// --sys-root (resolveNS), found once; ownCgroup is its own view of
	// that root ("" : /sys/fs/cgroup).
	nsRoot, ownCgroup string
	nsErr             error
	nsDone            bool
}

type cgroupCounters struct {
	usageSec, throttledSec float64
	periods, throttled     uint64
	// usageWhy says why usageSec is not the job's CPU (then unread).
	usageWhy string
}

// NewCgroup returns the cgroup probe for the job opt names.
func NewCgroup(r probes.Roots, opt JobOptions) *Cgroup {
	return &Cgroup{roots: r.WithDefaults(), opt: opt, affinity: schedAffinity}
}

// Name implements Probe.
func (p *Cgroup) Name() string { return "job" }

// Lane implements Laned: cgroupfs reads are cheap file reads, like procfs.
func (p *Cgroup) Lane() string { return "procfs" }

// Collect implements Probe.
func (p *Cgroup) Collect(_ context.Context, f *sample.Frame) error {
	if p.opt.PIDOf != nil {
		if pid := p.followed(); pid != 0 && pid != p.opt.PID {
			p.opt.PID, p.havePrev = pid, false // another process: rates start over
		}
		if p.opt.PID == 0 && p.opt.Cgroup == "" {
			return nil // no loader found yet
		}
	}
	paths, source, err := p.paths()
	if err != nil {
		return err
	}
	self := p.self && p.opt.PID == p.selfPID
	if p.self && !self {
		source = "pid " + strconv.Itoa(p.opt.PID)
	}
	if p.opt.Cgroup == "" && isRootCgroup(paths) {
		// The whole machine is no job: its limits are the host's.
		return probes.Unavailable("no job cgroup (root): the process runs in the root cgroup, so the machine's limits apply")
	}
	j := &sample.Job{Source: source, Self: self}
	var cur cgroupCounters
	if v2, ok := paths[""]; ok && p.isV2(v2) && paths["cpu"] == "" && paths["memory"] == "" {
		j.CgroupVersion, j.Cgroup = 2, v2
		cur, err = p.readV2(j, filepath.Join(p.roots.Sys, "fs/cgroup", v2))
	} else {
		j.CgroupVersion, j.Cgroup = 1, v1Name(paths)
		cur, err = p.readV1(j, paths)
	}
	if err != nil {
		return err
	}
	p.capacity(j)
	if p.havePrev && (j.Cgroup != p.prevCgroup || cur.usageWhy != p.prev.usageWhy) {
		// Another cgroup, or its count now the job's or no longer (a task
		// moved from cpuacct's root into its own): the counters are not
		// one series, and a difference would be tens of cores.
		p.havePrev = false
	}
	if p.havePrev {
		if sec := f.Time.Sub(p.prevTime).Seconds(); sec > 0 && cur.usageSec >= p.prev.usageSec && cur.periods >= p.prev.periods &&
			cur.throttled >= p.prev.throttled && cur.throttledSec >= p.prev.throttledSec {
			if cur.usageWhy == "" {
				used := (cur.usageSec - p.prev.usageSec) / sec
				j.CPUUsedCores = &used
			}
			ts := (cur.throttledSec - p.prev.throttledSec) / sec
			j.ThrottledSecPerSec = &ts
			if dp := cur.periods - p.prev.periods; dp > 0 {
				share := float64(cur.throttled-p.prev.throttled) / float64(dp)
				j.ThrottledPeriodsShare = &share
			}
		}
	}
	j.CPUUsedWhy = cur.usageWhy
	p.prev, p.prevTime, p.havePrev, p.prevCgroup = cur, f.Time, true, j.Cgroup
	j.Identity = p.identityOf(j.Cgroup, paths)
	f.Job = j
	return nil
}

// v1Name names a v1 job's cgroup by the controllers that confine it:
// the path of cpu, cpuset and memory that is not the root, or each
// controller's where they differ ("cpuset:/a memory:/b"); "/" where all
// are the root. A job a scheduler confines in its cpuset or memory alone
// (Slurm's task/cgroup) was named by its cpu controller's path, "/".
func v1Name(paths cgroupPaths) string {
	var parts []string
	first := ""
	for _, ctl := range []string{"cpu", "cpuset", "memory"} {
		if c, ok := paths[ctl]; ok && c != "/" && c != "" {
			if first == "" {
				first = c
			}
			parts = append(parts, ctl+":"+c)
		}
	}
	for _, part := range parts {
		if !strings.HasSuffix(part, ":"+first) {
			return strings.Join(parts, " ")
		}
	}
	if first == "" {
		return "/"
	}
	return first
}

// isRootCgroup says whether a process's cgroups are the root in every
// controller it names (v2's unified path, v1's cpu and memory).
func isRootCgroup(paths cgroupPaths) bool {
	named := 0
	for _, ctl := range []string{"", "cpu", "cpuset", "memory"} {
		if c, ok := paths[ctl]; ok {
			if c != "/" {
				return false
			}
			named++
		}
	}
	return named > 0
}

// OwnCgroup returns the probe for the cgroup of process pid — gpuwatch
// itself — when that cgroup confines it: a CPU quota, a cpuset of fewer
// CPUs than the host has, or a memory limit (a container, a Slurm step).
// Inside one, the visible processes share those limits, so they are the
// job's terms; the frames' job says so (Self). It is nil when pid runs
// unconfined or its cgroup cannot be read.
func OwnCgroup(r probes.Roots, pid int) *Cgroup {
	p := NewCgroup(r, JobOptions{PID: pid, Source: "gpuwatch's own cgroup"})
	f := &sample.Frame{Time: time.Now()}
	if err := p.Collect(context.Background(), f); err != nil {
		return nil
	}
	j := f.Job
	cpus, err := parseCPUList([]byte(j.CPUSet))
	if j.CPUQuotaCores == nil && j.MemLimitBytes == nil && j.MemHighBytes == nil && (err != nil || cpus == 0 || cpus >= p.hostCores) {
		return nil
	}
	p.self, p.selfPID = true, pid
	return p
}

// Following sets the process the job follows when it is found (the
// pacing rank's, the training process the loop samples), for the probe
// of gpuwatch's own cgroup (OwnCgroup): that process's cgroup is the job
// where it lies outside gpuwatch's, whose limits do not bind it.
func (p *Cgroup) Following(focus func() int) *Cgroup {
	p.opt.PIDOf = focus
	return p
}

// followed is the process PIDOf names, or, for the probe of gpuwatch's
// own cgroup, gpuwatch itself while that process shares its cgroups
// (or none is found).
func (p *Cgroup) followed() int {
	pid := p.opt.PIDOf()
	if p.selfPID == 0 {
		return pid
	}
	if pid == 0 || pid == p.selfPID {
		return p.selfPID
	}
	mine, err1 := p.procCgroup(p.selfPID)
	theirs, err2 := p.procCgroup(pid)
	if err1 != nil || err2 != nil || within(theirs, mine) {
		return p.selfPID
	}
	return pid
}

// procCgroup is process pid's cgroup paths.
func (p *Cgroup) procCgroup(pid int) (cgroupPaths, error) {
	b, err := p.r.Read(filepath.Join(p.roots.Proc, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return nil, err
	}
	return parseProcCgroup(b)
}

// within says a process with cgroups theirs runs under the limits of the
// cgroups outer: in each controller that confines (v2's unified path;
// v1's cpu, cpuacct, cpuset, memory) its path is outer's or below it.
// Other lines (name=systemd, a hybrid's unified line) say nothing of it.
func within(theirs, outer cgroupPaths) bool {
	ctls := []string{"cpu", "cpuacct", "cpuset", "memory"}
	if _, v1 := outer["cpu"]; !v1 {
		if _, v1 = outer["memory"]; !v1 {
			ctls = []string{""} // v2 alone: its unified path
		}
	}
	for _, ctl := range ctls {
		o, ok := outer[ctl]
		if !ok {
			continue
		}
		t := theirs[ctl]
		if t != o && !strings.HasPrefix(t, strings.TrimSuffix(o, "/")+"/") {
			return false
		}
	}
	return true
}

// paths finds the job's cgroups: the named one in every controller, or
// the process's.
func (p *Cgroup) paths() (cgroupPaths, string, error) {
	if c := p.opt.Cgroup; c != "" {
		if !strings.HasPrefix(c, "/") {
			c = "/" + c
		}
		src := p.opt.Source
		if src == "" {
			src = "--cgroup " + c
		}
		out := cgroupPaths{"": c}
		for _, ctl := range []string{"cpu", "cpuacct", "cpuset", "memory"} {
			out[ctl] = c
		}
		if p.isV2(c) {
			out = cgroupPaths{"": c}
		}
		return out, src, nil
	}
	if p.opt.PID == 0 {
		return nil, "", probes.Unavailable("no job: give --pid, --cgroup or attach to a loader")
	}
	b, err := p.r.Read(filepath.Join(p.roots.Proc, strconv.Itoa(p.opt.PID), "cgroup"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("process %d has exited", p.opt.PID)
		}
		return nil, "", probes.Unavailable("cannot read the cgroup of process %d: %v", p.opt.PID, err)
	}
	paths, err := parseProcCgroup(b)
	if err != nil {
		return nil, "", err
	}
	if err := p.resolveNS(paths); err != nil {
		return nil, "", err
	}
	src := p.opt.Source
	if src == "" {
		src = "pid " + strconv.Itoa(p.opt.PID)
	}
	return paths, src, nil
}

// isV2 says whether path is a cgroup of a v2 hierarchy with controllers
// (the unified mount at /sys/fs/cgroup).
func (p *Cgroup) isV2(path string) bool {
	if v, ok := p.v2[path]; ok {
		return v
	}
	_, err := p.r.Read(filepath.Join(p.roots.Sys, "fs/cgroup", path, "cgroup.controllers"))
	if err == nil {
		_, err = p.r.Read(filepath.Join(p.roots.Sys, "fs/cgroup", path, "cpu.stat"))
	}
	if p.v2 == nil || len(p.v2) > 64 {
		p.v2 = map[string]bool{}
	}
	p.v2[path] = err == nil
	return err == nil
}

func (p *Cgroup) readV2(j *sample.Job, dir string) (cgroupCounters, error) {
	var c cgroupCounters
	read := func(name string) []byte {
		b, err := p.r.Read(filepath.Join(dir, name))
		if err != nil {
			return nil
		}
		return bytes.Clone(b)
	}
	st := read("cpu.stat")
	if st == nil {
		return c, probes.Unavailable("no cgroup at %s", dir)
	}
	kv := parseKeyValues(st, "usage_usec", "nr_periods", "nr_throttled", "throttled_usec")
	c.usageSec, c.throttledSec = float64(kv["usage_usec"])/1e6, float64(kv["throttled_usec"])/1e6
	c.periods, c.throttled = kv["nr_periods"], kv["nr_throttled"]
	if b := read("cpu.max"); b != nil {
		if q, per, limited, err := parseCPUMax(b); err == nil && limited {
			cores := q / per
			j.CPUQuotaCores, j.CPUQuotaUs, j.CPUPeriodUs = &cores, &q, &per
		}
	}
	if b := read("cpuset.cpus.effective"); b != nil {
		j.CPUSet = string(bytes.TrimSpace(b))
	}
	j.MemLimitBytes = limitBytes(read("memory.max"))
	j.MemHighBytes = limitBytes(read("memory.high"))
	j.MemUsedBytes = limitBytes(read("memory.current"))
	j.SwapUsedBytes = limitBytes(read("memory.swap.current"))
	if kv := parseKeyValues(read("memory.stat"), "file"); len(kv) > 0 {
		j.MemFileBytes = probes.Ptr(kv["file"])
	}
	if b := read("memory.events"); b != nil {
		ev := parseKeyValues(b, "high", "max", "oom", "oom_kill")
		j.MemEvents = &sample.MemEvents{High: ev["high"], Max: ev["max"], OOM: ev["oom"], OOMKill: ev["oom_kill"]}
	}
	psi := &sample.PSI{}
	for _, r := range []struct {
		file string
		dst  **sample.Pressure
	}{{"cpu.pressure", &psi.CPU}, {"io.pressure", &psi.IO}, {"memory.pressure", &psi.Memory}} {
		if b := read(r.file); b != nil {
			if some, full, haveFull, err := host.ParsePressure(b, new(probes.FieldBuf)); err == nil {
				pr := &sample.Pressure{SomeAvg10: some.Avg10}
				if haveFull {
					pr.FullAvg10 = &full.Avg10
				}
				*r.dst = pr
			}
		}
	}
	if psi.CPU != nil || psi.IO != nil || psi.Memory != nil {
		j.PSI = psi
	}
	if b := read("io.max"); b != nil {
		for len(b) > 0 && len(j.IOMax) < 64 {
			var line []byte
			line, b = probes.NextLine(b)
			if l := strings.TrimSpace(string(line)); l != "" {
				j.IOMax = append(j.IOMax, l)
			}
		}
	}
	return c, nil
}

func (p *Cgroup) readV1(j *sample.Job, paths cgroupPaths) (cgroupCounters, error) {
	var c cgroupCounters
	base := filepath.Join(p.roots.Sys, "fs/cgroup")
	read := func(ctl, name string) []byte {
		path, ok := paths[ctl]
		if !ok {
			return nil
		}
		// A v1 controller may be mounted alone ("cpu") or with its sibling
		// ("cpu,cpuacct").
		for _, mount := range []string{ctl, "cpu,cpuacct", "cpuacct,cpu"} {
			if b, err := p.r.Read(filepath.Join(base, mount, path, name)); err == nil {
				return bytes.Clone(b)
			}
			if ctl != "cpu" && ctl != "cpuacct" {
				break
			}
		}
		return nil
	}
	found := false
	if b := read("cpu", "cpu.stat"); b != nil {
		found = true
		kv := parseKeyValues(b, "nr_periods", "nr_throttled", "throttled_time")
		c.periods, c.throttled, c.throttledSec = kv["nr_periods"], kv["nr_throttled"], float64(kv["throttled_time"])/1e9
	}
	q, okQ := parseInt(read("cpu", "cpu.cfs_quota_us"))
	per, okP := parseInt(read("cpu", "cpu.cfs_period_us"))
	if okQ && okP && q > 0 && per > 0 {
		cores, qf, pf := float64(q)/float64(per), float64(q), float64(per)
		j.CPUQuotaCores, j.CPUQuotaUs, j.CPUPeriodUs = &cores, &qf, &pf
	}
	if acct, confined := paths["cpuacct"], v1Name(paths); acct == "/" && confined != "/" {
		// cpuacct mounted on its own with the job in its root: its usage
		// is the whole machine's (it read "used 1.4" beside a quota of
		// 0.5), not the job's.
		c.usageWhy = "the job is in cpuacct's root cgroup (cgroup v1, cpuacct apart from the controllers that confine it: " + confined + "), which counts the whole machine's CPU"
	} else if u, ok := parseInt(read("cpuacct", "cpuacct.usage")); ok {
		found = true
		c.usageSec = float64(u) / 1e9
	}
	cs := read("cpuset", "cpuset.effective_cpus")
	if len(bytes.TrimSpace(cs)) == 0 {
		cs = read("cpuset", "cpuset.cpus")
	}
	j.CPUSet = string(bytes.TrimSpace(cs))
	if j.CPUSet != "" && paths["cpuset"] != "/" {
		found = true // a job its cpuset alone confines
	}
	if lim := limitBytes(read("memory", "memory.limit_in_bytes")); lim != nil {
		found = true
		j.MemLimitBytes = lim
	}
	j.MemUsedBytes = limitBytes(read("memory", "memory.usage_in_bytes"))
	if b := read("memory", "memory.stat"); b != nil {
		kv := parseKeyValues(b, "swap", "cache")
		if sw, ok := kv["swap"]; ok {
			j.SwapUsedBytes = &sw
		}
		if c, ok := kv["cache"]; ok {
			j.MemFileBytes = &c
		}
	}
	fail, okF := parseInt(read("memory", "memory.failcnt"))
	oom := parseKeyValues(read("memory", "memory.oom_control"), "oom_kill")
	if okF || len(oom) > 0 {
		j.MemEvents = &sample.MemEvents{Max: uint64(max(fail, 0)), OOMKill: oom["oom_kill"]}
	}
	if !found {
		return c, probes.Unavailable("no cgroup controllers for the job (%s)", v1Name(paths))
	}
	return c, nil
}

// capacity sets the CPUs the job may run on and its CPU capacity.
func (p *Cgroup) capacity(j *sample.Job) {
	if p.hostCores == 0 {
		if b, err := p.r.Read(filepath.Join(p.roots.Proc, "stat")); err == nil {
			for len(b) > 0 {
				var line []byte
				line, b = probes.NextLine(b)
				if len(line) > 3 && bytes.HasPrefix(line, []byte("cpu")) && line[3] >= '0' && line[3] <= '9' {
					p.hostCores++
				}
			}
		}
	}
	n := p.hostCores
	if c, err := parseCPUList([]byte(j.CPUSet)); err == nil && c > 0 {
		n = c
	}
	if p.affinity != nil && p.opt.PID > 0 && p.roots.Proc == "/proc" {
		if a, err := p.affinity(p.opt.PID); err == nil && a > 0 {
			n = min(n, a)
		}
	}
	j.AllowedCPUs = n
	j.CPUCapacityCores = float64(n)
	if q := j.CPUQuotaCores; q != nil && *q < j.CPUCapacityCores {
		j.CPUCapacityCores = *q
	}
}

// limitBytes parses a memory file: a byte count, or "max" / v1's
// huge "no limit" (nil).
func limitBytes(b []byte) *uint64 {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "max" {
		return nil
	}
	n, ok := probes.ParseUint(b)
	if !ok || n >= v1Unlimited {
		return nil
	}
	return &n
}

func parseInt(b []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	return n, err == nil
}

// SlurmJobCgroup finds a Slurm job's cgroup under sysRoot/fs/cgroup:
// slurmd's v1 layout (/slurm/uid_U/job_J in the cpu controller) or v2's
// (…/slurmstepd.scope/job_J). The path returned is relative to the
// hierarchy root.
func SlurmJobCgroup(sysRoot, job string) (string, error) {
	if _, err := strconv.ParseUint(job, 10, 64); err != nil {
		return "", fmt.Errorf("%q is not a job ID", job)
	}
	root := filepath.Join(sysRoot, "fs/cgroup")
	patterns := []string{
		"cpu/slurm*/uid_*/job_" + job, "cpu,cpuacct/slurm*/uid_*/job_" + job, "memory/slurm*/uid_*/job_" + job,
		"system.slice/slurmstepd.scope/job_" + job, "*/system.slice/slurmstepd.scope/job_" + job, "slurm*/uid_*/job_" + job,
	}
	for _, p := range patterns {
		m, _ := filepath.Glob(filepath.Join(root, p))
		if len(m) == 0 {
			continue
		}
		rel, _ := filepath.Rel(root, m[0])
		if first, rest, ok := strings.Cut(rel, "/"); ok && (first == "cpu" || first == "cpu,cpuacct" || first == "memory") {
			rel = rest // a v1 controller's mount: the path is below it
		}
		return "/" + rel, nil
	}
	return "", fmt.Errorf("no cgroup of job %s under %s (is it running on this node?)", job, root)
}
