"""The reference consumer against a real broker: convergence, and every fault changing what it does.

One cluster (broker, toxiproxy, wire tap) serves the whole module; each test has
its own topic and group, and reads back only its group's records. Members reach
the broker through ``Cluster.bootstrap_for(member)``, so everything they send to
the group coordinator is in the run's ``wire.jsonl``. Each fault is asserted
from that wire capture or from the histories, never from the fault's flag, and
each check is also applied to a member without the fault (in the same group or
in the same scenario run without it) to show it fails there.
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
from conformance.protocol import Subscription
from conformance.protocol.userdata import classify_userdata, encode_cooperative_generation
from conformance.reference import observe
from conformance.reference.claims import from_topic_partitions
from conformance.reference.faults import V4_TRAILING
from conformance.rundir import RunDir
from conformance.scenarios.observe import GroupObserver

pytestmark = pytest.mark.slow

PARTITIONS = 6
BOUND_S = 90.0  # generous bound on waiting for a group state (shared 2-core machine); never asserted
SLOTS = 20      # member names are reused across tests: a name keeps its slot for the module
REFERENCE = kinds.default_version("reference")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    run = RunDir(tmp_path_factory.mktemp("reference-cluster"))
    for sub in (run.members_dir, run.logs):
        sub.mkdir(parents=True, exist_ok=True)
    with Supervisor(run.logs) as sup, Cluster(run, config.DEFAULT_BROKER, sup, slots=SLOTS) as c:
        yield c


class Group:
    """A topic with records, a group id, and reference members on their wire-tapped paths."""

    def __init__(self, cluster: Cluster, tmp: Path, name: str, partitions: int = PARTITIONS,
                 records: int = 60) -> None:
        from kafka import KafkaProducer

        self.cluster, self.tmp, self.partitions = cluster, tmp, partitions
        self.topic, self.group_id = f"topic-{name}", f"group-{name}"
        cluster.create_topic(self.topic, partitions)
        # linger: a burst lands as one batch per partition, so one Fetch returns all of it
        self.producer = KafkaProducer(bootstrap_servers=cluster.direct_bootstrap, linger_ms=100)
        self.produce(records)
        self.run = RunDir(tmp)
        for sub in (self.run.members_dir, self.run.logs):
            sub.mkdir(parents=True, exist_ok=True)
        self.sup = Supervisor(self.run.logs)
        self.procs: dict[str, MemberProcess] = {}
        self.paused: set[str] = set()
        self.observer = GroupObserver(self.run.members_dir, cluster.run_dir.wire, None, config.QUIET_MS)

    def produce(self, n: int) -> None:
        for i in range(n):
            self.producer.send(self.topic, value=str(i).encode(), partition=i % self.partitions)
        self.producer.flush()

    def start(self, name: str, faults: list[str] | None = None, **settings) -> MemberProcess:
        spec = MemberSpec.parse("/".join(["reference", *(faults or [])]))
        extra = settings.pop("extra", {})
        cfg = HarnessConfig(member=name, client="reference", client_version=REFERENCE,
                            bootstrap_servers=self.cluster.bootstrap_for(name), group_id=self.group_id,
                            topics=[self.topic], history_path=str(self.run.history(name)),
                            extra={"faults": list(faults or []), **extra}, **settings)
        self.procs[name] = launch_member(spec, cfg, self.run, self.sup)
        return self.procs[name]

    # -- what happened
    def events(self, name: str) -> list[dict]:
        return read_records(self.run.history(name))

    def owned(self, name: str) -> set[tuple[str, int]]:
        """What ``name``'s history says it owns now."""
        return observe.owned_at(self.events(name), math.inf)

    def wire(self) -> list[dict]:
        return observe.group_wire(self.cluster.run_dir.wire, self.group_id)

    def joins(self, name: str) -> list[dict]:
        return observe.select(self.wire(), "JoinGroup", "request", name)

    # -- waiting
    def poll(self, cond: Callable[[], bool], bound_s: float) -> bool:
        """Wait up to ``bound_s`` for ``cond``; False when it did not hold (members checked alive)."""
        deadline = time.monotonic() + bound_s
        while True:
            if cond():
                return True
            if time.monotonic() >= deadline:
                return False
            for name, p in self.procs.items():
                assert p.alive() or name in self.paused, \
                    f"{name} exited {p.returncode}; log {p.log_path}:\n{log_tail(p.log_path)}"
            time.sleep(0.2)

    def wait_for(self, what: str, cond: Callable[[], bool]) -> None:
        if not self.poll(cond, BOUND_S):
            raise AssertionError(f"not reached in {BOUND_S}s: {what}; owned: "
                                 f"{ {n: sorted(self.owned(n)) for n in self.procs} }")

    def converged(self, names: list[str]) -> bool:
        owned = [tp for n in names for tp in self.owned(n)]
        return len(owned) == len(set(owned)) == self.partitions and all(self.owned(n) for n in names)

    def stable(self, names: list[str]) -> bool:
        """The scenario runner's test of a stable group: ``names`` own every partition once, and
        neither ownership nor a JoinGroup/SyncGroup has moved for ``config.QUIET_MS`` (no round,
        e.g. a cooperative follow-up, still in flight)."""
        return self.observer.stable({n: {self.topic} for n in names}, {self.topic: self.partitions})[0]

    def stop(self) -> dict[str, int]:
        for name in self.paused:
            self.procs[name].resume()
        codes = {n: p.terminate(timeout=30) for n, p in self.procs.items()}
        self.sup.stop_all()
        self.producer.close()
        return codes


