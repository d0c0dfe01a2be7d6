#!/usr/bin/env bash
# The SCIM conformance checker the suite runs against flowgate (test/e2e/scim-conformance.test.ts):
# scim2-tester from PyPI in its own venv under ~/.cache/flowgate, keyed by version, made once.
# Prints the venv's path. Idempotent: a finished venv is reused, a half-made one made again.
set -euo pipefail
VERSION="${SCIM2_TESTER_VERSION:-0.5.2}"
VENV="${HOME}/.cache/flowgate/scim2-tester-${VERSION}"
if [ ! -f "${VENV}/.complete" ]; then
  rm -rf "${VENV}"
  mkdir -p "$(dirname "${VENV}")"
  python3 -m venv "${VENV}"
  "${VENV}/bin/pip" install --quiet --disable-pip-version-check "scim2-tester[httpx2]==${VERSION}" >&2
  touch "${VENV}/.complete"
fi
echo "${VENV}"
