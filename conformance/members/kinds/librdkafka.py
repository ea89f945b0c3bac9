"""Member kind ``librdkafka``: librdkafka through confluent-kafka-python.

``librdkafka@V`` means the confluent-kafka wheel ``V`` from PyPI, installed in
its own virtual environment ``config.VENVS_DIR/librdkafka-V`` so several
versions coexist.

Naming: a member spec names the confluent-kafka release (the unit PyPI serves
and the cache holds), never the librdkafka inside it. The bundled librdkafka is
usually the same version, but not always: confluent-kafka 2.16.1 bundles
librdkafka 2.16.0. So the real library version (``confluent_kafka.libversion()``,
read once from the installed venv: :func:`library_version`) is recorded beside
the spec: in the harness's ``started`` event (``librdkafka_version``), in the
manifest's member entries (``library_version``) and in ``conformance clients
list``; known issues, which upstream documents by librdkafka version, are
matched on the spec's version (for the releases in the table the two agree). The harness is
``clients/librdkafka/harness.py`` run by that venv's interpreter with the
repository root on ``PYTHONPATH`` (it imports :mod:`conformance.history`).

Versions: only binary wheels are used (no build of librdkafka from source).
PyPI has no cp311 wheel of any confluent-kafka 1.x (the oldest with one is
2.0.2); the newest 1.x releases, 1.9.0 and 1.9.2, have cp310 manylinux wheels
and 1.6-1.8.x have none for 3.10 (``pip download --only-binary=:all:
--python-version 3.10``, checked 2026). So versions below
``config.LEGACY_CONFLUENT_BELOW`` get a venv built with a Python
``config.LEGACY_PYTHON`` interpreter found by
:func:`conformance.members.interpreters.find_python`; newer ones use the
suite's own interpreter. The harness and what it imports run on 3.10.

Assignors (librdkafka's ``rd_kafka_assignor``s, the same in 1.9.2 and 2.x):
``range``, ``roundrobin`` and, from 1.6.0, ``cooperative-sticky``; there is no
eager ``sticky``, and one list may not mix eager and cooperative assignors.

Expected verdicts on old versions (true verdicts, not harness faults: 2.16.1
with the same harness passes):

- D1 before 2.1.0. ``consume(num_messages > 1)`` (rd_kafka_consume_batch_queue)
  loses records it had fetched when a rebalance runs alongside it: a known
  issue of the 2.0.0 release notes, fixed in 2.1.0; 1.9.x also skips other
  partitions' offsets (fixed in 2.0.0). Seen: 2.0.2 in rolling-restart,
  crash-restart and partition; 1.9.2 in 8 of the 13 scenarios. Every gap
  borders records librdkafka consumed.
- L1 before 2.10.0, intermittently. A commit of the previous generation that
  fails with ILLEGAL_GENERATION while the member joins sets its generation to
  -1; elected leader, it then syncs generation -1, which the broker refuses,
  and the group rebalances again (librdkafka issue 4059, fixed in 2.10.0). The
  violation names the SyncGroup's generation. Seen: 1.9.2 in leader-rotation
  and rolling-restart.

This module also holds :func:`install_pypi_venv`, the atomic, idempotent
per-version venv installer that the kafka-python kind shares.
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
from conformance.members.interpreters import find_python

KIND = "librdkafka"
PYPI_PACKAGE = "confluent-kafka"
#: Where releases come from, for messages.
REGISTRY = f"PyPI ({PYPI_PACKAGE})"
#: The oldest release the suite runs, and why.
OLDEST = "1.9.0"
OLDEST_WHY = "confluent-kafka before 1.9.0 has no binary wheel for a Python the suite runs (3.10, 3.11)"
HARNESS: Path = config.CLIENTS_DIR / "librdkafka" / "harness.py"

#: Versions exercised by tests/test_harness_*.py against a real broker.
KNOWN_VERSIONS: tuple[str, ...] = ("2.16.1", "2.0.2", "1.9.2")

#: The first confluent-kafka with the cooperative-sticky assignor and
#: incremental_assign/unassign (KIP-429 support in librdkafka 1.6.0).
FIRST_COOPERATIVE = (1, 6, 0)

_MARKER = ".conformance-installed.json"


def _vtuple(version: str) -> tuple[int, ...]:
    """``"2.16.1"`` -> ``(2, 16, 1)``; non-numeric parts end the tuple."""
    parts: list[int] = []
    for piece in version.split("."):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group()))
    return tuple(parts)


def known_versions() -> list[str]:
    return list(KNOWN_VERSIONS)


def supports_cooperative(version: str) -> bool:
    return _vtuple(version) >= FIRST_COOPERATIVE


def strategies_supported(version: str) -> list[str]:
    """librdkafka has range, roundrobin and (1.6+) cooperative-sticky; no eager ``sticky``."""
    eager = ["range", "roundrobin"]
    return (["cooperative-sticky"] if supports_cooperative(version) else []) + eager


def release_exists(version: str) -> bool:
    """Whether PyPI has confluent-kafka ``version``; RegistryUnreachable without an answer."""
    return registries.pypi_has(PYPI_PACKAGE, version)


def listed_versions() -> tuple[str, ...]:
    """Every confluent-kafka release PyPI records (for naming nearby ones)."""
    return registries.pypi_versions(PYPI_PACKAGE)


def is_installed(version: str) -> bool:
    """True when the venv of ``version`` is complete (no I/O but stat)."""
    return (venv_dir(KIND, version) / _MARKER).is_file()


def venv_dir(kind: str, version: str) -> Path:
    return config.VENVS_DIR / f"{kind}-{version}"


def venv_python(kind: str, version: str) -> Path:
    return venv_dir(kind, version) / "bin" / "python"


def _wheel_versions(pip_output: str) -> list[str]:
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
    if (target / _MARKER).is_file():
        return target
    config.VENVS_DIR.mkdir(parents=True, exist_ok=True)
    lock_path = config.VENVS_DIR / f".{kind}-{version}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / _MARKER).is_file():
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
                    wheels = _wheel_versions(out)
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
            (tmp / _MARKER).write_text(json.dumps({"kind": kind, "package": package, "version": version,
                                                   "python": interpreter, "python_version": py_minor,
                                                   "installed_at": time.time()}) + "\n")
            shutil.rmtree(target, ignore_errors=True)  # an incomplete leftover (no marker)
            os.rename(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def needs_legacy_python(version: str) -> bool:
    """True for confluent-kafka versions with no wheel for the suite's Python (1.x: cp310 at most)."""
    return _vtuple(version) < config.LEGACY_CONFLUENT_BELOW


