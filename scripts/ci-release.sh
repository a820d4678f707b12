#!/usr/bin/env bash
# CI: the releases, built and installed as a user would. Run as root from the
# repository root (`bash scripts/ci-release.sh`) on a Debian machine; it
# installs what it needs and leaves the machine as it found it (the package
# purged, dist/ removed; the gpuwatch system user stays, as Debian keeps
# system users).
#
#  1. goreleaser check, then every archive, deb and rpm of .goreleaser.yaml:
#     goreleaser release --snapshot --clean --skip=publish.
#  2. The amd64 deb installed with apt-get; from a folder outside the
#     checkout, the installed /usr/bin/gpuwatch: version, `run --once` over
#     a real PyTorch DataLoader loop (the hook gpuwatch embeds), the
#     packaged hook imported by a training script without `gpuwatch run`
#     (Debian's python3 finds it through
#     /usr/lib/python3/dist-packages/gpuwatch.pth) and read by plain
#     gpuwatch, the bash completion and the man pages.
#  3. The linux/amd64 archive unpacked in a temporary folder, and the same
#     from there (the hook with PYTHONPATH=DIR/python).
#  4. The installed unit: systemd-analyze verify (any warning fails) and
#     security (exposure at most 2.5 of 10); then the service run as its unit
#     says, in its sandbox, scraped by Debian's Prometheus and read back by
#     `gpuwatch fleet` (TestInstalledServiceScrapedByPrometheus).
#  5. apt-get purge: nothing of the package left.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_CFLAGS=-Wno-deprecated-declarations
repo=$PWD

step() { printf '\n--- [%ds] release: %s\n' "$SECONDS" "$*"; }
fail() { echo "ci-release: $*" >&2; exit 1; }

