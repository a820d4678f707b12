#!/usr/bin/env bash
# CI's tools that come from the Go module proxy, built at pinned versions
# with the repo's Go, once per machine:
#   helm        the chart (ci-helm.sh), into $GPUWATCH_TOOLS/helm-VERSION
#               (~/.cache/gpuwatch-tools by default);
#   goreleaser  the releases (ci-release.sh), into $(go env GOPATH)/bin.
# `bash scripts/ci-tools.sh helm|goreleaser` builds one if it is missing
# and prints its path. .ci/run starts both at its first step, beside
# apt-get: they compile (CPU) while apt fetches (network).
set -euo pipefail

HELM_VERSION=v3.22.0         # built with go1.26.8: 3m48s on 2 busy cores, cold module cache
GORELEASER_VERSION=v2.16.0   # newer ones want Go 1.27 or a module the proxy refuses

case "${1:-}" in
helm)
	tools="${GPUWATCH_TOOLS:-$HOME/.cache/gpuwatch-tools}"
	bin="$tools/helm-$HELM_VERSION/helm"
	if ! [ -x "$bin" ]; then
		echo "building helm $HELM_VERSION (go install; a few minutes the first time)" >&2
		GOBIN="$tools/helm-$HELM_VERSION" timeout 900 go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
	fi
	;;
goreleaser)
	bin=$(go env GOPATH)/bin/goreleaser
	if ! grep -q "${GORELEASER_VERSION#v}" <<<"$("$bin" --version 2>/dev/null)"; then
		echo "building goreleaser $GORELEASER_VERSION (go install; a few minutes the first time)" >&2
		timeout 900 go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION" >&2
	fi
	;;
*)
	echo "usage: ci-tools.sh helm|goreleaser" >&2
	exit 2
	;;
esac
echo "$bin"
