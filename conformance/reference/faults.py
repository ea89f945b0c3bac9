"""Deliberate deviations of the reference consumer (``reference/FAULT`` member specs).

Each fault makes the reference member break one rule on purpose, so that the
other clients' reactions and the suite's own checks can be tested. The member
still records in its history what it ACTUALLY does (a fault never makes the
history lie); the checks must find the deviation from the wire capture or the
history, never from the fault's name.

=========================  ===================================================  =========
fault                      what the member does instead of the rule             breaks
=========================  ===================================================  =========
stale-owned-partitions     declares in OwnedPartitions what it owned one          E5
                           generation earlier as well as what it owns now,
                           with the CURRENT GenerationId
subscription-v0..v3        writes its subscription at that version (v0 has no     (R5/E1
                           OwnedPartitions, v1 no GenerationId, v2 no RackId)     probes)
subscription-v4-trailing   writes version 4: the v3 fields then 6 extra bytes     E1 probe
userdata-empty             userData of zero bytes instead of the int32 generation E3 probe
userdata-null              null userData                                          E3 probe
userdata-minus-one         userData always ff ff ff ff (generation -1)            E3 probe
userdata-garbage           userData ``de ad be`` (3 bytes, no known format)       E3
leader-reassigns-owned     as leader, hands a partition another member still      R1
                           owns straight to its new owner (no withholding), as
                           an eager leader would
skip-revoke                keeps fetching (and recording ``consumed`` for)        R2
                           partitions it was told to give up, records no
                           ``revoked`` for them, declares only its assignment
no-follow-up-rejoin        after revoking, does not rejoin at once                R4
slow-sync                  waits :data:`SLOW_SYNC_DELAY_MS` before every SyncGroup V1/timing
stall-retained             cooperative: after a rebalance in which it keeps a     P1
                           partition, never fetches that partition again (it
                           keeps owning and declaring it, heartbeats and
                           consumes its other partitions); the history tells
                           the truth: no ``consumed``, no revoke
consume-revoked            cooperative: commits and records ``revoked`` as the    C1
                           rule says (its callbacks are right), declares only
                           its assignment, but keeps fetching the revoked
                           partitions and handing their records to its
                           application (recorded as ``consumed``)
consume-fenced             on a fencing answer (UNKNOWN_MEMBER_ID,                C2
                           ILLEGAL_GENERATION, FENCED_INSTANCE_ID) goes on
                           fetching and handing records of everything it owned
                           to its application for :data:`CONSUME_FENCED_MS`
                           before it records ``lost`` and rejoins
=========================  ===================================================  =========

The KIP-848 member (``reference+consumer/FAULT``, :mod:`conformance.reference.consumer_member`)
has its own faults (:class:`ConsumerFaults`):

=========================  ===================================================  =========
fault                      what the member does instead of the rule             breaks
=========================  ===================================================  =========
ack-unrevoked              on a target that removes partitions, heartbeats the   R2
                           reduced owned set (acknowledging the revoke) but
                           keeps fetching and recording ``consumed`` for the
                           partitions it gave up; records no ``revoked``
stale-epoch                once its epoch has grown past 1: its next commit      epochs
                           and its next light heartbeat carry the epoch below    only grow;
                           its own (once each per incarnation; the broker        stale
                           answers STALE_MEMBER_EPOCH / FENCED_MEMBER_EPOCH,     commits
                           and the member handles those answers honestly)        refused
ignore-fenced              when fenced (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID)  R2
                           rejoins with epoch 0 but keeps fetching what it
                           owned, records no ``lost``
=========================  ===================================================  =========
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from conformance.config import REFERENCE_CONSUME_FENCED_MS as CONSUME_FENCED_MS
from conformance.config import REFERENCE_SLOW_SYNC_DELAY_MS as SLOW_SYNC_DELAY_MS
from conformance.errors import UsageError
from conformance.members.spec import CONSUMER_PROTOCOL_FAULTS, REFERENCE_FAULTS
from conformance.protocol.userdata import encode_cooperative_generation
from conformance.reference.assignor import TP

#: Bytes appended after the v3 fields by ``subscription-v4-trailing``.
V4_TRAILING = b"\x00\x04tail"
#: userData written by ``userdata-garbage``: matches no known format.
GARBAGE_USERDATA = b"\xde\xad\xbe"


@dataclass(frozen=True)
class Faults:
    """The set of faults one member runs with; every query is a pure function of it."""

    names: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, names: Iterable[str] | None) -> "Faults":
        names = list(names or [])
        bad = [n for n in names if n not in REFERENCE_FAULTS]
        if bad:
            raise UsageError(f"unknown reference fault(s) {bad}; known: {', '.join(REFERENCE_FAULTS)}")
        versions = [n for n in names if n.startswith("subscription-")]
        if len(versions) > 1:
            raise UsageError(f"at most one subscription-* fault at a time, got {versions}")
        userdata = [n for n in names if n.startswith("userdata-")]
        if len(userdata) > 1:
            raise UsageError(f"at most one userdata-* fault at a time, got {userdata}")
        return cls(frozenset(names))

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def subscription_version(self, configured: int) -> int:
        """The version to write (``configured`` unless a subscription-* fault says otherwise)."""
        for v in range(4):
            if f"subscription-v{v}" in self.names:
                return v
        if "subscription-v4-trailing" in self.names:
            return 4
        return configured

    def trailing(self) -> bytes:
        return V4_TRAILING if "subscription-v4-trailing" in self.names else b""

    def user_data(self, generation: int) -> bytes | None:
        """userData for the cooperative-sticky subscription (Java's int32 generation unless a fault)."""
        if "userdata-empty" in self.names:
            return b""
        if "userdata-null" in self.names:
            return None
        if "userdata-minus-one" in self.names:
            return encode_cooperative_generation(-1)
        if "userdata-garbage" in self.names:
            return GARBAGE_USERDATA
        return encode_cooperative_generation(generation)

    def declared_owned(self, owned: set[TP], previous_generation_owned: set[TP]) -> set[TP]:
        """What OwnedPartitions says: the truth, or with stale-owned-partitions also the older set."""
        if "stale-owned-partitions" in self.names:
            return set(owned) | set(previous_generation_owned)
        return set(owned)

    @property
    def leader_reassigns_owned(self) -> bool:
        return "leader-reassigns-owned" in self.names

    @property
    def skip_revoke(self) -> bool:
        return "skip-revoke" in self.names

    @property
    def no_follow_up_rejoin(self) -> bool:
        return "no-follow-up-rejoin" in self.names

    @property
    def stall_retained(self) -> bool:
        return "stall-retained" in self.names

    @property
    def consume_revoked(self) -> bool:
        return "consume-revoked" in self.names

    @property
    def fence_delay_s(self) -> float:
        """How long the member goes on consuming after a fencing answer before it acts on it."""
        return CONSUME_FENCED_MS / 1000.0 if "consume-fenced" in self.names else 0.0

    @property
    def sync_delay_s(self) -> float:
        return SLOW_SYNC_DELAY_MS / 1000.0 if "slow-sync" in self.names else 0.0


@dataclass(frozen=True)
class ConsumerFaults:
    """The faults of one KIP-848 reference member (see the second table above); pure queries."""

    names: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, names: Iterable[str] | None) -> "ConsumerFaults":
        names = list(names or [])
        bad = [n for n in names if n not in CONSUMER_PROTOCOL_FAULTS]
        if bad:
            raise UsageError(f"unknown consumer-protocol reference fault(s) {bad}; "
                             f"known: {', '.join(CONSUMER_PROTOCOL_FAULTS)}")
        return cls(frozenset(names))

    @property
    def ack_unrevoked(self) -> bool:
        return "ack-unrevoked" in self.names

    @property
    def stale_epoch(self) -> bool:
        return "stale-epoch" in self.names

    @property
    def ignore_fenced(self) -> bool:
        return "ignore-fenced" in self.names
