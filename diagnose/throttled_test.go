package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// quotaFrames is issue 56's job: the embedded loader (2 workers, 4 ms of
// decode a sample, a 2 ms step) in a v1 cgroup of half a core, using its
// whole quota (0.51 CPU) and throttled in 95 % of periods, 1.45 s every
// second; its loop waits 0 % and its virtual accelerator reads 100 %
// busy. throttled: whether the quota bites; gpuUtil: a real GPU's
// utilization (nil: none).
func quotaFrames(throttled bool, gpuUtil *float64) []sample.Frame {
	var out []sample.Frame
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for i := range 12 {
		wait, step, n, pid, loop := 0.0, 2.0, 2, 300, 300
		quota, period, cores, used, share, secs := 0.5, 100000.0, 2.0, 0.51, 0.95, 1.45
		if !throttled {
			used, share, secs = 0.2, 0, 0
		}
		f := sample.Frame{Time: t0.Add(time.Duration(i) * time.Second), IntervalSec: 1,
			CPU:    &sample.CPU{BusyPct: 26, Cores: []sample.Core{{ID: 0, BusyPct: 26}, {ID: 1, BusyPct: 26}}},
			Accel:  &sample.VirtualAccel{BusyPct: 100},
			Loader: &sample.Loader{Source: "http://127.0.0.1:6061", Kind: "go", BatchesPerSec: 5, SamplesPerSec: 160, WaitShare: &wait, StepMeanMs: &step, Workers: &n, PID: &pid, LoopTID: &loop},
			Job: &sample.Job{Cgroup: "/gpuwatch-test", CgroupVersion: 1, Source: "pid 300", CPUQuotaCores: &quota, CPUQuotaUs: ptr(50000.0), CPUPeriodUs: &period,
				AllowedCPUs: int(cores), CPUCapacityCores: quota, CPUUsedCores: &used, ThrottledPeriodsShare: &share, ThrottledSecPerSec: &secs},
			Procs: &sample.Procs{FocusPID: 300, List: []sample.Proc{{PID: 300, CPUPct: 100 * used}},
				Threads: []sample.Thread{{PID: 300, TID: 300, Name: "loop", CPUPct: 12}, {PID: 300, TID: 301, Name: "worker", CPUPct: 20}, {PID: 300, TID: 302, Name: "worker", CPUPct: 19}}},
		}
		if gpuUtil != nil {
			f.Accel = nil
			f.GPUs = []sample.GPU{{Index: 0, Name: "NVIDIA H100", Vendor: "nvidia", UtilPct: gpuUtil}}
		}
		out = append(out, f)
	}
	return out
}

// TestAJobAtItsQuotaIsLimitedByIt (issue 56): a job that uses its whole
// CPU quota and is throttled reads cpu_saturated on its limit, not
// healthy on its stretched step, whatever its wait share; the evidence
// cites the quota and the throttled time, and the advice computes a
// larger quota from the job's own use. Unthrottled, the same job is
// healthy; beside a busy real GPU, throttling is not the limit.
func TestAJobAtItsQuotaIsLimitedByIt(t *testing.T) {
	v := Classify(quotaFrames(true, nil), DefaultThresholds())
	all := strings.Join(texts(v.Evidence), "\n")
	if v.Kind != CPUSaturated || !strings.HasPrefix(all, "the job may use 0.5 CPU (quota 50 ms per 100 ms) and used 0.51") ||
		!strings.Contains(all, "throttled 1.4 s every second") || !strings.Contains(all, "the loop waits for the quota, not for input") {
		t.Fatalf("%s: %q", v.Kind, all)
	}
	if advice := strings.Join(v.Advice, "\n"); !strings.Contains(advice, "about 2 CPUs of demand (a quota of 196 ms per 100 ms period") {
		t.Errorf("advice %q", v.Advice)
	}
	if v := Classify(quotaFrames(false, nil), DefaultThresholds()); v.Kind != Healthy {
		t.Errorf("unthrottled: %s %q", v.Kind, texts(v.Evidence))
	}
	if v := Classify(quotaFrames(true, ptr(99.0)), DefaultThresholds()); v.Kind == CPUSaturated {
		t.Errorf("a busy GPU's job, throttled on the host: %s %q", v.Kind, texts(v.Evidence))
	}
}

