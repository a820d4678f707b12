//go:build integration

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// v1Cgroup makes a cgroup named name in the v1 controllers ctls (cpu,
// cpuacct, cpuset …), runs set on each directory, moves pid in, and
// removes it all at the test's end. It skips where v1 cgroups are not
// writable (not root, or a v2-only host).
func v1Cgroup(t *testing.T, name string, pid int, set map[string]map[string]string) {
	t.Helper()
	for ctl, files := range set {
		dir := filepath.Join("/sys/fs/cgroup", ctl, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			if os.Getenv("GPUWATCH_REQUIRE_CGROUPS") != "" {
				t.Fatalf("cgroup v1 %s: %v", ctl, err)
			}
			t.Skipf("cgroup v1 %s not writable here: %v", ctl, err)
		}
		t.Cleanup(func() {
			// Move the process out first: a cgroup with tasks cannot go.
			_ = os.WriteFile(filepath.Join("/sys/fs/cgroup", ctl, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
			_ = os.Remove(dir)
		})
		for _, k := range []string{"cpuset.mems", "cpuset.cpus", "cpu.cfs_period_us", "cpu.cfs_quota_us"} {
			if v, ok := files[k]; ok {
				if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0); err != nil {
					t.Fatalf("%s/%s: %v", dir, k, err)
				}
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			t.Fatalf("move %d into %s: %v", pid, dir, err)
		}
	}
}

// TestJobLimitsJudgeTheVerdict runs `gpuwatch loader` (two workers of
// CPU-heavy decoding) in a real v1 cgroup — half a core of CPU quota, or
// a cpuset of one core — attaches, and requires the job-level verdict with
// the limit cited: cpu_saturated on the job's capacity, not the host's
// two cores.
func TestJobLimitsJudgeTheVerdict(t *testing.T) {
	cases := []struct {
		name, evidence string
		set            map[string]map[string]string
		capacity       float64
	}{
		{"half a core of quota", "the job may use 0.5 CPU (quota 50 ms per 100 ms)",
			map[string]map[string]string{"cpu": {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "50000"}, "cpuacct": {}}, 0.5},
		{"a cpuset of one core", "the job may use 1 CPU (cpuset 1)",
			map[string]map[string]string{"cpuset": {"cpuset.mems": "0", "cpuset.cpus": "1"}, "cpu": {}, "cpuacct": {}}, 1},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd, url, _ := startLoader(t, "--workers", "2", "--decode-cost", "1ms", "--step-time", "5ms", "--persistent")
			v1Cgroup(t, fmt.Sprintf("gpuwatch-test-%d-%d", os.Getpid(), i), cmd.Process.Pid, c.set)
			_, ch := startJSON(t, "attach", url, "--headless", "--json", "--duration", "60s")
			var seen []string
			l := await(t, ch, "cpu_saturated citing the job's limit", 45*time.Second, func(l attachLine) bool {
				if l.Verdict == nil || len(l.Verdict.Evidence) == 0 {
					return false
				}
				seen = append(seen, l.Verdict.Kind+": "+l.Verdict.Evidence[0].Text)
				return l.Verdict.Kind == "cpu_saturated" && strings.HasPrefix(l.Verdict.Evidence[0].Text, c.evidence)
			})
			if l.Job == nil || l.Job.CPUCapacityCores != c.capacity || l.Job.CgroupVersion != 1 {
				t.Fatalf("job %+v, want capacity %v under cgroup v1", l.Job, c.capacity)
			}
			t.Logf("%s: %s; advice %q", l.Verdict.Kind, l.Verdict.Evidence[0].Text, l.Verdict.Advice)
		})
	}
}
