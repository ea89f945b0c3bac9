"""The embedded cluster against a real broker of each version CI tests (config.TESTED_BROKERS; the
nightly tier runs a whole scenario on every supported broker: tests/test_broker_versions_e2e.py).

One Cluster per broker version (module-scoped): each test uses its own
members (slots) and topics so that the order of tests does not matter.
Timing checks are one-sided bounds a toxic guarantees (a 2 s latency toxic
cannot answer in under 2 s), never races.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer

from conformance import config
from conformance.cluster import Cluster, Toxic
from conformance.cluster.supervisor import Supervisor
from conformance.protocol import decode_assignment, decode_subscription
from conformance.rundir import RunDir

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TOXIC_MS = 2000


@pytest.fixture(scope="module", params=config.TESTED_BROKERS)
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    run = RunDir.create(tmp_path_factory.mktemp("runs"), f"cluster-{request.param}")
    with Supervisor(run.logs) as sup, Cluster(run, request.param, sup, slots=10) as c:
        yield c


def api_versions_roundtrip(bootstrap: str, timeout: float = 15.0) -> tuple[bytes, float]:
    """Send one ApiVersions v0 request on a fresh connection; (response bytes, seconds)."""
    host, port = bootstrap.rsplit(":", 1)
    payload = struct.pack(">hhih", 18, 0, 1, 4) + b"test"
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        start = time.monotonic()
        s.sendall(struct.pack(">i", len(payload)) + payload)
        head = b""
        while len(head) < 4:
            chunk = s.recv(4 - len(head))
            if not chunk:
                return b"", time.monotonic() - start
            head += chunk
        size = struct.unpack(">i", head)[0]
        body = b""
        while len(body) < size:
            chunk = s.recv(size - len(body))
            if not chunk:
                break
            body += chunk
        return body, time.monotonic() - start


def consume(bootstrap: str, topic: str, count: int, group: str | None = None) -> list[bytes]:
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             consumer_timeout_ms=30000, session_timeout_ms=6000, heartbeat_interval_ms=500)
    values = []
    try:
        for record in consumer:
            values.append(record.value)
            if len(values) == count:
                break
        if group:
            consumer.commit()
    finally:
        consumer.close()
    return values


def test_record_produced_through_one_member_path_is_consumed_through_another(cluster: Cluster) -> None:
    cluster.create_topic("path-topic", 2)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_for("producer-a"), acks="all")
    producer.send("path-topic", b"hello", partition=1).get(timeout=30)
    producer.close()
    assert consume(cluster.bootstrap_for("consumer-b"), "path-topic", 1) == [b"hello"]
    assert cluster.bootstrap_for("producer-a") != cluster.bootstrap_for("consumer-b")
    assert cluster.bootstrap_for("producer-a") == cluster.bootstrap_for("producer-a")  # the slot is kept


def test_latency_toxic_delays_only_its_member(cluster: Cluster) -> None:
    slow, fast = "lat-slow", "lat-fast"
    name = cluster.proxy(slow).add_toxic(Toxic("latency", "downstream", {"latency": TOXIC_MS, "jitter": 0}))
    try:
        body, slow_s = api_versions_roundtrip(cluster.bootstrap_for(slow))
        assert body, "no ApiVersions response through the slow path"
        body, fast_s = api_versions_roundtrip(cluster.bootstrap_for(fast))
        assert body
        assert slow_s >= TOXIC_MS / 1000.0, f"slow path answered in {slow_s:.3f}s despite a {TOXIC_MS} ms toxic"
        assert fast_s < TOXIC_MS / 1000.0, f"fast path took {fast_s:.3f}s: the toxic leaked onto another member"
    finally:
        cluster.proxy(slow).remove_toxic(name)
    assert cluster.proxy(slow).toxics() == []
    _, healed_s = api_versions_roundtrip(cluster.bootstrap_for(slow))
    assert healed_s < TOXIC_MS / 1000.0


def test_disabled_proxy_cuts_only_its_member_and_enable_heals(cluster: Cluster) -> None:
    cut, other = "cut-me", "keep-me"
    proxy = cluster.proxy(cut)
    proxy.disable()
    try:
        assert proxy.enabled is False
        body, _ = api_versions_roundtrip(cluster.bootstrap_for(cut))
        assert body == b"", "a disabled path still answered"
        body, _ = api_versions_roundtrip(cluster.bootstrap_for(other))
        assert body, "disabling one member's proxy cut another member"
    finally:
        proxy.enable()
    body, _ = api_versions_roundtrip(cluster.bootstrap_for(cut))
    assert body, "re-enabling the proxy did not heal the path"


def test_every_toxic_type_is_accepted_by_toxiproxy(cluster: Cluster) -> None:
    proxy = cluster.proxy("toxic-zoo")
    toxics = [Toxic("latency", "upstream", {"latency": 10, "jitter": 5}), Toxic("bandwidth", attributes={"rate": 100}),
              Toxic("timeout", attributes={"timeout": 100}), Toxic("reset_peer", attributes={"timeout": 10}),
              Toxic("slicer", attributes={"average_size": 64, "size_variation": 8, "delay": 10}),
              Toxic("slow_close", attributes={"delay": 10}), Toxic("limit_data", "upstream", {"bytes": 1000})]
    names = [proxy.add_toxic(t) for t in toxics]
    listed = {t["name"]: t for t in proxy.toxics()}
    assert set(listed) == set(names)
    assert listed[names[0]]["attributes"]["latency"] == 10 and listed[names[0]]["stream"] == "upstream"
    proxy.clear_toxics()
    assert proxy.toxics() == []


def test_tap_records_a_real_consumers_join_and_sync(cluster: Cluster) -> None:
    cluster.create_topic("tap-topic", 3)
    producer = KafkaProducer(bootstrap_servers=cluster.direct_bootstrap)
    for i in range(3):
        producer.send("tap-topic", b"v%d" % i, partition=i)
    producer.flush()
    producer.close()
    assert len(consume(cluster.bootstrap_for("tapped"), "tap-topic", 3, group="tap-group")) == 3
    records = [json.loads(line) for line in Path(cluster.run_dir.wire).read_text().splitlines()]
    mine = [r for r in records if r["member"] == "tapped"]
    assert not [r for r in mine if r.get("undecodable")], [r["undecodable"] for r in mine if r.get("undecodable")]
    joins = [r for r in mine if r["api"] == "JoinGroup" and r["direction"] == "request"]
    assert joins and joins[-1]["group_id"] == "tap-group"
    for proto in joins[-1]["protocols"]:
        sub = decode_subscription(bytes.fromhex(proto["metadata"]))
        assert sub.topics == ("tap-topic",)
    leader = [r for r in mine if r["api"] == "JoinGroup" and r["direction"] == "response" and r["error_code"] == 0]
    assert leader and leader[-1]["members"], "the only member must be the leader and see its members"
    syncs = [r for r in mine if r["api"] == "SyncGroup" and r["direction"] == "response" and r["error_code"] == 0]
    assert syncs
    assignment = decode_assignment(bytes.fromhex(syncs[-1]["assignment"]))
    assert sorted(p for tp in assignment.assigned_partitions for p in tp.partitions) == [0, 1, 2]
    commits = [r for r in mine if r["api"] == "OffsetCommit" and r["direction"] == "request"]
    assert commits and sorted(o[1] for o in commits[-1]["offsets"]) == [0, 1, 2]


def test_broker_kill_restart_keeps_ports_and_data(cluster: Cluster) -> None:
    cluster.create_topic("restart-topic", 1)
    producer = KafkaProducer(bootstrap_servers=cluster.direct_bootstrap, acks="all")
    producer.send("restart-topic", b"before").get(timeout=30)
    producer.close()
    direct, member = cluster.direct_bootstrap, cluster.bootstrap_for("restarter")
    pid = cluster.broker.process.pid
    cluster.broker.restart(kill=True)
    assert cluster.broker.process.pid != pid
    assert (cluster.direct_bootstrap, cluster.bootstrap_for("restarter")) == (direct, member)
    assert consume(member, "restart-topic", 1) == [b"before"]


def test_cluster_ids_never_start_with_a_dash(monkeypatch):
    """The storage tool reads an id after ``-t`` that starts with '-' as an option (one id in 64)."""
    import base64
    import uuid

    from conformance.cluster import broker

    dashed = uuid.UUID(bytes=b"\xf8" + bytes(15))
    assert base64.urlsafe_b64encode(dashed.bytes).decode().startswith("-")
    drawn = iter([dashed, dashed, uuid.UUID(bytes=b"\x01" * 16)])
    monkeypatch.setattr(broker.uuid, "uuid4", lambda: next(drawn))
    assert broker.new_cluster_id() == base64.urlsafe_b64encode(b"\x01" * 16).decode().rstrip("=")
    monkeypatch.undo()
    ids = [broker.new_cluster_id() for _ in range(2000)]
    assert all(len(i) == 22 and not i.startswith("-") for i in ids) and len(set(ids)) == 2000