def _group_name(request) -> str:
    """A topic/group name unique per test and parameter (a short digest keeps it unique when cut)."""
    import hashlib

    full = request.node.name
    readable = full.replace("[", "-").replace("]", "").replace("_", "-")[:40]
    return f"{readable}-{hashlib.sha1(full.encode()).hexdigest()[:8]}"


@pytest.fixture
def group(cluster, tmp_path, request):
    g = Group(cluster, tmp_path, _group_name(request))
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
    wire = group.wire()
    for n in "abc":  # everything went through the member's tap, and decodes
        assert observe.select(wire, "SyncGroup", "response", n), f"no SyncGroup of {n} on the wire"
        assert observe.select(wire, "LeaveGroup", "request", n), f"no LeaveGroup of {n} on the wire"
    assert not [r for r in wire if "undecodable" in r]


# ----------------------------------------------------------------------------------------------
# Encoding faults: one group where each faulty member and a control member write their subscription
# ----------------------------------------------------------------------------------------------

RACK = "rack-a"
#: member name -> (faults, configured subscription version)
ENCODING_MEMBERS: dict[str, tuple[list[str], int]] = {
    "ctl": ([], 3),
    "cfg1": ([], 1),                              # configured v1, no fault: control of subscription-v3
    "v0": (["subscription-v0"], 3),
    "v1": (["subscription-v1"], 3),
    "v2": (["subscription-v2"], 3),
    "v3": (["subscription-v3"], 1),               # the fault overrides the configured v1
    "v4": (["subscription-v4-trailing"], 3),
    "ud-empty": (["userdata-empty"], 3),
    "ud-null": (["userdata-null"], 3),
    "ud-m1": (["userdata-minus-one"], 3),
    "ud-garbage": (["userdata-garbage"], 3),
}
ENCODING_PARTITIONS = 16


class Seen:
    """One member's JoinGroup of the triggered round, with what its history said at that moment."""

    def __init__(self, sub: Subscription, owned: set, generation: int | None) -> None:
        self.sub, self.owned, self.generation = sub, owned, generation

    def __repr__(self) -> str:
        return f"Seen({self.sub}, owned={sorted(self.owned)}, generation={self.generation})"


