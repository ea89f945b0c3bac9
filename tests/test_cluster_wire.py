"""The wire tap without a broker: framing, decoding, guarded failure, byte-exact relay.

Frames are built with kafka-python's protocol classes (an independent encoder)
or by hand from the Kafka JSON schemas (ConsumerGroupHeartbeat), then split at
every byte boundary to show the framer does not depend on chunking.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
import uuid
from pathlib import Path

import pytest
from kafka.protocol.consumer import group as g

from conformance.cluster.ports import free_port
from conformance.cluster.tap import WireTap, _Connection
from conformance.cluster.toxiproxy import Toxic
from conformance.cluster.wire_decode import WireDecodeError, decode_request, decode_response


def request_frame(msg, version: int, correlation_id: int, client_id: str = "c1") -> bytes:
    """size + request header (v1 or v2 as the API's flexibleVersions say) + body."""
    flexible = msg.flexible_version_q(version)
    cid = client_id.encode()
    header = struct.pack(">hhih", msg.API_KEY, version, correlation_id, len(cid)) + cid
    if flexible:
        header += b"\x00"  # no tagged fields
    body = bytes(msg.encode(version=version))
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def response_frame(msg, version: int, correlation_id: int) -> bytes:
    header = struct.pack(">i", correlation_id) + (b"\x00" if msg.flexible_version_q(version) else b"")
    payload = header + bytes(msg.encode(version=version))
    return struct.pack(">i", len(payload)) + payload


def join_request(version: int):
    proto = g.JoinGroupRequest.JoinGroupRequestProtocol(name="cooperative-sticky", metadata=b"\x00\x01sub")
    return g.JoinGroupRequest(version=version, group_id="grp", session_timeout_ms=10000, rebalance_timeout_ms=30000,
                              member_id="m-1", group_instance_id="inst" if version >= 5 else None,
                              protocol_type="consumer", protocols=[proto], reason=None)


class Recorder:
    """Stands in for WireTap._record: collects records."""

    def __init__(self) -> None:
        self.records: list[dict] = []

    def _record(self, slot: int, connection: int, rec: dict) -> None:
        self.records.append(rec)


def feed_bytewise(data: bytes, framer_name: str, conn: _Connection) -> None:
    framer = getattr(conn, framer_name)
    for i in range(len(data)):
        conn.feed(framer, data[i:i + 1])


@pytest.mark.parametrize("version", [0, 5, 6, 9])
def test_joingroup_request_and_response_decode_across_header_versions(version: int) -> None:
    rec_sink = Recorder()
    conn = _Connection(rec_sink, 0, 1)  # type: ignore[arg-type]
    feed_bytewise(request_frame(join_request(version), version, 7), "requests", conn)
    member = g.JoinGroupResponse.JoinGroupResponseMember(member_id="m-1", group_instance_id=None,
                                                         metadata=b"\x00\x01sub")
    resp = g.JoinGroupResponse(version=version, throttle_time_ms=0, error_code=0, generation_id=3,
                               protocol_type="consumer", protocol_name="cooperative-sticky", leader="m-1",
                               skip_assignment=False, member_id="m-1", members=[member])
    feed_bytewise(response_frame(resp, version, 7), "responses", conn)
    req, res = rec_sink.records
    assert "undecodable" not in req and "undecodable" not in res
    assert (req["api"], req["version"], req["direction"], req["group_id"]) == ("JoinGroup", version, "request", "grp")
    assert req["protocols"] == [{"name": "cooperative-sticky", "metadata": b"\x00\x01sub".hex()}]
    assert res["generation"] == 3 and res["leader"] == "m-1" and res["error_code"] == 0
    assert res["members"][0]["metadata"] == b"\x00\x01sub".hex()
    assert res["group_id"] == "grp"  # carried over from the request


def test_syncgroup_offsetcommit_and_unwanted_frames_interleaved() -> None:
    sink = Recorder()
    conn = _Connection(sink, 0, 1)  # type: ignore[arg-type]
    a = g.SyncGroupRequest.SyncGroupRequestAssignment(member_id="m-1", assignment=b"\x00\x01A")
    sync = g.SyncGroupRequest(version=5, group_id="grp", generation_id=4, member_id="m-1", group_instance_id=None,
                              protocol_type="consumer", protocol_name="range", assignments=[a])
    # A non-group request (ApiVersions v0, api 18) in between must be skipped, not recorded.
    other = struct.pack(">hhih", 18, 0, 8, 2) + b"c1"
    stream = request_frame(sync, 5, 9) + struct.pack(">i", len(other)) + other
    part = g.OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
        partition_index=2, committed_offset=41, committed_leader_epoch=-1, committed_metadata="")
    topic = g.OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[part])
    commit = g.OffsetCommitRequest(version=8, group_id="grp", generation_id_or_member_epoch=4, member_id="m-1",
                                   group_instance_id=None, topics=[topic])
    stream += request_frame(commit, 8, 10)
    conn.feed(conn.requests, stream)
    assert [r["api"] for r in sink.records] == ["SyncGroup", "OffsetCommit"]
    assert sink.records[0]["assignments"] == [{"member_id": "m-1", "assignment": "000141"}]
    assert sink.records[0]["protocol_name"] == "range" and sink.records[0]["generation"] == 4
    assert sink.records[1]["offsets"] == [["t", 2, 41]] and sink.records[1]["leader_epochs"] == [["t", 2, -1]]
    # The response to the skipped ApiVersions (correlation 8) is not recorded either.
    conn.feed(conn.responses, struct.pack(">ii", 4, 8))
    assert len(sink.records) == 2


