#!/usr/bin/env bash
# CI and releases: the OCI image of `gpuwatch serve` (docs/image.md), made
# from Debian's packages only (no base image is pulled from a registry) and
# run with podman as a user would. Run as root from the repository root on
# a Debian 12 machine; it installs what it needs (mmdebstrap, podman, runc).
#
#   bash scripts/ci-image.sh [--binary PATH] [--repository NAME]
#
#  1. The linux/amd64 binary: --binary (a release's
#     dist/linux-cgo_linux_amd64_v1/gpuwatch), else built by
#     `goreleaser build --single-target --id linux-cgo` into a private
#     dist (.goreleaser.yaml stays the one place the flags are said).
#  2. The root filesystem: mmdebstrap --variant=extract of bookworm's
#     libc6 (the binary's only library: ldd) with its dependencies,
#     base-files (os-release), netbase and ca-certificates (the bundle made
#     as update-ca-certificates makes it), a passwd with root and nobody
#     (65534), a dpkg status that lists every package whose files are in
#     it (for image scanners). No libnvidia-ml.so.1: the NVIDIA container
#     runtime puts the node's driver library in at start.
#  3. podman build of deploy/image/Containerfile, tagged
#     REPOSITORY:VERSION (ghcr.io/gpuwatch/gpuwatch, the chart's default;
#     VERSION is the binary's, '+' written '-'), with the OCI labels.
#  4. podman run: `version`, then `serve` as the chart runs it (read-only
#     root, no capability, uid 65534) answering /metrics with gpuwatch_
#     series on a loopback port; the size said; the image saved as an
#     oci-archive, dist/gpuwatch_VERSION_linux_amd64.oci.tar.
# Every podman call has a timeout; the container is removed on any exit.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_CFLAGS=-Wno-deprecated-declarations

step() { printf '\n--- [%ds] image: %s\n' "$SECONDS" "$*"; }
fail() { echo "ci-image: $*" >&2; exit 1; }

binary="" repository=ghcr.io/gpuwatch/gpuwatch
while [ $# -gt 0 ]; do
	case $1 in
	--binary) binary=$(realpath "$2"); shift 2 ;;
	--repository) repository=$2; shift 2 ;;
	*) fail "usage: ci-image.sh [--binary PATH] [--repository NAME]" ;;
	esac
done
[ "$(id -u)" = 0 ] || fail "run as root (mmdebstrap extracts as root; podman as root needs no user namespace)"

# Debian 12's podman as root, on a machine without systemd as PID 1, picks
# the cgroupfs manager and the file events backend by itself (podman
# info: Host.CgroupManager, Host.EventLogger) and overlay storage on an
# ext4 /var/lib/containers. What CI's machines need beside that (their
# cgroups are hybrid, v1 controllers with a v2 tree that holds hugetlb;
# their root lacks CAP_SYS_RESOURCE), found here:
#  --runtime=runc   crun 1.8 refuses hybrid cgroups ("cgroups in hybrid
#                   mode not supported, drop all controllers from
#                   cgroupv2"); runc runs on v1, hybrid and v2 alike.
#  --ulimit nofile=16384:16384 --ulimit nproc=4096:4096 (run only)
#                   podman as root sets RLIMIT_NOFILE 1048576 and
#                   RLIMIT_NPROC 32768 or more, which a root without
#                   CAP_SYS_RESOURCE may not raise past its hard limits
#                   (here 20000 files): "setrlimit RLIMIT_NOFILE:
#                   Operation not permitted". serve needs far fewer
#                   (--max-connections 64, 256 attached loaders).
# PODMAN_FLAGS replaces the global ones where a machine needs others
# (e.g. adds --storage-driver=vfs where /var/lib/containers is on overlayfs).
read -ra podman_flags <<<"${PODMAN_FLAGS:---runtime=runc}"
run_flags=(--ulimit nofile=16384:16384 --ulimit nproc=4096:4096)
pm() { # pm SECONDS ARGS...: podman, bounded
	local limit=$1
	shift
	timeout --kill-after=10 "$limit" podman "${podman_flags[@]}" "$@"
}