@pytest.fixture(scope="module")
def encoding_run(cluster, tmp_path_factory) -> dict[str, Seen]:
    """Every encoding-fault member in one group; after it settles a late member triggers one more round.

    In that round every member joins while owning partitions at a known generation, so its
    subscription must show (or, by its fault, not show) OwnedPartitions, GenerationId, RackId and
    the cooperative userData of that moment.
    """
    g = Group(cluster, tmp_path_factory.mktemp("encoding"), "encoding", ENCODING_PARTITIONS)
    try:
        g.start("ctl", rack_id=RACK)
        g.wait_for("ctl leads and owns everything", lambda: len(g.owned("ctl")) == ENCODING_PARTITIONS)
        for name, (faults, version) in ENCODING_MEMBERS.items():
            if name != "ctl":
                g.start(name, faults, rack_id=RACK, extra={"subscription_version": version})
        # Stable, not only "everyone owns something": a round still in flight (the cooperative
        # follow-up) would take late's join without the members that had already rejoined for it.
        g.wait_for("the group is stable", lambda: g.stable(list(ENCODING_MEMBERS)))
        g.start("late", rack_id=RACK)
        g.wait_for("late has joined", lambda: bool(g.joins("late")))
        trigger = g.joins("late")[0]["ts"]
        g.wait_for("every member rejoined after late", lambda: all(
            any(j["ts"] > trigger for j in g.joins(n)) for n in ENCODING_MEMBERS))
        seen = {}
        for name in ENCODING_MEMBERS:
            join = next(j for j in g.joins(name) if j["ts"] > trigger)
            events = g.events(name)
            seen[name] = Seen(observe.join_subscription(join), observe.owned_at(events, join["ts"]),
                              observe.generation_at(events, join["ts"]))
        return seen
    finally:
        g.stop()


def _declares_truth(s: Seen) -> bool:
    return bool(s.owned) and set(from_topic_partitions(s.sub.owned_partitions)) == s.owned


#: fault member -> (check that holds for it, the member it must NOT hold for)
ENCODING_CHECKS: dict[str, tuple[Callable[[Seen], bool], str]] = {
    # v0: no OwnedPartitions although the member owned partitions when it joined
    "v0": (lambda s: s.sub.version == 0 and s.sub.owned_partitions == () and bool(s.owned), "ctl"),
    # v1: OwnedPartitions (the truth), no GenerationId (decodes to the default -1), no RackId
    "v1": (lambda s: s.sub.version == 1 and _declares_truth(s) and s.sub.generation_id == -1
           and s.generation is not None and s.generation >= 0 and s.sub.rack_id is None, "ctl"),
    # v2: OwnedPartitions and GenerationId, but no RackId although one is configured
    "v2": (lambda s: s.sub.version == 2 and _declares_truth(s) and s.sub.generation_id == s.generation
           and s.sub.rack_id is None, "ctl"),
    # v3 (configured v1): all three fields
    "v3": (lambda s: s.sub.version == 3 and _declares_truth(s) and s.sub.generation_id == s.generation
           and s.sub.rack_id == RACK, "cfg1"),
    "v4": (lambda s: s.sub.version == 4 and s.sub.trailing == V4_TRAILING and _declares_truth(s)
           and s.sub.rack_id == RACK, "ctl"),
    "ud-empty": (lambda s: s.sub.user_data == b"", "ctl"),
    "ud-null": (lambda s: s.sub.user_data is None, "ctl"),
    # minus-one: ff ff ff ff although the member has a generation (GenerationId says which)
    "ud-m1": (lambda s: s.sub.user_data == b"\xff\xff\xff\xff" and s.sub.generation_id >= 0, "ctl"),
    "ud-garbage": (lambda s: classify_userdata(s.sub.user_data, "cooperative-sticky").format == "unknown", "ctl"),
}


@pytest.mark.parametrize("member", sorted(ENCODING_CHECKS))
def test_encoding_fault_is_on_the_wire(encoding_run, member) -> None:
    check, control = ENCODING_CHECKS[member]
    assert check(encoding_run[member]), encoding_run[member]
    assert not check(encoding_run[control]), encoding_run[control]


