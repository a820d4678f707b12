#!/bin/sh
# Before gpuwatch is removed (deb prerm "remove", rpm %preun 0; not on an
# upgrade): the service stopped and disabled, so no link to a unit that is
# gone is left behind. Disabling works without a running systemd.
set -e
case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl stop gpuwatch.service || true
	fi
	if command -v systemctl >/dev/null 2>&1; then
		systemctl --no-reload disable gpuwatch.service >/dev/null 2>&1 || true
	fi
	;;
esac
