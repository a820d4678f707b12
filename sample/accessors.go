package sample

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// These accessors are the one place where a frame's figures are reduced to
// the levels that diagnosis, reports, the exporter and headless lines
// show: a chart and the verdict it explains read the same number.

// JudgedGPU says whether GPU i counts for the verdict: the job's GPUs
// where the frame names them, else every GPU that is not lost.
func (f *Frame) JudgedGPU(i int) bool {
	g := &f.GPUs[i]
	return !g.Lost && (f.JobGPUs == "" || g.Job)
}

// GPUUtil is the mean utilization (0–100) over the frame's judged GPUs
// (JudgedGPU: the job's where known) that report one; ok is false when
// none does.
func (f *Frame) GPUUtil() (pct float64, ok bool) {
	var sum float64
	n := 0
	for i := range f.GPUs {
		if g := &f.GPUs[i]; f.JudgedGPU(i) && g.UtilPct != nil {
			sum += *g.UtilPct
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// GPUUtilMax is the busiest judged GPU's utilization; ok is false when
// no judged GPU reports one. Beside GPUUtil's mean it tells one busy GPU
// among idle ones (a node whose job's GPUs were not told) from all of
// them idle.
func (f *Frame) GPUUtilMax() (pct float64, ok bool) {
	for i := range f.GPUs {
		if g := &f.GPUs[i]; f.JudgedGPU(i) && g.UtilPct != nil && (!ok || *g.UtilPct > pct) {
			pct, ok = *g.UtilPct, true
		}
	}
	return pct, ok
}

// PCIeRxShare is the largest share of its PCIe link's bandwidth that a
// judged GPU received (host-to-device) in the interval, and that GPU's
// index and link; ok is false when no GPU reports both.
func (f *Frame) PCIeRxShare() (share float64, gpu int, link string, ok bool) {
	for i := range f.GPUs {
		g := &f.GPUs[i]
		if !f.JudgedGPU(i) || g.PCIeRxBytesPerSec == nil || g.PCIeLinkBytesPerSec == nil || *g.PCIeLinkBytesPerSec <= 0 {
			continue
		}
		if s := *g.PCIeRxBytesPerSec / *g.PCIeLinkBytesPerSec; !ok || s > share {
			share, gpu, link, ok = s, g.Index, g.PCIeLink, true
		}
	}
	return share, gpu, link, ok
}

// GPUSMActivity is the mean GPM SM activity (0–100) over the judged GPUs
// that report it; ok is false when none does (no GPM: before Hopper).
func (f *Frame) GPUSMActivity() (pct float64, ok bool) {
	return f.GPUGPM(func(m *GPM) *float64 { return m.SMActivityPct })
}

// GPUGPM is the mean, over the judged GPUs (JudgedGPU) whose GPM has it,
// of the GPM reading pick returns; ok is false when none has it.
func (f *Frame) GPUGPM(pick func(*GPM) *float64) (pct float64, ok bool) {
	var sum float64
	n := 0
	for i := range f.GPUs {
		if g := &f.GPUs[i]; f.JudgedGPU(i) && g.GPM != nil {
			if v := pick(g.GPM); v != nil {
				sum += *v
				n++
			}
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// GPUBand is the mean, over the judged GPUs (JudgedGPU) that have driver
// samples, of each one's p5 and p95 within the interval: a sawtooth shows
// as a low p5 under a high p95. ok is false when no GPU has samples.
func (f *Frame) GPUBand() (p5, p95 float64, ok bool) {
	n := 0
	for i := range f.GPUs {
		if g := &f.GPUs[i]; f.JudgedGPU(i) && g.UtilSamples != nil {
			p5 += g.UtilSamples.P5
			p95 += g.UtilSamples.P95
			n++
		}
	}
	if n == 0 {
		return 0, 0, false
	}
	return p5 / float64(n), p95 / float64(n), true
}

// BusiestDisk is the disk with the highest busy % (the first of equals);
// ok is false when the frame has no disk.
func (f *Frame) BusiestDisk() (d Disk, ok bool) {
	for i := range f.Disks {
		if !ok || f.Disks[i].BusyPct > d.BusyPct {
			d, ok = f.Disks[i], true
		}
	}
	return d, ok
}

// Some is the share of time (0–100) some task stalled on the resource: the
// last interval's, else — on the first reading, before there is an
// interval — the kernel's 10 s average. ok is false for a nil Pressure
// (the kernel does not report the resource).
func (p *Pressure) Some() (pct float64, ok bool) {
	if p == nil {
		return 0, false
	}
	if p.SomePct != nil {
		return *p.SomePct, true
	}
	return p.SomeAvg10, true
}

// Summary is the job in one line for views and reports: who it is, what
// its cgroup lets it use and what it used — "slurm job 42 step 0 rank 1 ·
// cgroup v1 /slurm/… · 0.49 of 0.5 CPU (quota), throttled 96 % · memory
// 511MiB of 512MiB". Names are outside input: Printable is applied.
func (j *Job) Summary() string {
	if j == nil {
		return ""
	}
	var parts []string
	if id := j.Identity; id != nil {
		var who []string
		if id.SlurmJob != "" {
			who = append(who, "slurm job "+id.SlurmJob)
			if id.SlurmStep != "" {
				who = append(who, "step "+id.SlurmStep)
			}
		}
		if id.Pod != "" || id.PodUID != "" {
			pod := id.Pod
			if pod == "" {
				pod = id.PodUID
			}
			if id.Namespace != "" {
				pod = id.Namespace + "/" + pod
			}
			who = append(who, "pod "+pod)
		}
		if id.Rank != "" {
			r := "rank " + id.Rank
			if id.WorldSize != "" {
				r += " of " + id.WorldSize
			}
			who = append(who, r)
		} else if id.SlurmRank != "" {
			who = append(who, "rank "+id.SlurmRank)
		}
		if len(who) > 0 {
			parts = append(parts, strings.Join(who, " "))
		}
	}
	cg := fmt.Sprintf("cgroup v%d %s", j.CgroupVersion, j.Cgroup)
	if j.Self {
		cg = "gpuwatch's own " + cg + " (it runs confined: these limits are the job's)"
	}
	parts = append(parts, cg)
	cpu := fmt.Sprintf("may use %s CPU", FormatCPUs(j.CPUCapacityCores))
	if j.CPUUsedCores != nil {
		cpu = fmt.Sprintf("%s of %s CPU", FormatCPUs(*j.CPUUsedCores), FormatCPUs(j.CPUCapacityCores))
	}
	if j.CPUQuotaCores != nil && *j.CPUQuotaCores <= j.CPUCapacityCores {
		cpu += " (quota)"
	} else if j.CPUSet != "" {
		cpu += " (cpuset " + j.CPUSet + ")"
	}
	if t := j.ThrottledPeriodsShare; t != nil && *t > 0 {
		cpu += fmt.Sprintf(", throttled %.0f %%", 100**t)
	}
	parts = append(parts, cpu)
	if j.MemLimitBytes != nil && j.MemUsedBytes != nil {
		parts = append(parts, fmt.Sprintf("memory %s of %s", FormatBytes(float64(*j.MemUsedBytes)), FormatBytes(float64(*j.MemLimitBytes))))
	}
	return Printable(strings.Join(parts, " · "))
}

// FormatCPUs is a count of CPUs or cores, to a hundredth: "0.51", "2",
// "128" (where %.2g wrote "1.3e+02").
func FormatCPUs(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// ShiftTimes adds d to every time the frame holds: its own, its target's
// exit, its ranks' and loader's disconnections, a slow rank's read, its
// settings' reading and its profile's: a recording read across its
// clock's step back (recording.Read) moves them all alike.
func (f *Frame) ShiftTimes(d time.Duration) {
	if d == 0 {
		return
	}
	shift := func(t *time.Time) {
		if t != nil && !t.IsZero() {
			*t = t.Add(d)
		}
	}
	shift(&f.Time)
	if f.Target != nil {
		shift(f.Target.ExitedAt)
	}
	for i := range f.Ranks {
		shift(f.Ranks[i].DisconnectedSince)
		shift(f.Ranks[i].SlowSince)
	}
	if l := f.Loader; l != nil {
		shift(l.DisconnectedSince)
		if l.Settings != nil {
			shift(l.Settings.ReadAt)
		}
	}
	if f.Profile != nil {
		shift(&f.Profile.TakenAt)
	}
}
