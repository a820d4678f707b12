//go:build integration

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/recording"
)

// TestConfinedServeTakesNoJobFromItsOwnCgroup: serve is a node's exporter.
// Run confined (a DaemonSet's pod with a CPU limit: here a cgroup v1 with
// a quota of half a core), its own cgroup is not the job its series
// describe — plain gpuwatch confined so judges its own limits
// (TestConfinedGpuwatchJudgesItsOwnLimits), serve must not, or every
// node's series would carry the agent's pod and limits.
func TestConfinedServeTakesNoJobFromItsOwnCgroup(t *testing.T) {
	procs := v1Cgroup(t, fmt.Sprintf("gpuwatch-test-%d-serve", os.Getpid()),
		map[string]map[string]string{"cpu": {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "50000"}, "cpuacct": {}})
	rec := filepath.Join(t.TempDir(), "serve.jsonl")
	cmd, _ := startIn(t, procs, "serve", "--listen", freePort(t), "--discover=false", "--interval", "250ms", "--record", rec)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(rec); err == nil && strings.Count(string(b), `"type":"frame"`) >= 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("serve recorded no 8 frames in 30 s")
		}
		time.Sleep(250 * time.Millisecond)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	r, err := recording.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	_ = r.Each(func(_ int, f *recording.Recorded) error {
		n++
		if j := f.Frame.Job; j != nil && (j.Self || j.Source == "gpuwatch's own cgroup") {
			t.Errorf("frame %d: serve took its own cgroup for the job: %+v", n, j)
		}
		return nil
	})
	if n < 8 {
		t.Fatalf("%d frames", n)
	}
}
