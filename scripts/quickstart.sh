#!/usr/bin/env bash
# Runs flowgate for real on this machine: installs what it needs, starts a pinned MLflow on
# loopback (SQLite backend, served artifacts) and flowgate in front of it, then prints the admin
# token and the MLFLOW_TRACKING_* exports to paste. Ctrl-C stops both.
#
# Settings (all optional): QUICKSTART_DIR (.flowgate), QUICKSTART_PORT (8080),
# QUICKSTART_MLFLOW_PORT (5000), QUICKSTART_METRICS_PORT (9090).
set -euo pipefail
cd "$(dirname "$0")/.."

DIR="${QUICKSTART_DIR:-$PWD/.flowgate}"
PORT="${QUICKSTART_PORT:-8080}"
MLFLOW_PORT="${QUICKSTART_MLFLOW_PORT:-5000}"
METRICS_PORT="${QUICKSTART_METRICS_PORT:-9090}"
mkdir -p "$DIR/artifacts"
PROGRESS_NAME=quickstart
. scripts/progress.sh

if [ ! -d node_modules ]; then
  long_step "$DIR/npm-ci.log" "[1/5] Installing npm dependencies (better-sqlite3 compiles from source when no prebuilt binary fits: a minute or two)" \
    npm ci --no-audit --no-fund
else
  say "[1/5] npm dependencies: present"
fi
if [ "${QUICKSTART_SKIP_BUILD:-}" != 1 ] || [ ! -f dist/cli.js ]; then
  long_step "$DIR/build.log" "[2/5] Compiling flowgate (TypeScript to dist/)" npm run --silent build
else
  say "[2/5] Build: reusing dist/"
fi
long_step "$DIR/mlflow-venv.log" "[3/5] Preparing the pinned MLflow venv (reused when present; the first install takes a few minutes)" \
  bash scripts/mlflow-venv.sh
VENV="$(bash scripts/mlflow-venv.sh)"

TOKEN_FILE="$DIR/admin-token"
if [ ! -s "$TOKEN_FILE" ]; then
  (umask 077 && node -e "process.stdout.write('fgt_' + require('crypto').randomBytes(32).toString('base64url'))" > "$TOKEN_FILE")
fi

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

say "[4/5] Starting MLflow on 127.0.0.1:$MLFLOW_PORT and waiting for it to answer (logs: $DIR/mlflow.log)"
MLFLOW_DISABLE_TELEMETRY=true "$VENV/bin/mlflow" server \
  --host 127.0.0.1 --port "$MLFLOW_PORT" --workers 1 \
  --backend-store-uri "sqlite:///$DIR/mlflow.db" \
  --artifacts-destination "$DIR/artifacts" --serve-artifacts \
  > "$DIR/mlflow.log" 2>&1 &
pids+=($!)

for _ in $(seq 1 240); do
  if curl -fsS "http://127.0.0.1:$MLFLOW_PORT/health" >/dev/null 2>&1; then break; fi
  if ! kill -0 "${pids[0]}" 2>/dev/null; then say "MLflow failed to start; see $DIR/mlflow.log"; exit 1; fi
  sleep 0.5
done

say "[5/5] Starting flowgate on 127.0.0.1:$PORT and waiting until it is ready (logs: $DIR/flowgate.log)"
FLOWGATE_HOST=127.0.0.1 \
FLOWGATE_PORT="$PORT" \
FLOWGATE_METRICS_HOST=127.0.0.1 \
FLOWGATE_METRICS_PORT="$METRICS_PORT" \
FLOWGATE_UPSTREAM_URL="http://127.0.0.1:$MLFLOW_PORT" \
FLOWGATE_DB_PATH="$DIR/flowgate.db" \
FLOWGATE_ADMIN_USERNAME=admin \
FLOWGATE_ADMIN_TOKEN_FILE="$TOKEN_FILE" \
FLOWGATE_SESSION_COOKIE_SECURE=false \
  node --max-semi-space-size=8 --no-allocation-site-pretenuring --no-memory-reducer --max-valid-polymorphic-map-count=16 --single-threaded-gc dist/cli.js serve > "$DIR/flowgate.log" 2>&1 &
pids+=($!)

for _ in $(seq 1 120); do
  if curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "${pids[1]}" 2>/dev/null; then say "flowgate failed to start; see $DIR/flowgate.log"; exit 1; fi
  sleep 0.25
done

cat <<MSG

flowgate is running in front of MLflow.
  UI / tracking URI : http://127.0.0.1:$PORT/
  metrics           : http://127.0.0.1:$METRICS_PORT/metrics
  admin API docs    : http://127.0.0.1:$PORT/flowgate/openapi.json
  logs              : $DIR/flowgate.log, $DIR/mlflow.log

Admin user: admin
Admin token (keep it secret; also in $TOKEN_FILE):
  $(cat "$TOKEN_FILE")

Paste into a shell to use the MLflow Python client as the admin:
export MLFLOW_TRACKING_URI=http://127.0.0.1:$PORT/
export MLFLOW_TRACKING_USERNAME=admin
export MLFLOW_TRACKING_PASSWORD=$(cat "$TOKEN_FILE")

Press Ctrl-C to stop.
MSG

wait -n "${pids[@]}"
