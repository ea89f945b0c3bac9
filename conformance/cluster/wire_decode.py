"""Decoding the group APIs' Kafka frames into wire-capture records (``wire.jsonl``, :mod:`tap`).

A frame here is the bytes after the int32 size prefix. Requests start with a
request header (v1: api_key, api_version, correlation_id, client_id; v2 adds
tagged fields), responses with a response header (v0: correlation_id; v1 adds
tagged fields). The header version follows the API's flexibleVersions in
Kafka's JSON schemas (:data:`FLEXIBLE_FROM`).

Bodies are decoded with kafka-python's schema-driven protocol classes for the
classic group APIs (kafka.protocol.consumer.group; JoinGroup 0-9, SyncGroup
0-5, Heartbeat 0-4, LeaveGroup 0-5, OffsetCommit 0-10, OffsetFetch 1-10: what a member
is told its committed offsets are; and OffsetForLeaderEpoch 2-4, with which a consumer checks a
committed offset's leader epoch, KIP-320). kafka-python has no
ConsumerGroupHeartbeat (KIP-848, api 68): its bodies are decoded by the one
codec of that format, :mod:`conformance.protocol.consumer_group_heartbeat`
(versions 0-1, flexible from 0), which the reference KIP-848 member also uses.

Guarantee: every function either returns a record or raises
:class:`WireDecodeError` with the reason; it never raises anything else for
malformed input (the tap also guards against bugs, see :mod:`tap`).
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from conformance.protocol import consumer_group_heartbeat as cgh
from conformance.protocol.wire import DecodeError

#: api key -> name, for the APIs the tap records.
GROUP_APIS: dict[int, str] = {8: "OffsetCommit", 9: "OffsetFetch", 23: "OffsetForLeaderEpoch", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup",
                              14: "SyncGroup", 68: "ConsumerGroupHeartbeat"}

#: api key -> first flexible version (request header v2 / response header v1 from here on).
FLEXIBLE_FROM: dict[int, int] = {8: 8, 9: 6, 23: 4, 11: 6, 12: 4, 13: 4, 14: 4, 68: 0}

#: api key -> highest version this module decodes.
MAX_VERSION: dict[int, int] = {8: 10, 9: 10, 23: 4, 11: 9, 12: 4, 13: 5, 14: 5, 68: 1}

#: api key -> lowest version this module decodes, where it is not 0 (kafka-python's OffsetFetch starts at v1,
#: its OffsetForLeaderEpoch at v2).
MIN_VERSION: dict[int, int] = {9: 1, 23: 2}

_ENVELOPE = ("group_id", "member_id", "group_instance_id", "generation", "protocol_type", "error_code")


class WireDecodeError(ValueError):
    """A frame that cannot be decoded; ``str(e)`` is the reason recorded as ``undecodable``."""


class _Reader:
    """Primitive Kafka types over a bytes object, with bounds checks."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise WireDecodeError(f"truncated: need {n} bytes at offset {self.pos}, frame has {len(self.data)}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 35:
                raise WireDecodeError(f"unsigned varint too long at offset {self.pos}")

    def nullable_string(self) -> str | None:
        n = self.int16()
        return None if n < 0 else self._text(self.take(n))

    def tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    @staticmethod
    def _text(raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WireDecodeError(f"string is not UTF-8: {raw[:32].hex()}") from exc


def peek_request(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) of a request frame."""
    if len(frame) < 8:
        raise WireDecodeError(f"request frame of {len(frame)} bytes is shorter than a request header")
    return struct.unpack(">hhi", frame[:8])


def _hex(b: Any) -> str | None:
    return None if b is None else bytes(b).hex()


def _base(api_key: int, version: int, correlation_id: int, direction: str) -> dict[str, Any]:
    rec: dict[str, Any] = {"api": GROUP_APIS.get(api_key, f"api{api_key}"), "api_key": api_key, "version": version,
                           "correlation_id": correlation_id, "direction": direction}
    rec.update({k: None for k in _ENVELOPE})
    return rec


def decode_request(frame: bytes) -> dict[str, Any]:
    """A record for one request frame of a group API."""
    api_key, version, correlation_id = peek_request(frame)
    rec = _base(api_key, version, correlation_id, "request")
    if api_key not in GROUP_APIS:
        raise WireDecodeError(f"api key {api_key} is not a group API")
    lo = MIN_VERSION.get(api_key, 0)
    if not lo <= version <= MAX_VERSION[api_key]:
        raise WireDecodeError(f"{GROUP_APIS[api_key]} v{version} is beyond the decodable v{lo}-v{MAX_VERSION[api_key]}")
    r = _Reader(frame, 8)
    rec["client_id"] = r.nullable_string()
    if version >= FLEXIBLE_FROM[api_key]:
        r.tagged_fields()
    body = frame[r.pos:]
    if api_key == 68:
        rec.update(_cgh_request(body, version))
    else:
        rec.update(_classic(api_key, version, body, request=True))
    return rec


def decode_response(frame: bytes, api_key: int, version: int) -> dict[str, Any]:
    """A record for one response frame whose request was ``api_key`` at ``version``."""
    r = _Reader(frame)
    correlation_id = r.int32()
    rec = _base(api_key, version, correlation_id, "response")
    if version >= FLEXIBLE_FROM[api_key]:
        r.tagged_fields()
    body = frame[r.pos:]
    if api_key == 68:
        rec.update(_cgh_response(body, version))
    else:
        rec.update(_classic(api_key, version, body, request=False))
    return rec


# -- classic group APIs through kafka-python ---------------------------------------------

def _classes() -> dict[tuple[int, bool], Any]:
    from kafka.protocol.consumer import group as g
    from kafka.protocol.consumer import offsets as o
    return {(11, True): g.JoinGroupRequest, (11, False): g.JoinGroupResponse,
            (14, True): g.SyncGroupRequest, (14, False): g.SyncGroupResponse,
            (12, True): g.HeartbeatRequest, (12, False): g.HeartbeatResponse,
            (13, True): g.LeaveGroupRequest, (13, False): g.LeaveGroupResponse,
            (8, True): g.OffsetCommitRequest, (8, False): g.OffsetCommitResponse,
            (9, True): g.OffsetFetchRequest, (9, False): g.OffsetFetchResponse,
            (23, True): o.OffsetForLeaderEpochRequest, (23, False): o.OffsetForLeaderEpochResponse}


_CLASSES: dict[tuple[int, bool], Any] | None = None


def _classic(api_key: int, version: int, body: bytes, request: bool) -> dict[str, Any]:
    global _CLASSES
    if _CLASSES is None:
        _CLASSES = _classes()
    cls = _CLASSES[(api_key, request)]
    try:
        msg = cls.decode(body, version=version)
    except Exception as exc:  # kafka-python raises assorted types on malformed bytes
        raise WireDecodeError(f"{cls.__name__} v{version}: {type(exc).__name__}: {exc}") from exc
    get = lambda name, default=None: getattr(msg, name, default)  # noqa: E731
    if api_key == 9:
        return _offset_fetch(msg, version, request)
    if api_key == 23:
        return _epoch_ends(msg, request)
    out: dict[str, Any] = {}
    if request:
        out["group_id"] = get("group_id")
        out["member_id"] = get("member_id")
        out["group_instance_id"] = get("group_instance_id") if api_key != 13 else None
        gen = get("generation_id_or_member_epoch") if api_key == 8 else get("generation_id")
        out["generation"] = gen if api_key in (8, 12, 14) else None
        out["protocol_type"] = get("protocol_type") if api_key in (11, 14) else None
    else:
        out["error_code"] = get("error_code")
    if api_key == 11 and request:
        out["protocols"] = [{"name": p.name, "metadata": _hex(p.metadata)} for p in get("protocols") or []]
    elif api_key == 11:
        out.update(generation=get("generation_id"), protocol_type=get("protocol_type"),
                   member_id=get("member_id"), leader=get("leader"), protocol_name=get("protocol_name"),
                   members=[{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                             "metadata": _hex(m.metadata)} for m in get("members") or []])
    elif api_key == 14 and request:
        out["protocol_name"] = get("protocol_name") if version >= 5 else None
        out["assignments"] = [{"member_id": a.member_id, "assignment": _hex(a.assignment)}
                              for a in get("assignments") or []]
    elif api_key == 14:
        out["protocol_type"] = get("protocol_type") if version >= 5 else None
        out["protocol_name"] = get("protocol_name") if version >= 5 else None
        out["assignment"] = _hex(get("assignment"))
    elif api_key == 13 and request:
        if version >= 3:
            out["member_id"] = None
            out["members"] = [{"member_id": m.member_id, "group_instance_id": m.group_instance_id}
                              for m in get("members") or []]
        else:
            out["members"] = [{"member_id": get("member_id"), "group_instance_id": None}]
    elif api_key == 13 and version >= 3:
        out["members"] = [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                           "error_code": m.error_code} for m in get("members") or []]
    elif api_key == 8 and request:
        out["offsets"] = [[_topic(t, version), p.partition_index, p.committed_offset]
                          for t in get("topics") or [] for p in t.partitions or []]
        out["leader_epochs"] = None if version < 6 else [
            [_topic(t, version), p.partition_index, p.committed_leader_epoch]
            for t in get("topics") or [] for p in t.partitions or []]
    elif api_key == 8:
        out["partition_errors"] = [[_topic(t, version), p.partition_index, p.error_code]
                                   for t in get("topics") or [] for p in t.partitions or []]
        codes = {e for _, _, e in out["partition_errors"]}
        out["error_code"] = codes.pop() if len(codes) == 1 else (0 if not codes else None)
    return out


def _offset_fetch(msg: Any, version: int, request: bool) -> dict[str, Any]:
    """An OffsetFetch record: v8+ carries a list of groups (a consumer asks for its own group
    only; the first is recorded), v0-7 the group's fields at the top."""
    group = (getattr(msg, "groups", None) or [None])[0] if version >= 8 else msg
    if group is None:
        raise WireDecodeError(f"OffsetFetch{'Request' if request else 'Response'} v{version}: no group")
    topics = getattr(group, "topics", None)
    if request:
        return {"group_id": getattr(group, "group_id", None),
                "member_id": getattr(group, "member_id", None) if version >= 9 else None,
                "member_epoch": getattr(group, "member_epoch", None) if version >= 9 else None,
                "partitions": None if topics is None else
                [[_topic(t, version), int(p)] for t in topics for p in t.partition_indexes or []]}
    return {"error_code": getattr(group, "error_code", None) if version >= 2 else None,
            "fetched": [[_topic(t, version), p.partition_index, p.committed_offset,
                         p.committed_leader_epoch if version >= 5 else -1, p.error_code]
                        for t in topics or [] for p in t.partitions or []]}


def _epoch_ends(msg: Any, request: bool) -> dict[str, Any]:
    """An OffsetForLeaderEpoch record: a consumer asks where the leader epoch of a position (a committed
    offset's, KIP-320) ended; an end offset below the position tells it the log diverged there."""
    if request:
        return {"epochs": [[t.topic, p.partition, p.leader_epoch, p.current_leader_epoch]
                           for t in msg.topics or [] for p in t.partitions or []]}
    return {"epoch_ends": [[t.topic, p.partition, p.leader_epoch, p.end_offset, p.error_code]
                           for t in msg.topics or [] for p in t.partitions or []]}


def _topic(t: Any, version: int) -> str:
    """OffsetCommit and OffsetFetch name topics by name up to v9 and by topic id (hex) from v10
    (kafka-python reads the id as a :class:`uuid.UUID`; franz-go 1.22 sends v10 to a 4.x broker)."""
    if version >= 10:
        topic_id = getattr(t, "topic_id", None)
        return topic_id.hex if isinstance(topic_id, uuid.UUID) else (_hex(topic_id) or "")
    return t.name


# -- ConsumerGroupHeartbeat (KIP-848): the one codec, conformance.protocol.consumer_group_heartbeat ---

def _cgh_topic_partitions(tps: tuple | None) -> list[dict[str, Any]] | None:
    return None if tps is None else [{"topic_id": t.topic_id.hex(), "partitions": list(t.partitions)} for t in tps]


def _cgh_request(body: bytes, version: int) -> dict[str, Any]:
    try:
        req = cgh.decode_request(body, version)
    except DecodeError as exc:
        raise WireDecodeError(f"ConsumerGroupHeartbeatRequest v{version}: {exc}") from exc
    return {"group_id": req.group_id, "member_id": req.member_id, "member_epoch": req.member_epoch,
            "generation": req.member_epoch, "group_instance_id": req.instance_id, "rack_id": req.rack_id,
            "rebalance_timeout_ms": req.rebalance_timeout_ms,
            "subscribed_topic_names": None if req.subscribed_topic_names is None else list(req.subscribed_topic_names),
            "subscribed_topic_regex": req.subscribed_topic_regex, "server_assignor": req.server_assignor,
            "owned": _cgh_topic_partitions(req.topic_partitions)}


def _cgh_response(body: bytes, version: int) -> dict[str, Any]:
    try:
        resp = cgh.decode_response(body, version)
    except DecodeError as exc:
        raise WireDecodeError(f"ConsumerGroupHeartbeatResponse v{version}: {exc}") from exc
    assigned = _cgh_topic_partitions(resp.assignment)
    return {"throttle_time_ms": resp.throttle_time_ms, "error_code": resp.error_code,
            "error_message": resp.error_message, "member_id": resp.member_id, "member_epoch": resp.member_epoch,
            "generation": resp.member_epoch, "heartbeat_interval_ms": resp.heartbeat_interval_ms,
            "assigned": assigned}
