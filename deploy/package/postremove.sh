#!/bin/sh
# After gpuwatch is removed (deb postrm "remove" or "purge", rpm %postun 0):
# systemd forgets the unit. The gpuwatch user is kept, as Debian does for
# system users (a reused id could inherit files it left); remove it with
# `userdel gpuwatch` if you wish. dpkg removes /etc/default/gpuwatch on purge.
set -e
case "$1" in
remove | purge | 0)
	if [ -d /run/systemd/system ]; then
		systemctl daemon-reload || true
	fi
	;;
esac
