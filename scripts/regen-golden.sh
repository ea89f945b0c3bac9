#!/usr/bin/env bash
# Regenerate every golden vector file under fixtures/golden/ from the REAL client libraries.
#
#   bash scripts/regen-golden.sh            # every kind with a golden generator
#   bash scripts/regen-golden.sh java       # only some kinds
#
# The kinds, their releases and how each generator is built and run come from the registry of
# kinds (conformance/members/kinds): a kind whose module declares GOLDEN_VERSIONS has a generator
# (clients/<kind>/golden), run by its golden_vectors() for each of those releases; the runner is
# conformance/members/golden.py (its guarantees are in its docstring).
#
# Idempotent: downloads go to the caches named in conformance/config.py (Maven repo, Go module
# cache, per-version venvs); a second run re-uses them and rewrites byte-identical files. Needs
# network access only to the package registries, and only the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh >/dev/null
exec .venv/bin/python -m conformance.members.golden "$@"