step "tools"
need=()
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || need+=(runc)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
	timeout 600 apt-get update -qq
	DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq "${need[@]}" >/dev/null
fi
podman --version
mmdebstrap --version

tmp=$(mktemp -d)
name=gpuwatch-ci-image-$$
cleanup() {
	pm 60 rm --force --time 5 "$name" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

step "the linux/amd64 binary"
if [ -z "$binary" ]; then
	goreleaser=$(bash scripts/ci-tools.sh goreleaser)
	# A private dist: dist/ may hold a release's files, and goreleaser
	# refuses a dist/ that is not empty.
	mkdir -p "$tmp/out"
	{ cat .goreleaser.yaml; echo "dist: $tmp/dist"; } >"$tmp/goreleaser.yaml"
	t0=$SECONDS
	timeout 900 "$goreleaser" build --snapshot --single-target --id linux-cgo --skip=before,validate \
		-f "$tmp/goreleaser.yaml" -o "$tmp/out/gpuwatch" >"$tmp/build.log" 2>&1 ||
		{ tail -20 "$tmp/build.log"; fail "goreleaser build failed"; }
	echo "goreleaser build: $((SECONDS - t0)) s"
	binary=$tmp/out/gpuwatch
fi
[ -x "$binary" ] || fail "$binary is not an executable"
# ELF, and e_machine (bytes 18-19, little-endian) EM_X86_64.
[ "$(od -An -N4 -tx1 "$binary" | tr -d ' ')" = 7f454c46 ] && [ "$(od -An -j18 -N2 -tx2 "$binary" | tr -d ' ')" = 003e ] ||
	fail "$binary is not a linux/amd64 binary"
v=$("$binary" version) || fail "$binary version failed"
echo "$v"
grep -q 'NVML support compiled in' <<<"$v" || fail "$binary has no NVML support (a cgo build is needed)"
version=$(awk '{print $2; exit}' <<<"$v")
tag=${version//+/-} # OCI tags: [A-Za-z0-9_][A-Za-z0-9._-]{0,127}
[[ $tag =~ ^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$ ]] || fail "version $version makes no image tag"
image=$repository:$tag
# The libraries it links: libc.so.6 and the loader, both libc6's. A new
# one (a cgo dependency) must be added to the packages below.
libs=$(ldd "$binary" | awk '$1 !~ /^linux-vdso/ {print $1}' | sort | tr '\n' ' ')
[ "$libs" = "/lib64/ld-linux-x86-64.so.2 libc.so.6 " ] || fail "$binary links $libs: add their packages to the image (libc6 only now)"
cp "$binary" "$tmp/gpuwatch"

step "the root filesystem: mmdebstrap from bookworm"
# Mtimes clamped to the commit's time, and podman build --timestamp the
# same: the same commit and the same packages give the same layers.
export SOURCE_DATE_EPOCH
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
root=$tmp/root extra=$tmp/extra debs=$tmp/debs
mkdir -p "$extra" "$debs"
chmod 755 "$tmp" "$extra" # apt-get download's _apt user writes there
t0=$SECONDS
# extract: the packages' files, no maintainer script run (no shell in
# the image to run one), apt's dependencies of --include with them
# (libc6: libgcc-s1, gcc-12-base). The extract hook keeps the .debs
# (sync-out) and downloads base-files, netbase and ca-certificates
# alone: ca-certificates' dependencies (openssl, debconf and perl) only
# serve update-ca-certificates, whose one product is made below.
timeout 600 mmdebstrap --quiet --variant=extract --include=libc6 \
	--extract-hook="sync-out /var/cache/apt/archives $debs" \
	--extract-hook="cd $extra && APT_CONFIG=\$MMDEBSTRAP_APT_CONFIG apt-get download -qq -o APT::Sandbox::User=root base-files netbase ca-certificates" \
	bookworm "$root" \
	"deb http://deb.debian.org/debian bookworm main" \
	"deb http://deb.debian.org/debian bookworm-updates main" \
	"deb http://deb.debian.org/debian-security bookworm-security main" ||
	fail "mmdebstrap failed (deb.debian.org reachable? see above)"
echo "mmdebstrap: $((SECONDS - t0)) s"
for deb in "$extra"/*.deb; do dpkg-deb --extract "$deb" "$root"; done
[ -e "$root/usr/lib/os-release" ] && [ -e "$root/lib64/ld-linux-x86-64.so.2" ] || fail "the root filesystem lacks base-files or libc6"

# What the maintainer scripts would have made, and only that: the CA
# bundle (update-ca-certificates concatenates the same files), the
# users and groups (base-passwd's root and nobody/nogroup), the name
# services read from files (no nsswitch.conf makes glibc ask DNS before
# /etc/hosts), the loader's configuration (libc-bin's).
mkdir -p "$root/etc/ssl/certs"
cat "$root"/usr/share/ca-certificates/mozilla/*.crt >"$root/etc/ssl/certs/ca-certificates.crt"
printf '%s\n' 'root:x:0:0:root:/root:/usr/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin' >"$root/etc/passwd"
printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$root/etc/group"
printf '%s\n' 'passwd: files' 'group: files' 'shadow: files' 'hosts: files dns' 'networks: files' 'protocols: files' 'services: files' >"$root/etc/nsswitch.conf"
echo 'include /etc/ld.so.conf.d/*.conf' >"$root/etc/ld.so.conf"
# The dpkg status of what is in it (scanners read it to know which
# Debian packages, and versions, an image holds).
status=$root/var/lib/dpkg/status
find "$root/var/lib/dpkg" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
for deb in "$debs"/*.deb "$extra"/*.deb; do
	dpkg-deb --field "$deb" | awk '{ print } /^Package:/ { print "Status: install ok installed" }'
	echo
done >"$status"
echo "packages: $(awk '/^Package:/ { p = $2 } /^Version:/ { printf "%s%s %s", sep, p, $2; sep = ", " }' "$status")"
# Left out, as Debian's slim images leave them out with dpkg's
# path-exclude: documentation but the copyright files, manuals, lintian
# overrides, and glibc's iconv modules (gconv: 8 MiB that only iconv(3)
# loads; Go never calls it). mmdebstrap's apt and dpkg set-up, and the
# host's resolv.conf and hostname (the runtime mounts its own) go too.
rm -rf "$root"/usr/share/man "$root"/usr/share/info "$root"/usr/share/lintian \
	"$root"/usr/lib/x86_64-linux-gnu/gconv \
	"$root"/etc/apt "$root"/etc/dpkg "$root"/var/lib/apt "$root"/var/cache/apt "$root"/var/log/apt \
	"$root"/etc/fstab "$root"/etc/hostname "$root"/etc/resolv.conf
find "$root/usr/share/doc" -type f ! -name copyright -delete
find "$root/dev" -mindepth 1 -delete
mkdir -p "$root/proc" "$root/sys" "$root/run"
[ -z "$(find "$root" -name 'libnvidia*')" ] || fail "a libnvidia library in the image: the NVIDIA runtime brings the node's own"
mkdir -p "$tmp/ctx"
tar --create --file "$tmp/ctx/rootfs.tar" --directory "$root" --format=gnu --sort=name \
	--numeric-owner --owner=0 --group=0 --mtime="@$SOURCE_DATE_EPOCH" .
mv "$tmp/gpuwatch" "$tmp/ctx/gpuwatch"
echo "rootfs.tar: $(du -m "$tmp/ctx/rootfs.tar" | cut -f1) MiB, $(tar -tf "$tmp/ctx/rootfs.tar" | wc -l) entries"

step "podman build $image"
revision=$(git rev-parse HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] || revision=$revision-dirty
old=$(pm 60 image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
pm 300 build --quiet --file deploy/image/Containerfile --timestamp "$SOURCE_DATE_EPOCH" \
	--label org.opencontainers.image.version="$version" \
	--label org.opencontainers.image.revision="$revision" \
	--tag "$image" "$tmp/ctx" >/dev/null || fail "podman build failed"
new=$(pm 60 image inspect --format '{{.Id}}' "$image")
if [ -n "$old" ] && [ "$old" != "$new" ]; then # an earlier run's, now untagged
	pm 60 rmi "$old" >/dev/null 2>&1 || true
fi
got=$(pm 60 image inspect --format '{{.Config.User}} {{json .Config.Entrypoint}} {{json .Config.Cmd}} {{json .Config.ExposedPorts}}' "$image")
[ "$got" = '65534:65534 ["/usr/bin/gpuwatch"] ["serve"] {"9400/tcp":{}}' ] || fail "the image's config: $got"
for l in source:https://github.com/gpuwatch/gpuwatch version:$version revision:$revision; do
	got=$(pm 60 image inspect --format "{{index .Labels \"org.opencontainers.image.${l%%:*}\"}}" "$image")
	[ "$got" = "${l#*:}" ] || fail "label org.opencontainers.image.${l%%:*}: '$got', want '${l#*:}'"
done
size=$(pm 60 image inspect --format '{{.Size}}' "$image")
echo "$image: $new, $((size / 1048576)) MiB ($size bytes; the binary $(($(stat -c %s "$tmp/ctx/gpuwatch") / 1048576)) MiB of it)"

step "podman run $image version"
got=$(pm 60 run "${run_flags[@]}" --rm "$image" version) || fail "podman run $image version failed"
[ "$got" = "$v" ] || fail "podman run $image version: '$got', want '$v'"
echo "$got"

step "podman run $image serve, as the chart runs it: /metrics on a loopback port"
# The chart's container: read-only root, every capability dropped, no
# privilege escalation, uid 65534 (the image's USER).
pm 60 run "${run_flags[@]}" --detach --name "$name" --read-only --cap-drop=all --security-opt=no-new-privileges \
	--publish 127.0.0.1::9400 "$image" serve --listen=:9400 >/dev/null || fail "podman run serve failed"
addr=$(pm 30 port "$name" 9400/tcp | head -1)
[[ $addr == 127.0.0.1:* ]] || fail "podman port: '$addr'"
t0=$SECONDS body=""
while [ $((SECONDS - t0)) -lt 60 ]; do
	body=$(curl -fsS --max-time 5 "http://$addr/metrics" 2>/dev/null) && grep -q '^gpuwatch_' <<<"$body" && break
	body=""
	state=$(pm 30 inspect --format '{{.State.Status}}' "$name")
	[ "$state" = running ] || { pm 30 logs "$name" | tail -20; fail "serve is $state, not running"; }
	sleep 0.5
done
[ -n "$body" ] || { pm 30 logs "$name" | tail -20; fail "no gpuwatch_ series at http://$addr/metrics within 60 s"; }
echo "http://$addr/metrics after $((SECONDS - t0)) s: $(grep -c '^gpuwatch_' <<<"$body") gpuwatch_ samples, $(grep '^# TYPE gpuwatch_' <<<"$body" | wc -l) series names"
grep -E '^gpuwatch_(verdict|build_info)' <<<"$body" | head -3 || true
got=$(pm 30 top "$name" huser | tail -n +2 | sort -u | tr -d ' ')
[ "$got" = 65534 ] || [ "$got" = nobody ] || fail "serve runs as '$got' on the host, want 65534"
echo "serve runs as uid 65534"
pm 60 stop --time 10 "$name" >/dev/null || fail "podman stop failed"
got=$(pm 30 inspect --format '{{.State.ExitCode}}' "$name")
[ "$got" = 0 ] || { pm 30 logs "$name" | tail -20; fail "serve exited $got on podman stop (SIGTERM), want 0"; }
echo "stopped: serve exited 0"
pm 60 rm "$name" >/dev/null

step "the image saved: an oci-archive in dist/"
mkdir -p dist
archive=dist/gpuwatch_${tag}_linux_amd64.oci.tar
rm -f "$archive"
pm 300 save --quiet --format oci-archive --output "$archive" "$image" || fail "podman save failed"
list=$(tar -tf "$archive") # read whole: grep -q would end the pipe early (pipefail)
grep -qx 'index.json' <<<"$list" || fail "$archive is no OCI layout"
(cd dist && sha256sum "${archive#dist/}" >"${archive#dist/}.sha256")
echo "$archive: $(($(stat -c %s "$archive") / 1048576)) MiB, sha256 $(cut -d' ' -f1 "$archive.sha256")"
step "done ($SECONDS s)"