def test_offsetcommit_v10_names_topics_by_id_in_hex() -> None:
    """v10 (KIP-848 era; franz-go 1.22 sends it to a 4.x broker) names each topic by its id: the
    record carries the id as 32 hex digits, in the request's offsets and the response's errors."""
    sink = Recorder()
    conn = _Connection(sink, 0, 1)  # type: ignore[arg-type]
    topic_id = uuid.UUID(bytes=bytes(range(16)))
    part = g.OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
        partition_index=2, committed_offset=41, committed_leader_epoch=-1, committed_metadata="")
    commit = g.OffsetCommitRequest(version=10, group_id="grp", generation_id_or_member_epoch=4, member_id="m-1",
                                   group_instance_id=None, topics=[g.OffsetCommitRequest.OffsetCommitRequestTopic(
                                       topic_id=topic_id, partitions=[part])])
    conn.feed(conn.requests, request_frame(commit, 10, 11))
    rpart = g.OffsetCommitResponse.OffsetCommitResponseTopic.OffsetCommitResponsePartition(partition_index=2,
                                                                                          error_code=0)
    resp = g.OffsetCommitResponse(version=10, throttle_time_ms=0, topics=[
        g.OffsetCommitResponse.OffsetCommitResponseTopic(topic_id=topic_id, partitions=[rpart])])
    conn.feed(conn.responses, response_frame(resp, 10, 11))
    req, res = sink.records
    assert "undecodable" not in req and "undecodable" not in res, (req, res)
    assert req["offsets"] == [[topic_id.hex, 2, 41]] and req["generation"] == 4
    assert res["partition_errors"] == [[topic_id.hex, 2, 0]] and res["error_code"] == 0


def _offset_fetch(version: int, topic_id: uuid.UUID) -> tuple:
    """An OffsetFetch request for partition 2 of one topic and its answer, committed offset 127."""
    R, S = g.OffsetFetchRequest, g.OffsetFetchResponse
    if version < 8:
        req = R(version=version, group_id="grp", topics=[R.OffsetFetchRequestTopic(name="t", partition_indexes=[2])],
                require_stable=True)
        resp = S(version=version, throttle_time_ms=0, error_code=0, topics=[S.OffsetFetchResponseTopic(
            name="t", partitions=[S.OffsetFetchResponseTopic.OffsetFetchResponsePartition(
                partition_index=2, committed_offset=127, committed_leader_epoch=3, metadata="", error_code=0)])])
        return req, resp
    topic = {"topic_id": topic_id} if version >= 10 else {"name": "t"}
    Rt, Sg = R.OffsetFetchRequestGroup, S.OffsetFetchResponseGroup
    req = R(version=version, require_stable=True, groups=[Rt(
        group_id="grp", member_id="m-1", member_epoch=-1,
        topics=[Rt.OffsetFetchRequestTopics(partition_indexes=[2], **topic)])])
    St = Sg.OffsetFetchResponseTopics
    resp = S(version=version, throttle_time_ms=0, groups=[Sg(group_id="grp", error_code=0, topics=[St(
        partitions=[St.OffsetFetchResponsePartitions(partition_index=2, committed_offset=127,
                                                     committed_leader_epoch=3, metadata="", error_code=0)],
        **topic)])])
    return req, resp


