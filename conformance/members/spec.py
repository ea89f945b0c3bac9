"""Member specs: ``KIND[@VERSION][+PROTOCOL][/FAULT...]``.

Examples: ``reference``, ``java@3.9.1``, ``librdkafka@2.16.1``,
``sarama@1.60.1``, ``kafka-python@3.0.12``, ``reference/stale-owned-partitions``,
``java@4.4.0+consumer``, ``reference+consumer/ack-unrevoked``.

``PROTOCOL`` is the group protocol the member speaks: ``classic`` (JoinGroup/SyncGroup, the
default, never written out) or ``consumer`` (KIP-848, ConsumerGroupHeartbeat). Which kinds and
versions speak ``consumer`` is their kind module's ``consumer-protocol`` feature
(:func:`conformance.members.kinds.has_feature`), checked with the other features before a run.

Guarantees: ``MemberSpec.parse(str(spec)) == spec`` for every valid spec; an
omitted version resolves to the pinned default in :mod:`conformance.config`;
faults are accepted only for ``reference`` and only from the list of its protocol
(:data:`REFERENCE_FAULTS` for classic, :data:`CONSUMER_PROTOCOL_FAULTS` for consumer),
and a bad spec raises :class:`~conformance.errors.UsageError` saying what is wrong.
The grammar is :func:`~conformance.members.spec_grammar.split_spec` alone: :meth:`MemberSpec.parse`
validates its words, and a reader of a spec string a run wrote (the pipeline's known issues and
matrix, the mutants) reads it through ``split_spec`` too, so no second grammar exists
(tests/test_member_spec.py checks it).
A version is one word of ``[0-9A-Za-z._-]`` here (``+`` starts the protocol); whether it exists
and can run is :mod:`conformance.members.versions`'s question (it may ask a registry).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from conformance.errors import UsageError
from conformance.members.harness_config import GROUP_PROTOCOLS
from conformance.members.kinds import KIND_MODULES, default_version
from conformance.members.spec_grammar import SpecWords, sort_key, split_spec

__all__ = ["CONSUMER_PROTOCOL_FAULTS", "KINDS", "MemberSpec", "REFERENCE_FAULTS", "SpecWords", "parse_specs",
           "sort_key", "split_spec"]

KINDS: tuple[str, ...] = tuple(KIND_MODULES)

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
    "consume-revoked",
    "consume-fenced",
)

#: Deliberate deviations of the reference KIP-848 member (``reference+consumer/FAULT``).
CONSUMER_PROTOCOL_FAULTS: tuple[str, ...] = (
    "ack-unrevoked",
    "stale-epoch",
    "ignore-fenced",
)

_VERSION_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z.\-_]{0,63}", re.ASCII)


@dataclass(frozen=True, order=True)
class MemberSpec:
    kind: str
    version: str
    faults: tuple[str, ...] = ()
    protocol: str = "classic"

    @classmethod
    def parse(cls, text: str) -> "MemberSpec":
        """Parse ``KIND[@VERSION][+PROTOCOL][/FAULT...]``, filling in the default version."""
        raw = text.strip()
        if not raw:
            raise UsageError("empty member spec: expected KIND[@VERSION][+PROTOCOL][/FAULT...], e.g. java@3.9.1")
        kind, version, protocol, faults = split_spec(raw)
        if protocol is not None and protocol not in GROUP_PROTOCOLS:
            raise UsageError(f"member spec {raw!r}: unknown group protocol {protocol!r} after '+'; "
                             f"known: {', '.join(GROUP_PROTOCOLS)}")
        protocol = protocol or "classic"
        if kind not in KIND_MODULES:
            raise UsageError(f"member spec {raw!r}: unknown kind {kind!r}; known kinds: {', '.join(KIND_MODULES)}")
        if version == "":
            raise UsageError(f"member spec {raw!r}: '@' must be followed by a version, e.g. {kind}@{default_version(kind)}")
        if version and not _VERSION_RE.fullmatch(version):
            raise UsageError(f"member spec {raw!r}: {version!r} is not a version")
        if faults and kind != "reference":
            raise UsageError(f"member spec {raw!r}: faults are only for 'reference', not {kind!r}")
        known = CONSUMER_PROTOCOL_FAULTS if protocol == "consumer" else REFERENCE_FAULTS
        for fault in faults:
            if fault not in known:
                raise UsageError(f"member spec {raw!r}: unknown fault {fault!r} for a {protocol}-protocol member; "
                                 f"known faults: {', '.join(known)}")
        return cls(kind=kind, version=version or default_version(kind), faults=tuple(faults),
                   protocol=protocol)

    @property
    def label(self) -> str:
        """``kind@version``, with ``+consumer`` for a KIP-848 member (no faults): the matrix axis."""
        return f"{self.kind}@{self.version}" + ("" if self.protocol == "classic" else f"+{self.protocol}")

    def __str__(self) -> str:
        return "/".join((self.label, *self.faults))


def parse_specs(text: str) -> list[MemberSpec]:
    """Parse a comma-separated list of member specs (the ``--clients`` option)."""
    parts = [p for p in (s.strip() for s in text.split(",")) if p]
    if not parts:
        raise UsageError("no member specs given: expected a comma-separated list such as reference,java,librdkafka")
    return [MemberSpec.parse(p) for p in parts]
