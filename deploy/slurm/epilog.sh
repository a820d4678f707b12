#!/bin/sh
# Slurm Epilog for gpuwatch (slurm.conf: Epilog=/etc/slurm/gpuwatch-epilog.sh).
#
# The job's processes are gone when the epilog runs, so its last minute
# is judged from the frames `gpuwatch serve --slurm-frames-dir` kept
# while the job was mapped (prolog.sh):
#
#   gpuwatch replay FRAMES/$SLURM_JOB_ID.jsonl --once --last 1m
#
# (the verdict --once would have given over that minute: kind, evidence,
# advice; exit 0 healthy or idle, 3 a bottleneck, 4 nothing settled).
# The verdict goes where the job's user sees it:
#   - gpuwatch-$SLURM_JOB_ID.txt beside the job's output file (StdOut=),
#     else in its working folder (WorkDir=): both looked at and written
#     by a child running as the job's user, never by root;
#   - the job's AdminComment in the accounting database (sacctmgr modify
#     job; sacct -o AdminComment shows it), where slurmdbd keeps one.
# Then the mapping and the frames are removed.
#
# slurmd runs it as root with the job's SLURM_* variables; no variable
# chooses what it runs or reads. Settings: the variables below, in
# /etc/default/gpuwatch-slurm, then in the file of `--conf FILE` (slurmd
# passes no argument: a wrapper of the admin's does), each sourced only
# when root owns it and its folder and no one else may write either.
#
# Every command that touches a file system, a daemon or the job's paths
# runs under `timeout -k 2 LIMIT` (SIGTERM at its limit, SIGKILL 2 s
# later): the replay 45 s, scontrol 10 s, the job's paths 10 s, sacctmgr
# 15 s, the rest 5 s. The epilog ends within 130 s whatever hangs (about
# a second when nothing does); set PrologEpilogTimeout above that. It
# always exits 0: a failing epilog drains the node.
GPUWATCH=/usr/bin/gpuwatch
GPUWATCH_SLURM_JOB_DIR=/run/gpuwatch/jobs
GPUWATCH_SLURM_FRAMES_DIR=/var/lib/gpuwatch/slurm
GPUWATCH_SLURM_LAST=1m
GPUWATCH_SLURM_COMMENT=admin # admin: AdminComment; user: Comment; none

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
bounded 5 rm -f "$GPUWATCH_SLURM_JOB_DIR/$job" # serve closes the job's frames at its next frame
frames="$GPUWATCH_SLURM_FRAMES_DIR/$job.jsonl"
[ -f "$frames" ] || exit 0

# The frames are serve's, and what a job put in them is outside input:
# replay reads them as serve's user (the frames folder's owner: the unit's
# gpuwatch), so that its parser can gain no more than serve has. That is
# root only where serve runs as root (its folder root's): then nothing is
# lost that serve did not have already. replay stops at SIGTERM (its
# context is cancelled): -k only if it hangs.
owner=$(bounded 5 stat -c '%u:%g' -- "$GPUWATCH_SLURM_FRAMES_DIR" 2>/dev/null) || owner=
case "$owner" in
[0-9]*:[0-9]*)
	verdict=$(bounded 45 setpriv --reuid="${owner%%:*}" --regid="${owner#*:}" --clear-groups -- \
		"$GPUWATCH" replay "$frames" --once --last "$GPUWATCH_SLURM_LAST" 2>&1)
	status=$?
	;;
*)
	verdict="the frames folder's owner could not be read"
	status=1
	;;
esac
bounded 5 rm -f "$frames" "$frames.1"
case $status in
0 | 3 | 4) ;;
*) verdict="gpuwatch could not judge the job's last minute (exit $status): $verdict" ;;
esac

# The folder of the job's output file (StdOut=), else its working folder.
# Root only reads the paths' names from slurmctld; the job's user looks
# at them and writes there, in a bounded child: a path on a server that
# stopped answering costs the epilog that child's 10 s (12 with the
# SIGKILL), not the node, and whether a folder the user cannot see
# exists is never tested as root.
info=$(bounded 10 scontrol show job "$job" 2>/dev/null)
out=$(printf '%s\n' "$info" | sed -n 's/^ *StdOut=//p' | head -n 1)
workdir=$(printf '%s\n' "$info" | sed -n 's/^ *WorkDir=//p' | head -n 1)
folder=""
case "$out" in /*) folder=$(dirname -- "$out") ;; esac
case "$workdir" in /*) ;; *) workdir="" ;; esac
uid="${SLURM_JOB_UID:-}"
gid="${SLURM_JOB_GID:-$uid}"
case "$uid$gid" in '' | *[!0-9]*) uid="" ;; esac
host=$(bounded 5 hostname)
if [ -n "$uid" ] && [ -n "$folder$workdir" ]; then
	# As the job's user, never clobbering (set -C): the folders are theirs.
	printf 'gpuwatch, the last %s of Slurm job %s on %s:\n%s\n' "$GPUWATCH_SLURM_LAST" "$job" "$host" "$verdict" |
		bounded 10 setpriv --reuid="$uid" --regid="$gid" --clear-groups -- \
			sh -c 'for d in "$1" "$2"; do
				if [ -n "$d" ] && [ -d "$d" ]; then set -C; exec cat >"$d/$3"; fi
			done' sh "$folder" "$workdir" "gpuwatch-$job.txt" >/dev/null 2>&1
	# Not even SIGKILL ends a wait for a FUSE server that read the request
	# and never answers: the child may stay in the kernel after the
	# epilog has gone on, so it holds none of the epilog's output.
fi

# The first line (kind, severity, confidence) as the job's comment. slurmctld
# refuses to update a job that has ended ("Job has already finished"),
# and an epilog runs after the end, so it goes into the accounting
# database, whose job records take AdminComment and Comment after the end
# (sacctmgr modify job); sacct -o AdminComment shows it. Without
# slurmdbd there is no sacct, and no comment.
# Quoted as sacctmgr parses values (a double quote in it made single);
# sacctmgr 22.05 stores comments in lower case.
line=$(printf '%s\n' "$verdict" | head -n 1 | cut -c1-200 | tr '"' "'")
case "$GPUWATCH_SLURM_COMMENT" in
admin) field=AdminComment ;;
user) field=Comment ;; # stored only with AccountingStoreFlags=job_comment
*) exit 0 ;;
esac
bounded 15 sacctmgr -i modify job where JobID="$job" set "$field=\"gpuwatch: $line\"" >/dev/null 2>&1
exit 0
