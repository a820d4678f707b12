package job

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
	"github.com/gpuwatch/gpuwatch/sample"
)

func TestCgroupV2PodWithQuotaAndAMemoryLimit(t *testing.T) {
	s := probetest.NewSnapshots(t, "cgroup-v2")
	p := NewCgroup(s.Roots(), JobOptions{PID: 4100})
	s.MustCollect(p, "t0")
	j := s.MustCollect(p, "t1").Job
	if j == nil || j.CgroupVersion != 2 || j.Source != "pid 4100" {
		t.Fatalf("job %+v", j)
	}
	if j.CPUQuotaCores == nil || *j.CPUQuotaCores != 0.5 || *j.CPUQuotaUs != 50000 || *j.CPUPeriodUs != 100000 {
		t.Fatalf("quota %v", j.CPUQuotaCores)
	}
	if j.CPUSet != "0-3" || j.AllowedCPUs != 4 || j.CPUCapacityCores != 0.5 {
		t.Errorf("cpuset %q allowed %d capacity %v: want 0-3, 4, 0.5 (the quota is smaller)", j.CPUSet, j.AllowedCPUs, j.CPUCapacityCores)
	}
	probetest.NearPtr(t, "used cores", j.CPUUsedCores, 0.49)
	probetest.NearPtr(t, "throttled periods", j.ThrottledPeriodsShare, 1)
	probetest.NearPtr(t, "throttled s/s", j.ThrottledSecPerSec, 0.45)
	if j.MemLimitBytes == nil || *j.MemLimitBytes != 512<<20 || j.MemHighBytes != nil || *j.MemUsedBytes != 536000000 || *j.SwapUsedBytes != 100<<20 {
		t.Errorf("memory limit %v high %v used %v swap %v", j.MemLimitBytes, j.MemHighBytes, j.MemUsedBytes, j.SwapUsedBytes)
	}
	if j.MemFileBytes == nil || *j.MemFileBytes != 400000000 {
		t.Errorf("page cache %v: want memory.stat's file, 400000000", j.MemFileBytes)
	}
	if e := j.MemEvents; e == nil || e.Max != 52 || e.OOMKill != 1 {
		t.Errorf("events %+v", j.MemEvents)
	}
	if j.PSI == nil || j.PSI.Memory == nil || j.PSI.Memory.SomeAvg10 != 42 || j.PSI.CPU.SomeAvg10 != 80 {
		t.Errorf("psi %+v", j.PSI)
	}
	if len(j.IOMax) != 1 || j.IOMax[0] != "8:0 rbps=10485760 wbps=max riops=max wiops=max" {
		t.Errorf("io.max %q", j.IOMax)
	}
	id := j.Identity
	if id == nil || id.Rank != "3" || id.LocalRank != "1" || id.WorldSize != "8" || id.Pod != "trainer-0" || id.Namespace != "ml" ||
		id.PodUID != "1b2c3d4e-aaaa-bbbb-cccc-0123456789ab" || id.Container != "4f4f4f4f4f4f" {
		t.Errorf("identity %+v", id)
	}
}

