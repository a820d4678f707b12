package job

import (
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestIdentityFromRealCgroupPaths: the paths kubelet (cgroupfs and systemd
// drivers, cgroup v1 and v2, containerd, CRI-O, Docker) and slurmd (v1
// and v2 plugins) give a job's processes, as /proc/PID/cgroup shows them,
// also from another cgroup namespace (a DaemonSet's view of a pod).
func TestIdentityFromRealCgroupPaths(t *testing.T) {
	const uid = "1b2c3d4e-aaaa-bbbb-cccc-0123456789ab"
	const uidU = "1b2c3d4e_aaaa_bbbb_cccc_0123456789ab"
	const ctr = "4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f"
	for _, c := range []struct {
		name, path string
		want       sample.JobIdentity
	}{
		{"v1 cgroupfs driver, burstable", "/kubepods/burstable/pod" + uid + "/" + ctr, sample.JobIdentity{PodUID: uid, Container: ctr[:12]}},
		{"v1 cgroupfs driver, guaranteed", "/kubepods/pod" + uid + "/" + ctr, sample.JobIdentity{PodUID: uid, Container: ctr[:12]}},
		{"v1 systemd driver, docker", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/docker-" + ctr + ".scope", sample.JobIdentity{PodUID: uid, Container: ctr[:12]}},
		{"v2 systemd driver, containerd", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + ctr + ".scope", sample.JobIdentity{PodUID: uid, Container: ctr[:12]}},
		{"v2 systemd driver, CRI-O, guaranteed", "/kubepods.slice/kubepods-pod" + uidU + ".slice/crio-" + ctr + ".scope", sample.JobIdentity{PodUID: uid, Container: ctr[:12]}},
		{"v2 from another cgroup namespace", "/../../kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + ctr + ".scope", sample.JobIdentity{PodUID: uid, Container: ctr[:12]}},
		{"the pod's sandbox (pause)", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice", sample.JobIdentity{PodUID: uid}},
		{"slurm v1", "/slurm/uid_1000/job_42/step_0/task_1", sample.JobIdentity{SlurmJob: "42", SlurmStep: "0", SlurmTask: "1"}},
		{"slurm v2 batch step", "/system.slice/slurmstepd.scope/job_42/step_batch/user/task_0", sample.JobIdentity{SlurmJob: "42", SlurmStep: "batch", SlurmTask: "0"}},
		{"slurm v2 under a node's slice", "/machine.slice/x.scope/system.slice/slurmstepd.scope/job_7/step_extern/user/task_special", sample.JobIdentity{SlurmJob: "7", SlurmStep: "extern"}},
		{"a user's session", "/user.slice/user-1000.slice/session-3.scope", sample.JobIdentity{}},
		{"not a pod: a UID without its pod prefix", "/system.slice/" + uid + ".scope", sample.JobIdentity{}},
	} {
		var got sample.JobIdentity
		parseCgroupIdentity(c.path, &got)
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestIdentityFromTheDownwardAPI: POD_NAME and POD_NAMESPACE, as a pod
// spec sets them from fieldRef metadata.name and metadata.namespace,
// name the pod; a value with a control character is dropped, a long one
// cut.
func TestIdentityFromTheDownwardAPI(t *testing.T) {
	env := "PATH=/usr/bin\x00POD_NAME=trainer-0\x00POD_NAMESPACE=ml\x00KUBERNETES_POD_NAME=other\x00"
	var id sample.JobIdentity
	parseEnviron([]byte(env), &id)
	if id.Pod != "trainer-0" || id.Namespace != "ml" {
		t.Errorf("%+v", id)
	}
	id = sample.JobIdentity{}
	long := make([]byte, 300)
	for i := range long {
		long[i] = 'a'
	}
	parseEnviron([]byte("POD_NAME=evil\x1b[2J\x00POD_NAMESPACE="+string(long)), &id)
	if id.Pod != "" || len(id.Namespace) != 128 {
		t.Errorf("hostile values: %+v", id)
	}
}
