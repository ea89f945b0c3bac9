"""Whether a member's ``KIND@VERSION`` exists and can run, decided before a run starts.

:func:`check_specs` is what ``conformance run``, ``reproduce`` and ``setup`` call on the mix,
once, before anything starts or is installed; :func:`problem` is its decision, a pure function of the kind, the version and
the versions its registry lists.

Guarantees:

- A version already installed in the cache is accepted at once: no registry is asked.
- A version below the kind's oldest runnable release (:data:`OLDEST`), and any ``reference``
  version but the suite's own, is refused without asking a registry.
- Otherwise the kind's registry is asked once per kind and process (Maven Central for ``java``,
  PyPI for ``librdkafka`` and ``kafka-python``, the Go module proxy for ``sarama``), and a
  version it does not list is refused.
- A refusal is one :class:`~conformance.errors.UsageError` line naming the closest versions
  that would do (a few, not the registry's whole list).
- A registry that cannot be asked (no network) is no verdict: the version is left to the
  installer, which says what failed.
"""

from __future__ import annotations

import re
import subprocess
from bisect import bisect_left
from functools import lru_cache
from typing import Callable, Iterable, Sequence

from conformance import config
from conformance.errors import SuiteError, UsageError
from conformance.members.spec import MemberSpec

#: The oldest release of each kind the suite can run, and why (from the kinds' modules).
OLDEST: dict[str, tuple[str, str]] = {
    "java": (config.JAVA_MIN_CLIENT_VERSION,
             f"the Java harness runs kafka-clients {config.JAVA_MIN_CLIENT_VERSION} or later (KIP-429 listener API)"),
    "librdkafka": ("1.9.0", "confluent-kafka before 1.9.0 has no binary wheel for a Python the suite runs (3.10, 3.11)"),
    "kafka-python": ("2.1.0", "the kafka-python harness commits with OffsetAndMetadata(offset, metadata, "
                              "leader_epoch), which kafka-python has from 2.1.0"),
    "sarama": ("1.37.0", "the Sarama harness sets Consumer.Group.Rebalance.GroupStrategies, which Sarama has "
                         "from 1.37.0"),
}

#: The registry each kind's versions come from, for messages.
REGISTRY: dict[str, str] = {
    "java": "Maven Central (org.apache.kafka:kafka-clients)",
    "librdkafka": "PyPI (confluent-kafka)",
    "kafka-python": "PyPI (kafka-python)",
    "sarama": "the Go module proxy (github.com/IBM/sarama, github.com/Shopify/sarama)",
}

_RELEASE = re.compile(r"[0-9]+(?:\.[0-9]+)*", re.ASCII)
#: A Go pseudo-version (a commit): the sarama installer takes it as it is.
_PSEUDO = re.compile(r"^v?0\.0\.0-|^\d+\.\d+\.\d+-0\.")


def version_key(version: str) -> tuple[int, ...]:
    """``"2.16.1"`` -> ``(2, 16, 1)``: numeric order of plain releases (``1.9`` and ``1.9.0`` are one)."""
    key = [int(p) for p in re.findall(r"[0-9]+", version)]
    while key and key[-1] == 0:
        key.pop()
    return tuple(key)


def closest(version: str, valid: Iterable[str], count: int = 4) -> list[str]:
    """The ``count`` releases of ``valid`` nearest ``version`` in release order (as many below as
    above where both sides have them), newest first."""
    ordered = sorted(set(valid), key=version_key)
    at = bisect_left([version_key(v) for v in ordered], version_key(version))
    low, high = at, at
    while high - low < count and (low > 0 or high < len(ordered)):
        if high < len(ordered) and (high - at <= at - low or low == 0):
            high += 1
        else:
            low -= 1
    return list(reversed(ordered[low:high]))


