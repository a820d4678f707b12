package exporter

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/sample"
)

// labelValue is a label value as exposed. Every value from outside — a
// disk's, an interface's, a GPU's, a process's or a job's name — passes
// through it: the variable ones in Collect's emit (printableLabels), the
// job's constant ones in jobLabels. Control characters (C0, DEL, C1) and
// bytes that are not UTF-8 become U+FFFD (sample.Printable), so that a
// disk named "e\x1b[31mred" (a crafted /proc/diskstats) puts no escape
// sequence on the terminal of whoever reads /metrics, and every label is
// printable as docs/prometheus.md says.
func labelValue(s string) string { return sample.Printable(s) }

// printableLabels is labels with each value through labelValue: labels
// itself where none changes, else a copy (the caller's slice is left as
// it was).
func printableLabels(labels []string) []string {
	var out []string
	for i, l := range labels {
		p := labelValue(l)
		if p != l && out == nil {
			out = slices.Clone(labels)
		}
		if out != nil {
			out[i] = p
		}
	}
	if out == nil {
		return labels
	}
	return out
}

// labelPair is one job label and its value.
type labelPair struct{ name, value string }

// jobLabels are the labels that name the frame's job, in a fixed order,
// only those known: the Slurm job (from the job's environment or cgroup,
// or the one job a prolog mapped on the node) with its user and GPUs
// (from the mapping), and the Kubernetes pod: its name and namespace
// (from the downward API variables POD_NAME and POD_NAMESPACE in the
// job's environment, where its pod spec sets them), its UID and the
// container's ID (from the cgroup path kubelet gives it:
// kubepods…/pod<UID>…/<runtime>-<ID>.scope). The ID is container_id, not
// container: cAdvisor's and kube-state-metrics' container label is the
// container's name, which the cgroup does not say.
func jobLabels(id sample.JobIdentity, job *SlurmJob) []labelPair {
	var out []labelPair
	add := func(name, value string) {
		if value != "" {
			out = append(out, labelPair{name, labelValue(value)})
		}
	}
	add("slurm_job", id.SlurmJob)
	if job != nil {
		add("user", job.User)
		add("gpus", job.GPUs)
	}
	add("pod", id.Pod)
	add("namespace", id.Namespace)
	add("pod_uid", id.PodUID)
	add("container_id", id.Container)
	return out
}

// jobDescs returns a function that gives each metric's Desc with the job
// labels as constant labels, less those the metric has as variable ones
// (gpuwatch_verdict has slurm_job, pod and namespace). Without job labels
// it is the metric's own Desc, so a frame with no job reads as before.
func jobDescs(labels []labelPair) func(*metricDesc) *prometheus.Desc {
	if len(labels) == 0 {
		return func(m *metricDesc) *prometheus.Desc { return m.d }
	}
	cache := map[*metricDesc]*prometheus.Desc{}
	return func(m *metricDesc) *prometheus.Desc {
		if d, ok := cache[m]; ok {
			return d
		}
		c := prometheus.Labels{}
		for _, l := range labels {
			if !slices.Contains(m.labels, l.name) {
				c[l.name] = l.value
			}
		}
		d := prometheus.NewDesc(m.name, m.help, m.labels, c)
		cache[m] = d
		return d
	}
}
