"""The ConsumerGroupHeartbeat codec against bytes Kafka's own Java classes wrote.

Golden vectors: kafka-clients 4.4.0's generated ``ConsumerGroupHeartbeatRequestData`` /
``ConsumerGroupHeartbeatResponseData``, serialised with ``MessageUtil.toByteBufferAccessor(msg,
version)`` (a throw-away Java program against the jar in the suite's cache, 2026-11-26). Topic id
01..10 (16 bytes); topics given unsorted, as Java keeps them. The codec must write exactly these
bytes and read them back to the same value; the tap decodes through the same codec.
"""

from __future__ import annotations

import struct

import pytest

from conformance.cluster.wire_decode import WireDecodeError, decode_request, decode_response
from conformance.protocol import DecodeError
from conformance.protocol.consumer_group_heartbeat import (
    HeartbeatRequest,
    HeartbeatResponse,
    TopicIdPartitions,
    encode_request,
    encode_response,
)
from conformance.protocol.consumer_group_heartbeat import (
    decode_request as cgh_decode_request,
)
from conformance.protocol.consumer_group_heartbeat import (
    decode_response as cgh_decode_response,
)

TOPIC_ID = bytes(range(1, 17))

REQUESTS: dict[str, tuple[HeartbeatRequest, dict[int, str]]] = {
    # the join: every field, empty owned list (the broker requires it empty at epoch 0)
    "full": (HeartbeatRequest("grp", "m-1", 0, "i-1", "r1", 30000, ("orders", "audit"), None, "uniform", ()), {
        0: "04677270046d2d310000000004692d310372310000753003076f726465727306617564697408756e69666f726d0100",
        1: "04677270046d2d310000000004692d310372310000753003076f72646572730661756469740008756e69666f726d0100"}),
    # a light heartbeat: nothing changed (nulls, rebalance timeout -1)
    "light": (HeartbeatRequest("grp", "m-1", 7), {
        0: "04677270046d2d31000000070000ffffffff00000000",
        1: "04677270046d2d31000000070000ffffffff0000000000"}),
    # the acknowledgement of a reconciled assignment: owned partitions, in the member's order
    "ack": (HeartbeatRequest("grp", "m-1", 7, topic_partitions=(TopicIdPartitions(TOPIC_ID, (2, 0)),)), {
        0: "04677270046d2d31000000070000ffffffff0000020102030405060708090a0b0c0d0e0f100300000002000000000000",
        1: "04677270046d2d31000000070000ffffffff000000020102030405060708090a0b0c0d0e0f100300000002000000000000"}),
    # a static member leaving for good-or-a-while: epoch -2 with its instance id
    "static-leave": (HeartbeatRequest("grp", "m-1", -2, "i-1"), {
        0: "04677270046d2d31fffffffe04692d3100ffffffff00000000",
        1: "04677270046d2d31fffffffe04692d3100ffffffff0000000000"}),
}

RESPONSES: dict[str, tuple[HeartbeatResponse, str]] = {  # the same bytes in v0 and v1
    "assignment": (HeartbeatResponse(0, 8, 500, "m-1", assignment=(TopicIdPartitions(TOPIC_ID, (1, 3)),)),
                   "00000000000000046d2d3100000008000001f401020102030405060708090a0b0c0d0e0f10030000000100000003000000"),
    "fenced": (HeartbeatResponse(110, -1, 0, None, "fenced", 5),
               "00000005006e0766656e63656400ffffffff00000000ff00"),
}


@pytest.mark.parametrize("name", sorted(REQUESTS))
@pytest.mark.parametrize("version", [0, 1])
def test_requests_are_javas_bytes(name: str, version: int) -> None:
    value, golden = REQUESTS[name]
    assert encode_request(value, version).hex() == golden[version]
    assert cgh_decode_request(bytes.fromhex(golden[version]), version) == value


@pytest.mark.parametrize("name", sorted(RESPONSES))
@pytest.mark.parametrize("version", [0, 1])
def test_responses_are_javas_bytes(name: str, version: int) -> None:
    value, golden = RESPONSES[name]
    assert encode_response(value, version).hex() == golden
    assert cgh_decode_response(bytes.fromhex(golden), version) == value


def test_a_null_assignment_differs_from_an_empty_one() -> None:
    # "no new assignment" (null) and "you own nothing now" (empty) mean different things to a member.
    null, empty = (encode_response(HeartbeatResponse(0, 3, 500, assignment=a), 1) for a in (None, ()))
    assert null != empty
    assert cgh_decode_response(null, 1).assignment is None
    assert cgh_decode_response(empty, 1).assignment == ()


@pytest.mark.parametrize("bad, message", [
    (bytes.fromhex(REQUESTS["light"][1][1]) + b"\x00", "bytes after the last field"),   # trailing byte
    (bytes.fromhex(REQUESTS["ack"][1][1])[:-8], "truncated"),                            # cut short
    (b"\x00" + bytes.fromhex(REQUESTS["light"][1][1])[1:], "null string"),               # null group id
])
def test_decoding_is_strict(bad: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        cgh_decode_request(bad, 1)


def test_encoder_refuses_what_the_version_cannot_carry() -> None:
    with pytest.raises(ValueError, match="subscribed_topic_regex"):
        encode_request(HeartbeatRequest("grp", "m", 0, subscribed_topic_regex="t.*"), 0)
    with pytest.raises(ValueError, match="v2"):
        encode_request(HeartbeatRequest("grp", "m", 0), 2)
    with pytest.raises(ValueError, match="UUID"):
        encode_request(HeartbeatRequest("grp", "m", 1, topic_partitions=(TopicIdPartitions(b"short", (0,)),)), 1)


def test_the_tap_decodes_through_the_same_codec() -> None:
    # A framed request and response as the tap sees them; a broken body is undecodable, said why.
    value, golden = REQUESTS["ack"]
    header = struct.pack(">hhih", 68, 1, 9, 2) + b"c1" + b"\x00"
    rec = decode_request(header + bytes.fromhex(golden[1]))
    assert (rec["member_id"], rec["member_epoch"], rec["generation"]) == ("m-1", 7, 7)
    assert rec["owned"] == [{"topic_id": TOPIC_ID.hex(), "partitions": [2, 0]}]
    assert rec["subscribed_topic_names"] is None and rec["rebalance_timeout_ms"] == -1
    res = decode_response(struct.pack(">i", 9) + b"\x00" + bytes.fromhex(RESPONSES["assignment"][1]), 68, 1)
    assert (res["error_code"], res["member_epoch"], res["heartbeat_interval_ms"]) == (0, 8, 500)
    assert res["assigned"] == [{"topic_id": TOPIC_ID.hex(), "partitions": [1, 3]}]
    with pytest.raises(WireDecodeError, match="bytes after the last field"):
        decode_request(header + bytes.fromhex(golden[1]) + b"\x00")
