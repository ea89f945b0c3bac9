"""Member kind ``kafka-python``: dpkp/kafka-python in its own venv per version.

``kafka-python@V`` is the PyPI release ``V`` installed into
``config.VENVS_DIR/kafka-python-V`` (same atomic, idempotent installer as the
librdkafka kind). The harness is ``clients/kafka-python/harness.py``.

Assignors, read from the releases' own sources: 3.x has
``kafka.coordinator.assignors.cooperative_sticky.CooperativeStickyAssignor``
(name ``cooperative-sticky``, KIP-429, from 3.0.0) besides ``range``,
``roundrobin`` and ``sticky`` (``...sticky.sticky_assignor.StickyPartitionAssignor``);
2.x (from 2.0.2) has the eager ``range``, ``roundrobin`` and ``sticky`` only.
"""

from __future__ import annotations

from pathlib import Path

from conformance import config, registries
from conformance.members.kinds.librdkafka import _MARKER, _vtuple, install_pypi_venv, python_env, venv_dir, venv_python

KIND = "kafka-python"
PYPI_PACKAGE = "kafka-python"
#: Where releases come from, for messages.
REGISTRY = f"PyPI ({PYPI_PACKAGE})"
#: The oldest release the harness runs, and why.
OLDEST = "2.1.0"
OLDEST_WHY = ("the kafka-python harness commits with OffsetAndMetadata(offset, metadata, leader_epoch), "
              "which kafka-python has from 2.1.0")
HARNESS: Path = config.CLIENTS_DIR / "kafka-python" / "harness.py"

#: Versions exercised by tests/test_harness_kafka_python.py against a real broker.
KNOWN_VERSIONS: tuple[str, ...] = ("3.0.12", "2.3.3")


def known_versions() -> list[str]:
    return list(KNOWN_VERSIONS)


def supports_cooperative(version: str) -> bool:
    return _vtuple(version) >= (3, 0, 0)


def strategies_supported(version: str) -> list[str]:
    eager = ["sticky", "range", "roundrobin"] if _vtuple(version) >= (2, 0, 2) else ["range", "roundrobin"]
    return (["cooperative-sticky"] if supports_cooperative(version) else []) + eager


def release_exists(version: str) -> bool:
    """Whether PyPI has kafka-python ``version``; RegistryUnreachable without an answer."""
    return registries.pypi_has(PYPI_PACKAGE, version)


def listed_versions() -> tuple[str, ...]:
    """Every kafka-python release PyPI records (for naming nearby ones)."""
    return registries.pypi_versions(PYPI_PACKAGE)


def is_installed(version: str) -> bool:
    """True when the venv of ``version`` is complete (no I/O but stat)."""
    return (venv_dir(KIND, version) / _MARKER).is_file()


def ensure(version: str) -> None:
    """Install kafka-python ``version`` into its own venv (idempotent)."""
    install_pypi_venv(KIND, PYPI_PACKAGE, version)


def command(version: str, config_path: Path) -> tuple[list[str], dict[str, str]]:
    return [str(venv_python(KIND, version)), str(HARNESS), str(config_path)], python_env()
