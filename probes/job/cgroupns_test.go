package job

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestCgroupSeenFromAnotherNamespace: gpuwatch in a DaemonSet's pod on
// cgroup v2 reads a job pod's /proc/PID/cgroup relative to its own
// cgroup namespace ("0::/../../kubepods-burstable-pod….slice/…"). With
// the host's tree at --sys-root, the probe finds its namespace root in it
// (the folder that is its own /sys/fs/cgroup) and reads the job's
// cgroup there: limits, use and the pod's identity.
func TestCgroupSeenFromAnotherNamespace(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", "cgroup-v2", "t0"))); err != nil {
		t.Fatal(err)
	}
	burstable := filepath.Join(root, "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice")
	own := filepath.Join(burstable, "kubepods-burstable-pod99999999_0000_1111_2222_333333333333.slice", "cri-containerd-"+strings.Repeat("9", 64)+".scope")
	if err := os.MkdirAll(own, 0o755); err != nil {
		t.Fatal(err)
	}
	const job = "/kubepods-burstable-pod1b2c3d4e_aaaa_bbbb_cccc_0123456789ab.slice/cri-containerd-4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f.scope"
	if err := os.WriteFile(filepath.Join(root, "proc/4100/cgroup"), []byte("0::/../.."+job+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	roots := probes.Roots{Proc: filepath.Join(root, "proc"), Sys: filepath.Join(root, "sys")}
	p := NewCgroup(roots, JobOptions{PID: 4100})
	p.ownCgroup = own // what the runtime mounts at the pod's /sys/fs/cgroup
	f := &sample.Frame{Time: time.Now()}
	if err := p.Collect(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	j := f.Job
	if j == nil || j.CgroupVersion != 2 || j.Cgroup != "/kubepods.slice/kubepods-burstable.slice"+job {
		t.Fatalf("job %+v", j)
	}
	if j.CPUQuotaCores == nil || *j.CPUQuotaCores != 0.5 {
		t.Errorf("quota %v: the job's cgroup was not read", j.CPUQuotaCores)
	}
	if id := j.Identity; id == nil || id.PodUID != "1b2c3d4e-aaaa-bbbb-cccc-0123456789ab" || id.Container != "4f4f4f4f4f4f" || id.Pod != "trainer-0" {
		t.Errorf("identity %+v", j.Identity)
	}

	// Without the host's tree (its own /sys), it says what to mount.
	p = NewCgroup(probes.Roots{Proc: roots.Proc, Sys: "/sys"}, JobOptions{PID: 4100})
	err := p.Collect(context.Background(), &sample.Frame{Time: time.Now()})
	if !errors.Is(err, probes.ErrUnavailable) || !strings.Contains(err.Error(), "--sys-root") {
		t.Errorf("err %v", err)
	}
	// A namespace root that is not in the tree: said, not guessed.
	p = NewCgroup(roots, JobOptions{PID: 4100})
	p.ownCgroup = t.TempDir()
	err = p.Collect(context.Background(), &sample.Frame{Time: time.Now()})
	if !errors.Is(err, probes.ErrUnavailable) || !strings.Contains(err.Error(), "is not under") {
		t.Errorf("err %v", err)
	}
}
