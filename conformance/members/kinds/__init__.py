"""Member kinds: one module per client, all behind one interface.

Each module named in :data:`KIND_MODULES` provides::

    KIND: str
    def known_versions() -> list[str]
    def ensure(version: str) -> None          # idempotent install; UsageError names the real versions
    def command(version: str, config_path: Path) -> tuple[list[str], dict[str, str]]
    def supports_cooperative(version: str) -> bool
    def strategies_supported(version: str) -> list[str]

and, for a kind whose releases come from a registry (see :mod:`conformance.members.versions`)::

    REGISTRY: str                             # where releases come from, for messages
    OLDEST: str; OLDEST_WHY: str              # the oldest release its harness runs, and why
    def release_exists(version: str) -> bool  # the registry asked about the exact release
                                              # (conformance.registries); RegistryUnreachable if no answer
    def listed_versions() -> Sequence[str]    # what the registry lists, to name nearby releases
    def is_installed(version: str) -> bool    # the cache holds it (stat only)

Optional: ``library_version(version) -> str | None``, the version of the client library the
installed kind really runs, when it can differ from the spec's (librdkafka: the spec names the
confluent-kafka release); see :func:`library_version`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from conformance.errors import UsageError

KIND_MODULES: dict[str, str] = {
    "reference": "conformance.members.kinds.reference",
    "java": "conformance.members.kinds.java",
    "librdkafka": "conformance.members.kinds.librdkafka",
    "sarama": "conformance.members.kinds.sarama",
    "kafka-python": "conformance.members.kinds.kafka_python",
    "franz-go": "conformance.members.kinds.franz_go",
}


def kind_module(kind: str) -> ModuleType:
    """The module implementing ``kind``; UsageError for an unknown kind."""
    try:
        return importlib.import_module(KIND_MODULES[kind])
    except KeyError:
        raise UsageError(f"unknown member kind {kind!r}; known: {', '.join(KIND_MODULES)}") from None


def library_version(kind: str, version: str) -> str | None:
    """The client library version a ``kind@version`` member runs: the kind module's
    ``library_version(version)`` where it has one (None when that cannot be read: not installed),
    else ``version`` itself (the harness is built against exactly that release)."""
    read = getattr(kind_module(kind), "library_version", None)
    return read(version) if read is not None else version
