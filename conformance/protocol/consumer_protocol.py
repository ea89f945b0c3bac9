"""Strict encoding and decoding of ConsumerProtocolSubscription and ConsumerProtocolAssignment.

Layout, as Kafka's own schemas define it
(clients/src/main/resources/common/message/ConsumerProtocol{Subscription,Assignment}.json,
validVersions 0-3, flexibleVersions none, so no tagged fields and classic
int16-length strings / int32-length bytes and arrays)::

    Subscription  := Version int16
                     Topics [string]                          v0+
                     UserData nullable bytes                  v0+
                     OwnedPartitions [Topic string,
                                      Partitions [int32]]     v1+ (array not nullable)
                     GenerationId int32                       v2+ (default -1)
                     RackId nullable string                   v3+ (default null)
    Assignment    := Version int16
                     AssignedPartitions [Topic string, Partitions [int32]]
                     UserData nullable bytes                  (the same in v0-v3)

Guarantees of the decoders:

- they return a value only for bytes that are exactly a valid encoding, with
  one exception that Kafka itself makes: a declared version above 3 is read
  with the v3 fields and the bytes that follow are returned, unparsed, in
  ``trailing`` (a newer version may only append fields);
- anything else raises :class:`DecodeError` (a ``ValueError``) with the byte
  offset and the field: truncation anywhere, bytes left over at v0-v3, a
  negative version, a null or negative count for an array, a null topic, a
  negative length other than -1 for a nullable field, a length past the end,
  invalid UTF-8. Nothing else is ever raised, whatever the input.

Guarantees of the encoders: they write ``version`` as given and only the
fields that version carries (the others are dropped), then ``trailing`` when
the version is above 3; a value they accept decodes back to itself (for the
fields its version carries). Values the encoding cannot hold raise
``ValueError`` naming the field.
"""

from __future__ import annotations

import struct

from conformance.protocol.model import Assignment, Subscription, TopicPartitions
from conformance.protocol.wire import (
    DecodeError,
    read_int32,
    read_nullable_bytes,
    read_nullable_string,
    read_string_array,
    read_topic_partitions,
    write_int16,
    write_int32,
    write_nullable_bytes,
    write_string,
    write_string_array,
    write_topic_partitions,
)

#: The newest version Kafka defines for both structures.
LATEST_VERSION = 3

_unpack16 = struct.Struct(">h").unpack_from


def _as_bytes(data: object) -> bytes:
    if type(data) is bytes:
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"expected bytes, got {type(data).__name__}")


def _read_version(data: bytes) -> int:
    if len(data) < 2:
        raise DecodeError(0, f"Version: truncated, needs 2 bytes, {len(data)} left")
    version = _unpack16(data, 0)[0]
    if version < 0:
        raise DecodeError(0, f"Version: negative version {version}")
    return version


def _tail(data: bytes, pos: int, version: int) -> bytes:
    if version > LATEST_VERSION:
        return data[pos:]
    if pos != len(data):
        raise DecodeError(pos, f"{len(data) - pos} trailing bytes after the v{version} fields")
    return b""


def decode_subscription(data: bytes) -> Subscription:
    """Decode a ConsumerProtocolSubscription strictly (see the module docstring)."""
    data = _as_bytes(data)
    version = _read_version(data)
    topics, pos = read_string_array(data, 2, "Topics")
    user_data, pos = read_nullable_bytes(data, pos, "UserData")
    owned: tuple[TopicPartitions, ...] = ()
    generation = -1
    rack = None
    if version >= 1:
        owned, pos = read_topic_partitions(data, pos, "OwnedPartitions")
        if version >= 2:
            generation, pos = read_int32(data, pos, "GenerationId")
            if version >= 3:
                rack, pos = read_nullable_string(data, pos, "RackId")
    return Subscription(version, topics, user_data, owned, generation, rack, _tail(data, pos, version))


def decode_assignment(data: bytes) -> Assignment:
    """Decode a ConsumerProtocolAssignment strictly (see the module docstring)."""
    data = _as_bytes(data)
    version = _read_version(data)
    assigned, pos = read_topic_partitions(data, 2, "AssignedPartitions")
    user_data, pos = read_nullable_bytes(data, pos, "UserData")
    return Assignment(version, assigned, user_data, _tail(data, pos, version))


def _check_version_and_trailing(version: object, trailing: object) -> bytes:
    if type(version) is bool or not isinstance(version, int) or not 0 <= version <= 0x7FFF:
        raise ValueError(f"Version: {version!r} is not a non-negative int16")
    if not isinstance(trailing, (bytes, bytearray, memoryview)):
        raise ValueError(f"trailing: expected bytes, got {trailing!r}")
    trailing = bytes(trailing)
    if trailing and version <= LATEST_VERSION:
        raise ValueError(
            f"trailing: {len(trailing)} bytes given for v{version}; only versions above {LATEST_VERSION} carry trailing bytes"
        )
    return trailing


def encode_subscription(s: Subscription) -> bytes:
    """Encode ``s`` at ``s.version`` (fields that version lacks are omitted)."""
    trailing = _check_version_and_trailing(s.version, s.trailing)
    out: list[bytes] = []
    write_int16(out, s.version, "Version")
    write_string_array(out, s.topics, "Topics")
    write_nullable_bytes(out, s.user_data, "UserData")
    if s.version >= 1:
        write_topic_partitions(out, s.owned_partitions, "OwnedPartitions")
    if s.version >= 2:
        write_int32(out, s.generation_id, "GenerationId")
    if s.version >= 3:
        write_string(out, s.rack_id, "RackId", nullable=True)
    out.append(trailing)
    return b"".join(out)


def encode_assignment(a: Assignment) -> bytes:
    """Encode ``a`` at ``a.version``."""
    trailing = _check_version_and_trailing(a.version, a.trailing)
    out: list[bytes] = []
    write_int16(out, a.version, "Version")
    write_topic_partitions(out, a.assigned_partitions, "AssignedPartitions")
    write_nullable_bytes(out, a.user_data, "UserData")
    out.append(trailing)
    return b"".join(out)
