#!/usr/bin/env bash
# make lint (and so make test): every linter of the project, each step timed. All steps run; any
# failure fails the whole with one line naming the failed steps and how to run or fix them alone.
#   ruff     .venv/bin/ruff check .            rules: pyproject.toml [tool.ruff.lint]
#   mypy     .venv/bin/mypy                    the conformance package: pyproject.toml [tool.mypy]
#   gofmt    gofmt -l clients                  every Go file under clients/ formatted
#   go vet   .venv/bin/python scripts/lint_go.py   every Go package under clients/ (see its docstring)
set -uo pipefail
cd "$(dirname "$0")/.."
failed=()
step() {   # step NAME HOW-TO-FIX COMMAND...: run it, print its outcome and time
  local name=$1 fix=$2; shift 2
  local t0=$EPOCHREALTIME ok=0
  "$@" || ok=$?
  local took; took=$(awk "BEGIN { printf \"%.1f s\", $EPOCHREALTIME - $t0 }")
  if [ "$ok" -eq 0 ]; then
    echo "lint: $name ok ($took)"
  else
    echo "lint: $name FAILED ($took): $fix"
    failed+=("$name")
  fi
}
gofmt_clean() {
  command -v gofmt >/dev/null || { echo "gofmt is not on PATH (the Go toolchain; make setup needs it too)"; return 1; }
  local files; files=$(gofmt -l clients) || return 1
  [ -z "$files" ] || { echo "$files" | sed 's/$/: not gofmt-formatted/'; return 1; }
}
step ruff  "the findings above; \`.venv/bin/ruff check --fix .\` sorts imports" .venv/bin/ruff check --quiet --output-format concise .
step mypy  "the type errors above" .venv/bin/mypy
step gofmt "\`gofmt -w\` the files above" gofmt_clean
step go-vet "the findings above" .venv/bin/python scripts/lint_go.py
if [ ${#failed[@]} -gt 0 ]; then
  echo "lint: FAILED (${failed[*]}); \`make lint\` runs these checks alone" >&2
  exit 1
fi
echo "lint: ruff, mypy, gofmt and go vet clean"
