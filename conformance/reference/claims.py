"""Between wire bytes and the assignor: members' subscriptions in, assignments out.

:func:`claim_from_metadata` reads any member's JoinGroup metadata (subscription
v0-v3, or a higher version with trailing bytes) and its userData in every known
format, and says what the member claims, following Java's rules:

- owned partitions: ``OwnedPartitions`` (v1+); for a v0 subscription, the
  previous assignment in sticky userData (v0/v1) if any;
- generation: ``GenerationId`` when v2+ and not negative; else from userData
  (cooperative int32 generation, or sticky-v1's generation); else -1. Java's
  CooperativeStickyAssignor reads *any* userData's first four bytes as the
  generation; we read the format the bytes actually are, and count garbage,
  empty and null as -1 (which is also what Java ends up with for those).

A subscription that does not decode is a :class:`BadSubscription` naming the
member and the byte offset: the leader records it and gives that member
nothing rather than guessing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from conformance.protocol import (
    Assignment,
    DecodeError,
    Subscription,
    TopicPartitions,
    decode_subscription,
    encode_assignment,
)
from conformance.protocol.userdata import classify_userdata
from conformance.reference.assignor import DEFAULT_GENERATION, TP, MemberClaim


class BadSubscription(ValueError):
    """A member's JoinGroup metadata does not decode; names the member and the reason."""


def to_topic_partitions(tps: Iterable[TP]) -> tuple[TopicPartitions, ...]:
    """Sorted ``TopicPartitions`` (topics sorted, partitions sorted), as Java writes them."""
    by_topic: dict[str, list[int]] = {}
    for topic, p in tps:
        by_topic.setdefault(topic, []).append(p)
    return tuple(TopicPartitions(t, tuple(sorted(set(ps)))) for t, ps in sorted(by_topic.items()))


def from_topic_partitions(tps: Sequence[TopicPartitions]) -> list[TP]:
    return sorted((tp.topic, p) for tp in tps for p in tp.partitions)


def _userdata_claims(user_data: bytes | None, strategy: str | None) -> tuple[int | None, list[TP] | None, str]:
    info = classify_userdata(user_data, strategy)
    generation = info.fields.get("generation")
    previous = info.fields.get("previous_assignment")
    prev = None if previous is None else sorted((d["topic"], p) for d in previous for p in d["partitions"])
    return generation, prev, info.format


def claim_from_subscription(member_id: str, sub: Subscription, strategy: str | None,
                            group_instance_id: str | None = None) -> MemberClaim:
    """What ``sub`` claims (see the module docstring)."""
    ud_generation, ud_previous, _ = _userdata_claims(sub.user_data, strategy)
    if sub.version >= 1:
        owned = from_topic_partitions(sub.owned_partitions)
    else:
        owned = ud_previous or []
    if sub.version >= 2 and sub.generation_id >= 0:
        generation = sub.generation_id
    elif ud_generation is not None:
        generation = ud_generation
    else:
        generation = DEFAULT_GENERATION
    return MemberClaim(member_id=member_id, topics=frozenset(sub.topics), owned=tuple(owned),
                       generation=generation, group_instance_id=group_instance_id,
                       rack_id=sub.rack_id if sub.version >= 3 else None)


def claim_from_metadata(member_id: str, metadata: bytes, strategy: str | None,
                        group_instance_id: str | None = None) -> tuple[Subscription, MemberClaim]:
    """Decode ``metadata`` strictly and return it with its claim; BadSubscription otherwise."""
    try:
        sub = decode_subscription(bytes(metadata))
    except DecodeError as exc:
        raise BadSubscription(f"member {member_id}: subscription does not decode: {exc} "
                              f"(metadata {bytes(metadata)[:64].hex()})") from None
    return sub, claim_from_subscription(member_id, sub, strategy, group_instance_id)


def encode_member_assignment(partitions: Iterable[TP], version: int = 3) -> bytes:
    """The SyncGroup assignment bytes for one member (sorted, null userData)."""
    return encode_assignment(Assignment(version=version, assigned_partitions=to_topic_partitions(partitions),
                                        user_data=None))


#: Java's leader writes every assignment at the highest version it knows (3), whatever the member's subscription.
ASSIGNMENT_VERSION = 3


def plan_bytes(assignment: Mapping[str, Iterable[TP]]) -> dict[str, bytes]:
    """Encode every member's assignment at :data:`ASSIGNMENT_VERSION`, as Java's leader does."""
    return {m: encode_member_assignment(tps, ASSIGNMENT_VERSION) for m, tps in assignment.items()}