def ensure(version: str) -> None:
    """Install confluent-kafka ``version`` into its own venv (idempotent).

    1.x goes into a venv of a Python ``config.LEGACY_PYTHON`` interpreter;
    SuiteError (one line, what to install) when none is found.
    """
    python = None
    if needs_legacy_python(version) and not (venv_dir(KIND, version) / _MARKER).is_file():
        python = find_python(config.LEGACY_PYTHON)
    install_pypi_venv(KIND, PYPI_PACKAGE, version, python)
    library_version(version)


#: The file in a venv holding the librdkafka version its confluent-kafka bundles (written once).
LIBRARY_FILE = ".librdkafka-version"


def library_version(version: str) -> str | None:
    """The librdkafka version that confluent-kafka ``version`` bundles (``libversion()``), read once
    from the installed venv and kept in it; None when that version is not installed or its
    interpreter cannot say (a broken venv: the run's own start reports that)."""
    venv = venv_dir(KIND, version)
    if not (venv / _MARKER).is_file():
        return None
    kept = venv / LIBRARY_FILE
    if kept.is_file():
        return kept.read_text(encoding="utf-8").strip() or None
    try:
        proc = subprocess.run([str(venv_python(KIND, version)), "-c",
                               "import confluent_kafka; print(confluent_kafka.libversion()[0])"],
                              capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.SubprocessError):
        return None
    found = proc.stdout.strip()
    if proc.returncode != 0 or not re.fullmatch(r"[0-9][0-9A-Za-z.\-+]*", found):
        return None
    tmp = venv / f"{LIBRARY_FILE}.{os.getpid()}"
    tmp.write_text(found + "\n", encoding="utf-8")
    os.replace(tmp, kept)
    return found


def python_env() -> dict[str, str]:
    """Environment for a Python harness in its own venv: the repo root on PYTHONPATH."""
    return {"PYTHONPATH": str(config.REPO_ROOT), "PYTHONUNBUFFERED": "1"}


def command(version: str, config_path: Path) -> tuple[list[str], dict[str, str]]:
    return [str(venv_python(KIND, version)), str(HARNESS), str(config_path)], python_env()
