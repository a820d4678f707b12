#!/usr/bin/env bash
# CI: the Helm chart (deploy/helm/gpuwatch). Builds helm from the Go module
# proxy at a pinned version (scripts/ci-tools.sh), lints the chart with default values and with every option
# on, checks and unit-tests its alert rules with promtool (they are
# docs/prometheus-alerts.yml), and decodes every object `helm template`
# renders strictly into the Kubernetes API types (deploy/helm/test, a Go
# module of its own: the gpuwatch module keeps no k8s.io dependency).
# Last, the one serve behaviour the DaemonSet relies on, on real cgroups.
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
