"""The Java harness against a real broker (one cluster for the whole module).

Stories:
- alone, a Java member of every known version consumes every partition the
  producer wrote to, commits what it consumed, and stops cleanly on SIGTERM;
- SIGTERM leaves the group: the other member gets every partition long
  before the session timeout could have expired;
- SIGKILL does not: the other member gets them only once the session timeout
  removed the dead one (so the SIGTERM check would fail on a killed member).
Every history line written here must validate with conformance.history.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from conformance import __version__
from conformance.cluster.supervisor import Supervisor
from conformance.history import read_history
from conformance.members.harness_config import HarnessConfig
from conformance.members.kinds import java
from conformance.members.launch import MemberProcess, launch_member, launch_producer
from conformance.members.spec import MemberSpec
from conformance.rundir import RunDir

pytestmark = pytest.mark.slow

BROKER = "4.4.0"
PARTITIONS = 4


class Env:
    def __init__(self, run: RunDir, sup: Supervisor, cluster: Any) -> None:
        self.run, self.sup, self.cluster = run, sup, cluster

    def topic(self, name: str) -> str:
        self.cluster.create_topic(name, PARTITIONS)
        return name

    def member(self, name: str, version: str, topic: str, group: str, **kw: Any) -> MemberProcess:
        java.ensure(version)
        cfg = HarnessConfig(member=name, client="java", client_version=version,
                            bootstrap_servers=self.cluster.bootstrap_for(name), group_id=group, topics=[topic],
                            history_path=str(self.run.history(name)), **kw)
        proc = launch_member(MemberSpec("java", version), cfg, self.run, self.sup)
        proc.wait_ready(30)
        return proc

    def produce(self, name: str, topic: str, records: int) -> MemberProcess:
        cfg = HarnessConfig(member=name, client="producer", client_version=__version__,
                            bootstrap_servers=self.cluster.direct_bootstrap, group_id="-", topics=[topic],
                            history_path=str(self.run.history(name)),
                            extra={"rate_per_s": 1000, "partitions": {topic: PARTITIONS}, "max_records": records})
        proc = launch_producer(cfg, self.run, self.sup)
        assert proc.proc.wait(60) == 0, f"producer failed; log:\n{proc.log_path.read_text()}"
        return proc


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    from conformance.cluster import Cluster

    run = RunDir.create(tmp_path_factory.mktemp("java-harness"), "java")
    with Supervisor(run.logs) as sup, Cluster(run, BROKER, sup, slots=12) as cluster:
        yield Env(run, sup, cluster)


def events(path: Path) -> list[dict]:
    """Every event of a history file; fails the test on any line that does not validate."""
    with open(path, encoding="utf-8") as f:
        parsed = list(read_history(f))
    bad = [(n, problem) for n, _, problem in parsed if problem]
    assert not bad, f"{path}: lines that break the history format: {bad}"
    return [e for _, e, _ in parsed]


def owned(path: Path) -> set[tuple[str, int]]:
    """What the member's history says it owns now (last incarnation, cooperative or eager)."""
    have: set[tuple[str, int]] = set()
    for e in events(path) if path.exists() else []:
        tps = {(t, p) for t, p in e.get("partitions", [])}
        if e["event"] == "started" or e["event"] == "stopped":
            have = set()
        elif e["event"] == "assigned":
            have = have | tps if e.get("protocol") == "cooperative" else tps
        elif e["event"] in ("revoked", "lost"):
            have -= tps
    return have


