#!/usr/bin/env bash
# What flowgate's tests need and npm does not install: Debian's chromium and prometheus (promtool and
# the server), postgresql (server binaries), python3-venv, the npm dependencies, the pinned MLflow venv and helm (outside the clone,
# reused). Run by `npm test` (its pretest step); idempotent, and a second of checks when all is there.
set -euo pipefail
cd "$(dirname "$0")/.."
PROGRESS_NAME="flowgate setup"
. scripts/progress.sh
LOGS="${TMPDIR:-/tmp}/flowgate-setup-$(id -u)"
mkdir -p "$LOGS"

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
{ command -v promtool && command -v prometheus; } >/dev/null 2>&1 || need_apt+=(prometheus)
python3 -c 'import ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
# The shared-store tests start throwaway PostgreSQL clusters from Debian's server binaries.
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || need_apt+=(postgresql)
if [ ${#need_apt[@]} -gt 0 ]; then
  as_root=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      as_root=(sudo -n)
    else
      say "the tests need the Debian packages ${need_apt[*]}; install them as root (apt-get install ${need_apt[*]}) and run again"
      exit 1
    fi
  fi
  long_step "$LOGS/apt.log" "Installing ${need_apt[*]} with apt-get" \
    bash -c "${as_root[*]} apt-get update -q && DEBIAN_FRONTEND=noninteractive ${as_root[*]} apt-get install -y -q --no-install-recommends ${need_apt[*]}"
fi

if [ ! -d node_modules ]; then
  long_step "$LOGS/npm-ci.log" "Installing npm dependencies (better-sqlite3 compiles from source when no prebuilt binary fits)" \
    npm ci --no-audit --no-fund
fi

long_step "$LOGS/mlflow-venv.log" "Preparing the pinned MLflow venv (reused when present; the first install takes a few minutes)" \
  bash scripts/mlflow-venv.sh

# helm for the chart's test (test/e2e/helm-chart.test.ts), compiled from the Go module proxy since no
# release download is reachable: minutes the first time, then reused from ~/.cache/flowgate.
long_step "$LOGS/helm.log" "Preparing helm (reused when present; the first build from the Go module proxy takes about 5 minutes)" \
  bash scripts/helm.sh