def test_control_member_writes_javas_cooperative_subscription(encoding_run) -> None:
    """Without faults: v3 (v1 when configured so) with the truth, and userData = int32 generation."""
    def java_like(s: Seen) -> bool:
        return (s.sub.version == 3 and _declares_truth(s) and s.sub.generation_id == s.generation
                and s.sub.rack_id == RACK and s.sub.user_data == encode_cooperative_generation(s.generation))
    assert java_like(encoding_run["ctl"]), encoding_run["ctl"]
    cfg1 = encoding_run["cfg1"]
    assert cfg1.sub.version == 1 and _declares_truth(cfg1), cfg1
    for member in set(ENCODING_CHECKS) - {"v3"}:  # every other fault member breaks at least this rule
        assert not java_like(encoding_run[member]), encoding_run[member]


# ----------------------------------------------------------------------------------------------
# Ownership faults
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fault", [None, "stale-owned-partitions"])
def test_stale_owned_partitions_declares_more_than_it_owns(group, fault) -> None:
    group.start("f", [fault] if fault else [])
    group.wait_for("f owns everything", lambda: len(group.owned("f")) == PARTITIONS)
    group.start("o")
    if fault:
        group.wait_for("f revoked something and rejoined", lambda: any(
            j["ts"] > e["ts"] for e in group.events("f") if e["event"] == "revoked" for j in group.joins("f")))
    else:
        group.wait_for("group converged", lambda: group.converged(["f", "o"]))
    events = group.events("f")
    declared_vs_owned = [(set(from_topic_partitions(observe.join_subscription(j).owned_partitions)),
                          observe.owned_at(events, j["ts"])) for j in group.joins("f")]
    over = [(sorted(d), sorted(o)) for d, o in declared_vs_owned if d != o]
    if fault:  # the follow-up JoinGroup still declares what f revoked (E5 breaks)
        assert over and all(set(d) > set(o) for d, o in over), declared_vs_owned
    else:
        assert not over, declared_vs_owned


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


#: How long the no-follow-up test lets the group sit after f revoked, before another member joins.
QUIET_S = 5 * config.HEARTBEAT_INTERVAL_MS / 1000.0


def _first_after(records: list[dict], ts: float) -> dict | None:
    return next((r for r in records if r["ts"] > ts), None)


@pytest.mark.parametrize("fault", [None, "no-follow-up-rejoin"])
def test_no_follow_up_rejoin_leaves_withheld_partitions_until_another_rebalance(group, fault) -> None:
    group.start("f", [fault] if fault else [])
    group.wait_for("f leads and owns everything", lambda: len(group.owned("f")) == PARTITIONS)
    group.start("o")
    group.wait_for("f revoked for o", lambda: any(e["event"] == "revoked" for e in group.events("f")))
    # Clean: the follow-up round hands o the withheld partitions at once. Faulty: nothing moves.
    group.poll(lambda: bool(group.owned("o")), QUIET_S)
    group.start("p")
    group.wait_for("p has joined", lambda: bool(group.joins("p")))
    group.wait_for("o owns something", lambda: bool(group.owned("o")))

    revoked_ts = next(e["ts"] for e in group.events("f") if e["event"] == "revoked")
    p_joined = group.joins("p")[0]["ts"]
    f_rejoin = _first_after(group.joins("f"), revoked_ts)
    o_gets = next(e["ts"] for e in group.events("o") if e["event"] == "assigned" and e["partitions"])
    assert f_rejoin is not None  # p's rebalance makes f rejoin in any case
    if fault:  # f never rejoined by itself: the withheld partitions waited for p's rebalance
        assert f_rejoin["ts"] > p_joined and o_gets > p_joined, (revoked_ts, f_rejoin["ts"], p_joined, o_gets)
    else:      # f's follow-up JoinGroup came first, and o had its partitions before p existed
        assert f_rejoin["ts"] < p_joined and o_gets < p_joined, (revoked_ts, f_rejoin["ts"], p_joined, o_gets)


