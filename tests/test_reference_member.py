"""The reference consumer against a real broker: convergence, and every fault changing what it does.

Each fault test asserts from what the broker stored (DescribeGroups: the
member's JoinGroup metadata, exactly the bytes it sent) or from the
histories, never from the fault flag, and runs the same scenario without the
fault to show the observation is absent then.

Until the wire-tap cluster (conformance.cluster.Cluster) lands, members talk
to the broker's DIRECT listener; DescribeGroups stands in for the wire capture.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from conformance.cluster.broker import Broker
from conformance.cluster.supervisor import Supervisor
from conformance.members.harness_config import HarnessConfig
from conformance.protocol import decode_subscription
from conformance.protocol.userdata import classify_userdata
from conformance.reference.claims import from_topic_partitions
from conformance.reference.connection import Connection, split_address

pytestmark = pytest.mark.slow

PARTITIONS = 6
BOUND_S = 60.0  # generous bound on waiting for a group state; never asserted as a duration


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    run = tmp_path_factory.mktemp("reference-broker")
    with Supervisor(run / "logs") as sup:
        b = Broker("4.4.0", run, sup, [])
        b.start()
        yield b
        b.stop()


class Group:
    """A topic with records, a group id and reference members started on demand."""

    def __init__(self, broker: Broker, tmp: Path, name: str) -> None:
        from kafka import KafkaProducer
        from kafka.admin import KafkaAdminClient, NewTopic

        self.broker, self.tmp, self.topic, self.group_id = broker, tmp, f"topic-{name}", f"group-{name}"
        admin = KafkaAdminClient(bootstrap_servers=broker.direct_bootstrap)
        admin.create_topics([NewTopic(self.topic, PARTITIONS, 1)])
        admin.close()
        self.producer = KafkaProducer(bootstrap_servers=broker.direct_bootstrap)
        self.produce(60)
        self.sup = Supervisor(tmp / "logs")
        self.procs: dict = {}

    def produce(self, n: int) -> None:
        for i in range(n):
            self.producer.send(self.topic, value=str(i).encode(), partition=i % PARTITIONS)
        self.producer.flush()

    def start(self, name: str, faults: list[str] | None = None) -> None:
        cfg = HarnessConfig(member=name, client="reference", client_version="0.1.0",
                            bootstrap_servers=self.broker.direct_bootstrap, group_id=self.group_id,
                            topics=[self.topic], history_path=str(self.history_path(name)),
                            extra={"faults": faults or []})
        path = cfg.write(self.tmp / "configs" / f"{name}.json")
        self.procs[name] = self.sup.spawn(name, [sys.executable, "-m", "conformance.reference", str(path)],
                                          log_name=name)

    def history_path(self, name: str) -> Path:
        return self.tmp / "members" / f"{name}.jsonl"

    def events(self, name: str) -> list[dict]:
        path = self.history_path(name)
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def owned(self, name: str) -> set[tuple[str, int]]:
        """What ``name``'s history says it owns now."""
        owned: set[tuple[str, int]] = set()
        for e in self.events(name):
            if e["event"] == "assigned":
                owned |= {tuple(tp) for tp in e["partitions"]}
            elif e["event"] in ("revoked", "lost"):
                owned -= {tuple(tp) for tp in e["partitions"]}
            elif e["event"] == "stopped":
                owned = set()
        return owned

    def wait_for(self, what: str, cond: Callable[[], bool]) -> None:
        deadline = time.monotonic() + BOUND_S
        while time.monotonic() < deadline:
            if cond():
                return
            for p in self.procs.values():
                assert p.alive(), f"{p.name} exited {p.returncode}: {p.log_path.read_text()[-2000:]}"
            time.sleep(0.3)
        raise AssertionError(f"not reached in {BOUND_S}s: {what}; owned: "
                             f"{ {n: sorted(self.owned(n)) for n in self.procs} }")

    def converged(self, names: list[str]) -> bool:
        owned = [tp for n in names for tp in self.owned(n)]
        return len(owned) == len(set(owned)) == PARTITIONS and all(self.owned(n) for n in names)

    def describe(self) -> dict[str, dict]:
        """member client id -> {metadata, assignment} as the broker stored them."""
        from kafka.protocol.admin import DescribeGroupsRequest

        conn = Connection(*split_address(self.broker.direct_bootstrap), client_id="test")
        try:
            resp = conn.request(DescribeGroupsRequest(groups=[self.group_id], include_authorized_operations=False))
        finally:
            conn.close()
        (group,) = resp.groups
        if group.group_state != "Stable":  # metadata is only shown for a stable group
            return {}
        return {m.client_id: {"metadata": bytes(m.member_metadata), "assignment": bytes(m.member_assignment)}
                for m in group.members}

    def stop(self) -> dict[str, int]:
        codes = {n: p.terminate(timeout=30) for n, p in self.procs.items()}
        self.sup.stop_all()
        self.producer.close()
        return codes


@pytest.fixture
def group(broker, tmp_path, request):
    g = Group(broker, tmp_path, request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:60])
    yield g
    g.stop()


def test_three_members_converge_with_every_partition_owned_once(group) -> None:
    for name in ("a", "b", "c"):
        group.start(name)
    group.wait_for("three members own every partition once", lambda: group.converged(["a", "b", "c"]))
    counts = sorted(len(group.owned(n)) for n in ("a", "b", "c"))
    assert counts == [2, 2, 2]
    group.wait_for("every record consumed", lambda: sum(
        e["count"] for n in "abc" for e in group.events(n) if e["event"] == "consumed") >= 60)
    codes = group.stop()
    assert codes == {"a": 0, "b": 0, "c": 0}
    for n in "abc":
        assert group.events(n)[-1]["event"] == "stopped"