@pytest.mark.parametrize("version", [7, 9, 10])
def test_offsetfetch_records_the_offsets_a_member_was_told(version: int) -> None:
    """OffsetFetch is what a member resumes from: the record names the partitions asked for and the
    committed offsets answered (by topic id in hex from v10, as OffsetCommit)."""
    sink = Recorder()
    conn = _Connection(sink, 0, 1)  # type: ignore[arg-type]
    topic_id = uuid.UUID(bytes=bytes(range(16)))
    req, resp = _offset_fetch(version, topic_id)
    conn.feed(conn.requests, request_frame(req, version, 12))
    conn.feed(conn.responses, response_frame(resp, version, 12))
    rq, rs = sink.records
    assert "undecodable" not in rq and "undecodable" not in rs, (rq, rs)
    topic = topic_id.hex if version >= 10 else "t"
    assert rq["api"] == rs["api"] == "OffsetFetch" and rq["group_id"] == "grp"
    assert rq["partitions"] == [[topic, 2]] and rq["member_id"] == ("m-1" if version >= 9 else None)
    assert rs["fetched"] == [[topic, 2, 127, 3, 0]] and rs["error_code"] == 0


def test_offsetforleaderepoch_records_where_an_epoch_ended() -> None:
    """KIP-320: a consumer that resumes from a committed offset of leader epoch 3 asks where epoch 3
    ended; the record names the epoch asked about and the end offset answered."""
    from kafka.protocol.consumer import offsets as o
    R, S = o.OffsetForLeaderEpochRequest, o.OffsetForLeaderEpochResponse
    sink = Recorder()
    conn = _Connection(sink, 0, 1)  # type: ignore[arg-type]
    req = R(version=4, replica_id=-1, topics=[R.OffsetForLeaderTopic(topic="t", partitions=[
        R.OffsetForLeaderTopic.OffsetForLeaderPartition(partition=7, current_leader_epoch=5, leader_epoch=3)])])
    resp = S(version=4, throttle_time_ms=0, topics=[S.OffsetForLeaderTopicResult(topic="t", partitions=[
        S.OffsetForLeaderTopicResult.EpochEndOffset(error_code=0, partition=7, leader_epoch=3, end_offset=128)])])
    conn.feed(conn.requests, request_frame(req, 4, 13))
    conn.feed(conn.responses, response_frame(resp, 4, 13))
    rq, rs = sink.records
    assert "undecodable" not in rq and "undecodable" not in rs, (rq, rs)
    assert rq["api"] == "OffsetForLeaderEpoch" and rq["epochs"] == [["t", 7, 3, 5]]
    assert rs["epoch_ends"] == [["t", 7, 3, 128, 0]]


def _cgh_request_body(version: int) -> bytes:
    def cstr(s):
        return b"\x00" if s is None else bytes([len(s) + 1]) + s.encode()
    body = cstr("grp") + cstr("mid") + struct.pack(">i", 5) + cstr(None) + cstr(None) + struct.pack(">i", 30000)
    body += b"\x02" + cstr("t")  # SubscribedTopicNames: ["t"]
    if version >= 1:
        body += cstr(None)  # SubscribedTopicRegex
    body += cstr("uniform")  # ServerAssignor
    body += b"\x02" + bytes(range(16)) + b"\x03" + struct.pack(">ii", 0, 1) + b"\x00"  # owned: one topic, [0, 1]
    return body + b"\x00"


@pytest.mark.parametrize("version", [0, 1])
def test_consumer_group_heartbeat_decoded_from_schema(version: int) -> None:
    header = struct.pack(">hhih", 68, version, 3, 2) + b"c1" + b"\x00"
    rec = decode_request(header + _cgh_request_body(version))
    assert (rec["api"], rec["group_id"], rec["member_id"], rec["member_epoch"]) == ("ConsumerGroupHeartbeat", "grp",
                                                                                    "mid", 5)
    assert rec["subscribed_topic_names"] == ["t"] and rec["server_assignor"] == "uniform"
    assert rec["owned"] == [{"topic_id": bytes(range(16)).hex(), "partitions": [0, 1]}]
    body = struct.pack(">ih", 0, 0) + b"\x00" + b"\x04mid" + struct.pack(">ii", 6, 1000)
    body += b"\x01" + b"\x02" + bytes(16) + b"\x02" + struct.pack(">i", 3) + b"\x00" + b"\x00"  # assignment
    body += b"\x00"
    res = decode_response(struct.pack(">i", 3) + b"\x00" + body, 68, version)
    assert res["member_epoch"] == 6 and res["assigned"] == [{"topic_id": bytes(16).hex(), "partitions": [3]}]
    # Violating input: the same response cut short is a WireDecodeError, not a crash.
    with pytest.raises(WireDecodeError, match="truncated"):
        decode_response(struct.pack(">i", 3) + b"\x00" + body[:-6], 68, version)


