#!/usr/bin/env bash
# Creates (or reuses) a venv holding the pinned MLflow with the mlflow-oidc-auth plugin, for the
# bench's comparison (f). Kept apart from scripts/mlflow-venv.sh's venv: the plugin pulls its own
# versions of SQLAlchemy, FastAPI and friends, and the tests' MLflow must stay as MLflow ships it.
# Prints the venv's path on stdout; everything else goes to stderr.
set -euo pipefail
MLFLOW_VERSION="${FLOWGATE_MLFLOW_VERSION:-3.17.2}"
OIDC_AUTH_VERSION="${FLOWGATE_MLFLOW_OIDC_AUTH_VERSION:-11.0.2}"
VENV="${FLOWGATE_MLFLOW_OIDC_AUTH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/flowgate/mlflow-${MLFLOW_VERSION}-oidc-auth-${OIDC_AUTH_VERSION}}"

# The plugin's metadata says Python >= 3.11, but 11.0.2 does not import on 3.11 (a dataclass default
# that 3.11 rejects as mutable); 3.12 and later work. Take the first interpreter that is >= 3.12.
find_python() {
  local candidates=("${PYTHON:-}" python3.13 python3.12 python3)
  for root in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*; do candidates+=("$root/bin/python"); done
  for c in "${candidates[@]}"; do
    [ -n "$c" ] || continue
    if "$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      echo "$c"
      return 0
    fi
  done
  echo "flowgate: mlflow-oidc-auth needs Python 3.12 or later; none found (set PYTHON)" >&2
  return 1
}

if [ -x "$VENV/bin/mlflow" ] && [ -f "$VENV/.complete" ]; then
  echo "$VENV"
  exit 0
fi
echo "flowgate: installing mlflow==${MLFLOW_VERSION} and mlflow-oidc-auth==${OIDC_AUTH_VERSION} into $VENV (first run only)" >&2
PYTHON="$(find_python)"
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$PYTHON" -m venv "$VENV" >&2
"$VENV/bin/pip" install --quiet --disable-pip-version-check "mlflow==${MLFLOW_VERSION}" "mlflow-oidc-auth==${OIDC_AUTH_VERSION}" >&2
touch "$VENV/.complete"
echo "$VENV"
