"""Finding a Python interpreter of a given minor version for a per-version venv.

Some client releases only ship binary wheels for older Pythons (confluent-kafka
1.9.x: cp310 at the newest, 1.6-1.8.x: cp39). :func:`find_python` applies the rule stated in
:mod:`conformance.config` (next to ``PYENV_ROOT``):

1. the first ``pythonX.Y`` on ``PATH`` that runs and reports version X.Y
   (a pyenv shim for a version that is not activated exits non-zero and is
   skipped);
2. ``$PYENV_ROOT/versions/X.Y.*/bin/pythonX.Y``, newest patch release first.

Guarantee: the returned path ran and reported X.Y; otherwise
:class:`~conformance.errors.SuiteError` with one line saying what to install.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from conformance import config
from conformance.errors import SuiteError


def reports_version(python: Path | str, minor: str) -> bool:
    """True when ``python`` runs and its ``sys.version_info`` starts with ``minor`` (``"3.10"``)."""
    try:
        proc = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0 and proc.stdout.strip() == minor


def _patch_key(path: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", path.name))


def candidates(minor: str, path_env: str | None = None, pyenv_root: Path | None = None) -> list[Path]:
    """Every place the rule looks, in order (existing files only; not yet checked to run)."""
    exe = f"python{minor}"
    found: list[Path] = []
    for directory in (path_env if path_env is not None else os.environ.get("PATH", "")).split(os.pathsep):
        hit = shutil.which(exe, path=directory) if directory else None
        if hit:
            found.append(Path(hit))
    root = pyenv_root if pyenv_root is not None else config.PYENV_ROOT
    versions = root / "versions"
    if versions.is_dir():
        for d in sorted(versions.glob(f"{minor}.*"), key=_patch_key, reverse=True):
            if re.fullmatch(re.escape(minor) + r"\.\d+", d.name) and (d / "bin" / exe).is_file():
                found.append(d / "bin" / exe)
    return found


def find_python(minor: str, path_env: str | None = None, pyenv_root: Path | None = None) -> Path:
    """The first interpreter the rule finds that reports ``minor``; SuiteError naming what to install."""
    for candidate in candidates(minor, path_env, pyenv_root):
        if reports_version(candidate, minor):
            return candidate
    root = pyenv_root if pyenv_root is not None else config.PYENV_ROOT
    raise SuiteError(f"no Python {minor} interpreter found (looked for python{minor} on PATH and under "
                     f"{root}/versions/{minor}.*): install Python {minor}, e.g. `pyenv install {minor}`")
