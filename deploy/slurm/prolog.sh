#!/bin/sh
# Slurm Prolog for gpuwatch (slurm.conf: Prolog=/etc/slurm/gpuwatch-prolog.sh).
#
# Maps the job for `gpuwatch serve --slurm-job-dir DIR` on this node: it
# writes DIR/$SLURM_JOB_ID with the job's user and GPUs, and serve labels
# its series with slurm_job, user and gpus (gpuwatch_slurm_job_info, and
# every series while the job is the node's), the way dcgm-exporter's
# --hpc-job-mapping-dir maps jobs. With --slurm-frames-dir, serve also
# keeps the job's frames for the epilog (epilog.sh).
#
# slurmd runs it as root, with the job's SLURM_* variables only; set the
# folder below or in /etc/default/gpuwatch-slurm (sourced when present).
# It never fails: a failing prolog drains the node and requeues the job,
# and monitoring must never cost a job.
GPUWATCH_SLURM_JOB_DIR=/run/gpuwatch/jobs
[ -r /etc/default/gpuwatch-slurm ] && . /etc/default/gpuwatch-slurm
[ -n "${GPUWATCH_SLURM_CONF:-}" ] && [ -r "$GPUWATCH_SLURM_CONF" ] && . "$GPUWATCH_SLURM_CONF"

job="${SLURM_JOB_ID:-}"
case "$job" in '' | *[!0-9]*) exit 0 ;; esac
dir="$GPUWATCH_SLURM_JOB_DIR"
umask 022
mkdir -p "$dir" 2>/dev/null || exit 0
# Written aside, then renamed: serve never reads half a file (it skips
# dot files).
tmp="$dir/.$job.$$"
if printf 'user=%s\ngpus=%s\n' "${SLURM_JOB_USER:-}" "${SLURM_JOB_GPUS:-}" >"$tmp" 2>/dev/null; then
	mv -f "$tmp" "$dir/$job" 2>/dev/null || rm -f "$tmp"
fi
exit 0
