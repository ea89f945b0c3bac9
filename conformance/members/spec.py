"""Member specs: ``KIND[@VERSION][/FAULT...]``.

Examples: ``reference``, ``java@3.9.1``, ``librdkafka@2.16.1``,
``sarama@1.60.1``, ``kafka-python@3.0.12``, ``reference/stale-owned-partitions``.

Guarantees: ``MemberSpec.parse(str(spec)) == spec`` for every valid spec; an
omitted version resolves to the pinned default in :mod:`conformance.config`;
faults are accepted only for ``reference`` and only from the known list, and a
bad spec raises :class:`~conformance.errors.UsageError` saying what is wrong.
A version is one word of ``[0-9A-Za-z.+_-]`` here; whether it exists and can
run is :mod:`conformance.members.versions`'s question (it may ask a registry).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from conformance.config import DEFAULT_CLIENT_VERSIONS
from conformance.errors import UsageError

KINDS: tuple[str, ...] = tuple(DEFAULT_CLIENT_VERSIONS)

#: Deliberate deviations of the reference consumer (see conformance.reference.faults).
REFERENCE_FAULTS: tuple[str, ...] = (
    "stale-owned-partitions",
    "subscription-v0",
    "subscription-v1",
    "subscription-v2",
    "subscription-v3",
    "subscription-v4-trailing",
    "userdata-empty",
    "userdata-null",
    "userdata-minus-one",
    "userdata-garbage",
    "leader-reassigns-owned",
    "skip-revoke",
    "no-follow-up-rejoin",
    "slow-sync",
    "stall-retained",
)

_VERSION_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z.\-+_]{0,63}", re.ASCII)


@dataclass(frozen=True, order=True)
class MemberSpec:
    kind: str
    version: str
    faults: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> "MemberSpec":
        """Parse ``KIND[@VERSION][/FAULT...]``, filling in the default version."""
        raw = text.strip()
        if not raw:
            raise UsageError("empty member spec: expected KIND[@VERSION][/FAULT...], e.g. java@3.9.1")
        head, *faults = raw.split("/")
        kind, _, version = head.partition("@")
        if kind not in KINDS:
            raise UsageError(f"member spec {raw!r}: unknown kind {kind!r}; known kinds: {', '.join(KINDS)}")
        if "@" in head and not version:
            raise UsageError(f"member spec {raw!r}: '@' must be followed by a version, e.g. {kind}@{DEFAULT_CLIENT_VERSIONS[kind]}")
        if version and not _VERSION_RE.fullmatch(version):
            raise UsageError(f"member spec {raw!r}: {version!r} is not a version")
        if faults and kind != "reference":
            raise UsageError(f"member spec {raw!r}: faults are only for 'reference', not {kind!r}")
        for fault in faults:
            if fault not in REFERENCE_FAULTS:
                raise UsageError(
                    f"member spec {raw!r}: unknown fault {fault!r}; known faults: {', '.join(REFERENCE_FAULTS)}"
                )
        return cls(kind=kind, version=version or DEFAULT_CLIENT_VERSIONS[kind], faults=tuple(faults))

    @property
    def label(self) -> str:
        """``kind@version`` (no faults): the matrix axis."""
        return f"{self.kind}@{self.version}"

    def __str__(self) -> str:
        return "/".join((self.label, *self.faults))


def parse_specs(text: str) -> list[MemberSpec]:
    """Parse a comma-separated list of member specs (the ``--clients`` option)."""
    parts = [p for p in (s.strip() for s in text.split(",")) if p]
    if not parts:
        raise UsageError("no member specs given: expected a comma-separated list such as reference,java,librdkafka")
    return [MemberSpec.parse(p) for p in parts]
