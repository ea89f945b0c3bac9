"""ConsumerGroupHeartbeat (KIP-848, api key 68): the one codec of its request and response bodies.

The reference KIP-848 member encodes requests and decodes responses with it;
the wire tap (:mod:`conformance.cluster.wire_decode`) decodes both directions
with it. A body is what follows the request header (v2) or response header
(v1); both versions are flexible.

Fields, in wire order (Kafka's ConsumerGroupHeartbeatRequest/Response schemas,
versions 0-1; v1 adds ``subscribed_topic_regex``):

request   group_id, member_id, member_epoch, instance_id?, rack_id?,
          rebalance_timeout_ms, subscribed_topic_names?, [v1] subscribed_topic_regex?,
          server_assignor?, topic_partitions? [{topic_id (uuid), partitions [int32]}]
response  throttle_time_ms, error_code, error_message?, member_id?, member_epoch,
          heartbeat_interval_ms, assignment? {topic_partitions [{topic_id, partitions}]}

(``?`` = nullable.) In a request, null (and -1 for the rebalance timeout)
means "unchanged since the last heartbeat": a *light* heartbeat sends only
the group, member id, epoch (and instance id); a *full* one everything.

Guarantees: ``decode_x(encode_x(v, n), n) == v`` for every value the encoder
accepts at version ``n``; decoders are strict (every byte is read; a trailing
byte, a truncation or a malformed field is a
:class:`~conformance.protocol.wire.DecodeError` naming the byte offset and the
field); the encoders refuse what the version cannot carry (``ValueError``).
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.protocol.flexible import FlexReader, FlexWriter

API_KEY = 68
VERSIONS: tuple[int, ...] = (0, 1)

#: Member epochs with a meaning of their own (the request's MemberEpoch).
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


@dataclass(frozen=True, slots=True)
class TopicIdPartitions:
    """One topic, named by its 16-byte id, and some of its partitions (wire order)."""

    topic_id: bytes
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: tuple[TopicIdPartitions, ...] | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error_code: int
    member_epoch: int
    heartbeat_interval_ms: int
    member_id: str | None = None
    error_message: str | None = None
    throttle_time_ms: int = 0
    #: None: no new assignment in this response; else the member's whole assignment.
    assignment: tuple[TopicIdPartitions, ...] | None = None


def _check_version(version: int) -> None:
    if version not in VERSIONS:
        raise ValueError(f"ConsumerGroupHeartbeat v{version} is not one of v{VERSIONS[0]}-v{VERSIONS[-1]}")


# -- topic partitions (the same struct in both directions) -------------------------------

def _write_tps(w: FlexWriter, value: TopicIdPartitions, what: str) -> None:
    w.uuid(value.topic_id, f"{what}.topic_id")
    w.compact_array(value.partitions, f"{what}.partitions", lambda p, n: w.int32(p, n))
    w.no_tagged_fields()


def _read_tps(r: FlexReader, what: str) -> TopicIdPartitions:
    topic_id = r.uuid(f"{what}.topic_id")
    partitions = r.compact_array(f"{what}.partitions", r.int32, min_item_size=4)
    r.tagged_fields(what)
    return TopicIdPartitions(topic_id, tuple(partitions))


def _min_tps_size() -> int:
    return 16 + 1 + 1  # uuid, empty partition array, no tagged fields


# -- request ----------------------------------------------------------------------------

def encode_request(req: HeartbeatRequest, version: int) -> bytes:
    """The request body at ``version``."""
    _check_version(version)
    if version < 1 and req.subscribed_topic_regex is not None:
        raise ValueError(f"ConsumerGroupHeartbeat v{version} cannot carry subscribed_topic_regex")
    w = FlexWriter()
    w.compact_string(req.group_id, "group_id")
    w.compact_string(req.member_id, "member_id")
    w.int32(req.member_epoch, "member_epoch")
    w.compact_string(req.instance_id, "instance_id", nullable=True)
    w.compact_string(req.rack_id, "rack_id", nullable=True)
    w.int32(req.rebalance_timeout_ms, "rebalance_timeout_ms")
    w.compact_array(req.subscribed_topic_names, "subscribed_topic_names",
                    lambda s, n: w.compact_string(s, n), nullable=True)
    if version >= 1:
        w.compact_string(req.subscribed_topic_regex, "subscribed_topic_regex", nullable=True)
    w.compact_string(req.server_assignor, "server_assignor", nullable=True)
    w.compact_array(req.topic_partitions, "topic_partitions", lambda v, n: _write_tps(w, v, n), nullable=True)
    w.no_tagged_fields()
    return w.bytes()


def decode_request(body: bytes, version: int) -> HeartbeatRequest:
    """The request of a body at ``version`` (DecodeError if it is not one, exactly)."""
    _check_version(version)
    r = FlexReader(body)
    group_id = r.compact_string("group_id")
    member_id = r.compact_string("member_id")
    member_epoch = r.int32("member_epoch")
    instance_id = r.compact_nullable_string("instance_id")
    rack_id = r.compact_nullable_string("rack_id")
    rebalance_timeout_ms = r.int32("rebalance_timeout_ms")
    topics = r.compact_nullable_array("subscribed_topic_names", r.compact_string)
    regex = r.compact_nullable_string("subscribed_topic_regex") if version >= 1 else None
    server_assignor = r.compact_nullable_string("server_assignor")
    tps = r.compact_nullable_array("topic_partitions", lambda n: _read_tps(r, n), _min_tps_size())
    r.tagged_fields("request")
    r.end("ConsumerGroupHeartbeatRequest")
    return HeartbeatRequest(group_id=group_id, member_id=member_id, member_epoch=member_epoch,
                            instance_id=instance_id, rack_id=rack_id, rebalance_timeout_ms=rebalance_timeout_ms,
                            subscribed_topic_names=None if topics is None else tuple(topics),
                            subscribed_topic_regex=regex, server_assignor=server_assignor,
                            topic_partitions=None if tps is None else tuple(tps))


# -- response ---------------------------------------------------------------------------

def encode_response(resp: HeartbeatResponse, version: int) -> bytes:
    """The response body at ``version`` (the broker's side; for tests and fixtures)."""
    _check_version(version)
    w = FlexWriter()
    w.int32(resp.throttle_time_ms, "throttle_time_ms")
    w.int16(resp.error_code, "error_code")
    w.compact_string(resp.error_message, "error_message", nullable=True)
    w.compact_string(resp.member_id, "member_id", nullable=True)
    w.int32(resp.member_epoch, "member_epoch")
    w.int32(resp.heartbeat_interval_ms, "heartbeat_interval_ms")
    if resp.assignment is None:
        w.int8(-1, "assignment")
    else:
        w.int8(1, "assignment")
        w.compact_array(resp.assignment, "assignment.topic_partitions", lambda v, n: _write_tps(w, v, n))
        w.no_tagged_fields()
    w.no_tagged_fields()
    return w.bytes()


def decode_response(body: bytes, version: int) -> HeartbeatResponse:
    """The response of a body at ``version`` (DecodeError if it is not one, exactly)."""
    _check_version(version)
    r = FlexReader(body)
    throttle = r.int32("throttle_time_ms")
    error_code = r.int16("error_code")
    error_message = r.compact_nullable_string("error_message")
    member_id = r.compact_nullable_string("member_id")
    member_epoch = r.int32("member_epoch")
    interval = r.int32("heartbeat_interval_ms")
    assignment = None
    if r.int8("assignment") >= 0:  # a nullable struct: -1 null, else present
        assignment = tuple(r.compact_array("assignment.topic_partitions", lambda n: _read_tps(r, n),
                                           _min_tps_size()))
        r.tagged_fields("assignment")
    r.tagged_fields("response")
    r.end("ConsumerGroupHeartbeatResponse")
    return HeartbeatResponse(error_code=error_code, member_epoch=member_epoch, heartbeat_interval_ms=interval,
                             member_id=member_id, error_message=error_message, throttle_time_ms=throttle,
                             assignment=assignment)
