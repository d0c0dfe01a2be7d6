#!/usr/bin/env bash
# Adds MLflow's `kubernetes` extra (`pip install mlflow[kubernetes]`: the `kubernetes` package, which
# MLFLOW_TRACKING_AUTH=kubernetes needs to read a kubeconfig) to the pinned MLflow venv of
# scripts/mlflow-venv.sh. Idempotent: a quick import check when it is there already.
# Prints the venv's path on stdout; everything else goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="$(bash scripts/mlflow-venv.sh)"
if "$VENV/bin/python" -c 'import kubernetes.config, kubernetes.client' >/dev/null 2>&1; then
  echo "$VENV"
  exit 0
fi
MLFLOW_VERSION="$("$VENV/bin/python" -c 'import mlflow; print(mlflow.__version__)')"
echo "flowgate: installing mlflow[kubernetes]==${MLFLOW_VERSION}'s extra into $VENV (first run only)" >&2
"$VENV/bin/pip" install --quiet --disable-pip-version-check "mlflow[kubernetes]==${MLFLOW_VERSION}" >&2
"$VENV/bin/python" -c 'import kubernetes.config, kubernetes.client' >&2
echo "$VENV"
