// Package job is the probe family that reads the job gpuwatch watches
// rather than the host: its cgroup's limits and use (cgroup.go, v1 and v2,
// Slurm's and a container's), the cgroup namespace gpuwatch may itself run
// in (cgroupns.go), and the scheduler's identity of the job (identity.go:
// Slurm job, Kubernetes pod) for the exporter's labels.
//
// It imports the probes framework, host (for the PSI parser) and sample.
package job
