#!/usr/bin/env bash
# Idempotent Python set-up: .venv with the locked dependencies and the package.
# A second call with an unchanged lock file returns at once.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then PY=$candidate; break; fi
  done
fi
"$PY" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' \
  || { echo "bootstrap: Python 3.11 is required ($PY is $("$PY" --version 2>&1))" >&2; exit 2; }
stamp=".venv/.installed-$(cat requirements.lock pyproject.toml | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ -x .venv/bin/conformance ]; then
  exit 0
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r requirements.lock
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
rm -f .venv/.installed-*
touch "$stamp"
echo "bootstrap: .venv ready"