step "tools"
need=()
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu) # linux/arm64 with cgo
command -v systemd-analyze >/dev/null || need+=(systemd)
command -v man >/dev/null || need+=(man-db)
[ -e /usr/share/bash-completion/bash_completion ] || need+=(bash-completion)
command -v prometheus >/dev/null || need+=(prometheus)
command -v rpm >/dev/null || need+=(rpm) # to read the rpm's file list and scripts
command -v setpriv >/dev/null || need+=(util-linux)
/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null || need+=(python3-torch python3-numpy)
if [ ${#need[@]} -gt 0 ]; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# man-db in a slim image may be told to skip documentation: man -w must find ours.
if [ -e /etc/dpkg/dpkg.cfg.d/excludes ] && grep -q '/usr/share/man' /etc/dpkg/dpkg.cfg.d/excludes; then
	fail "dpkg excludes /usr/share/man here (/etc/dpkg/dpkg.cfg.d/excludes): the man page check cannot run"
fi
goreleaser=$(bash scripts/ci-tools.sh goreleaser)

tmp=$(mktemp -d)
cleanup() {
	rm -rf "$tmp" "$repo/dist" "$repo/completions" "$repo/manpages"
	if dpkg -s gpuwatch >/dev/null 2>&1; then
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq gpuwatch >/dev/null || true
	fi
}
trap cleanup EXIT
if dpkg -s gpuwatch >/dev/null 2>&1; then
	fail "a gpuwatch package is installed already: this check installs its own (apt-get purge gpuwatch first)"
fi

step "goreleaser check and every archive and package (snapshot)"
"$goreleaser" check
t0=$SECONDS
"$goreleaser" release --snapshot --clean --skip=publish 2>&1 | grep -E '^\s+• (took|release succeeded)|error|⨯' || true
[ -s dist/checksums.txt ] || fail "goreleaser built nothing (see above)"
echo "snapshot: $((SECONDS - t0)) s"
commit=$(git rev-parse --short HEAD)
if ! git ls-remote --get-url >/dev/null 2>&1; then # a checkout without a remote (a local worktree)
	echo "no git remote: goreleaser's snapshot leaves the commit unset"
	commit=none
fi
archives=(dist/gpuwatch_*.tar.gz) debs=(dist/gpuwatch_*.deb) rpms=(dist/gpuwatch-*.rpm)
echo "${#archives[@]} archives, ${#debs[@]} debs, ${#rpms[@]} rpms"
(cd dist && sha256sum --quiet --check checksums.txt)
hook_files=$(cd python && ls gpuwatch_hook/*.py gpuwatch_hook/py.typed | sort)
for a in "${archives[@]}"; do
	list=$(tar tzf "$a") # read whole: grep -q would end the pipe early (pipefail)
	got=$(sed -n 's|^python/gpuwatch_hook/|gpuwatch_hook/|p' <<<"$list" | sort)
	[ "$got" = "$hook_files" ] || fail "$a: the hook is not all there: $got"
	grep -qx deploy/systemd/gpuwatch.service <<<"$list" || fail "$a: no deploy/systemd/gpuwatch.service"
done
for d in "${debs[@]}"; do
	list=$(dpkg-deb -c "$d")
	grep -q ' ./usr/share/gpuwatch/python/gpuwatch_hook/__init__.py$' <<<"$list" || fail "$d: no hook"
	grep -q ' ./usr/lib/systemd/system/gpuwatch.service$' <<<"$list" || fail "$d: no unit"
	grep -q ' ./usr/lib/python3/dist-packages/gpuwatch.pth$' <<<"$list" || fail "$d: no .pth"
	[ -n "$(dpkg-deb -f "$d" Version)" ] || fail "$d: no version"
done
for r in "${rpms[@]}"; do
	list=$(rpm -qlp "$r" 2>/dev/null)
	for f in /usr/bin/gpuwatch /usr/share/gpuwatch/python/gpuwatch_hook/__init__.py /usr/lib/systemd/system/gpuwatch.service /etc/default/gpuwatch /usr/lib/sysusers.d/gpuwatch.conf; do
		grep -qx "$f" <<<"$list" || fail "$r: no $f"
	done
	grep -q 'systemd-sysusers' <<<"$(rpm -qp --scripts "$r" 2>/dev/null)" || fail "$r: no postinstall script"
	grep -qx /etc/default/gpuwatch <<<"$(rpm -qp --configfiles "$r" 2>/dev/null)" || fail "$r: /etc/default/gpuwatch is not a config file"
done

# check_binary BIN HOOKDIR: BIN's version, `gpuwatch run --once` over a real
# PyTorch DataLoader (the embedded hook), and the hook in HOOKDIR imported
# by a script and found by plain gpuwatch; PYTHONPATH as the caller set it.
check_binary() {
	local bin=$1 hookdir=$2 work
	work=$(mktemp -d "$tmp/run.XXXX")
	cp "$repo/python/examples/dataloader_bench.py" "$repo/python/examples/train_cpu.py" "$work/"
	v=$("$bin" version) && echo "$v"
	grep -q "commit $commit, .*NVML support compiled in" <<<"$v" || fail "$bin version: want commit $commit with NVML"
	(
		cd "$work"
		export XDG_RUNTIME_DIR=$work OPENBLAS_NUM_THREADS=1 # announcements of its own; the BLAS pool off
		status=0
		"$bin" run --once --json --record run.jsonl -- /usr/bin/python3 dataloader_bench.py --seconds 90 >summary.json 2>job.log || status=$?
		cat summary.json
		case $status in 0 | 3) ;; *) tail -20 job.log; fail "$bin run --once: exit $status (0 or 3: a settled verdict)" ;; esac
		/usr/bin/python3 - run.jsonl <<-'EOF' || fail "$bin run --once: the hook was not seen (run.jsonl)"
			import json, sys
			frames = [json.loads(l) for l in open(sys.argv[1])]
			seen = [f for f in frames if "the hook" in (f.get("target") or {}).get("loader", "")]
			print(f"run --once: {len(seen)} of {len(frames)} frames read the loop through the hook")
			sys.exit(0 if seen else 1)
		EOF
		got=$(/usr/bin/python3 -c 'import gpuwatch_hook; print(gpuwatch_hook.__file__)')
		[ "$got" = "$hookdir/gpuwatch_hook/__init__.py" ] || fail "import gpuwatch_hook: $got, want $hookdir"
		# A script that imports the hook itself (train_cpu.py: watch(loader,
		# port=0)), then plain gpuwatch, which finds it by its announcement.
		/usr/bin/python3 train_cpu.py --workers 0 --port 0 --seconds 60 >train.log 2>&1 &
		job=$!
		for _ in $(seq 120); do # its announcement, polled (torch takes seconds to import)
			announced=$(ls gpuwatch/"$job"-*.json 2>/dev/null || true)
			[ -n "$announced" ] || ! kill -0 "$job" 2>/dev/null || { sleep 0.5; continue; }
			break
		done
		[ -n "$announced" ] || { cat train.log; fail "train.py with the packaged hook never announced itself"; }
		port=${announced##*-}
		port=${port%.json}
		status=0
		"$bin" --once --json --record plain.jsonl >plain.json 2>plain.log || status=$?
		kill "$job" 2>/dev/null || true
		wait "$job" 2>/dev/null || true
		cat plain.json
		case $status in 0 | 3) ;; *) cat plain.log train.log; fail "plain $bin --once beside the hooked loop: exit $status" ;; esac
		/usr/bin/python3 - plain.jsonl "http://127.0.0.1:$port" <<-'EOF' || fail "plain $bin --once did not read the hooked loop"
			import json, sys
			frames = [json.loads(l) for l in open(sys.argv[1])]
			seen = [f for f in frames if (f.get("loader") or {}).get("source") == sys.argv[2]]
			print(f"plain gpuwatch: {len(seen)} of {len(frames)} lines read the hook at {sys.argv[2]}")
			sys.exit(0 if seen else 1)
		EOF
	)
}

step "the deb, installed"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$repo"/dist/gpuwatch_*_amd64.deb >/dev/null
getent passwd gpuwatch || fail "postinstall made no gpuwatch user"
[ "$(command -v gpuwatch)" = /usr/bin/gpuwatch ] || fail "gpuwatch on PATH is $(command -v gpuwatch), not the package's"
check_binary /usr/bin/gpuwatch /usr/share/gpuwatch/python
# bash-completion's loader finds the file by the command's name, and the
# completion of "gpuwatch ser" asks the installed binary (gpuwatch __complete).
# (_completion_loader returns 124 when it loaded one: "complete again".)
got=$(bash -c 'source /usr/share/bash-completion/bash_completion && { _completion_loader gpuwatch; complete -p gpuwatch >&2; } &&
	COMP_WORDS=(gpuwatch ser) COMP_CWORD=1 COMP_LINE="gpuwatch ser" COMP_POINT=12 && __start_gpuwatch gpuwatch ser gpuwatch 2>/dev/null; echo "${COMPREPLY[*]}"')
[ "$got" = serve ] || fail "bash completion of 'gpuwatch ser': '$got', want serve"
for page in gpuwatch gpuwatch-serve gpuwatch-run; do
	man -w "$page" || fail "man -w $page"
done
grep -q -- '--listen' <<<"$(man gpuwatch-serve 2>/dev/null)" || fail "man gpuwatch-serve does not render"

step "the linux/amd64 archive, unpacked (no checkout)"
arch_dir=$tmp/archive
mkdir "$arch_dir"
tar xzf dist/gpuwatch_*_linux_amd64.tar.gz -C "$arch_dir"
(
	export PYTHONPATH=$arch_dir/python # ahead of the deb's .pth
	cd "$tmp"
	check_binary "$arch_dir/gpuwatch" "$arch_dir/python"
)
got=$(PATH=$arch_dir:$PATH bash -c "source /usr/share/bash-completion/bash_completion && source '$arch_dir/completions/gpuwatch.bash' &&
	COMP_WORDS=(gpuwatch ser) COMP_CWORD=1 COMP_LINE='gpuwatch ser' COMP_POINT=12 && __start_gpuwatch gpuwatch ser gpuwatch 2>/dev/null; echo \"\${COMPREPLY[*]}\"")
[ "$got" = serve ] || fail "the archive's bash completion of 'gpuwatch ser': '$got', want serve"
grep -q -- '--listen' <<<"$(man -l "$arch_dir/manpages/gpuwatch-serve.1.gz" 2>/dev/null)" || fail "the archive's man page"

step "the node service: systemd-analyze, then run as its unit says and scraped by Prometheus"
unit=/usr/lib/systemd/system/gpuwatch.service
out=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify warns: $out"
systemd-analyze security --offline=true --threshold=25 "$unit" | tail -1 || fail "systemd-analyze security: exposure above 2.5"
GPUWATCH_RELEASE_TESTS=1 go test -tags integration -count=1 -v -run 'TestInstalledServiceScrapedByPrometheus' . 2>&1 | grep -Ev '^=== (RUN|PAUSE|CONT)'

step "purge"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq gpuwatch >/dev/null
for f in /usr/bin/gpuwatch /etc/default/gpuwatch "$unit" /usr/lib/python3/dist-packages/gpuwatch.pth /usr/share/gpuwatch; do
	[ ! -e "$f" ] || fail "$f is left after apt-get purge"
done
step "done"
