#!/usr/bin/env bash
# Issue 41, items 1-4, with two real users on this machine (docs/security.md):
# gpuwatch run as one uid, another uid (nobody) trying to plant code in the
# run folder, squatting /tmp/gpuwatch-UID, reading the hook without its token
# and holding its connections. Runs as root (setpriv switches users); needs
# util-linux's setpriv and Debian's python3-torch (.ci/run installs it; the
# hook test skips without it). About 50 s on a 2-core VM.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
	echo "shared-box: needs root (it runs gpuwatch as two other users); skipped" >&2
	exit 0
fi
command -v setpriv >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq util-linux >/dev/null; }
export CGO_CFLAGS=${CGO_CFLAGS:--Wno-deprecated-declarations}
go test -tags integration -count=1 -timeout 10m -v -run 'TestSharedBox' . 2>&1 | grep -Ev '^=== (RUN|PAUSE|CONT)'