@pytest.mark.parametrize("fault", [None, "stall-retained"])
def test_stall_retained_never_reads_a_kept_partition_again(group, fault) -> None:
    """f owns everything and reads the backlog; o joins, and f keeps half across the rebalance. New
    records for every partition: o reads its own; a prompt f reads the kept ones, a stall-retained f
    never does, while it still owns them (the group stays as it is: f keeps heartbeating)."""
    group.start("f", [fault] if fault else [])
    group.wait_for("f owns everything", lambda: len(group.owned("f")) == PARTITIONS)
    group.wait_for("f consumed the backlog", lambda: sum(
        e["count"] for e in group.events("f") if e["event"] == "consumed") >= 60)
    group.start("o")
    group.wait_for("group converged", lambda: group.converged(["f", "o"]))
    kept = group.owned("f")
    rebalanced = max(e["ts"] for e in group.events("f") if e["event"] in ("assigned", "revoked"))
    group.produce(60)

    def read_since(name: str) -> set:
        return {(e["topic"], e["partition"]) for e in group.events(name)
                if e["event"] == "consumed" and e["ts"] > rebalanced}

    group.wait_for("o read its new records", lambda: read_since("o") == group.owned("o"))
    read_all_kept = group.poll(lambda: kept <= read_since("f"), QUIET_S)
    assert read_all_kept == (fault is None), (sorted(kept), sorted(read_since("f")))
    if fault:
        assert not kept & read_since("f")
    assert group.owned("f") == kept and group.converged(["f", "o"])


@pytest.mark.parametrize("fault", [None, "slow-sync"])
def test_slow_sync_is_overtaken_by_the_next_round(group, fault) -> None:
    """o leads and owns everything; f joins. o's assignment revokes half, so o rejoins at once (follow-up).

    A prompt f sends its SyncGroup before that follow-up JoinGroup; a slow-sync f sends it after,
    and the broker answers REBALANCE_IN_PROGRESS.
    """
    group.start("o")
    group.wait_for("o leads and owns everything", lambda: len(group.owned("o")) == PARTITIONS)
    group.start("f", [fault] if fault else [])
    group.wait_for("group converged", lambda: group.converged(["o", "f"]))

    wire = group.wire()
    first_join = next(r for r in observe.select(wire, "JoinGroup", "response", "f") if r["error_code"] == 0)
    generation = first_join["generation"]
    sync = next(r for r in observe.select(wire, "SyncGroup", "request", "f") if r["generation"] == generation)
    answer = observe.response_to(wire, sync)
    o_next = _first_after(observe.select(wire, "JoinGroup", "request", "o"), first_join["ts"])
    assert answer is not None and o_next is not None, (sync, answer, o_next)
    if fault:
        assert sync["ts"] > o_next["ts"] and answer["error_code"] == 27, (sync, answer, o_next)
    else:
        assert sync["ts"] < o_next["ts"] and answer["error_code"] == 0, (sync, answer, o_next)


# ----------------------------------------------------------------------------------------------
# Heartbeats around a join, as Java's AbstractCoordinator does them
# ----------------------------------------------------------------------------------------------

def _rec(ts: float, api: str, direction: str, correlation: int, **fields) -> dict:
    return {"ts": ts, "member": "a", "api": api, "direction": direction, "connection": 1 if api != "Heartbeat" else 2,
            "correlation_id": correlation, "group_id": "g", "error_code": 0 if direction == "response" else None,
            **fields}


def _story(heartbeats: list[tuple[float, int]]) -> list[dict]:
    """A JoinGroup (t=10..20, generation 5), SyncGroup (t=20..30), and the given (ts, generation) heartbeats."""
    records = [_rec(10, "JoinGroup", "request", 1), _rec(20, "JoinGroup", "response", 1, generation=5),
               _rec(29, "SyncGroup", "request", 2, generation=5), _rec(30, "SyncGroup", "response", 2, generation=5)]
    records += [_rec(ts, "Heartbeat", "request", 100 + i, generation=g) for i, (ts, g) in enumerate(heartbeats)]
    return sorted(records, key=lambda r: r["ts"])


