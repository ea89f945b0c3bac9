#!/usr/bin/env bash
# Installs Debian's chromium for the report rendering test (tests/test_report_render.py).
# Idempotent: does nothing when a chromium binary is already on PATH.
# Needs root (or sudo) and the Debian apt mirrors; exits non-zero with a reason otherwise.
set -euo pipefail

for bin in chromium chromium-browser google-chrome; do
    if command -v "$bin" >/dev/null 2>&1; then
        echo "chromium present: $(command -v "$bin")"
        exit 0
    fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; else
        echo "install-chromium: not root and no sudo; install Debian's 'chromium' package by hand" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null 2>&1 || { echo "install-chromium: apt-get finished but no chromium binary" >&2; exit 1; }
echo "chromium installed: $(command -v chromium)"
