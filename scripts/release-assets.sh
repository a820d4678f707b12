#!/bin/sh
# Shell completions and man pages for the release archives and packages,
# generated from the command tree (goreleaser runs this before building).
set -eu
cd "$(dirname "$0")/.."
rm -rf completions manpages
mkdir -p completions manpages
bin=$(mktemp -d)/gpuwatch
trap 'rm -rf "$(dirname "$bin")"' EXIT
CGO_ENABLED=0 go build -o "$bin" .
"$bin" completion bash >completions/gpuwatch.bash
"$bin" completion zsh >completions/_gpuwatch
"$bin" completion fish >completions/gpuwatch.fish
CGO_ENABLED=0 go build -tags manpages -o "$bin-man" . # the man command is built only with this tag (cli/man.go)
"$bin-man" man manpages >/dev/null
gzip -9n manpages/*.1
