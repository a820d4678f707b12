#!/usr/bin/env bash
# CI: the Helm chart (deploy/helm/gpuwatch). Builds helm from the Go module
# proxy at a pinned version (scripts/ci-tools.sh), lints the chart with default values and with every option
# on, checks and unit-tests its alert rules with promtool (they are
# docs/prometheus-alerts.yml), and decodes every object `helm template`
# renders strictly into the Kubernetes API types (deploy/helm/test, a Go
# module of its own: the gpuwatch module keeps no k8s.io dependency).
# Last, the serve behaviours the DaemonSet relies on: on real cgroups, and
# as the chart's default pod runs it (uid 65534, its Secret's token file).
# Run from anywhere as root on Debian; idempotent (helm is built once:
# scripts/ci-tools.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

helm=$(bash scripts/ci-tools.sh helm)
"$helm" version --short

if ! command -v promtool >/dev/null; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null
fi

chart=deploy/helm/gpuwatch
"$helm" lint --strict "$chart"
"$helm" lint --strict "$chart" --values deploy/helm/test/all-on.values.yaml

promtool check rules docs/prometheus-alerts.yml "$chart/files/prometheus-alerts.yml"
promtool test rules deploy/helm/test/alerts-test.yml

(cd deploy/helm/test && HELM="$helm" GPUWATCH_REQUIRE_HELM=1 timeout 600 go test -count=1 -v ./... 2>&1 | grep -Ev '^=== (RUN|PAUSE|CONT)')

# What the DaemonSet relies on in serve: confined by its pod's limits, it
# takes no job from its own cgroup (a cgroup v1 with a CPU quota; CI runs
# as root with the v1 controllers writable).
CGO_CFLAGS=-Wno-deprecated-declarations GPUWATCH_REQUIRE_CGROUPS=1 timeout 600 \
	go test -tags integration -count=1 -v -run 'TestConfinedServeTakesNoJobFromItsOwnCgroup' . 2>&1 | grep -Ev '^=== (RUN|PAUSE|CONT)'

# The chart's default pod (issue 54, item 3): serve as uid and gid 65534
# reads its token from a file root:65534 0440 (a projected Secret with the
# pod's fsGroup), answers /metrics 401 without the token and 200 with it.
for tool in setpriv:util-linux curl:curl; do
	command -v "${tool%%:*}" >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${tool#*:}" >/dev/null; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
CGO_CFLAGS=-Wno-deprecated-declarations go build -o "$tmp/gpuwatch" .
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/token"
chown root:65534 "$tmp/token"
chmod 0440 "$tmp/token"
setpriv --reuid=65534 --regid=65534 --clear-groups "$tmp/gpuwatch" serve --listen 127.0.0.1:0 --discover=false \
	--duration 30s --token-file "$tmp/token" >"$tmp/out" 2>&1 &
serve=$!
url=
for _ in $(seq 100); do
	url=$(sed -n 's/^gpuwatch exporter on //p' "$tmp/out")
	[ -n "$url" ] && break
	sleep 0.1
done
[ -n "$url" ] || { cat "$tmp/out"; echo "serve as uid 65534 did not start" >&2; exit 1; }
without=$(curl -s -o /dev/null -w '%{http_code}' "$url")
with=0
for _ in $(seq 50); do # the first frame comes within a second or two
	with=$(curl -s -H "Authorization: Bearer $(cat "$tmp/token")" "$url" | grep -c '^gpuwatch_verdict{' || true)
	[ "$with" -gt 0 ] && break
	sleep 0.2
done
kill "$serve"
wait "$serve" || true
echo "serve as uid 65534 with a 0440 root:65534 token: /metrics without it $without, with it $with verdict series"
[ "$without" = 401 ] && [ "$with" -gt 0 ] || { cat "$tmp/out"; exit 1; }