func TestCgroupV1SlurmTaskWithACpuset(t *testing.T) {
	s := probetest.NewSnapshots(t, "cgroup-v1")
	p := NewCgroup(s.Roots(), JobOptions{PID: 4200})
	s.MustCollect(p, "t0")
	j := s.MustCollect(p, "t1").Job
	if j == nil || j.CgroupVersion != 1 || j.Cgroup != "/slurm/uid_1000/job_42/step_0/task_1" {
		t.Fatalf("job %+v", j)
	}
	if j.CPUQuotaCores != nil || j.CPUSet != "2-3" || j.AllowedCPUs != 2 || j.CPUCapacityCores != 2 {
		t.Errorf("quota %v cpuset %q allowed %d capacity %v", j.CPUQuotaCores, j.CPUSet, j.AllowedCPUs, j.CPUCapacityCores)
	}
	probetest.NearPtr(t, "used cores", j.CPUUsedCores, 1.9)
	if j.ThrottledPeriodsShare != nil {
		t.Errorf("no periods, yet a throttled share %v", *j.ThrottledPeriodsShare)
	}
	if j.MemLimitBytes != nil || j.MemUsedBytes == nil || *j.MemUsedBytes != 1<<30 {
		t.Errorf("v1's 'no limit' must read as none: limit %v used %v", j.MemLimitBytes, j.MemUsedBytes)
	}
	if id := j.Identity; id == nil || id.SlurmJob != "42" || id.SlurmStep != "0" || id.SlurmTask != "1" || id.SlurmRank != "1" {
		t.Errorf("identity %+v", j.Identity)
	}
	// The same job named by its cgroup, as --cgroup does.
	s = probetest.NewSnapshots(t, "cgroup-v1")
	p = NewCgroup(s.Roots(), JobOptions{Cgroup: "/slurm/uid_1000/job_42/step_0/task_1"})
	if j := s.MustCollect(p, "t0").Job; j == nil || j.AllowedCPUs != 2 || j.Source != "--cgroup /slurm/uid_1000/job_42/step_0/task_1" {
		t.Fatalf("by path: %+v", j)
	}
}

func TestCgroupParsers(t *testing.T) {
	if n, err := parseCPUList([]byte("0-3,8,10-11\n")); err != nil || n != 7 {
		t.Errorf("cpu list: %d %v", n, err)
	}
	for _, bad := range []string{"3-1", "a", "0-99999999", "1,-"} {
		if _, err := parseCPUList([]byte(bad)); err == nil {
			t.Errorf("accepted cpu list %q", bad)
		}
	}
	if _, _, limited, err := parseCPUMax([]byte("max 100000\n")); err != nil || limited {
		t.Errorf("max: %v %v", limited, err)
	}
	if q, per, limited, err := parseCPUMax([]byte("150000 100000")); err != nil || !limited || q/per != 1.5 {
		t.Errorf("1.5 cores: %v %v %v %v", q, per, limited, err)
	}
	for _, bad := range []string{"", "50000", "x 100000", "50000 0"} {
		if _, _, _, err := parseCPUMax([]byte(bad)); err == nil {
			t.Errorf("accepted cpu.max %q", bad)
		}
	}
	if _, err := parseProcCgroup([]byte("garbage")); err == nil {
		t.Error("accepted a cgroup line without fields")
	}
}

func FuzzParseProcCgroup(f *testing.F) {
	f.Add([]byte("0::/user.slice\n"))
	f.Add([]byte("4:cpu,cpuacct:/slurm/uid_0/job_1\n0::/\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		paths, err := parseProcCgroup(b)
		if err == nil {
			for _, p := range paths {
				if len(p) == 0 || p[0] != '/' {
					t.Fatalf("path %q", p)
				}
			}
		}
		_, _ = parseCPUList(b)
		_, _, _, _ = parseCPUMax(b)
	})
}

