"""The librdkafka, kafka-python, Sarama and franz-go harnesses against a real broker.

For each kind, a new and an old release:

1. one member alone consumes every record of every partition of a produced
   topic, commits it (checked on the broker, not only in the history), and
   its history validates against conformance.history with one clean
   incarnation (started first, stopped last, no fatal error);
2. SIGTERM leaves the group: the member exits 0, its LeaveGroup crosses the
   wire (the tap records it), and a second member of the same kind owns every
   partition well before the session timeout (60 s here; we allow half), which
   it could only do that fast if the first member left.

One broker for the whole module (module-scoped cluster); every test bounded.
"""

from __future__ import annotations

import pytest
from kafka import KafkaAdminClient

from conformance.cluster import Cluster
from conformance.cluster.supervisor import Supervisor
from conformance.members.harness_config import HarnessConfig
from conformance.members.kinds import kind_module
from conformance.members.launch import MemberProcess, launch_member
from conformance.members.spec import MemberSpec
from conformance.rundir import RunDir
from test_harness_common import (
    check_clean_incarnation,
    load_history,
    missing_records,
    owned_after,
    produce_records,
    requests,
    wait_for,
    wire_records,
)

pytestmark = pytest.mark.slow

PARTITIONS = 4
RECORDS_PER_PARTITION = 50
LONG_SESSION_MS = 60_000

CASES = [
    ("librdkafka", "2.16.1", ["cooperative-sticky"]),
    ("librdkafka", "2.0.2", ["range"]),
    ("librdkafka", "1.9.2", ["cooperative-sticky"]),   # 1.x, in a Python 3.10 venv
    ("kafka-python", "3.0.12", ["cooperative-sticky"]),
    ("kafka-python", "2.3.3", ["sticky", "range"]),
    ("sarama", "1.61.1", ["cooperative-sticky"]),
    ("sarama", "1.38.1", ["sticky", "range"]),
    ("franz-go", "1.22.3", ["cooperative-sticky"]),
    ("franz-go", "1.7.0", ["sticky", "range"]),
]
IDS = [f"{k}@{v}" for k, v, _ in CASES]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory):
    for kind, version, _ in CASES:
        kind_module(kind).ensure(version)
    run = RunDir.create(tmp_path_factory.mktemp("runs"), "harness")
    with Supervisor(run.logs) as sup, Cluster(run, supervisor=sup, slots=3 * len(CASES)) as cluster:
        yield run, sup, cluster


def produce(cluster: Cluster, topic: str) -> dict[tuple[str, int], int]:
    """Create ``topic`` and write RECORDS_PER_PARTITION records to each partition (acks=all)."""
    cluster.create_topic(topic, PARTITIONS)
    return produce_records(cluster.direct_bootstrap, topic, RECORDS_PER_PARTITION, PARTITIONS)


def start(env, kind: str, version: str, strategies: list[str], member: str, topic: str, group: str,
          **overrides) -> MemberProcess:
    run, sup, cluster = env
    cfg = HarnessConfig(member=member, client=kind, client_version=version,
                        bootstrap_servers=cluster.bootstrap_for(member), group_id=group, topics=[topic],
                        history_path=str(run.history(member)), assignment_strategies=strategies, **overrides)
    proc = launch_member(MemberSpec(kind, version), cfg, run, sup)
    proc.wait_ready(60)
    return proc


def committed_offsets(cluster: Cluster, group: str) -> dict[tuple[str, int], int]:
    admin = KafkaAdminClient(bootstrap_servers=cluster.direct_bootstrap)
    try:
        offsets = admin.list_group_offsets(group).get(group, {})
        return {(tp.topic, tp.partition): om.offset for tp, om in offsets.items()}
    finally:
        admin.close()


def history(env, member: str) -> list[dict]:
    return load_history(env[0].history(member))


@pytest.mark.parametrize("kind,version,strategies", CASES, ids=IDS)
def test_consumes_every_partition_and_commits(env, kind: str, version: str, strategies: list[str]) -> None:
    run, sup, cluster = env
    tag = f"{kind}-{version}".replace(".", "_")
    topic, group, member = f"all-{tag}", f"g-all-{tag}", f"solo-{tag}"
    expected = produce(cluster, topic)
    proc = start(env, kind, version, strategies, member, topic, group)
    wait_for(lambda: not missing_records(history(env, member), expected), 90,
             f"{member} to consume {sum(expected.values())} records (log {proc.log_path})")
    wait_for(lambda: committed_offsets(cluster, group) == expected, 30,
             f"{group}'s committed offsets to reach {expected}")
    assert proc.terminate(30) == 0, f"{member} exit code (log {proc.log_path})"
    events = history(env, member)
    check_clean_incarnation(events)
    assigned = {(t, p) for e in events if e["event"] == "assigned" for t, p in e["partitions"]}
    assert assigned == set(expected)
    owned_after(events)  # assigned/revoked consistent
    started = events[0]
    assert started["client"] == kind and started["client_version"] == version
    if kind == "librdkafka":
        assert started["librdkafka_version"].startswith(".".join(version.split(".")[:2]))
    assert all(isinstance(e.get("generation"), int) for e in events if e["event"] in ("assigned", "consumed"))
    assert all(e.get("member_id") for e in events if e["event"] in ("assigned", "consumed"))


@pytest.mark.parametrize("kind,version,strategies", CASES, ids=IDS)
def test_sigterm_leaves_group_and_peer_takes_over(env, kind: str, version: str, strategies: list[str]) -> None:
    run, sup, cluster = env
    tag = f"{kind}-{version}".replace(".", "_")
    topic, group = f"leave-{tag}", f"g-leave-{tag}"
    first, second = f"a-{tag}", f"b-{tag}"
    produce(cluster, topic)
    everything = {(topic, p) for p in range(PARTITIONS)}
    # librdkafka requires max.poll.interval.ms >= session.timeout.ms.
    timing = dict(session_timeout_ms=LONG_SESSION_MS, heartbeat_interval_ms=1000, max_poll_interval_ms=LONG_SESSION_MS)
    a = start(env, kind, version, strategies, first, topic, group, **timing)
    wait_for(lambda: owned_after(history(env, first)) == everything, 60, f"{first} to own {sorted(everything)}")
    b = start(env, kind, version, strategies, second, topic, group, **timing)
    wait_for(lambda: owned_after(history(env, second)), 60, f"{second} to be assigned partitions")
    assert a.terminate(30) == 0, f"{first} exit code (log {a.log_path})"
    check_clean_incarnation(history(env, first))
    # Without a LeaveGroup, the broker would wait the 60 s session timeout before moving A's partitions.
    wait_for(lambda: owned_after(history(env, second)) == everything, LONG_SESSION_MS / 2000,
             f"{second} to own every partition after {first} left")
    leaves = requests(wire_records(run.wire), "LeaveGroup", first)
    assert leaves, f"no LeaveGroup request from {first} in {run.wire}"
    assert b.terminate(30) == 0
    check_clean_incarnation(history(env, second))
