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

// TestIdentityFromTheKernelFirst (issue 54): the cgroup names the job; the
// environment adds to it only where it agrees. A process that sets
// another job's SLURM_JOB_ID is not that job, inside a job or outside
// every job; a pod's name and namespace stand only where a pod's cgroup
// holds the process; torch's ranks label the process as they are.
func TestIdentityFromTheKernelFirst(t *testing.T) {
	env := func(s string) sample.JobIdentity {
		var id sample.JobIdentity
		parseEnviron([]byte(s), &id)
		return id
	}
	const uid = "1b2c3d4e-aaaa-bbbb-cccc-0123456789ab"
	for _, c := range []struct {
		name, cgroup, environ string
		want                  sample.JobIdentity
	}{
		{"the job's own variables", "/slurm/uid_1000/job_42/step_0/task_1", "SLURM_JOB_ID=42\x00SLURM_STEP_ID=9\x00SLURM_PROCID=3\x00RANK=3",
			sample.JobIdentity{SlurmJob: "42", SlurmStep: "0", SlurmTask: "1", SlurmRank: "3", Rank: "3"}},
		{"another job's id, inside a job", "/slurm/uid_1000/job_42/step_0/task_1", "SLURM_JOB_ID=7\x00SLURM_PROCID=3",
			sample.JobIdentity{SlurmJob: "42", SlurmStep: "0", SlurmTask: "1"}},
		{"a job's id, outside every job (an ssh login)", "/user.slice/user-1000.slice/session-3.scope", "SLURM_JOB_ID=42\x00SLURM_STEP_ID=0\x00SLURM_PROCID=0",
			sample.JobIdentity{}},
		{"a pod's name outside any pod", "/user.slice/user-1000.slice/session-3.scope", "POD_NAME=trainer-0\x00POD_NAMESPACE=ml",
			sample.JobIdentity{}},
		{"a pod's name inside a pod", "/kubepods/burstable/pod" + uid, "POD_NAME=trainer-0\x00POD_NAMESPACE=ml\x00RANK=1\x00WORLD_SIZE=2",
			sample.JobIdentity{PodUID: uid, Pod: "trainer-0", Namespace: "ml", Rank: "1", WorldSize: "2"}},
		{"a Slurm step the environment fills where the cgroup has none", "/system.slice/slurmstepd.scope/job_42", "SLURM_JOB_ID=42\x00SLURM_STEP_ID=0\x00SLURM_LOCALID=1",
			sample.JobIdentity{SlurmJob: "42", SlurmStep: "0", SlurmTask: "1"}},
	} {
		var id sample.JobIdentity
		parseCgroupIdentity(c.cgroup, &id)
		agreeing(&id, env(c.environ))
		if id != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, id, c.want)
		}
	}
}
