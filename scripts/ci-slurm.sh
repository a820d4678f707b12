#!/usr/bin/env bash
# CI: deploy/slurm on a real Slurm. Installs Debian's Slurm (slurm-wlm,
# slurmdbd), MUNGE and MariaDB, then runs TestSlurmPrologEpilogOnARealSlurm:
# a one-node cluster of this machine (a private munged, MariaDB, slurmdbd,
# slurmctld and slurmd, on loopback ports, in a temporary folder, all
# stopped at the end), gpuwatch serve with --slurm-job-dir and
# --slurm-frames-dir, and a real PyTorch DataLoader job submitted with
# sbatch; it checks serve's job labels, the epilog's verdict file and
# sacct's AdminComment. Then the epilog and prolog run by hand (fake
# scontrol and sacctmgr; issue 54): the job's output on an sshfs mount
# whose sshd is stopped, a folder the job's user cannot see, settings
# only root may write. Run as root from anywhere; idempotent.
# `ci-slurm.sh --packages` only prints the Debian packages it would install
# (.ci/run installs them with the rest, and its integration step runs the
# test with GPUWATCH_REQUIRE_SLURM=1).
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_CFLAGS=-Wno-deprecated-declarations

need=()
for p in sshfs:sshfs /usr/sbin/sshd:openssh-server slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge slurmdbd:slurmdbd mariadbd:mariadb-server setpriv:util-linux; do
	command -v "${p%%:*}" >/dev/null || need+=("${p#*:}")
done
/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null || need+=(python3-torch python3-numpy)
if [ "${1:-}" = --packages ]; then
	echo "${need[@]}"
	exit 0
fi
if [ ${#need[@]} -gt 0 ]; then
	apt-get update -qq
	# Their services may not start here (a container's policy-rc.d): the
	# test starts its own daemons.
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

GPUWATCH_REQUIRE_SLURM=1 GPUWATCH_REQUIRE_PYTHON=1 GPUWATCH_REQUIRE_SSHFS=1 timeout 600 \
	go test -tags integration -count=1 -timeout 9m -v -run 'TestSlurmPrologEpilogOnARealSlurm|TestEpilog|TestSlurmScripts' . 2>&1 |
	grep -Ev '^=== (RUN|PAUSE|CONT)'