def _stable_metadata(group: Group, name: str, others: list[str]) -> bytes:
    """Start ``others`` after ``name`` owns everything, so its last JoinGroup (the follow-up) declares what it owns."""
    group.wait_for(f"{name} owns everything", lambda: len(group.owned(name)) == PARTITIONS)
    for other in others:
        group.start(other)
    group.wait_for("group converged", lambda: group.converged([name, *others]))
    group.wait_for("broker shows the member", lambda: name in group.describe())
    return group.describe()[name]["metadata"]


@pytest.mark.parametrize("fault", [None, "subscription-v0"])
def test_subscription_v0_drops_owned_partitions_on_the_wire(group, fault) -> None:
    group.start("f", [fault] if fault else [])
    sub = decode_subscription(_stable_metadata(group, "f", ["o"]))
    if fault:
        assert sub.version == 0 and sub.owned_partitions == ()
    else:
        assert sub.version == 3 and set(from_topic_partitions(sub.owned_partitions)) == group.owned("f")


@pytest.mark.parametrize("fault", [None, "subscription-v4-trailing"])
def test_subscription_v4_trailing_bytes_on_the_wire(group, fault) -> None:
    group.start("f", [fault] if fault else [])
    sub = decode_subscription(_stable_metadata(group, "f", ["o"]))
    assert (sub.version, bool(sub.trailing)) == ((4, True) if fault else (3, False))


@pytest.mark.parametrize("fault", [None, "userdata-garbage"])
def test_userdata_garbage_is_an_unknown_format(group, fault) -> None:
    group.start("f", [fault] if fault else [])
    sub = decode_subscription(_stable_metadata(group, "f", ["o"]))
    info = classify_userdata(sub.user_data, "cooperative-sticky")
    assert info.format == ("unknown" if fault else "cooperative-generation")


@pytest.mark.parametrize("fault", [None, "stale-owned-partitions"])
def test_stale_owned_partitions_declares_more_than_it_owns(group, fault) -> None:
    group.start("f", [fault] if fault else [])
    group.wait_for("f owns everything", lambda: len(group.owned("f")) == PARTITIONS)
    group.start("o")

    def declared() -> set:
        meta = group.describe().get("f")
        return set(from_topic_partitions(decode_subscription(meta["metadata"]).owned_partitions)) if meta else None

    if fault:
        # After revoking for "o", f's follow-up JoinGroup still declares all six (E5 breaks).
        group.wait_for("f revoked something", lambda: len(group.owned("f")) < PARTITIONS)
        group.wait_for("f declares partitions it no longer owns", lambda: (declared() or set()) > group.owned("f"))
    else:
        group.wait_for("group converged", lambda: group.converged(["f", "o"]))
        group.wait_for("declared == owned", lambda: declared() == group.owned("f"))


def _assigned_in(group: Group, name: str, generation: int) -> set:
    return {tuple(tp) for e in group.events(name) if e["event"] == "assigned" and e.get("generation") == generation
            for tp in e["partitions"]}


def _revoked_in(group: Group, name: str, generation: int) -> set:
    return {tuple(tp) for e in group.events(name) if e["event"] == "revoked" and e.get("generation") == generation
            for tp in e["partitions"]}


@pytest.mark.parametrize("fault", [None, "leader-reassigns-owned"])
def test_leader_reassigns_owned_hands_over_before_the_revoke(group, fault) -> None:
    group.start("f", [fault] if fault else [])
    group.wait_for("f leads and owns everything", lambda: len(group.owned("f")) == PARTITIONS)
    group.start("o")
    group.wait_for("group converged", lambda: group.converged(["f", "o"]))
    # The generation in which f first revoked: o must not receive those partitions in that same generation (R1).
    gen = min(e["generation"] for e in group.events("f") if e["event"] == "revoked")
    handed_early = _assigned_in(group, "o", gen) & _revoked_in(group, "f", gen)
    assert bool(handed_early) == bool(fault), (gen, handed_early)


@pytest.mark.parametrize("fault", [None, "skip-revoke"])
def test_skip_revoke_keeps_consuming_what_another_member_owns(group, fault) -> None:
    group.start("f", [fault] if fault else [])
    group.wait_for("f owns everything", lambda: len(group.owned("f")) == PARTITIONS)
    group.wait_for("f consumed the backlog", lambda: sum(
        e["count"] for e in group.events("f") if e["event"] == "consumed") >= 60)
    group.start("o")
    group.wait_for("o owns something", lambda: bool(group.owned("o")))
    group.produce(60)
    group.wait_for("new records consumed", lambda: sum(
        e["count"] for n in ("f", "o") for e in group.events(n) if e["event"] == "consumed") >= 120)
    both = group.owned("f") & group.owned("o")
    consumed_by_f_late = {(e["topic"], e["partition"]) for e in group.events("f")
                          if e["event"] == "consumed" and e["first_offset"] >= 10}
    if fault:
        assert both, "histories should show two owners"
        assert consumed_by_f_late & group.owned("o")
    else:
        assert not both
        assert not (consumed_by_f_late & group.owned("o"))
