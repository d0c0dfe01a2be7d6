#!/usr/bin/env bash
# Creates (or reuses) a venv holding the pinned MLflow with OpenTelemetry's zero-code instrumentation
# (`opentelemetry-instrument`): the distro, the OTLP/HTTP (protobuf) exporter and the instrumentations
# of the two frameworks MLflow serves through, FastAPI (its ASGI app under uvicorn) and Flask (the
# tracking API, mounted inside it). For the test that sees MLflow's own spans join flowgate's trace.
# Kept apart from scripts/mlflow-venv.sh's venv: the tests' MLflow must stay as MLflow ships it.
# One venv per MLflow release and instrumentation release. Prints the venv's path on stdout;
# everything else goes to stderr.
set -euo pipefail
MLFLOW_VERSION="${FLOWGATE_MLFLOW_VERSION:-3.17.2}"
# The instrumentations release as 0.<n>bN beside the SDK's 1.<n-21>.N; each pins the SDK it was built
# with. 0.66b1 is the newest release with a Flask instrumentation, and its SDK is the one MLflow 3.17.2 runs on.
OTEL_CONTRIB_VERSION="${FLOWGATE_OTEL_CONTRIB_VERSION:-0.66b1}"
OTEL_SDK_VERSION="${FLOWGATE_OTEL_SDK_VERSION:-1.45.1}"
VENV="${FLOWGATE_MLFLOW_OTEL_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/flowgate/mlflow-${MLFLOW_VERSION}-otel-${OTEL_CONTRIB_VERSION}}"
PYTHON="${PYTHON:-python3}"

if [ -x "$VENV/bin/opentelemetry-instrument" ] && [ -x "$VENV/bin/mlflow" ] && [ -f "$VENV/.complete" ]; then
  echo "$VENV"
  exit 0
fi

echo "flowgate: installing mlflow==${MLFLOW_VERSION} with OpenTelemetry instrumentation ${OTEL_CONTRIB_VERSION} into $VENV (first run only)" >&2
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$PYTHON" -m venv "$VENV" >&2
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
  "mlflow==${MLFLOW_VERSION}" \
  "opentelemetry-api==${OTEL_SDK_VERSION}" \
  "opentelemetry-sdk==${OTEL_SDK_VERSION}" \
  "opentelemetry-exporter-otlp-proto-http==${OTEL_SDK_VERSION}" \
  "opentelemetry-distro==${OTEL_CONTRIB_VERSION}" \
  "opentelemetry-instrumentation-fastapi==${OTEL_CONTRIB_VERSION}" \
  "opentelemetry-instrumentation-flask==${OTEL_CONTRIB_VERSION}" >&2
"$VENV/bin/python" - "$MLFLOW_VERSION" >&2 <<'EOF' || { echo "flowgate: $VENV is not usable" >&2; exit 1; }
import sys
import mlflow
import opentelemetry.instrumentation.fastapi, opentelemetry.instrumentation.flask  # noqa: F401
import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
sys.exit(mlflow.__version__ != sys.argv[1])
EOF
touch "$VENV/.complete"
echo "$VENV"