// BenchmarkCgroupTick is what reading the job's cgroup adds to a tick: a
// v2 pod (cpu, memory, events, PSI, io.max) and a v1 Slurm task, from the
// fixture trees (page-cached, as cgroupfs is in memory).
func BenchmarkCgroupTick(b *testing.B) {
	for _, c := range []struct {
		tree string
		pid  int
	}{{"cgroup-v2", 4100}, {"cgroup-v1", 4200}} {
		b.Run(c.tree, func(b *testing.B) {
			p := NewCgroup(probes.Roots{Proc: "testdata/" + c.tree + "/t1/proc", Sys: "testdata/" + c.tree + "/t1/sys"}, JobOptions{PID: c.pid})
			f := &sample.Frame{Time: time.Now()}
			if err := p.Collect(context.Background(), f); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f.Time = f.Time.Add(time.Second)
				if err := p.Collect(context.Background(), f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestOwnCgroupOnlyWhenConfined builds a v2 tree for a process at the
// hierarchy's root of a two-core host: unconfined, it is not a job; with a
// quota, a one-core cpuset or a memory limit its cgroup becomes the job,
// marked as gpuwatch's own.
func TestOwnCgroupOnlyWhenConfined(t *testing.T) {
	root := t.TempDir()
	write := func(rel, s string) { writeFile(t, filepath.Join(root, rel), s) }
	write("proc/77/cgroup", "0::/ctr\n")
	write("proc/stat", "cpu  1 2 3 4\ncpu0 1 2 3 4\ncpu1 1 2 3 4\n")
	cg := "sys/fs/cgroup/ctr/"
	write(cg+"cgroup.controllers", "cpu cpuset memory\n")
	write(cg+"cpu.stat", "usage_usec 100\n")
	unconfined := func() {
		write(cg+"cpu.max", "max 100000\n")
		write(cg+"cpuset.cpus.effective", "0-1\n")
		write(cg+"memory.max", "max\n")
	}
	r := probes.Roots{Proc: filepath.Join(root, "proc"), Sys: filepath.Join(root, "sys")}
	unconfined()
	if p := OwnCgroup(r, 77); p != nil {
		t.Fatalf("an unconfined process got a job: %+v", p)
	}
	if p := OwnCgroup(r, 78); p != nil {
		t.Fatal("a process that is not there got a job")
	}
	for _, c := range []struct{ name, file, value string }{
		{"a quota", "cpu.max", "50000 100000\n"},
		{"a cpuset of one of the two cores", "cpuset.cpus.effective", "1\n"},
		{"a memory limit", "memory.max", "1073741824\n"},
	} {
		unconfined()
		write(cg+c.file, c.value)
		p := OwnCgroup(r, 77)
		if p == nil {
			t.Fatalf("%s: not seen as confined", c.name)
		}
		f := &sample.Frame{Time: time.Now()}
		if err := p.Collect(context.Background(), f); err != nil {
			t.Fatal(err)
		}
		if j := f.Job; j == nil || !j.Self || j.Cgroup != "/ctr" || !strings.Contains(j.Summary(), "gpuwatch's own cgroup v2 /ctr (it runs confined") {
			t.Errorf("%s: job %+v, summary %q", c.name, f.Job, f.Job.Summary())
		}
	}
}

// TestARootCgroupIsNoJob: a process in the root cgroup (v2, or v1 in its
// cpu and memory controllers) has no job: the probe says so and leaves
// the frame's job out, so no verdict calls the whole machine "the job".
// A --cgroup the user names is read even when it is the root.
func TestARootCgroupIsNoJob(t *testing.T) {
	for _, c := range []struct{ name, cgroup string }{
		{"v2", "0::/\n"},
		{"v1", "4:cpu,cpuacct:/\n3:memory:/\n2:cpuset:/\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			proc, sys := filepath.Join(root, "proc"), filepath.Join(root, "sys")
			if err := os.MkdirAll(filepath.Join(proc, "9"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(proc, "9", "cgroup"), []byte(c.cgroup), 0o644); err != nil {
				t.Fatal(err)
			}
			p := NewCgroup(probes.Roots{Proc: proc, Sys: sys}, JobOptions{PID: 9})
			f := &sample.Frame{Time: time.Now()}
			err := p.Collect(context.Background(), f)
			if err == nil || !strings.Contains(err.Error(), "no job cgroup (root)") || f.Job != nil {
				t.Fatalf("err %v, job %+v", err, f.Job)
			}
		})
	}
}

// TestCgroupV1CpuacctApartCountsNoJob (a review): with cpuacct mounted on
// its own and the job confined in its cpuset and memory only (as Slurm's
// task/cgroup leaves it), cpuacct's root counts the whole machine: the job
// "used 2 of 1 CPU (cpuset 0)" and was named "/" by its cpu controller.
// Its CPU use is now unread, and said why; it is named by what confines it.
func TestCgroupV1CpuacctApartCountsNoJob(t *testing.T) {
	dir := t.TempDir()
	write := func(snap, path, body string) { writeFile(t, filepath.Join(dir, snap, path), body) }
	for i, snap := range []string{"t0", "t1"} {
		write(snap, "proc/4300/cgroup", "4:memory:/hAm\n3:cpuset:/hAs\n2:cpuacct:/\n1:cpu:/\n")
		write(snap, "sys/fs/cgroup/cpuacct/cpuacct.usage", []string{"1000000000", "3000000000"}[i])
		write(snap, "sys/fs/cgroup/cpuset/hAs/cpuset.cpus", "0\n")
		write(snap, "sys/fs/cgroup/memory/hAm/memory.limit_in_bytes", "314572800\n")
		write(snap, "sys/fs/cgroup/memory/hAm/memory.usage_in_bytes", "104857600\n")
	}
	s := probetest.NewSnapshots(t, dir)
	p := NewCgroup(s.Roots(), JobOptions{PID: 4300})
	s.MustCollect(p, "t0")
	j := s.MustCollect(p, "t1").Job
	if j == nil {
		t.Fatal("no job")
	}
	if j.Cgroup != "cpuset:/hAs memory:/hAm" {
		t.Errorf("named %q: want the controllers that confine it", j.Cgroup)
	}
	if j.CPUUsedCores != nil || !strings.Contains(j.CPUUsedWhy, "cpuacct's root") {
		t.Errorf("used %v (%q): want unread, and why", j.CPUUsedCores, j.CPUUsedWhy)
	}
	if line := j.Summary(); strings.Contains(line, "2 of") || !strings.Contains(line, "cpuset:/hAs") {
		t.Errorf("line %q", line)
	}
}

func TestV1NameIsWhatConfines(t *testing.T) {
	for _, c := range []struct {
		paths cgroupPaths
		want  string
	}{
		{cgroupPaths{"cpu": "/slurm/job_1", "cpuacct": "/slurm/job_1", "memory": "/slurm/job_1", "cpuset": "/slurm/job_1"}, "/slurm/job_1"},
		{cgroupPaths{"cpu": "/", "cpuset": "/", "memory": "/"}, "/"},
		{cgroupPaths{"cpu": "/", "memory": "/m"}, "/m"},
		{cgroupPaths{"cpu": "/q", "memory": "/m"}, "cpu:/q memory:/m"},
	} {
		if got := v1Name(c.paths); got != c.want {
			t.Errorf("%v: %q, want %q", c.paths, got, c.want)
		}
	}
}

// TestOwnCgroupIsNotAnotherJobs (a review): gpuwatch run confined in a
// quota found another user's unconfined training process and judged it
// by gpuwatch's own limits ("used 2 of 0.5 CPU (quota)"). The process
// followed is the job where it lies outside gpuwatch's cgroups; one that
// shares them keeps gpuwatch's own, which bind it too.
func TestOwnCgroupIsNotAnotherJobs(t *testing.T) {
	dir := t.TempDir()
	write := func(path, body string) { writeFile(t, filepath.Join(dir, "t0", path), body) }
	write("proc/stat", "cpu  1 0 1 1 0 0 0 0 0 0\ncpu0 1 0 1 1 0 0 0 0 0 0\ncpu1 1 0 1 1 0 0 0 0 0 0\n")
	write("proc/100/cgroup", "4:memory:/\n2:cpu,cpuacct:/quota\n")
	write("proc/300/cgroup", "4:memory:/\n2:cpu,cpuacct:/quota\n")
	write("proc/200/cgroup", "4:memory:/other\n2:cpu,cpuacct:/\n")
	write("sys/fs/cgroup/cpu,cpuacct/quota/cpu.cfs_quota_us", "50000\n")
	write("sys/fs/cgroup/cpu,cpuacct/quota/cpu.cfs_period_us", "100000\n")
	write("sys/fs/cgroup/cpu,cpuacct/quota/cpuacct.usage", "1000\n")
	write("sys/fs/cgroup/memory/other/memory.usage_in_bytes", "1048576\n")
	write("sys/fs/cgroup/memory/other/memory.limit_in_bytes", "1073741824\n")
	s := probetest.NewSnapshots(t, dir)
	own := OwnCgroup(s.Roots(), 100)
	if own == nil {
		t.Fatal("gpuwatch under a quota: its own cgroup confines it")
	}
	focus := 0
	own.Following(func() int { return focus })
	for _, c := range []struct {
		focus  int
		self   bool
		source string
		cgroup string
	}{
		{0, true, "gpuwatch's own cgroup", "/quota"},
		{200, false, "pid 200", "/other"},
		{300, true, "gpuwatch's own cgroup", "/quota"},
	} {
		focus = c.focus
		j := s.MustCollect(own, "t0").Job
		if j == nil || j.Self != c.self || j.Source != c.source || j.Cgroup != c.cgroup {
			t.Errorf("following %d: %+v, want self %v, %q, %q", c.focus, j, c.self, c.source, c.cgroup)
		}
	}
}

// TestWithinIsTheConfiningControllers (a review): a process shares
// gpuwatch's limits where each confining controller's path is gpuwatch's
// or below it; name=systemd and a hybrid's unified line say nothing.
func TestWithinIsTheConfiningControllers(t *testing.T) {
	mine := cgroupPaths{"cpu": "/quota", "cpuacct": "/quota", "memory": "/", "name=systemd": "/a", "": "/user.slice/session-1.scope"}
	for _, c := range []struct {
		theirs cgroupPaths
		want   bool
	}{
		{cgroupPaths{"cpu": "/quota", "cpuacct": "/quota", "memory": "/", "name=systemd": "/b", "": "/user.slice/session-2.scope"}, true},
		{cgroupPaths{"cpu": "/quota/step_0", "cpuacct": "/quota/step_0", "memory": "/job"}, true},
		{cgroupPaths{"cpu": "/quota2", "cpuacct": "/quota2", "memory": "/"}, false},
		{cgroupPaths{"cpu": "/", "cpuacct": "/", "memory": "/"}, false},
	} {
		if got := within(c.theirs, mine); got != c.want {
			t.Errorf("%v within %v: %v", c.theirs, mine, got)
		}
	}
	v2 := cgroupPaths{"": "/kubepods/pod1/ctr"}
	if !within(cgroupPaths{"": "/kubepods/pod1/ctr/sub"}, v2) || within(cgroupPaths{"": "/kubepods/pod2/ctr"}, v2) {
		t.Error("v2: a child is within, another pod is not")
	}
}

// TestRatesStartOverInANewCgroup (a review): a task moved from cpuacct's
// root into its own cgroup had its whole counter read as one interval's
// use ("used 50 cores" on one CPU).
func TestRatesStartOverInANewCgroup(t *testing.T) {
	dir := t.TempDir()
	write := func(snap, path, body string) { writeFile(t, filepath.Join(dir, snap, path), body) }
	write("t0", "proc/4400/cgroup", "3:cpuset:/job\n2:cpu,cpuacct:/\n")
	write("t0", "sys/fs/cgroup/cpuset/job/cpuset.cpus", "0\n")
	write("t0", "sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", "900000000000\n")
	write("t1", "proc/4400/cgroup", "3:cpuset:/job\n2:cpu,cpuacct:/job\n")
	write("t1", "sys/fs/cgroup/cpuset/job/cpuset.cpus", "0\n")
	write("t1", "sys/fs/cgroup/cpu,cpuacct/job/cpuacct.usage", "50000000000\n")
	s := probetest.NewSnapshots(t, dir)
	p := NewCgroup(s.Roots(), JobOptions{PID: 4400})
	s.MustCollect(p, "t0")
	if j := s.MustCollect(p, "t1").Job; j == nil || j.CPUUsedCores != nil {
		t.Fatalf("job %+v: want no use read across the move", j)
	}
}

// writeFile writes body at p, making its folders.
func writeFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
