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
# slurmd runs it as root, with the job's SLURM_* variables; no variable
# chooses what it runs or reads. Set the folder below, in
# /etc/default/gpuwatch-slurm, or in the file of `--conf FILE` (slurmd
# passes no argument: a wrapper of the admin's does), each sourced only
# when root owns it and its folder and no one else may write either.
# Every command runs under `timeout -k 2 5` (SIGTERM at 5 s, SIGKILL 2 s
# later): the prolog ends within 45 s whatever hangs. It never fails: a
# failing prolog drains the node and requeues the job, and monitoring
# must never cost a job.
GPUWATCH_SLURM_JOB_DIR=/run/gpuwatch/jobs

# bounded LIMIT CMD...: CMD, sent SIGTERM after LIMIT seconds and SIGKILL
# 2 s later.
bounded() {
	limit=$1
	shift
	timeout -k 2 "$limit" "$@"
}

# rootonly FILE: FILE and its folder are root's and no one else may
# write them (owner uid 0, no group or other write bit; a link is judged
# by what it leads to), so sourcing FILE runs only what root wrote.
rootonly() {
	[ -f "$1" ] || return 1
	modes=$(bounded 5 stat -L -c '%u %a' -- "$1" "$(dirname -- "$1")" 2>/dev/null) || return 1
	set -- $modes
	[ $# = 4 ] && [ "$1" = 0 ] && [ "$3" = 0 ] || return 1
	case "$2$4" in *[!0-7]*) return 1 ;; esac
	[ $((0$2 & 022)) = 0 ] && [ $((0$4 & 022)) = 0 ]
}

rootonly /etc/default/gpuwatch-slurm && . /etc/default/gpuwatch-slurm
if [ "${1:-}" = --conf ] && [ -n "${2:-}" ]; then
	rootonly "$2" && . "$2"
fi

job="${SLURM_JOB_ID:-}"
case "$job" in '' | *[!0-9]*) exit 0 ;; esac
dir="$GPUWATCH_SLURM_JOB_DIR"
umask 022
bounded 5 mkdir -p "$dir" 2>/dev/null || exit 0
# Written aside, then renamed: serve never reads half a file (it skips
# dot files).
tmp="$dir/.$job.$$"
if printf 'user=%s\ngpus=%s\n' "${SLURM_JOB_USER:-}" "${SLURM_JOB_GPUS:-}" |
	bounded 5 sh -c 'cat >"$1"' sh "$tmp" 2>/dev/null; then
	bounded 5 mv -f "$tmp" "$dir/$job" 2>/dev/null || bounded 5 rm -f "$tmp"
else
	bounded 5 rm -f "$tmp"
fi
exit 0
