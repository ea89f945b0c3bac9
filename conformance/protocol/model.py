"""Values of the embedded consumer protocol (ConsumerProtocolSubscription / Assignment).

These are the bytes a classic-protocol consumer puts inside JoinGroup's
``protocols[].metadata`` (the subscription) and SyncGroup's ``assignment``
(the assignment). The values are immutable, compare by value, and hold
exactly what was on the wire: ``version`` is the DECLARED version, which may
be above 3 (the newest version Kafka defines); then ``trailing`` holds the
bytes that followed the v3 fields, unparsed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    """One topic and some of its partitions, in wire order (not sorted, not deduplicated)."""

    topic: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Subscription:
    """ConsumerProtocolSubscription.

    Fields a version does not carry keep their defaults when decoded and are
    omitted when encoded: ``owned_partitions`` is v1+, ``generation_id`` v2+,
    ``rack_id`` v3+.
    """

    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartitions, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None
    trailing: bytes = b""


@dataclass(frozen=True, slots=True)
class Assignment:
    """ConsumerProtocolAssignment (the same fields in v0-v3)."""

    version: int
    assigned_partitions: tuple[TopicPartitions, ...]
    user_data: bytes | None = None
    trailing: bytes = b""
