"""The reference KIP-848 member (``reference+consumer``) against a real broker (the default, 4.4.0).

One cluster (broker, toxiproxy, wire tap) serves the module; each test has its own topic and group
and reads back only its group's records. Everything a member sends the coordinator crosses its tap,
so each claim is checked on ``wire.jsonl`` (ConsumerGroupHeartbeat records: ``member_epoch``,
``owned``, ``assigned``, ``error_code``) or in the histories, never from a fault's flag; each fault's
check is also applied to a member without it and must not hold there.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Callable

import pytest

from conformance import config
from conformance.cluster import Cluster
from conformance.cluster.supervisor import Supervisor
from conformance.jsonl import read_records
from conformance.members import kinds
from conformance.members.harness_config import HarnessConfig
from conformance.members.launch import MemberProcess, launch_member, log_tail
from conformance.members.spec import MemberSpec
from conformance.reference import observe
from conformance.reference.codes import FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID
from conformance.rundir import RunDir

pytestmark = pytest.mark.slow

PARTITIONS = 6
BOUND_S = 45.0   # bound on waiting for a group state (shared 2-core machine)
SLOTS = 8
REFERENCE = kinds.default_version("reference")
CGH = "ConsumerGroupHeartbeat"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    run = RunDir(tmp_path_factory.mktemp("kip848-cluster"))
    for sub in (run.members_dir, run.logs):
        sub.mkdir(parents=True, exist_ok=True)
    with Supervisor(run.logs) as sup, Cluster(run, config.DEFAULT_BROKER, sup, slots=SLOTS) as c:
        yield c


class Group:
    """A topic with records, a group id, and reference members (either protocol) on tapped paths."""

    def __init__(self, cluster: Cluster, tmp: Path, name: str, records: int = 60) -> None:
        from kafka import KafkaProducer

        self.cluster = cluster
        self.topic, self.group_id = f"topic-{name}", f"group-{name}"
        cluster.create_topic(self.topic, PARTITIONS)
        self.producer = KafkaProducer(bootstrap_servers=cluster.direct_bootstrap, linger_ms=50)
        self.produced = 0
        self.produce(records)
        self.run = RunDir(tmp)
        for sub in (self.run.members_dir, self.run.logs):
            sub.mkdir(parents=True, exist_ok=True)
        self.sup = Supervisor(self.run.logs)
        self.procs: dict[str, MemberProcess] = {}
        self.paused: set[str] = set()

    def produce(self, n: int) -> None:
        for i in range(n):
            self.producer.send(self.topic, value=str(i).encode(), partition=i % PARTITIONS)
        self.producer.flush()
        self.produced += n

    def start(self, name: str, spec: str = "reference+consumer", **settings) -> MemberProcess:
        parsed = MemberSpec.parse(spec)
        cfg = HarnessConfig(member=name, client="reference", client_version=REFERENCE,
                            bootstrap_servers=self.cluster.bootstrap_for(name), group_id=self.group_id,
                            topics=[self.topic], history_path=str(self.run.history(name)),
                            group_protocol=parsed.protocol, extra={"faults": list(parsed.faults)}, **settings)
        self.procs[name] = launch_member(parsed, cfg, self.run, self.sup)
        return self.procs[name]

    def events(self, name: str) -> list[dict]:
        return read_records(self.run.history(name))

    def owned(self, name: str, ts: float = math.inf) -> set[tuple[str, int]]:
        return observe.owned_at(self.events(name), ts)

    def wire(self) -> list[dict]:
        return observe.group_wire(self.cluster.run_dir.wire, self.group_id)

    def heartbeats(self, name: str, direction: str = "request") -> list[dict]:
        return observe.select(self.wire(), CGH, direction, name)

    def wait_for(self, what: str, cond: Callable[[], bool]) -> None:
        deadline = time.monotonic() + BOUND_S
        while not cond():
            for n, p in self.procs.items():
                assert p.alive() or n in self.paused, f"{n} exited {p.returncode}:\n{log_tail(p.log_path)}"
            if time.monotonic() >= deadline:
                raise AssertionError(f"not reached in {BOUND_S}s: {what}; owned: "
                                     f"{ {n: sorted(self.owned(n)) for n in self.procs} }")
            time.sleep(0.2)

    def converged(self, names: list[str]) -> bool:
        owned = [tp for n in names for tp in self.owned(n)]
        return len(owned) == len(set(owned)) == PARTITIONS and all(self.owned(n) for n in names)

    def consumed(self, name: str) -> int:
        return sum(e["count"] for e in self.events(name) if e["event"] == "consumed")

    def stop(self) -> dict[str, int]:
        for name in self.paused:
            self.procs[name].resume()
        codes = {n: p.terminate(timeout=30) for n, p in self.procs.items()}
        self.sup.stop_all()
        self.producer.close()
        return codes


@pytest.fixture
def group(cluster, tmp_path, request):
    import hashlib

    name = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:32]
    g = Group(cluster, tmp_path, f"{name}-{hashlib.sha1(request.node.name.encode()).hexdigest()[:6]}")
    yield g
    g.stop()


def _epochs_sent(requests: list[dict]) -> list[int]:
    return [r["member_epoch"] for r in requests]


def test_alone_it_owns_everything_consumes_everything_and_leaves_with_epoch_minus_one(group) -> None:
    # One member joins at epoch 0, gets all six partitions, reads all 60 records, and on SIGTERM
    # commits, records revoked and stopped, and leaves with epoch -1.
    group.start("a")
    group.wait_for("a owns everything", lambda: len(group.owned("a")) == PARTITIONS)
    group.wait_for("a consumed every record", lambda: group.consumed("a") >= group.produced)
    group.wait_for("three light heartbeats", lambda: sum(
        r["member_epoch"] > 0 and r["owned"] is None for r in group.heartbeats("a")) >= 3)
    assert group.stop() == {"a": 0}
    events = group.events("a")
    assert [e["event"] for e in events][0] == "started" and events[-1]["event"] == "stopped"
    assert all(e.get("protocol") == "consumer" for e in events if e["event"] != "started")
    assigned = [e for e in events if e["event"] == "assigned"]
    assert assigned and all(e["member_epoch"] == e["generation"] and e["member_epoch"] > 0 for e in assigned)
    sent = group.heartbeats("a")
    assert sent[0]["member_epoch"] == 0 and sent[0]["subscribed_topic_names"] == [group.topic]
    assert sent[0]["rebalance_timeout_ms"] == config.MAX_POLL_INTERVAL_MS and sent[0]["owned"] == []
    assert sent[-1]["member_epoch"] == -1 and sent[-1]["member_id"] == sent[0]["member_id"]
    # From the first successful answer to the leave the epoch only grows, and every heartbeat is
    # light (no subscription); a fresh cluster may first answer NOT_COORDINATOR / LOAD_IN_PROGRESS.
    joined = next(r for r in group.heartbeats("a", "response") if r["error_code"] == 0)
    middle = [r for r in sent[:-1] if r["ts"] > joined["ts"]]
    assert middle and _epochs_sent(middle) == sorted(_epochs_sent(middle)), _epochs_sent(sent)
    assert min(_epochs_sent(middle)) == joined["member_epoch"] > 0, (joined, _epochs_sent(sent))
    assert all(r["subscribed_topic_names"] is None for r in middle), middle
    # Not faster than the broker's interval: a light heartbeat (no acknowledgement) follows the
    # previous heartbeat's answer by at least the interval that answer gave.
    answers = group.heartbeats("a", "response")
    for r in middle:
        if r["owned"] is None:
            last = max((x for x in answers if x["ts"] < r["ts"]), key=lambda x: x["ts"])
            assert r["ts"] - last["ts"] >= 0.95 * last["heartbeat_interval_ms"], (last, r)
    assert not [r for r in group.wire() if "undecodable" in r]


def test_two_members_split_the_partitions_revoking_before_the_new_owner_takes_them(group) -> None:
    # a owns all six; b joins. The broker asks a to give some up: a commits, records revoked and
    # acknowledges (its heartbeat's owned list shrinks); only then does b get those partitions.
    group.start("a")
    group.wait_for("a owns everything", lambda: len(group.owned("a")) == PARTITIONS)
    group.start("b")
    group.wait_for("a and b own three each", lambda: group.converged(["a", "b"]))
    a, b = group.events("a"), group.events("b")
    revoked = {tuple(tp): e for e in a if e["event"] == "revoked" for tp in e["partitions"]}
    taken = {tuple(tp): e for e in b if e["event"] == "assigned" for tp in e["partitions"]}
    assert set(taken) == set(revoked) and len(taken) == PARTITIONS // 2, (revoked, taken)
    for tp, e in taken.items():
        assert revoked[tp]["ts"] < e["ts"], f"{tp} assigned to b before a revoked it"
        assert e["member_epoch"] > revoked[tp]["member_epoch"], (revoked[tp], e)
    # On the wire: a's acknowledgement (owned without them) precedes b's first assignment of them.
    wire = group.wire()
    ack = next(r for r in observe.select(wire, CGH, "request", "a")
               if r.get("owned") is not None and r["member_epoch"] > 0
               and {p for t in r["owned"] for p in t["partitions"]} == {p for _, p in group.owned("a")})
    first = next(r for r in observe.select(wire, CGH, "response", "b")
                 if r.get("assigned") and {p for t in r["assigned"] for p in t["partitions"]} & {p for _, p in taken})
    assert ack["ts"] <= first["ts"], (ack, first)
    assert group.stop() == {"a": 0, "b": 0}


def _stale_requests(requests_and_responses: list[dict]) -> list[dict]:
    """Heartbeat requests (not join, not leave) with an epoch below one the member was already given."""
    out, highest = [], 0
    for r in requests_and_responses:
        if r["direction"] == "request" and r["member_epoch"] == 0:
            highest = 0  # a (re)join: a new membership, whose epochs start afresh
        elif r["direction"] == "response" and r.get("error_code") == 0:
            highest = max(highest, r["member_epoch"])
        elif r["direction"] == "request" and 0 < r["member_epoch"] < highest:
            out.append(r)
    return out


@pytest.mark.parametrize("fault", [None, "stale-epoch"])
def test_stale_epoch_sends_a_previous_epoch_and_is_fenced(group, fault) -> None:
    # With the fault, once its epoch has grown past 1, a heartbeat and a commit carry the epoch below
    # its own: the broker fences the heartbeat (FENCED_MEMBER_EPOCH), the member loses everything and
    # rejoins. Without it, no request ever goes below an epoch the member was given.
    spec = "reference+consumer" + (f"/{fault}" if fault else "")
    group.start("a", spec)
    group.wait_for("a owns everything", lambda: len(group.owned("a")) == PARTITIONS)
    if fault:
        group.wait_for("a was fenced and rejoined", lambda: any(e["event"] == "lost" for e in group.events("a"))
                       and len(group.owned("a")) == PARTITIONS)
    else:
        group.wait_for("a consumed every record", lambda: group.consumed("a") >= group.produced)
    group.stop()
    wire = group.wire()
    records = [r for r in wire if r.get("member") == "a" and r["api"] == CGH]
    stale = _stale_requests(records)
    commits = observe.select(wire, "OffsetCommit", "request", "a")
    current = {r["ts"]: r["member_epoch"] for r in records if r["direction"] == "response" and r.get("error_code") == 0}
    stale_commits = [c for c in commits
                     if c["generation"] < max((e for ts, e in current.items() if ts < c["ts"]), default=0)]
    if fault:
        assert len(stale) == 1, stale
        answer = observe.response_to(wire, stale[0])
        assert answer is not None and answer["error_code"] == FENCED_MEMBER_EPOCH, answer
        assert len(stale_commits) == 1, stale_commits
        # 4.4.0 refuses it: the partitions were assigned at the member's current epoch (KIP-1251
        # accepts only epochs from the partition's assignment epoch up).
        refused = observe.response_to(wire, stale_commits[0])
        assert refused is not None and refused["error_code"] == STALE_MEMBER_EPOCH, refused
    else:
        assert stale == [] and stale_commits == [], (stale, stale_commits)


def _overlap(group: Group, x: str, y: str) -> set[tuple[str, int]]:
    """Partitions both histories say are owned after the last event."""
    return group.owned(x) & group.owned(y)


def _consumed_while_owned_by(group: Group, x: str, y: str) -> set[tuple[str, int]]:
    """Partitions ``x`` consumed at a moment when ``y``'s history says ``y`` owned them (R2)."""
    theirs = group.events(y)
    return {(e["topic"], e["partition"]) for e in group.events(x) if e["event"] == "consumed"
            and (e["topic"], e["partition"]) in observe.owned_at(theirs, e["ts"])}


