#!/usr/bin/env bash
# Creates (or reuses) the venv holding the pinned MLflow, outside the clone so fresh clones reuse it.
# Prints the venv's path on stdout; everything else goes to stderr.
set -euo pipefail
MLFLOW_VERSION="${FLOWGATE_MLFLOW_VERSION:-3.17.2}"
VENV="${FLOWGATE_MLFLOW_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/flowgate/mlflow-${MLFLOW_VERSION}}"
PYTHON="${PYTHON:-python3}"

if [ -x "$VENV/bin/mlflow" ] && [ -f "$VENV/.complete" ]; then
  echo "$VENV"
  exit 0
fi
echo "flowgate: installing mlflow==${MLFLOW_VERSION} into $VENV (first run only)" >&2
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$PYTHON" -m venv "$VENV" >&2
"$VENV/bin/pip" install --quiet --disable-pip-version-check "mlflow==${MLFLOW_VERSION}" >&2
touch "$VENV/.complete"
echo "$VENV"
