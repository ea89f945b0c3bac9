"""Installing a client release from PyPI into its own virtual environment, for every PyPI kind.

``install_pypi_venv(kind, package, version)`` puts ``package==version`` (binary wheels only) into
``config.VENVS_DIR/<kind>-<version>``; :func:`venv_python` is that venv's interpreter and
:func:`python_env` the environment a harness runs with there (the repository root on
``PYTHONPATH``, since harnesses import :mod:`conformance.history`). The librdkafka and
kafka-python kinds use it; a new PyPI kind needs nothing else to install.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from conformance import config, registries
from conformance.errors import SuiteError, UsageError

#: The file whose presence says a venv is complete (written last, before the rename).
MARKER = ".conformance-installed.json"


def venv_dir(kind: str, version: str) -> Path:
    return config.VENVS_DIR / f"{kind}-{version}"


def venv_python(kind: str, version: str) -> Path:
    return venv_dir(kind, version) / "bin" / "python"


def wheel_versions(pip_output: str) -> list[str]:
    """The ``(from versions: ...)`` list of a failed ``pip install``: what has a usable wheel here."""
    m = re.search(r"\(from versions: ([^)]*)\)", pip_output)
    return [v.strip() for v in m.group(1).split(",")] if m and m.group(1).strip() != "none" else []


def install_pypi_venv(kind: str, package: str, version: str, python: Path | None = None) -> Path:
    """Install ``package==version`` (binary wheels only) into ``VENVS_DIR/<kind>-<version>``.

    The venv is built with ``python`` (default: the suite's own interpreter).

    Guarantees: idempotent (a complete venv is reused; completeness is a marker
    file written last); atomic (built in a temporary sibling directory and
    renamed into place, so a crash never leaves a half venv under the final
    name); safe against a concurrent install of the same venv (a lock file).
    A version that does not exist, or has no wheel for this Python, raises
    :class:`UsageError` naming the versions that do.
    """
    target = venv_dir(kind, version)
    if (target / MARKER).is_file():
        return target
    config.VENVS_DIR.mkdir(parents=True, exist_ok=True)
    lock_path = config.VENVS_DIR / f".{kind}-{version}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / MARKER).is_file():
            return target
        tmp = config.VENVS_DIR / f".tmp-{kind}-{version}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            interpreter = str(python or sys.executable)
            made = subprocess.run([interpreter, "-m", "venv", str(tmp)], capture_output=True, text=True, timeout=300)
            if made.returncode != 0:
                raise SuiteError(f"{kind}@{version}: {interpreter} -m venv failed (exit {made.returncode}): "
                                 f"{(made.stdout + made.stderr).strip()[-500:]}")
            py_minor = subprocess.run([str(tmp / "bin" / "python"), "-c",
                                       "import sys; print('%d.%d' % sys.version_info[:2])"],
                                      capture_output=True, text=True, timeout=60).stdout.strip()
            proc = subprocess.run(
                [str(tmp / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 "--only-binary=:all:", f"{package}=={version}"],
                capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                out = proc.stdout + proc.stderr
                if "No matching distribution" in out or "Could not find a version" in out:
                    wheels = wheel_versions(out)
                    listed = list(registries.pypi_versions(package))
                    if version in listed:
                        raise UsageError(
                            f"{kind}@{version}: {package} {version} exists on PyPI but has no binary wheel for "
                            f"Python {py_minor} on this platform; versions "
                            f"with one: {', '.join(wheels) or 'none'}")
                    raise UsageError(f"{kind}@{version}: {package} has no version {version!r} on PyPI; "
                                     f"versions with a wheel here: {', '.join(wheels or listed) or 'none found'}")
                raise SuiteError(f"{kind}@{version}: pip install {package}=={version} failed "
                                 f"(exit {proc.returncode}):\n{out[-2000:]}")
            (tmp / MARKER).write_text(json.dumps({"kind": kind, "package": package, "version": version,
                                                   "python": interpreter, "python_version": py_minor,
                                                   "installed_at": time.time()}) + "\n")
            shutil.rmtree(target, ignore_errors=True)  # an incomplete leftover (no marker)
            os.rename(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def python_env() -> dict[str, str]:
    """Environment for a Python harness in its own venv: the repo root on PYTHONPATH."""
    return {"PYTHONPATH": str(config.REPO_ROOT), "PYTHONUNBUFFERED": "1"}
