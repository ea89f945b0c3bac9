"""actionlint, the linter for the GitHub Actions workflows in ``.github/workflows/``.

Installed by ``conformance setup --all`` (what ``make test`` runs) from its Go module
(``config.ACTIONLINT_MODULE`` at ``config.ACTIONLINT_VERSION``) with
:func:`conformance.go_install.go_install`, into ``config.ACTIONLINT_DIR/<version>/``:
idempotent, never half-written. ``tests/test_workflows.py`` runs it on every workflow.
"""

from __future__ import annotations

from pathlib import Path

from conformance import config
from conformance.go_install import MARKER, go_install


def binary(version: str | None = None) -> Path:
    """Where the cache keeps actionlint ``version`` (whether or not it is installed)."""
    return config.ACTIONLINT_DIR / (version or config.ACTIONLINT_VERSION) / "actionlint"


def is_installed(version: str | None = None) -> bool:
    path = binary(version)
    return path.is_file() and (path.parent / MARKER).is_file()


def ensure_actionlint(version: str | None = None) -> Path:
    """Build actionlint into the cache unless it is there; return the binary's path."""
    version = version or config.ACTIONLINT_VERSION
    return go_install("actionlint", config.ACTIONLINT_MODULE, "cmd/actionlint", version,
                      config.ACTIONLINT_DIR / version, "actionlint")
