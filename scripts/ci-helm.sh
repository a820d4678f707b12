#!/usr/bin/env bash
# CI: the Helm chart (deploy/helm/gpuwatch). Installs helm as a Go module
# at a pinned version (the module proxy serves it; it builds with the
# repo's Go), lints the chart with default values and with every option
# on, checks and unit-tests its alert rules with promtool (they are
# docs/prometheus-alerts.yml), and decodes every object `helm template`
# renders strictly into the Kubernetes API types (deploy/helm/test, a Go
# module of its own: the gpuwatch module keeps no k8s.io dependency).
# Last, the one serve behaviour the DaemonSet relies on, on real cgroups.
# Run from anywhere as root on Debian; idempotent (helm is built once into
# $GPUWATCH_TOOLS, ~/.cache/gpuwatch-tools by default).
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_VERSION=v3.22.0 # built with go1.26.8: 3m48s on 2 busy cores, cold module cache
tools="${GPUWATCH_TOOLS:-$HOME/.cache/gpuwatch-tools}"
helm="$tools/helm-$HELM_VERSION/helm"
if ! [ -x "$helm" ]; then
	echo "building helm $HELM_VERSION (go install; a few minutes the first time)"
	GOBIN="$tools/helm-$HELM_VERSION" timeout 900 nice -n 10 go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi
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
