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
#   - gpuwatch-$SLURM_JOB_ID.txt beside the job's output file (written as
#     the job's user, so a link the user planted leads nowhere root could
#     write);
#   - the job's AdminComment in the accounting database (sacctmgr modify
#     job; sacct -o AdminComment shows it), where slurmdbd keeps one.
# Then the mapping and the frames are removed.
#
# slurmd runs it as root with the job's SLURM_* variables only. Every step
# is bounded by timeout, and it always exits 0: a failing epilog drains
# the node.
GPUWATCH=/usr/bin/gpuwatch
GPUWATCH_SLURM_JOB_DIR=/run/gpuwatch/jobs
GPUWATCH_SLURM_FRAMES_DIR=/var/lib/gpuwatch/slurm
GPUWATCH_SLURM_LAST=1m
GPUWATCH_SLURM_COMMENT=admin # admin: AdminComment; user: Comment; none
[ -r /etc/default/gpuwatch-slurm ] && . /etc/default/gpuwatch-slurm
[ -n "${GPUWATCH_SLURM_CONF:-}" ] && [ -r "$GPUWATCH_SLURM_CONF" ] && . "$GPUWATCH_SLURM_CONF"

job="${SLURM_JOB_ID:-}"
case "$job" in '' | *[!0-9]*) exit 0 ;; esac
rm -f "$GPUWATCH_SLURM_JOB_DIR/$job" # serve closes the job's frames at its next frame
frames="$GPUWATCH_SLURM_FRAMES_DIR/$job.jsonl"
[ -f "$frames" ] || exit 0

verdict=$(timeout 60 "$GPUWATCH" replay "$frames" --once --last "$GPUWATCH_SLURM_LAST" 2>&1)
status=$?
rm -f "$frames" "$frames.1"
case $status in
0 | 3 | 4) ;;
*) verdict="gpuwatch could not judge the job's last minute (exit $status): $verdict" ;;
esac

# The folder of the job's output file (StdOut=), else its working folder.
info=$(timeout 10 scontrol show job "$job" 2>/dev/null)
out=$(printf '%s\n' "$info" | sed -n 's/^ *StdOut=//p' | head -n 1)
folder=""
case "$out" in /*) folder=$(dirname -- "$out") ;; esac
if [ -z "$folder" ] || [ ! -d "$folder" ]; then
	folder=$(printf '%s\n' "$info" | sed -n 's/^ *WorkDir=//p' | head -n 1)
fi
uid="${SLURM_JOB_UID:-}"
gid="${SLURM_JOB_GID:-$uid}"
case "$uid$gid" in '' | *[!0-9]*) uid="" ;; esac
if [ -n "$folder" ] && [ -d "$folder" ] && [ -n "$uid" ]; then
	# As the job's user, never clobbering (set -C): the folder is theirs.
	printf 'gpuwatch, the last %s of Slurm job %s on %s:\n%s\n' "$GPUWATCH_SLURM_LAST" "$job" "$(hostname)" "$verdict" |
		timeout 10 setpriv --reuid="$uid" --regid="$gid" --clear-groups -- \
			sh -c 'set -C; cat >"$1"' sh "$folder/gpuwatch-$job.txt" 2>/dev/null
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
timeout 20 sacctmgr -i modify job where JobID="$job" set "$field=\"gpuwatch: $line\"" >/dev/null 2>&1
exit 0