// TestAThrottledStepIsNotABusyAccelerator (issue 56): the loop thread's
// run delay, read (schedstat), is taken off the virtual accelerator's
// busy share: a job at its quota, its loop thread waiting for a CPU
// 600 ms a second, reads the accelerator 40 % busy, and the evidence says
// what the step is made of.
func TestAThrottledStepIsNotABusyAccelerator(t *testing.T) {
	withDelay := func(frames []sample.Frame) []sample.Frame {
		for i := range frames {
			f := &frames[i]
			f.Procs.Threads[0].RunDelayMsPerSec = ptr(600.0) // the loop's thread
			f.AssignRoles()
		}
		return frames
	}
	v := Classify(withDelay(quotaFrames(true, nil)), DefaultThresholds())
	all := strings.Join(texts(v.Evidence), "\n")
	if v.Kind != CPUSaturated || !strings.Contains(all, "the loop's steps take 100 % of wall time, 60 % of it its thread waiting for a CPU (throttled): the virtual accelerator (no GPU seen: the loop's step time) is 40 % busy") {
		t.Fatalf("%s: %q", v.Kind, all)
	}
}

// TestAQuotaWithNoCountOfItsOwnIsJudgedByItsProcesses (a review): where
// the cgroup keeps no count of the job's CPU (v1, cpuacct apart, the job
// in its root: the probe leaves the use unread and says why), the job's
// processes' CPU is its use, so a job at its quota still reads limited
// by it, and the evidence says where the figure came from.
func TestAQuotaWithNoCountOfItsOwnIsJudgedByItsProcesses(t *testing.T) {
	frames := quotaFrames(true, nil)
	for i := range frames {
		frames[i].Job.CPUUsedCores, frames[i].Job.CPUUsedWhy = nil, "the job is in cpuacct's root cgroup"
	}
	v := Classify(frames, DefaultThresholds())
	all := strings.Join(texts(v.Evidence), "\n")
	if v.Kind != CPUSaturated || !strings.Contains(all, "the job may use 0.5 CPU (quota 50 ms per 100 ms) and used 0.51 (its processes' CPU: its cgroup keeps no count of its own)") {
		t.Fatalf("%s: %q", v.Kind, all)
	}
}

// TestAThrottledJobsWaitIsNotBlamedOnOthers (a review): a job throttled
// at its quota, its loop's thread waiting 490 ms a second for a CPU
// beside 0.6 cores of other processes, was told "CPU taken by others …
// give the job its own CPUs": the wait was the quota's.
func TestAThrottledJobsWaitIsNotBlamedOnOthers(t *testing.T) {
	for _, throttled := range []bool{true, false} {
		frames := quotaFrames(throttled, nil)
		for i := range frames {
			f := &frames[i]
			f.CPU.BusyPct = 56 // 1.12 cores: 0.6 beyond the job's
			f.Procs.Threads[0].RunDelayMsPerSec = ptr(490.0)
			f.AssignRoles()
		}
		w := read(frames, DefaultThresholds())
		if _, ok := takenByOthers(&w, DefaultThresholds()); ok == throttled {
			t.Errorf("throttled %v: CPU taken by others said %v", throttled, ok)
		}
	}
}

// TestTheTreeStandsInOnlyWhereItHoldsTheJob (a review): where the tree
// misses the job's own workers (a loader whose worker PIDs it does not
// list), its CPU is no stand-in for the job's use: unread, not low.
func TestTheTreeStandsInOnlyWhereItHoldsTheJob(t *testing.T) {
	frames := quotaFrames(true, nil)
	for i := range frames {
		frames[i].Job.CPUUsedCores, frames[i].Job.CPUUsedWhy = nil, "the job is in cpuacct's root cgroup"
		frames[i].Loader.WorkerPIDs = []int{401, 402}
	}
	if w := read(frames, DefaultThresholds()); w.jobUsed.ok || w.usedBy() != "" {
		t.Errorf("used %.2f (%v) from a tree that misses the workers", w.jobUsed.v, w.jobUsed.ok)
	}
}

func TestCPUCountInWords(t *testing.T) {
	for v, want := range map[float64]string{0.5: "0.5 CPUs", 1: "1 CPU", 2: "2 CPUs", 128: "128 CPUs", 1.0 / 3: "0.33 CPUs"} {
		if got := cpuCount(v); got != want {
			t.Errorf("%v: %q, want %q", v, got, want)
		}
	}
}
