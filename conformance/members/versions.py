"""Whether a member's ``KIND@VERSION`` exists and can run, decided before a run starts.

:func:`check_specs` is what ``conformance run``, ``reproduce``, ``plan`` and ``setup`` call on the
mix, once, before anything starts or is installed; :func:`problem` is its decision once a registry
has said no, a pure function of the kind, the version and the versions the registry lists.

What each kind knows lives in its module (:mod:`conformance.members.kinds`): ``OLDEST`` and
``OLDEST_WHY`` (the oldest release its harness runs, and why), ``REGISTRY`` (where its releases
come from, for messages), ``release_exists(version)`` (the registry asked about that exact
release), ``listed_versions()`` (what the registry lists, for naming nearby releases) and
``is_installed(version)``.

Guarantees:

- A version already installed in the cache is accepted at once: no registry is asked.
- A version below the kind's oldest runnable release, and any ``reference`` version but the
  suite's own, is refused without asking a registry.
- Otherwise the kind's registry is asked about that exact release (Maven Central by artifact and
  version, PyPI by release, the Go module proxy by ``@v/VERSION.info``, for Sarama under both
  module paths): a listing, which can be incomplete, never refuses a version.
- "no such release" is said only when the registry answers that the release does not exist; the
  line names the closest releases the registry lists (a few, not its whole list). A release
  spelt otherwise than the registry spells it (``1.9`` for ``1.9.0``) is refused naming the
  registry's spelling, so that caches, manifests and known issues name each release one way.
- A registry that does not answer is a :class:`~conformance.errors.SuiteError` naming the URL it
  asked (exit 2, before anything starts), never "no such release".
- A release that cannot work with the run's broker (a row of its kind's ``BROKER_LIMITS``,
  :class:`~conformance.members.kinds.BrokerLimit`) is refused by :func:`broker_problem`, offline,
  naming the reason, the oldest release that can (of the kind's tiers) and the newest supported
  broker it can work with.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import Iterable, Sequence

from conformance import config
from conformance.errors import UsageError
from conformance.members import kinds
from conformance.members.kinds import broker_limit, kind_module, minor_versions, release_tuple
from conformance.members.spec import MemberSpec

_RELEASE = re.compile(r"[0-9]+(?:\.[0-9]+)*", re.ASCII)
#: A Go pseudo-version (a commit): no listing has it; only the proxy's answer decides.
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


def oldest(kind: str) -> tuple[str, str]:
    """``(oldest runnable release, why)`` of ``kind`` (its module's ``OLDEST``, ``OLDEST_WHY``)."""
    module = kind_module(kind)
    return getattr(module, "OLDEST", "0"), getattr(module, "OLDEST_WHY", "")


def registry_name(kind: str) -> str:
    """Where ``kind``'s releases come from, for messages (its module's ``REGISTRY``)."""
    return getattr(kind_module(kind), "REGISTRY", "its registry")


def problem(kind: str, version: str, available: Sequence[str] | None) -> str | None:
    """What is wrong with ``kind@version`` (one line), or None when it may run.

    ``available`` is what the kind's registry lists, given once the registry has said that it has
    no release ``version``; None when no registry was asked (then only what needs no registry is
    decided: the reference's one version, the kind's oldest runnable release)."""
    spec = f"{kind}@{version}"
    if kind == "reference":
        own = kinds.default_version("reference")
        return None if version == own else (f"{spec}: the reference consumer is part of the suite and has one "
                                            f"version, {own}; write reference or reference@{own}")
    if _PSEUDO.match(version) and available is not None:
        return None
    first, why = oldest(kind)
    below = _RELEASE.fullmatch(version) is not None and version_key(version) < version_key(first)
    if available is None:
        return f"{spec}: {why}; choose {first} or later" if below else None
    valid = [v for v in available if _RELEASE.fullmatch(v) and version_key(v) >= version_key(first)]
    if below:
        return f"{spec}: {why}; the oldest that run: {', '.join(reversed(closest(first, valid)))}"
    if version in available:
        return None
    same = [v for v in valid if version_key(v) == version_key(version)]
    if same:
        # pip would take 1.9 for 1.9.0; the suite keeps one spelling per release, so that its cache
        # (one install per version), manifests and known issues all name it alike.
        return f"{spec}: {registry_name(kind)} lists this release as {same[0]}; write {kind}@{same[0]}"
    near = closest(version, valid)
    return f"{spec}: {registry_name(kind)} has no release {version}; closest: {', '.join(near) or 'none'}"


def broker_problem(kind: str, version: str, broker: str) -> str | None:
    """Why ``kind@version`` cannot work with ``broker`` (one line: the kind module's reason, then
    what would work), or None when no row of its BROKER_LIMITS blocks it. Offline. None also for a
    release the offline rules refuse (:func:`problem`: below the kind's oldest): their refusal,
    which :func:`check_specs` gives, says more."""
    row = broker_limit(kind, version, broker)
    if row is None or problem(kind, version, None) is not None:
        return None
    newer = sorted((v for v in minor_versions(kind) if not row.blocks(v, broker)), key=release_tuple)
    older = sorted((b for b in config.BROKER_VERSIONS if not row.blocks(version, b)), key=release_tuple)
    instead = [f"{kind}@{newer[0]} or later" if newer else f"{kind} from {row.fixed_in} on",
               *([f"broker {older[-1]} or older"] if older else [])]
    return (f"{kind}@{version} cannot work with broker {broker}: {kind} before {row.fixed_in} {row.reason}; "
            f"choose {', or '.join(instead)}")


def brokers_for(kind: str, version: str) -> tuple[str, ...]:
    """The supported brokers (:data:`conformance.config.BROKER_VERSIONS`, in its order, newest
    first) that ``kind@version`` can work with."""
    return tuple(b for b in config.BROKER_VERSIONS if broker_limit(kind, version, b) is None)


def is_installed(spec: MemberSpec) -> bool:
    """True when the cache already holds what ``spec``'s kind needs at its version (no I/O but stat)."""
    check = getattr(kind_module(spec.kind), "is_installed", None)
    try:
        return bool(check and check(spec.version))
    except (OSError, ValueError):
        return False


def registry_says(kind: str, version: str) -> Sequence[str] | None:
    """None when ``kind``'s registry has release ``version`` (asked by exact version), else what the
    registry lists, for naming nearby releases. A kind without a registry (its module has no
    ``release_exists``) has every version its installer accepts. RegistryUnreachable (a SuiteError)
    when the registry does not answer."""
    module = kind_module(kind)
    exists = getattr(module, "release_exists", None)
    if exists is None or exists(version):
        return None
    return tuple(module.listed_versions())


def check(kind: str, version: str) -> str | None:
    """What is wrong with ``kind@version``, asking its registry about the exact release when the
    cache and the offline rules do not decide (see the module's guarantees); None when it may run.
    RegistryUnreachable (a SuiteError) when the registry does not answer."""
    offline = problem(kind, version, None)
    if offline is not None or kind == "reference" or is_installed(MemberSpec(kind, version)):
        return offline
    listed = registry_says(kind, version)
    if listed is None:
        return None
    return problem(kind, version, listed) or f"{kind}@{version}: {registry_name(kind)} has no release {version}"


def check_specs(specs: Iterable[MemberSpec]) -> None:
    """UsageError (one line, the closest valid versions) for the first spec whose version does
    not exist or cannot run; SuiteError when a registry that must be asked does not answer. Each
    distinct ``kind@version`` is checked once."""
    for kind, version in dict.fromkeys((s.kind, s.version) for s in specs):
        found = check(kind, version)
        if found:
            raise UsageError(found)