@pytest.mark.parametrize("fault", [None, "ack-unrevoked"])
def test_ack_unrevoked_keeps_consuming_what_it_acknowledged_giving_up(group, fault) -> None:
    # a owns all; b joins. With the fault a acknowledges the revoke (its heartbeat's owned list
    # shrinks, so the broker hands the partitions to b) but records no revoked and keeps consuming
    # them: after new records, both histories own and consume the same partitions (R2).
    group.start("a", "reference+consumer" + (f"/{fault}" if fault else ""))
    group.wait_for("a owns everything", lambda: len(group.owned("a")) == PARTITIONS)
    group.start("b")
    group.wait_for("b owns three", lambda: len(group.owned("b")) == PARTITIONS // 2)
    before = {n: group.consumed(n) for n in "ab"}
    group.produce(60)
    group.wait_for("both consumed new records", lambda: all(group.consumed(n) > before[n] for n in "ab"))
    time.sleep(1.0)  # a's next fetches, had it kept b's partitions
    both = _overlap(group, "a", "b")
    acked = [r for r in group.heartbeats("a") if r.get("owned") is not None and r["member_epoch"] > 0
             and len({p for t in r["owned"] for p in t["partitions"]}) == PARTITIONS // 2]
    assert acked, "a never acknowledged giving up half its partitions"
    shared = _consumed_while_owned_by(group, "a", "b")
    if fault:
        assert len(both) == PARTITIONS // 2 and shared == both, (both, shared)
    else:
        assert both == set() and shared == set(), (both, shared)
    group.stop()


@pytest.mark.parametrize("fault", [None, "ignore-fenced"])
def test_ignore_fenced_keeps_consuming_after_the_broker_fenced_it(group, fault) -> None:
    # a and b split the partitions; a is paused past the session timeout, so the broker fences it and
    # gives everything to b. Resumed, a hears it is fenced (FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID)
    # and rejoins. Without the fault it records lost first; with it, it records nothing and keeps
    # consuming its old partitions, which b owns meanwhile (R2).
    group.start("a", "reference+consumer" + (f"/{fault}" if fault else ""))
    group.start("b")
    group.wait_for("a and b own three each", lambda: group.converged(["a", "b"]))
    a_before = group.owned("a")
    group.procs["a"].pause()
    group.paused.add("a")
    group.wait_for("b owns everything", lambda: len(group.owned("b")) == PARTITIONS)
    group.procs["a"].resume()
    group.paused.discard("a")
    fenced_at = time.time() * 1000

    def told_fenced() -> bool:
        answers = [r for r in group.heartbeats("a", "response") if r["ts"] >= fenced_at]
        return any(r["error_code"] in (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) for r in answers)
    group.wait_for("a was told it is fenced", told_fenced)
    group.produce(60)
    group.wait_for("the group converged again", lambda: len(group.owned("a")) > 0)
    time.sleep(1.0)
    lost = [e for e in group.events("a") if e["event"] == "lost"]
    shared = _consumed_while_owned_by(group, "a", "b")
    if fault:
        assert lost == [] and a_before <= group.owned("a"), (lost, group.owned("a"))
        assert shared and shared <= a_before, (shared, a_before)
    else:
        assert lost and {tuple(tp) for tp in lost[0]["partitions"]} == a_before, lost
        assert _overlap(group, "a", "b") == set() and shared == set(), shared
    group.stop()



def test_a_consumer_member_converts_a_classic_group_and_the_broker_assigns_the_classic_member(group) -> None:
    # c (classic, cooperative-sticky) leads a classic group and owns everything; k (KIP-848) joins.
    # Broker 4.4.0 converts the group online (migration policy bidirectional): c's heartbeat gets
    # REBALANCE_IN_PROGRESS; its JoinGroup answers name no leader ("") and list no members, so c runs
    # no assignor; its SyncGroup brings the broker's assignment without userData. c revokes half and
    # declares the rest in its follow-up join; only after that does k get the released half.
    from conformance.protocol import decode_assignment

    group.start("c", "reference")
    group.wait_for("c owns everything", lambda: len(group.owned("c")) == PARTITIONS)
    group.start("k")
    group.wait_for("c and k own three each", lambda: group.converged(["c", "k"]))
    wire = group.wire()
    k_joined = observe.select(wire, CGH, "request", "k")[0]
    told = [r for r in wire if r["member"] == "c" and r["direction"] == "response" and r["ts"] > k_joined["ts"]
            and r["api"] in ("Heartbeat", "OffsetCommit") and r.get("error_code")]
    assert told and told[0]["error_code"] == 27, told[:1]  # REBALANCE_IN_PROGRESS
    joins = [r for r in observe.select(wire, "JoinGroup", "response", "c") if r["ts"] > k_joined["ts"]]
    assert joins and all(r["leader"] == "" and r["members"] == [] and r["error_code"] == 0 for r in joins), joins
    syncs = [r for r in observe.select(wire, "SyncGroup", "response", "c") if r["ts"] > k_joined["ts"]]
    assert syncs and all(observe.sync_assignment(r).user_data is None for r in syncs), syncs
    assert not observe.select(wire, "SyncGroup", "request", "c")[-1]["assignments"]  # c assigns nobody
    # Release before reassign: c's join declaring it no longer owns k's partitions precedes k's assignment.
    k_parts = {p for _, p in group.owned("k")}
    got = next(r for r in observe.select(wire, CGH, "response", "k")
               if r.get("assigned") and {p for t in r["assigned"] for p in t["partitions"]} == k_parts)
    released = [j for j in observe.select(wire, "JoinGroup", "request", "c") if j["ts"] > k_joined["ts"]
                and not {p for t in observe.join_subscription(j).owned_partitions for p in t.partitions} & k_parts]
    assert released and released[0]["ts"] < got["ts"], (released[:1], got)
    revoked = {p for e in group.events("c") if e["event"] == "revoked" for _, p in e["partitions"]}
    assert revoked == k_parts
    assert {p for tps in decode_assignment(bytes.fromhex(syncs[-1]["assignment"])).assigned_partitions
            for p in tps.partitions} == {p for _, p in group.owned("c")}
    assert group.stop() == {"c": 0, "k": 0}


def test_a_static_member_leaves_with_epoch_minus_two_and_its_next_incarnation_takes_its_place(group) -> None:
    # s has instance id i-1. On SIGTERM it leaves with epoch -2 (it will be back); started again, it
    # rejoins with the same instance id, is accepted (no UNRELEASED_INSTANCE_ID) and owns everything.
    proc = group.start("s", group_instance_id="i-1")
    group.wait_for("s owns everything", lambda: len(group.owned("s")) == PARTITIONS)
    assert proc.terminate(timeout=30) == 0
    left = group.heartbeats("s")[-1]
    assert (left["member_epoch"], left["group_instance_id"]) == (-2, "i-1"), left
    proc.restart()
    group.wait_for("s's second incarnation owns everything", lambda: len(group.owned("s")) == PARTITIONS)
    rejoin = next(r for r in group.heartbeats("s") if r["ts"] > left["ts"])
    assert (rejoin["member_epoch"], rejoin["group_instance_id"]) == (0, "i-1")
    answers = [r for r in group.heartbeats("s", "response") if r["ts"] > left["ts"]]
    assert answers and all(r["error_code"] == 0 for r in answers), answers
    assert all(r["group_instance_id"] == "i-1" for r in group.heartbeats("s"))


@pytest.fixture(scope="module")
def cluster_3_9(tmp_path_factory):
    run = RunDir(tmp_path_factory.mktemp("kip848-cluster-3.9"))
    for sub in (run.members_dir, run.logs):
        sub.mkdir(parents=True, exist_ok=True)
    with Supervisor(run.logs) as sup, Cluster(run, "3.9.2", sup, slots=2) as c:
        yield c


def test_on_a_v0_broker_the_broker_names_the_member(cluster_3_9, tmp_path) -> None:
    # Broker 3.9.2 (KIP-848 early access) speaks ConsumerGroupHeartbeat v0 only: the member joins with
    # an empty member id, keeps the one the broker returns, and works as on 4.x.
    group = Group(cluster_3_9, tmp_path, "v0-broker")
    try:
        group.start("a")
        group.wait_for("a owns everything", lambda: len(group.owned("a")) == PARTITIONS)
        group.wait_for("a consumed every record", lambda: group.consumed("a") >= group.produced)
    finally:
        codes = group.stop()
    assert codes == {"a": 0}
    sent, answers = group.heartbeats("a"), group.heartbeats("a", "response")
    assert {r["version"] for r in sent} == {0}
    assert sent[0]["member_id"] == "" and sent[0]["member_epoch"] == 0
    joined = next(r for r in answers if r["error_code"] == 0)  # a fresh broker may first say NOT_COORDINATOR
    assert all(r["member_id"] == "" for r in sent if r["ts"] < joined["ts"]), sent
    later = [r["member_id"] for r in sent if r["ts"] > joined["ts"]]
    assert joined["member_id"] and later and set(later) == {joined["member_id"]}, (joined, later)
    assert sent[-1]["member_epoch"] == -1
