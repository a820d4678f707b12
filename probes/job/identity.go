package job

import (
	"bytes"
	"cmp"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// maxEnvironBytes bounds how much of /proc/PID/environ is read: the
// variables gpuwatch wants are a few hundred bytes among what may be
// megabytes.
const maxEnvironBytes = 256 << 10

// parseEnviron takes the job's identity variables from a NUL-separated
// environment. Values are outside input: each is cut to 128 bytes and
// kept only when printable.
func parseEnviron(b []byte, id *sample.JobIdentity) {
	if len(b) > maxEnvironBytes {
		b = b[:maxEnvironBytes]
	}
	dst := map[string]*string{
		"SLURM_JOB_ID": &id.SlurmJob, "SLURM_STEP_ID": &id.SlurmStep, "SLURM_LOCALID": &id.SlurmTask, "SLURM_PROCID": &id.SlurmRank,
		"RANK": &id.Rank, "LOCAL_RANK": &id.LocalRank, "WORLD_SIZE": &id.WorldSize,
		"POD_NAME": &id.Pod, "POD_NAMESPACE": &id.Namespace, "KUBERNETES_POD_NAME": &id.Pod, "KUBERNETES_NAMESPACE": &id.Namespace,
	}
	for len(b) > 0 {
		var kv []byte
		if i := bytes.IndexByte(b, 0); i >= 0 {
			kv, b = b[:i], b[i+1:]
		} else {
			kv, b = b, nil
		}
		k, v, ok := bytes.Cut(kv, []byte("="))
		if !ok {
			continue
		}
		if d, want := dst[string(k)]; want && *d == "" {
			*d = cleanID(string(v))
		}
	}
}

// cleanID keeps an identifier printable and short.
func cleanID(s string) string {
	if len(s) > 128 {
		s = s[:128]
	}
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return ""
	}
	return s
}

var (
	slurmPath = regexp.MustCompile(`/slurm[^/]*/uid_\d+/job_(\d+)(?:/step_([^/]+))?(?:/task_(\d+))?`)
	// cgroup v2: slurmd's scope, /system.slice/slurmstepd.scope/job_J/step_S/user/task_T
	// (Slurm's cgroup_v2 plugin, https://slurm.schedmd.com/cgroup_v2.html).
	slurmPathV2 = regexp.MustCompile(`/slurmstepd\.scope/job_(\d+)(?:/step_([^/]+))?(?:/user)?(?:/task_(\d+))?`)
	podPath     = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})`)
	ctrPath     = regexp.MustCompile(`(?:docker-|cri-containerd-|crio-|docker/|containerd/)?([0-9a-f]{64})(?:\.scope)?$`)
)

// parseCgroupIdentity takes what a cgroup path says of its job: Slurm's
// /slurm/uid_U/job_J/step_S/task_T, a Kubernetes pod UID
// (kubepods…/pod<uid>…), a container ID (64 hex digits). A path seen from
// another cgroup namespace ("/../../kubepods-…") says the same.
func parseCgroupIdentity(path string, id *sample.JobIdentity) {
	m := slurmPath.FindStringSubmatch(path)
	if m == nil {
		m = slurmPathV2.FindStringSubmatch(path)
	}
	if m != nil {
		if id.SlurmJob == "" {
			id.SlurmJob = m[1]
		}
		if id.SlurmStep == "" {
			id.SlurmStep = m[2]
		}
		if id.SlurmTask == "" {
			id.SlurmTask = m[3]
		}
	}
	if m := podPath.FindStringSubmatch(path); m != nil {
		id.PodUID = strings.ReplaceAll(m[1], "_", "-")
	}
	if m := ctrPath.FindStringSubmatch(filepath.Base(path)); m != nil {
		id.Container = m[1][:12]
	}
}

// identityOf is the job's identity, read once per process: from the
// kernel first — the process's cgroup, which only root (slurmd, kubelet)
// can put it in —, its environment only where it agrees (issue 54: on a
// shared node `SLURM_JOB_ID=<victim> python …` made the process the
// victim's job). agreeing says which of the environment's claims stand.
func (p *Cgroup) identityOf(cgroup string, paths cgroupPaths) *sample.JobIdentity {
	if p.identDone && p.identPID == p.opt.PID {
		return p.identity
	}
	id := &sample.JobIdentity{}
	parseCgroupIdentity(cgroup, id)
	// Slurm's proctrack/cgroup tracks a job in v1's freezer while its cpu
	// controller may be the root (task/none): every controller's path is
	// the kernel's word.
	for _, ctl := range slices.Sorted(maps.Keys(paths)) {
		if id.SlurmJob == "" && id.PodUID == "" {
			parseCgroupIdentity(paths[ctl], id)
		}
	}
	if p.opt.PID > 0 {
		if b, err := p.r.Read(filepath.Join(p.roots.Proc, strconv.Itoa(p.opt.PID), "environ")); err == nil {
			var env sample.JobIdentity
			parseEnviron(b, &env)
			agreeing(id, env)
		}
	}
	if *id == (sample.JobIdentity{}) {
		id = nil
	}
	p.identity, p.identPID, p.identDone = id, p.opt.PID, true
	return id
}

// agreeing adds to id, the kernel's word, what the environment env says
// where it agrees with it: Slurm's job variables only for the job the
// cgroup names (its step and task from the cgroup where it has them, its
// rank from the environment, which the cgroup does not hold); a pod's
// name and namespace only for a process a pod's cgroup holds (the name
// is the pod's own claim: the UID is the kernel's). A process outside
// every job's cgroup is nobody's job, whatever its environment says. The
// ranks torch reads (RANK, LOCAL_RANK, WORLD_SIZE) label a process, not
// a job, and are taken as they are.
func agreeing(id *sample.JobIdentity, env sample.JobIdentity) {
	if id.SlurmJob != "" && env.SlurmJob == id.SlurmJob {
		id.SlurmStep = cmp.Or(id.SlurmStep, env.SlurmStep)
		id.SlurmTask = cmp.Or(id.SlurmTask, env.SlurmTask)
		id.SlurmRank = env.SlurmRank
	}
	if id.PodUID != "" {
		id.Pod, id.Namespace = env.Pod, env.Namespace
	}
	id.Rank, id.LocalRank, id.WorldSize = env.Rank, env.LocalRank, env.WorldSize
}