def test_undecodable_frames_are_recorded_with_reason_and_raw_bytes() -> None:
    sink = Recorder()
    conn = _Connection(sink, 0, 1)  # type: ignore[arg-type]
    # A JoinGroup v6 header whose body is garbage.
    header = struct.pack(">hhih", 11, 6, 1, 2) + b"c1" + b"\x00"
    conn.feed(conn.requests, struct.pack(">i", len(header) + 3) + header + b"\xff\xff\xff")
    # A version beyond what is decodable.
    header = struct.pack(">hhih", 11, 42, 2, 2) + b"c1"
    conn.feed(conn.requests, struct.pack(">i", len(header)) + header)
    assert [r["correlation_id"] for r in sink.records] == [1, 2]
    assert all(r["undecodable"] and r["raw"] for r in sink.records)
    assert "v42" in sink.records[1]["undecodable"]
    # A clean frame after them still decodes: one bad frame does not poison the stream.
    conn.feed(conn.requests, request_frame(join_request(6), 6, 3))
    assert "undecodable" not in sink.records[-1] and sink.records[-1]["correlation_id"] == 3


def test_impossible_frame_size_stops_parsing_once() -> None:
    sink = Recorder()
    conn = _Connection(sink, 0, 1)  # type: ignore[arg-type]
    conn.feed(conn.requests, b"\xff\xff\xff\xf0garbage")
    conn.feed(conn.requests, request_frame(join_request(6), 6, 3))
    assert len(sink.records) == 1 and "not a Kafka frame size" in sink.records[0]["undecodable"]


def _sink_server() -> tuple[socket.socket, int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    return srv, srv.getsockname()[1]


def test_tap_relays_bytes_unchanged_including_undecodable_frames(tmp_path: Path) -> None:
    srv, upstream = _sink_server()
    tap = WireTap(tmp_path / "wire.jsonl", {0: "m1"}.get)
    port = free_port()
    tap.listen(0, port, upstream)
    received = bytearray()

    def serve() -> None:
        conn, _ = srv.accept()
        conn.settimeout(10)
        while len(received) < len(payload):
            chunk = conn.recv(65536)
            if not chunk:
                break
            received.extend(chunk)
        conn.sendall(b"pong" * 1000)
        conn.close()

    bad = struct.pack(">hhih", 14, 5, 1, 2) + b"c1" + b"\x00" + b"\x99" * 10
    payload = request_frame(join_request(9), 9, 5) + struct.pack(">i", len(bad)) + bad + bytes(range(256)) * 400
    t = threading.Thread(target=serve)
    t.start()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            c.sendall(payload)
            back = bytearray()
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    break
                back.extend(chunk)
        t.join(10)
        assert bytes(received) == payload
        assert bytes(back) == b"pong" * 1000
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len((tmp_path / "wire.jsonl").read_text().splitlines()) < 2:
            time.sleep(0.05)
    finally:
        tap.stop()
        srv.close()
    records = [json.loads(line) for line in (tmp_path / "wire.jsonl").read_text().splitlines()]
    assert records[0]["api"] == "JoinGroup" and records[0]["member"] == "m1"
    assert records[1]["api"] == "SyncGroup" and records[1]["undecodable"]


def test_tap_stop_releases_its_port(tmp_path: Path) -> None:
    srv, upstream = _sink_server()
    tap = WireTap(tmp_path / "wire.jsonl", lambda slot: None)
    port = free_port()
    tap.listen(0, port, upstream)
    tap.stop()
    srv.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # would raise EADDRINUSE if the listener survived


@pytest.mark.parametrize("kwargs, problem", [
    (dict(type="lag"), "unknown toxic type"),
    (dict(type="latency", stream="sideways", attributes={"latency": 1}), "stream"),
    (dict(type="latency", attributes={}), "missing"),
    (dict(type="latency", attributes={"latency": 5, "speed": 1}), "unknown"),
    (dict(type="bandwidth", attributes={"rate": -1}), "non-negative"),
    (dict(type="timeout", attributes={"timeout": 0}, toxicity=1.5), "toxicity"),
])
def test_malformed_toxics_are_rejected_before_sending(kwargs: dict, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Toxic(**kwargs)


def test_every_toxic_type_builds_a_payload() -> None:
    examples = [Toxic("latency", "upstream", {"latency": 100, "jitter": 10}), Toxic("bandwidth", attributes={"rate": 1}),
                Toxic("timeout", attributes={"timeout": 0}), Toxic("reset_peer", attributes={"timeout": 10}),
                Toxic("slicer", attributes={"average_size": 10, "size_variation": 2, "delay": 5}),
                Toxic("slow_close", attributes={"delay": 10}), Toxic("limit_data", attributes={"bytes": 100})]
    for t in examples:
        p = t.payload("x")
        assert p["type"] == t.type and p["attributes"] == t.attributes and p["name"] == "x"