def wait_for(pred: Callable[[], bool], timeout: float, what: str) -> float:
    """Seconds until ``pred()`` held; AssertionError after ``timeout``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if pred():
            return time.monotonic() - start
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout:.0f}s: {what}")


def produced_offsets(path: Path) -> set[tuple[str, int, int]]:
    return {(e["topic"], e["partition"], o) for e in events(path) if e["event"] == "produced"
            for o in range(e["first_offset"], e["last_offset"] + 1)}


def consumed_offsets(path: Path) -> set[tuple[str, int, int]]:
    return {(e["topic"], e["partition"], o) for e in events(path) if e["event"] == "consumed"
            for o in range(e["first_offset"], e["last_offset"] + 1)}


def group_offsets(env: Env, group: str) -> dict[tuple[str, int], int]:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=env.cluster.direct_bootstrap)
    try:
        return {(tp.topic, tp.partition): om.offset for tp, om in admin.list_group_offsets(group)[group].items()}
    finally:
        admin.close()


@pytest.mark.parametrize("version", java.known_versions())
def test_alone_consumes_every_partition_and_commits(env: Env, version: str) -> None:
    topic = env.topic(f"consume-{version}")
    group = f"g-consume-{version}"
    producer = env.produce(f"producer-{version}", topic, 200)
    wanted = produced_offsets(producer.history_path)
    assert len(wanted) == 200 and {(t, p) for t, p, _ in wanted} == {(topic, p) for p in range(PARTITIONS)}

    m = env.member(f"alone-{version}", version, topic, group)
    wait_for(lambda: wanted <= consumed_offsets(m.history_path), 60,
             f"{m.name} consumes every produced offset")
    assert m.terminate() == 0
    history = events(m.history_path)
    assert history[0]["event"] == "started" and history[-1]["event"] == "stopped", history[-1]
    assert history[-1]["reason"] == "sigterm"
    assigned = {(t, p) for e in history if e["event"] == "assigned" for t, p in e["partitions"]}
    assert assigned == {(topic, p) for p in range(PARTITIONS)}
    assert {e["protocol"] for e in history} == {"cooperative"}
    if java.version_key(version) >= (2, 5):   # groupMetadata(): generation and member id
        assert all(e.get("generation") == 1 and e.get("member_id") for e in history if e["event"] == "assigned")
    last = {}
    for e in history:
        if e["event"] == "committed" and e["error"] is None:
            last.update({(t, p): o for t, p, o in e["offsets"]})
    assert last == {(topic, p): 50 for p in range(PARTITIONS)}
    assert group_offsets(env, group) == {(topic, p): 50 for p in range(PARTITIONS)}


def _two_members(env: Env, label: str, session_ms: int) -> tuple[MemberProcess, MemberProcess, set]:
    topic = env.topic(f"leave-{label}")
    group = f"g-leave-{label}"
    everything = {(topic, p) for p in range(PARTITIONS)}
    timing = {"session_timeout_ms": session_ms, "heartbeat_interval_ms": 1000}
    m1 = env.member(f"{label}-1", "4.4.0", topic, group, **timing)
    wait_for(lambda: owned(m1.history_path) == everything, 60, f"{m1.name} owns {sorted(everything)}")
    m2 = env.member(f"{label}-2", "2.8.2", topic, group, **timing)
    wait_for(lambda: owned(m1.history_path) | owned(m2.history_path) == everything
             and owned(m2.history_path) and owned(m1.history_path), 60, "the two members share the partitions")
    return m1, m2, everything


def test_sigterm_leaves_the_group(env: Env) -> None:
    session_ms = 30_000
    m1, m2, everything = _two_members(env, "term", session_ms)
    assert m1.terminate() == 0
    # A clean leave triggers a rebalance at once; only a missed LeaveGroup waits for the session timeout.
    wait_for(lambda: owned(m2.history_path) == everything, session_ms / 1000 / 3,
             f"{m2.name} gets every partition well before the {session_ms} ms session timeout")
    tail = [e["event"] for e in events(m1.history_path)][-2:]
    assert tail == ["revoked", "stopped"], tail
    m2.terminate()


def test_sigkill_does_not_leave_the_group(env: Env) -> None:
    session_ms = 12_000
    m1, m2, everything = _two_members(env, "kill", session_ms)
    m1.kill()
    killed = time.monotonic()
    # The killed member still holds its partitions until the broker expires its session.
    with pytest.raises(AssertionError):
        wait_for(lambda: owned(m2.history_path) == everything, session_ms / 1000 / 2,
                 f"{m2.name} must not get the killed member's partitions before its session expires")
    wait_for(lambda: owned(m2.history_path) == everything, session_ms / 1000 + 30,
             f"{m2.name} gets every partition after the session timeout")
    assert time.monotonic() - killed >= session_ms / 1000 / 2
    assert events(m1.history_path)[-1]["event"] != "stopped"
    m2.terminate()


def test_producer_sigterm_flushes_and_everything_acknowledged_is_consumed(env: Env) -> None:
    topic = env.topic("sigterm-producer")
    cfg = HarnessConfig(member="producer-term", client="producer", client_version=__version__,
                        bootstrap_servers=env.cluster.direct_bootstrap, group_id="-", topics=[topic],
                        history_path=str(env.run.history("producer-term")), extra={"rate_per_s": 300})
    producer = launch_producer(cfg, env.run, env.sup)
    producer.wait_ready(30)
    wait_for(lambda: len(produced_offsets(producer.history_path)) >= 100, 60, "the producer has 100 acks")
    assert producer.terminate() == 0
    history = events(producer.history_path)
    assert history[-1]["event"] == "stopped" and history[-1]["reason"] == "sigterm"
    assert history[-1]["acked"] == len(produced_offsets(producer.history_path)) == history[-1]["sent"]
    m = env.member("drain-4.4.0", "4.4.0", topic, "g-sigterm-producer", commit_mode="on-revoke")
    wanted = produced_offsets(producer.history_path)
    wait_for(lambda: wanted <= consumed_offsets(m.history_path), 60, "every acknowledged record is consumed")
    assert m.terminate() == 0
    committed = [e for e in events(m.history_path) if e["event"] == "committed"]
    assert committed and all(e["error"] is None for e in committed)
