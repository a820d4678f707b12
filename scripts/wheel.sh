#!/usr/bin/env bash
# The gpuwatch wheel: the binary and the hook in one platform wheel, as
# py-spy and ruff ship a compiled program through pip.
#
#   bash scripts/wheel.sh [--arch amd64|arm64] [--bin PATH] [--out DIR] [--version V]
#
# Without --bin it builds the binary as .goreleaser.yaml's linux-cgo build
# does (cgo for NVML, -trimpath, the same -ldflags; arm64 with
# aarch64-linux-gnu-gcc), so the compile is goreleaser's cached one; --bin
# takes a built one (dist/linux-cgo_linux_arm64_v8.0/gpuwatch from the
# snapshot). The wheel is built with Debian's python3-setuptools,
# python3-wheel and pip, offline (--no-build-isolation --no-index), from
# python/wheel/ staged with python/gpuwatch_hook/ and the binary as
# gpuwatch-V.data/scripts/gpuwatch (the environment's bin/gpuwatch).
#
# Its tag is py3-none-manylinux_2_X_<arch>: any Python 3, this platform,
# and X the newest glibc symbol version the binary links (at least 17,
# manylinux2014's floor). A cgo binary built against Debian 12's glibc
# needs 2.34 (__libc_start_main@GLIBC_2.34), so it says manylinux_2_34:
# pip refuses it on an older glibc instead of installing a program that
# cannot start. Prints the wheel's path.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_CFLAGS=-Wno-deprecated-declarations
repo=$PWD
# Debian's python3 (its setuptools, wheel and pip), not a pyenv one first on PATH.
py=${PYTHON:-/usr/bin/python3}

fail() { echo "wheel: $*" >&2; exit 1; }

arch=amd64 bin= out=dist/wheel version=
while [ $# -gt 0 ]; do
	case $1 in
	--arch) arch=$2; shift 2 ;;
	--bin) bin=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--version) version=$2; shift 2 ;;
	*) fail "unknown argument $1 (--arch, --bin, --out, --version)" ;;
	esac
done
case $arch in
amd64) machine=x86_64 elf='X86-64' cc= ;;
arm64) machine=aarch64 elf='AArch64' cc=aarch64-linux-gnu-gcc ;;
*) fail "--arch $arch: amd64 or arm64 (the release's cgo builds)" ;;
esac
# One version for the wheel and the hook in it: the hook's _version.py.
hook_version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' python/gpuwatch_hook/_version.py)
[ -n "$hook_version" ] || fail "no __version__ in python/gpuwatch_hook/_version.py"
version=${version:-$hook_version}
[ "$version" = "$hook_version" ] || fail "--version $version: the wheel carries the hook, version $hook_version"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/src
mkdir -p "$stage/bin" "$stage/gpuwatch_hook" "$stage/gpuwatch"
cp python/wheel/pyproject.toml python/wheel/setup.py python/wheel/README.md "$stage/"
cp python/wheel/gpuwatch/*.py "$stage/gpuwatch/"
cp python/gpuwatch_hook/*.py python/gpuwatch_hook/py.typed "$stage/gpuwatch_hook/"

if [ -z "$bin" ]; then
	commit=$(git rev-parse --short HEAD 2>/dev/null || echo none)
	env CGO_ENABLED=1 GOOS=linux GOARCH="$arch" ${cc:+CC="$cc"} go build -trimpath \
		-ldflags "-s -w -X github.com/gpuwatch/gpuwatch/cli.version=$version -X github.com/gpuwatch/gpuwatch/cli.commit=$commit" \
		-o "$stage/bin/gpuwatch" .
else
	cp "$bin" "$stage/bin/gpuwatch"
fi
chmod 0755 "$stage/bin/gpuwatch"

# The binary's platform, and the glibc it needs.
readelf -h "$stage/bin/gpuwatch" | grep -q "Machine:.*$elf" || fail "$bin is not a linux/$arch ELF binary"
readelf -d "$stage/bin/gpuwatch" | grep -q 'NEEDED.*libc\.so\.6' || fail "$bin does not link glibc (built without cgo: no NVML)"
glibc=$(readelf -V -W "$stage/bin/gpuwatch" | grep -o 'GLIBC_2\.[0-9]*' | cut -d. -f2 | sort -n | tail -1)
[ -n "$glibc" ] || fail "no GLIBC symbol versions in the binary"
glibc=$((glibc > 17 ? glibc : 17))
plat=manylinux_2_${glibc}_$machine
printf '[bdist_wheel]\nplat_name = %s\n' "$plat" >"$stage/setup.cfg"

mkdir -p "$out"
# SOURCE_DATE_EPOCH: the wheel's zip times are the commit's, not now's.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 315532800)} \
	"$py" -m pip wheel -q --no-build-isolation --no-index --no-deps -w "$tmp/whl" "$stage" 2>&1 |
	grep -v "Running pip as the 'root' user" || true
whl=$tmp/whl/gpuwatch-$version-py3-none-$plat.whl
[ -s "$whl" ] || fail "pip wheel built no $(basename "$whl"): $(ls "$tmp/whl" 2>/dev/null)"

# What a wheel must hold: the binary as a script, the whole hook, the tag.
"$py" - "$whl" "$version" "$plat" "$repo/python/gpuwatch_hook" <<-'PY' || fail "$whl is not whole"
	import os, sys, zipfile
	whl, version, plat, hook = sys.argv[1:]
	z = zipfile.ZipFile(whl)
	names = set(z.namelist())
	info = f"gpuwatch-{version}.dist-info/"
	script = f"gpuwatch-{version}.data/scripts/gpuwatch"
	assert script in names, f"no {script}"
	assert (z.getinfo(script).external_attr >> 16) & 0o111, f"{script} is not executable"
	want = {f"gpuwatch_hook/{f}" for f in os.listdir(hook) if f.endswith(".py") or f == "py.typed"}
	assert want <= names, f"the hook is not all there: {sorted(want - names)}"
	assert {"gpuwatch/__init__.py", "gpuwatch/__main__.py"} <= names
	wheel = z.read(info + "WHEEL").decode()
	assert f"Tag: py3-none-{plat}" in wheel and "Root-Is-Purelib: false" in wheel, wheel
	meta = z.read(info + "METADATA").decode()
	for line in ("Classifier: Operating System :: POSIX :: Linux", "Classifier: Environment :: GPU :: NVIDIA CUDA", "Requires-Python: >=3.9"):
	    assert line in meta, f"METADATA lacks {line!r}"
	assert "libnvidia-ml.so.1" in meta and "glibc" in meta, "METADATA does not say what the binary needs"
PY
cp "$whl" "$out/"
echo "$out/$(basename "$whl")"
