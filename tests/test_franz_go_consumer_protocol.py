"""franz-go as a KIP-848 member (``franz-go+consumer``: kgo.ServerSideBalancer, 1.22.0+) on a real broker.

One cell on the default broker (4.4.0): a lone ``franz-go+consumer`` member joins its own group,
is given every partition, consumes every record and, on SIGTERM, leaves. Every claim about the
protocol is read from the wire tap (``wire.jsonl``: ConsumerGroupHeartbeat requests and answers,
OffsetCommit), the member's own account from its history; the two must agree on the epoch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import config
from conformance.cluster import Cluster
from conformance.cluster.supervisor import Supervisor
from conformance.members import kinds
from conformance.members.harness_config import HarnessConfig
from conformance.members.kinds import franz_go
from conformance.members.launch import launch_member
from conformance.members.spec import MemberSpec
from conformance.rundir import RunDir
from test_harness_common import (
    check_clean_incarnation,
    load_history,
    missing_records,
    owned_after,
    produce_records,
    wait_for,
    wire_records,
)

pytestmark = pytest.mark.slow

PARTITIONS = 3
RECORDS_PER_PARTITION = 20
CGH = "ConsumerGroupHeartbeat"
CLASSIC_APIS = ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup")


def _of(records: list[dict], member: str, api: str, direction: str) -> list[dict]:
    return [r for r in records if r.get("member") == member and r.get("api") == api and r.get("direction") == direction]


def test_a_lone_franz_go_consumer_member_joins_by_heartbeat_consumes_everything_and_leaves_with_epoch_minus_one(
        tmp_path: Path) -> None:
    # franz-go 1.22.3 with ServerSideBalancer joins at epoch 0 with its own member id, asking for the
    # "uniform" assignor (its first balancer is cooperative-sticky); the broker gives it every
    # partition at epoch >= 1; it reads all 60 records and commits them with that epoch; SIGTERM
    # makes it revoke, stop and send one last heartbeat at epoch -1. It never speaks classic.
    version = kinds.default_version("franz-go")
    assert franz_go.supports_server_side_balancer(version)
    franz_go.ensure(version)
    spec = MemberSpec.parse(f"franz-go@{version}+consumer")
    run = RunDir.create(tmp_path, "franz-go-consumer")
    member, topic, group = "fg848", "fg848-topic", "fg848-group"
    with Supervisor(run.logs) as sup, Cluster(run, config.DEFAULT_BROKER, sup, slots=1) as c:
        c.create_topic(topic, PARTITIONS)
        expected = produce_records(c.direct_bootstrap, topic, RECORDS_PER_PARTITION, PARTITIONS)
        cfg = HarnessConfig(member=member, client="franz-go", client_version=version,
                            bootstrap_servers=c.bootstrap_for(member), group_id=group, topics=[topic],
                            history_path=str(run.history(member)), group_protocol="consumer",
                            assignment_strategies=["cooperative-sticky"])
        proc = launch_member(spec, cfg, run, sup)
        proc.wait_ready(90)
        everything = {(topic, p) for p in range(PARTITIONS)}
        wait_for(lambda: owned_after(load_history(run.history(member))) == everything, 90,
                 f"{spec} to own {sorted(everything)} (log {proc.log_path})")
        wait_for(lambda: not missing_records(load_history(run.history(member)), expected), 60,
                 f"{spec} to consume {sum(expected.values())} records (log {proc.log_path})")
        assert proc.terminate(30) == 0, f"{spec} exit code (log {proc.log_path})"
        wire = wire_records(run.wire)

    events = load_history(run.history(member))
    check_clean_incarnation(events)
    assert events[0]["group_protocol"] == "consumer" and events[0]["server_assignor"] == "uniform", events[0]
    assert {e.get("protocol") for e in events} == {"consumer"}, sorted({str(e.get("protocol")) for e in events})

    classic = [r for r in wire if r.get("member") == member and r.get("api") in CLASSIC_APIS]
    assert not classic, f"{spec} spoke the classic protocol: {[(r['api'], r['direction']) for r in classic][:5]}"
    sent, answers = _of(wire, member, CGH, "request"), _of(wire, member, CGH, "response")
    assert sent and answers, f"no ConsumerGroupHeartbeat from {spec} in {run.wire}"
    join, leave = sent[0], sent[-1]
    assert join["member_epoch"] == 0 and join["member_id"], join
    assert join["subscribed_topic_names"] == [topic] and join["server_assignor"] == "uniform", join
    assert leave["member_epoch"] == -1 and leave["member_id"] == join["member_id"], (join, leave)
    assert all(r["member_id"] == join["member_id"] for r in sent), sorted({r["member_id"] for r in sent})
    given = {r["member_epoch"] for r in answers if r["error_code"] == 0 and r["member_epoch"] > 0}
    assert given, [(r["error_code"], r["member_epoch"]) for r in answers]

    # The history's epochs are ones the broker gave, and its member id is the one on the wire.
    assigned = [e for e in events if e["event"] == "assigned"]
    assert assigned and all(e["member_epoch"] == e["generation"] and e["member_epoch"] in given for e in assigned), \
        (assigned, sorted(given))
    assert {e["member_id"] for e in events if "member_id" in e} == {join["member_id"]}
    commits = _of(wire, member, "OffsetCommit", "request")
    assert commits and all(r["member_id"] == join["member_id"] and r["generation"] in given for r in commits), \
        [(r["member_id"], r["generation"]) for r in commits][:5]
