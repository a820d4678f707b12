#!/bin/sh
# After gpuwatch is installed or upgraded (deb postinst "configure", rpm %post
# 1 or 2): the system user that gpuwatch.service runs as, and systemd told of
# the unit. The service is not enabled here: `systemctl enable --now
# gpuwatch` is the administrator's call, as it opens a port.
set -e
if command -v systemd-sysusers >/dev/null 2>&1; then
	systemd-sysusers /usr/lib/sysusers.d/gpuwatch.conf
elif ! getent passwd gpuwatch >/dev/null; then
	nologin=/usr/sbin/nologin
	[ -x "$nologin" ] || nologin=/sbin/nologin
	useradd --system --user-group --no-create-home --home-dir /nonexistent \
		--shell "$nologin" --comment "gpuwatch exporter" gpuwatch
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
	# An upgrade restarts a running service, so that it runs the new binary.
	systemctl try-restart gpuwatch.service || true
fi
