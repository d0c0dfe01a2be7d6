#!/usr/bin/env bash
# Prints the path of a `helm` binary for the chart in deploy/helm/flowgate, building it first when
# missing. No release download is reachable here, so it is compiled from the Go module proxy with
# `go install` into ~/.cache/flowgate (outside the clone) and reused after; idempotent, instant when
# the binary is there. Called by test/helpers/helm.ts; usable by hand: "$(bash scripts/helm.sh)" lint …
set -euo pipefail
HELM_VERSION="${FLOWGATE_HELM_VERSION:-v3.22.0}"
BIN="${XDG_CACHE_HOME:-$HOME/.cache}/flowgate/helm-$HELM_VERSION"
if ! "$BIN/helm" version --short 2>/dev/null | grep -qx "$HELM_VERSION"; then
  command -v go >/dev/null || { echo "helm.sh: building helm needs Go (apt-get install golang-go)" >&2; exit 1; }
  export GOFLAGS=-buildvcs=false CGO_ENABLED=0
  # The ldflags of helm's own release build (its Makefile): without them `helm version` reads "v3.22"
  # and helm assumes Kubernetes 1.20 wherever no cluster is asked (`helm template`, `helm lint`).
  # That Kubernetes version is the one of the client-go helm is built with: v0.N is 1.N.
  gomod="$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  k8s_minor="$(sed -n 's/^[[:space:]]*k8s\.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$gomod")"
  [ -n "$k8s_minor" ] || { echo "helm.sh: cannot read client-go's version from $gomod" >&2; exit 1; }
  ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for pkg in pkg/lint/rules pkg/chartutil; do
    ldflags+=" -X helm.sh/helm/v3/$pkg.k8sVersionMajor=1 -X helm.sh/helm/v3/$pkg.k8sVersionMinor=$k8s_minor"
  done
  mkdir -p "$BIN"
  # Into a temporary directory first, so an interrupted build never leaves a half-written binary behind.
  tmp="$(mktemp -d "$BIN/.build.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  GOBIN="$tmp" go install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
  mv "$tmp/helm" "$BIN/helm"
fi
echo "$BIN/helm"
