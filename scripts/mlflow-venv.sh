#!/usr/bin/env bash
# Creates (or reuses) the venv holding one MLflow release, outside the clone so fresh clones reuse it.
# FLOWGATE_MLFLOW_VERSION picks the release (default: the pinned one); each release has its own venv.
# Prints the venv's path on stdout; everything else goes to stderr.
set -euo pipefail
MLFLOW_VERSION="${FLOWGATE_MLFLOW_VERSION:-3.17.2}"
VENV="${FLOWGATE_MLFLOW_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/flowgate/mlflow-${MLFLOW_VERSION}}"
PYTHON="${PYTHON:-python3}"

if [ -x "$VENV/bin/mlflow" ] && [ -f "$VENV/.complete" ]; then
  echo "$VENV"
  exit 0
fi

# Per-release install quirks, each found by installing that release here:
# - 3.0.x to 3.5.x: their `mlflow server` breaks on SQLAlchemy 2.1 (released after them), and 3.0's span
#   processor on OpenTelemetry 1.35+ (traces are never sent), so the pins they lack are added (the
#   matrix ran 3.1 to 3.5 with the same pins).
# - 3.6.x to 3.8.x: the same SQLAlchemy 2.1 break (`cannot import name 'FallbackAsyncAdaptedQueuePool'`
#   when the server opens its store); 3.9 on need no pin.
# - 3.18.x: the mlflow-skinny and mlflow-tracing it requires are not on the package index, so its
#   wheel goes without dependencies over the previous release's full install (which it runs on).
extra_pins=()
deps_from=""
case "$MLFLOW_VERSION" in
  3.0.* | 3.1.* | 3.2.* | 3.3.* | 3.4.* | 3.5.*) extra_pins=("sqlalchemy<2.1" "opentelemetry-sdk<1.35" "opentelemetry-api<1.35") ;;
  3.6.* | 3.7.* | 3.8.*) extra_pins=("sqlalchemy<2.1") ;;
  3.18.*) deps_from="3.17.2" ;;
esac

pip_install() {
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "$@" >&2
}

echo "flowgate: installing mlflow==${MLFLOW_VERSION} into $VENV (first run only)" >&2
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$PYTHON" -m venv "$VENV" >&2
if [ -n "$deps_from" ]; then
  pip_install "mlflow==${deps_from}" "${extra_pins[@]}"
  pip_install --no-deps "mlflow==${MLFLOW_VERSION}"
else
  pip_install "mlflow==${MLFLOW_VERSION}" "${extra_pins[@]}"
fi
"$VENV/bin/python" -c "import mlflow, sys; sys.exit(mlflow.__version__ != '${MLFLOW_VERSION}')" >&2 ||
  { echo "flowgate: $VENV does not import mlflow ${MLFLOW_VERSION}" >&2; exit 1; }
touch "$VENV/.complete"
echo "$VENV"