def problem(kind: str, version: str, available: Sequence[str] | None) -> str | None:
    """What is wrong with ``kind@version`` (one line), or None when it may run.

    ``available`` is every version the kind's registry lists, or None when it was not asked
    (then only what needs no registry is decided: the reference's one version, the kind's
    oldest runnable release)."""
    spec = f"{kind}@{version}"
    if kind == "reference":
        own = config.DEFAULT_CLIENT_VERSIONS["reference"]
        return None if version == own else (f"{spec}: the reference consumer is part of the suite and has one "
                                            f"version, {own}; write reference or reference@{own}")
    if kind == "sarama" and _PSEUDO.match(version):
        return None
    oldest, why = OLDEST.get(kind, ("0", ""))
    below = _RELEASE.fullmatch(version) is not None and version_key(version) < version_key(oldest)
    if available is None:
        return f"{spec}: {why}; choose {oldest} or later" if below else None
    valid = [v for v in available if _RELEASE.fullmatch(v) and version_key(v) >= version_key(oldest)]
    if below:
        return f"{spec}: {why}; the oldest that run: {', '.join(reversed(closest(oldest, valid)))}"
    if version in available:
        return None
    same = [v for v in valid if version_key(v) == version_key(version)]
    if same:
        # pip would take 1.9 for 1.9.0; the suite keeps one spelling per release, so that its cache
        # (one install per version), manifests and known issues all name it alike.
        return (f"{spec}: {REGISTRY.get(kind, 'its registry')} lists this release as {same[0]}; "
                f"write {kind}@{same[0]}")
    near = closest(version, valid)
    return (f"{spec}: {REGISTRY.get(kind, 'its registry')} has no release {version}; "
            f"closest: {', '.join(near) or 'none'}")


def _java_versions() -> list[str]:
    from conformance.members.kinds import java
    return list(java.available_versions())


def _pypi(package: str) -> Callable[[], list[str]]:
    def versions() -> list[str]:
        from conformance.members.kinds.librdkafka import _pypi_versions
        return _pypi_versions(package)
    return versions


def _sarama_versions() -> list[str]:
    from conformance.members.kinds.sarama import IBM_MODULE, SHOPIFY_MODULE, module_versions
    config.GO_DIR.mkdir(parents=True, exist_ok=True)
    return module_versions(IBM_MODULE) + module_versions(SHOPIFY_MODULE)


#: Each kind's registry look-up: every version it lists.
LOOKUPS: dict[str, Callable[[], list[str]]] = {
    "java": _java_versions,
    "librdkafka": _pypi("confluent-kafka"),
    "kafka-python": _pypi("kafka-python"),
    "sarama": _sarama_versions,
}


@lru_cache(maxsize=None)
def registry_versions(kind: str) -> tuple[str, ...] | None:
    """Every version ``kind``'s registry lists; None when it cannot be asked (no network, no
    ``go``) or lists nothing (which a reachable registry never does for these packages)."""
    lookup = LOOKUPS.get(kind)
    if lookup is None:
        return None
    try:
        found = tuple(lookup())
    except (SuiteError, OSError, ValueError, subprocess.SubprocessError):
        return None
    return found or None


def is_installed(spec: MemberSpec) -> bool:
    """True when the cache already holds what ``spec``'s kind needs at its version (no I/O but stat)."""
    kind, version = spec.kind, spec.version
    try:
        if kind == "java":
            from conformance.members.kinds import java
            return java.is_installed(version)
        if kind in ("librdkafka", "kafka-python"):
            from conformance.members.kinds.librdkafka import _MARKER, venv_dir
            return (venv_dir(kind, version) / _MARKER).is_file()
        if kind == "sarama":
            from conformance.members.kinds.sarama import binary
            return binary(version).is_file()
    except (OSError, ValueError):
        return False
    return False


def check_specs(specs: Iterable[MemberSpec]) -> None:
    """UsageError (one line, the closest valid versions) for the first spec whose version does
    not exist or cannot run; see the module's guarantees. Each distinct ``kind@version`` is
    checked once."""
    for kind, version in dict.fromkeys((s.kind, s.version) for s in specs):
        if is_installed(MemberSpec(kind, version)):
            continue
        offline = problem(kind, version, None)
        if offline is None and kind in LOOKUPS and not (kind == "sarama" and _PSEUDO.match(version)):
            listed = registry_versions(kind)
            found = problem(kind, version, listed) if listed is not None else None
        else:
            found = offline
        if found:
            raise UsageError(found)
