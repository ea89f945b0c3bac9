"""Member kinds: the registry of client kinds, one module per client, each owning its knowledge.

Adding a kind means: its harness (``clients/<kind>/``), its module here (one line in
:data:`KIND_MODULES`), its golden files. Everything else derives from the registry: the default
versions, the default mix and the versions ``setup --all`` installs (:mod:`conformance.config`),
the mixing rules (:mod:`conformance.scenarios.mixing`), the known-issues table
(:mod:`conformance.members.known_issues`), the golden generators run by
``scripts/regen-golden.sh`` (:func:`golden_kinds`), the contract test over kinds x versions, and
``conformance clients list``.

Each module named in :data:`KIND_MODULES` provides::

    KIND: str
    DEFAULT_VERSION: str                      # an omitted @VERSION means this
    KNOWN_VERSIONS: tuple[str, ...]           # versions its harness tests run, the default first
    def known_versions() -> list[str]
    def ensure(version: str) -> None          # idempotent install; UsageError names the real versions
    def command(version: str, config_path: Path) -> tuple[list[str], dict[str, str]]
    def supports_cooperative(version: str) -> bool
    def strategies_supported(version: str) -> list[str]
    FETCH_MAX_WAIT_MS: int                    # the harness's fetch long-poll wait (the manifest records it; P1)

and, for a kind whose releases come from a registry (see :mod:`conformance.members.versions`)::

    REGISTRY: str                             # where releases come from, for messages
    OLDEST: str; OLDEST_WHY: str              # the oldest release its harness runs, and why
    def release_exists(version: str) -> bool  # the registry asked about the exact release
                                              # (conformance.registries); RegistryUnreachable if no answer
    def listed_versions() -> Sequence[str]    # what the registry lists, to name nearby releases
    def is_installed(version: str) -> bool    # the cache holds it, current (cheap: no network, no build)

Optional, each with the default that :func:`features_of` and the helpers below apply:

- ``FEATURES: tuple[Feature, ...]``: what the client has from which release (names in
  :data:`FEATURE_NAMES`); without it, the features follow from ``supports_cooperative`` and
  ``strategies_supported``, and static membership and assignor lists are assumed.
- ``TEST_VERSIONS``: what ``conformance setup --all`` installs and the CI contract test runs (one
  old and one new; default ``KNOWN_VERSIONS``). ``MINOR_VERSIONS``: the newest patch of every
  supported minor, for the nightly contract tier (default ``KNOWN_VERSIONS``).
- ``KNOWN_ISSUES: tuple[KnownIssue, ...]``: its rows of the known-issues table (default none).
- ``BROKER_LIMITS: tuple[BrokerLimit, ...]``: releases that cannot work with newer brokers, and
  why (default none); a member refused by one is refused before a run starts
  (:func:`conformance.members.versions.broker_problem`).
- ``IN_DEFAULT_MIX``: False keeps the kind out of the default mix of ``conformance run`` (and so
  out of the default matrix), with the reason beside it (default True).
- ``GOLDEN_VERSIONS``: releases whose golden vectors ``scripts/regen-golden.sh`` writes with
  the kind's generator (``clients/<kind>/golden``); a kind without it has no generator.
- ``library_version(version) -> str | None``: the client library the installed kind really runs,
  when it can differ from the spec's (librdkafka: the spec names the confluent-kafka release).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from types import ModuleType
from typing import Any

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


def fetch_max_wait_ms(kind: str) -> int:
    """The longest ``kind``'s harness waits in one fetch for records to arrive (its client's fetch
    long-poll setting as the harness runs it): what P1 allows between a record's acknowledgement and
    a poll that must have fetched it. UsageError for an unknown kind."""
    return int(kind_module(kind).FETCH_MAX_WAIT_MS)


def library_version(kind: str, version: str) -> str | None:
    """The client library version a ``kind@version`` member runs: the kind module's
    ``library_version(version)`` where it has one (None when that cannot be read: not installed),
    else ``version`` itself (the harness is built against exactly that release)."""
    read = getattr(kind_module(kind), "library_version", None)
    return read(version) if read is not None else version


def release_tuple(version: str) -> tuple[int, ...]:
    """``"2.16.1"`` -> ``(2, 16, 1)``; a leading ``v`` is dropped and a non-numeric part ends the tuple."""
    parts: list[int] = []
    for piece in version.removeprefix("v").split("."):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group()))
        if m.end() < len(piece):
            break
    return tuple(parts)


#: Feature names a kind module's FEATURES may use, with what each means.
FEATURE_NAMES: dict[str, str] = {
    "cooperative": "incremental cooperative rebalancing as a member (KIP-429)",
    "static-membership": "group.instance.id (KIP-345)",
    "assignor-list": "more than one assignor in one list (the coordinator picks the protocol)",
    "mix-eager-cooperative": "an eager and a cooperative assignor in one list (the first upgrade bounce)",
    "protocol-of-chosen-assignor": "rebalances by the protocol of the assignor the group chose (else, like "
                                   "Java: eagerly whenever its list has an eager assignor)",
    "consumer-protocol": "the KIP-848 consumer group protocol (ConsumerGroupHeartbeat; the member spec's "
                         "+consumer)",
    "assignor:cooperative-sticky": "the cooperative-sticky assignor",
    "assignor:sticky": "the eager sticky assignor",
    "assignor:range": "the range assignor",
    "assignor:roundrobin": "the round-robin assignor",
}


@dataclass(frozen=True)
class Feature:
    """``name`` (a key of :data:`FEATURE_NAMES`) is there from release ``since`` (None: in every
    release the harness runs) up to, not including, ``until`` (None: still there); ``source`` says
    where that was read (the client's sources or changelog)."""

    name: str
    since: str | None = None
    source: str = ""
    until: str | None = None

    def __post_init__(self) -> None:
        if self.name not in FEATURE_NAMES:
            raise ValueError(f"unknown feature {self.name!r}; known: {', '.join(FEATURE_NAMES)}")

    def available(self, version: str) -> bool:
        v = release_tuple(version)
        return ((self.since is None or v >= release_tuple(self.since))
                and (self.until is None or v < release_tuple(self.until)))

    @property
    def versions(self) -> str:
        """``"from 1.34.0"``, ``"every version"``, ``"before 2.0"``."""
        if self.until:
            return f"from {self.since} before {self.until}" if self.since else f"before {self.until}"
        return f"from {self.since}" if self.since else "every version"


def features_of(kind: str, version: str) -> set[str]:
    """The features ``kind@version`` has: its module's FEATURES, else what follows from
    ``supports_cooperative``, ``strategies_supported`` and ``CAN_MIX_EAGER_AND_COOPERATIVE``."""
    module = kind_module(kind)
    table = getattr(module, "FEATURES", None)
    if table is not None:
        return {f.name for f in table if f.available(version)}
    found = {"static-membership", "assignor-list"} | {f"assignor:{a}" for a in module.strategies_supported(version)}
    if module.supports_cooperative(version):
        found.add("cooperative")
    if getattr(module, "CAN_MIX_EAGER_AND_COOPERATIVE", True):
        found.add("mix-eager-cooperative")
    return found


def has_feature(kind: str, version: str, name: str) -> bool:
    """Whether ``kind@version`` has feature ``name`` (see :func:`features_of`)."""
    if name not in FEATURE_NAMES:
        raise ValueError(f"unknown feature {name!r}")
    return name in features_of(kind, version)


def feature_since(kind: str, name: str) -> str | None:
    """The first release of ``kind`` with ``name`` as its FEATURES say (None: every release, or no table)."""
    for f in getattr(kind_module(kind), "FEATURES", ()):
        if f.name == name:
            return f.since
    return None


@dataclass(frozen=True)
class BrokerLimit:
    """Releases of a kind before ``fixed_in`` cannot work with brokers from ``broker_from`` on.

    ``reason`` says what fails, as a clause that completes "KIND before FIXED_IN ..." (the refusal
    line quotes it); ``source`` where that was read (the client's sources, the broker's). Both
    bounds compare as releases (:func:`release_tuple`): a kind's release is its spec's version."""

    fixed_in: str
    broker_from: str
    reason: str
    source: str = ""

    def blocks(self, version: str, broker: str) -> bool:
        """Whether ``version`` of the kind cannot work with ``broker`` by this row."""
        return (release_tuple(version) < release_tuple(self.fixed_in)
                and release_tuple(broker) >= release_tuple(self.broker_from))


def broker_limits(kind: str) -> tuple[BrokerLimit, ...]:
    """``kind``'s BROKER_LIMITS (none when its module has no such table)."""
    return tuple(getattr(kind_module(kind), "BROKER_LIMITS", ()))


def broker_limit(kind: str, version: str, broker: str) -> BrokerLimit | None:
    """The first row of ``kind``'s BROKER_LIMITS by which ``kind@version`` cannot work with
    ``broker``; None when it can (no row blocks it)."""
    return next((row for row in broker_limits(kind) if row.blocks(version, broker)), None)


def default_version(kind: str) -> str:
    """The version an omitted ``@VERSION`` means: the module's DEFAULT_VERSION, else its first known version."""
    module = kind_module(kind)
    return getattr(module, "DEFAULT_VERSION", None) or module.known_versions()[0]


def default_versions() -> dict[str, str]:
    """``{kind: default version}`` for every registered kind, in registry order."""
    return {kind: default_version(kind) for kind in KIND_MODULES}


def test_versions(kind: str) -> tuple[str, ...]:
    """What ``setup --all`` installs and the CI contract test runs for ``kind`` (one old, one new)."""
    module = kind_module(kind)
    return tuple(getattr(module, "TEST_VERSIONS", None) or module.known_versions())


def minor_versions(kind: str) -> tuple[str, ...]:
    """The newest patch of every supported minor of ``kind`` (the nightly contract tier)."""
    module = kind_module(kind)
    return tuple(getattr(module, "MINOR_VERSIONS", None) or module.known_versions())


def known_issues() -> tuple[Any, ...]:
    """Every kind's KNOWN_ISSUES rows, in registry order (the table of :mod:`conformance.members.known_issues`)."""
    return tuple(row for kind in KIND_MODULES for row in getattr(kind_module(kind), "KNOWN_ISSUES", ()))


def golden_kinds() -> dict[str, tuple[str, ...]]:
    """``{kind: GOLDEN_VERSIONS}`` of every kind with a golden generator, in registry order."""
    return {kind: tuple(kind_module(kind).GOLDEN_VERSIONS) for kind in KIND_MODULES
            if getattr(kind_module(kind), "GOLDEN_VERSIONS", None)}
