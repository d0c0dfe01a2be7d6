#!/usr/bin/env bash
# Installs what flowgate's tests and quickstart need and that npm does not: Debian's chromium and
# promtool, and the pinned MLflow venv (outside the clone, reused when present). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v promtool >/dev/null 2>&1 || need_apt+=(prometheus)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "flowgate setup: apt-get install ${need_apt[*]}" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >&2
  else
    echo "flowgate setup: please install ${need_apt[*]} (Debian packages); browser and promtool tests need them" >&2
  fi
fi
[ -d node_modules ] || npm ci --no-audit --no-fund >&2
bash scripts/mlflow-venv.sh >/dev/null