def test_heartbeat_window_checks_tell_java_behaviour_from_violations() -> None:
    java_like = _story([(5, 4), (22, 5), (25, 5), (31, 5)])
    (_, during_join), = observe.heartbeats_while_joining(java_like, "a")
    (_, _, during_sync), = observe.heartbeats_while_syncing(java_like, "a")
    assert during_join == [] and [h["ts"] for h in during_sync] == [22, 25]
    beats_while_joining = _story([(12, 4), (15, 4), (18, 4), (22, 5)])
    assert len(observe.heartbeats_while_joining(beats_while_joining, "a")[0][1]) == 3
    silent_while_syncing = _story([(5, 4), (31, 5)])
    assert observe.heartbeats_while_syncing(silent_while_syncing, "a")[0][2] == []
    old_generation = _story([(22, 4)])  # a heartbeat of the old generation is not one of the new round's
    assert observe.heartbeats_while_syncing(old_generation, "a")[0][2] == []


def test_heartbeats_stop_while_joining_and_go_on_while_syncing(cluster, tmp_path, request) -> None:
    """a (slow-sync, 500 ms heartbeats) and s are stable; s gets a slow backlog; c joins.

    s does not rejoin while it processes, so a's JoinGroup waits for the rebalance timeout:
    a must send no Heartbeat meanwhile (at most one recorded just after its JoinGroup), as
    Java's disabled heartbeat thread does. Then a holds its SyncGroup back (slow-sync): Java
    keeps heartbeating with the new generation then, and so must a.
    """
    timing = {"max_poll_interval_ms": 6000}  # the broker waits this long for s
    g = Group(cluster, tmp_path, _group_name(request), records=0)
    try:
        g.start("s", processing_delay_ms=1500, **timing)
        g.wait_for("s owns everything", lambda: len(g.owned("s")) == PARTITIONS)
        g.start("a", ["slow-sync"], heartbeat_interval_ms=500, **timing)
        g.wait_for("a and s converged", lambda: g.converged(["s", "a"]))
        g.produce(60)  # s now processes its records for a long time and does not rejoin
        g.start("c", **timing)
        g.wait_for("c has joined", lambda: bool(g.joins("c")))
        g.wait_for("c owns something", lambda: bool(g.owned("c")))
    finally:
        g.paused.clear()
        g.stop()
    wire = g.wire()
    c_joined = g.joins("c")[0]["ts"]
    joining = [(j, hbs) for j, hbs in observe.heartbeats_while_joining(wire, "a") if j["ts"] > c_joined]
    assert joining, "a answered no JoinGroup after c joined"
    join, during = joining[0]
    answer = observe.response_to(wire, join)
    # The window is long because s never rejoined in it (the broker waited its rebalance timeout).
    assert not observe.in_window(observe.select(wire, "JoinGroup", "request", "s"), join["ts"], answer["ts"])
    assert len(during) <= 1, [(h["ts"], h["generation"]) for h in during]
    syncing = observe.heartbeats_while_syncing(wire, "a")
    assert syncing, "no SyncGroup of a on the wire"
    for _join_answer, sync, beats in syncing:
        assert beats, f"a sent no Heartbeat of generation {sync['generation']} while its SyncGroup was pending"


def test_close_during_a_join_leaves_with_the_member_id_the_broker_gave(group) -> None:
    """SIGTERM while f's SyncGroup is pending (slow-sync holds it back): f must still send LeaveGroup.

    Java keeps the member id from the JoinGroup answers and leaves with it; without the
    LeaveGroup the broker keeps f until its session times out and the next round waits for it.
    """
    group.start("o")
    group.wait_for("o owns everything", lambda: len(group.owned("o")) == PARTITIONS)
    f = group.start("f", ["slow-sync"])

    def joined_not_synced() -> bool:
        wire = group.wire()
        return (any(r["error_code"] == 0 for r in observe.select(wire, "JoinGroup", "response", "f"))
                and not observe.select(wire, "SyncGroup", "request", "f"))

    group.wait_for("f's JoinGroup answered, its SyncGroup not sent", joined_not_synced)
    assert f.terminate(timeout=30) == 0
    del group.procs["f"]
    wire = group.wire()
    member_id = next(r["member_id"] for r in observe.select(wire, "JoinGroup", "response", "f") if r["error_code"] == 0)
    left = [m["member_id"] for r in observe.select(wire, "LeaveGroup", "request", "f") for m in r["members"]]
    assert left == [member_id], (left, member_id)
    assert not observe.select(wire, "SyncGroup", "request", "f")
