#!/usr/bin/env bash
# Runs flowgate for real on this machine: installs what it needs, starts a pinned MLflow on
# loopback (SQLite backend, served artifacts) and flowgate in front of it, then prints the admin
# token and the MLFLOW_TRACKING_* exports to paste. Ctrl-C stops both.
#
# Settings (all optional): QUICKSTART_DIR (.flowgate), QUICKSTART_PORT (8080),
# QUICKSTART_MLFLOW_PORT (5000), QUICKSTART_METRICS_PORT (9090).
#
# A second quickstart while one runs stops before it writes anything: its ports are checked first
# (a MLflow or flowgate already answering there would otherwise pass the readiness checks and get
# the success banner printed), and QUICKSTART_DIR is held by a lock file, so the running one's logs
# and store are never written over.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR="${QUICKSTART_DIR:-$PWD/.flowgate}"
PORT="${QUICKSTART_PORT:-8080}"
MLFLOW_PORT="${QUICKSTART_MLFLOW_PORT:-5000}"
METRICS_PORT="${QUICKSTART_METRICS_PORT:-9090}"
PROGRESS_NAME=quickstart
. scripts/progress.sh

# port_state PORT: "free", "in use", or why it cannot be used; the real test is binding it as the
# servers will (127.0.0.1), which also sees a server bound to every address.
port_state() {
  node -e '
    const server = require("node:net").createServer();
    server.once("error", (e) => { console.log(e.code === "EADDRINUSE" ? "in use" : `not usable (${e.code})`); process.exit(0); });
    server.listen(Number(process.argv[1]), "127.0.0.1", () => server.close(() => console.log("free")));
  ' "$1"
}

# check_ports "SERVICE|PORT|SETTING"...: says every port that is taken; fails when one is.
check_ports() {
  local busy=0 service port setting state
  for entry in "$@"; do
    IFS='|' read -r service port setting <<<"$entry"
    state="$(port_state "$port")"
    if [ "$state" != free ]; then
      say "port $port is $state: $service cannot listen on it (choose another with $setting=...)"
      busy=1
    fi
  done
  if [ "$busy" = 1 ]; then
    say "is another quickstart (or another server) running? Stop it first, or choose free ports."
    return 1
  fi
}

if [ "$PORT" = "$MLFLOW_PORT" ] || [ "$PORT" = "$METRICS_PORT" ] || [ "$MLFLOW_PORT" = "$METRICS_PORT" ]; then
  say "QUICKSTART_PORT ($PORT), QUICKSTART_MLFLOW_PORT ($MLFLOW_PORT) and QUICKSTART_METRICS_PORT ($METRICS_PORT) must be three different ports"
  exit 1
fi
if ! check_ports "MLflow|$MLFLOW_PORT|QUICKSTART_MLFLOW_PORT" "flowgate|$PORT|QUICKSTART_PORT" "flowgate's metrics|$METRICS_PORT|QUICKSTART_METRICS_PORT"; then
  say "nothing was started and nothing in $DIR was touched."
  exit 1
fi

# One quickstart per directory: the lock holds the pid of the quickstart using it. A lock whose
# quickstart is gone (killed without its cleanup) is taken over.
mkdir -p "$DIR/artifacts"
LOCK="$DIR/quickstart.pid"
lock_holder() {
  local pid
  pid="$(cat "$LOCK" 2>/dev/null || true)"
  [ -n "$pid" ] && [ "$pid" != "$$" ] && kill -0 "$pid" 2>/dev/null || return 0
  # A pid reused by another program after a crash does not hold the directory.
  if command -v ps >/dev/null && ! ps -p "$pid" -o command= 2>/dev/null | grep -q quickstart; then return 0; fi
  echo "$pid"
}
if ! (set -o noclobber && echo "$$" >"$LOCK") 2>/dev/null; then
  holder="$(lock_holder)"
  if [ -n "$holder" ]; then
    say "another quickstart (pid $holder) is running with QUICKSTART_DIR=$DIR; stop it first, or set QUICKSTART_DIR to another directory"
    exit 1
  fi
  rm -f "$LOCK"
  if ! (set -o noclobber && echo "$$" >"$LOCK") 2>/dev/null; then
    say "another quickstart has just taken QUICKSTART_DIR=$DIR; stop it first, or set QUICKSTART_DIR to another directory"
    exit 1
  fi
fi

pids=()
# `mlflow server` makes its job queue in a directory of /dev/shm (else the temp dir) that it never removes;
# its processes carry the path. Read once MLflow answers, removed when quickstart stops.
mlflow_job_queues=""
descendants() {
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do echo "$child"; descendants "$child"; done
}
job_queues_of() {
  local pid
  for pid in $(descendants "$1"); do
    { tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^_MLFLOW_HUEY_STORAGE_PATH=//p'; } 2>/dev/null || true
  done | sort -u
}
cleanup() {
  for pid in ${pids[@]+"${pids[@]}"}; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  local queue
  for queue in $mlflow_job_queues; do
    case "$queue" in /dev/shm/tmp* | "${TMPDIR:-/tmp}"/tmp*) rm -rf -- "$queue" ;; esac
  done
  if [ "$(cat "$LOCK" 2>/dev/null || true)" = "$$" ]; then rm -f "$LOCK"; fi
}
trap cleanup EXIT INT TERM

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

# The steps above take minutes: a server started meanwhile is caught here, before it answers for ours.
check_ports "MLflow|$MLFLOW_PORT|QUICKSTART_MLFLOW_PORT" || exit 1
say "[4/5] Starting MLflow on 127.0.0.1:$MLFLOW_PORT and waiting for it to answer (logs: $DIR/mlflow.log)"
MLFLOW_DISABLE_TELEMETRY=true "$VENV/bin/mlflow" server \
  --host 127.0.0.1 --port "$MLFLOW_PORT" --workers 1 \
  --backend-store-uri "sqlite:///$DIR/mlflow.db" \
  --artifacts-destination "$DIR/artifacts" --serve-artifacts \
  > "$DIR/mlflow.log" 2>&1 &
pids+=($!)

# Ours answers only while ours runs: the process is checked before each answer is believed.
mlflow_up=0
for _ in $(seq 1 240); do
  if ! kill -0 "${pids[0]}" 2>/dev/null; then say "MLflow failed to start; see $DIR/mlflow.log"; exit 1; fi
  if curl -fsS "http://127.0.0.1:$MLFLOW_PORT/health" >/dev/null 2>&1; then mlflow_up=1; break; fi
  sleep 0.5
done
if [ "$mlflow_up" != 1 ]; then say "MLflow did not answer on 127.0.0.1:$MLFLOW_PORT within 2 minutes; see $DIR/mlflow.log"; exit 1; fi
mlflow_job_queues="$(job_queues_of "${pids[0]}")"

check_ports "flowgate|$PORT|QUICKSTART_PORT" "flowgate's metrics|$METRICS_PORT|QUICKSTART_METRICS_PORT" || exit 1
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

flowgate_up=0
for _ in $(seq 1 120); do
  if ! kill -0 "${pids[1]}" 2>/dev/null; then say "flowgate failed to start; see $DIR/flowgate.log"; exit 1; fi
  if curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; then flowgate_up=1; break; fi
  sleep 0.25
done
if [ "$flowgate_up" != 1 ] || ! kill -0 "${pids[0]}" 2>/dev/null || ! kill -0 "${pids[1]}" 2>/dev/null; then
  say "flowgate did not become ready on 127.0.0.1:$PORT within 30 s; see $DIR/flowgate.log and $DIR/mlflow.log"
  exit 1
fi

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
