"""Stories of a KIP-848 consumer member beside the classic ones (K1-K5, and the classic rules
L1/consumer-group, L2/consumer-group, L3/consumer-group, D2/member-epoch and V1/migration-refused;
checks in conformance/pipeline/checks/consumer.py).

Each story is the healthy cooperative run (:func:`stories.builder.healthy`: java m1 and the
reference m2, classic, settle by 14 s) with a third member, m3 (java, ``group.protocol=consumer``),
that joins by ConsumerGroupHeartbeat at 20 s and leaves just after the scenario's end: from 20 s
the group is a consumer group. The broker gives m3 epoch 2 and nothing to own (its topic is
taken: m1 and m2 keep t-0..3). Its decorator says what the judge must find.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from conformance.protocol import Assignment, encode_assignment
from stories import story
from stories.builder import ALL4, END, TP, CooperativeRun, T, _group

#: The topic id the manifest records for t (``topic_ids``), as the tap writes ids.
TOPIC_ID = "5f1c0a7e9b2d4c3e8f6a1b0c2d3e4f50"
#: The three members: m3 speaks the consumer protocol.
MEMBERS = (("m1", "java@4.4.0"), ("m2", "reference@0.1.0"), ("m3", "java@4.4.0+consumer"))


def _ids(tps: Iterable[TP] | None) -> list[dict] | None:
    """[{topic_id, partitions}] as the tap writes a heartbeat's partitions (None: the field was omitted)."""
    if tps is None:
        return None
    return [{"topic_id": TOPIC_ID, "partitions": list(g.partitions)} for g in _group(tps)]


def heartbeat(b: CooperativeRun, ts: float, member: str, epoch: int, *, given: int | None = None,
              owned: Iterable[TP] | None = None, assigned: Iterable[TP] | None = None, error: int = 0,
              join: bool = False) -> None:
    """One ConsumerGroupHeartbeat of ``member`` at ``ts`` sending ``epoch`` (and ``owned``), and its
    response 5 ms later giving ``given`` (default: the same epoch) and ``assigned``, as the tap
    writes them (None: omitted, "unchanged")."""
    given = epoch if given is None else given
    b.frame(ts, member, "ConsumerGroupHeartbeat", "request", api_key=68, version=1, protocol_type=None,
            generation=epoch, member_epoch=epoch, rebalance_timeout_ms=30000, server_assignor=None, rack_id=None,
            subscribed_topic_names=[T] if join else None, subscribed_topic_regex=None, owned=_ids(owned))
    b.frame(ts + 5, member, "ConsumerGroupHeartbeat", "response", api_key=68, version=1, protocol_type=None,
            generation=given, member_epoch=given, error_code=error, error_message=None, throttle_time_ms=0,
            heartbeat_interval_ms=1000 if error == 0 else 0, assigned=_ids(assigned))


def m3_joins(b: CooperativeRun, *, assigned: list[TP] | None = None) -> None:
    """m3 starts at 20 s and joins at epoch 0; the broker gives it epoch 2 and ``assigned`` (nothing);
    m3 acknowledges at 20.2 s (owned: nothing)."""
    b.manifest["topic_ids"] = {T: TOPIC_ID}
    b.manifest["members"][2]["version"] = "4.4.0"
    b.started("m3", 20000)
    heartbeat(b, 20100, "m3", 0, given=2, owned=[], assigned=assigned or [], join=True)
    heartbeat(b, 20200, "m3", 2, owned=[])


def m3_leaves(b: CooperativeRun) -> Path:
    """The scenario ends at 60 s; the runner stops m1, m2, then m3, which leaves with epoch -1."""
    heartbeat(b, END + 160, "m3", -1)
    return b.teardown(m3=True)


def m2_rejoins_bridged(b: CooperativeRun, *, runs_assignor: bool = False) -> None:
    """The broker asks m2 to rejoin (25 s): its JoinGroup response of generation 6 (m2's epoch) names
    no leader and lists no members; its SyncGroup (25.1 s) carries no assignments (``runs_assignor``:
    its own plan of t-2, t-3 instead), and the broker's answer gives it t-2, t-3 with empty userData."""
    sub = b.subscription("m2", owned=ALL4[2:], generation=3)
    b.frame(25000, "m2", "JoinGroup", "request", generation=-1, protocols=[{"name": "cooperative-sticky", "metadata": sub}])
    b.frame(25005, "m2", "JoinGroup", "response", generation=6, error_code=0, leader="",
            protocol_name="cooperative-sticky", members=[])
    b.generation_of["m2"] = 6
    plan = encode_assignment(Assignment(version=3, assigned_partitions=_group(ALL4[2:]))).hex()
    b.frame(25100, "m2", "SyncGroup", "request", generation=6, protocol_name="cooperative-sticky",
            assignments=[{"member_id": b.mid("m2"), "assignment": plan}] if runs_assignor else [])
    broker = encode_assignment(Assignment(version=0, assigned_partitions=_group(ALL4[2:]), user_data=None)).hex()
    b.frame(25105, "m2", "SyncGroup", "response", generation=6, protocol_name="cooperative-sticky", error_code=0,
            assignment=broker)


@story(fails=("K1", ["m3 (member id m3-id) sent a heartbeat with epoch 2 after the broker had given it epoch 3"]),
       members=MEMBERS)
def k1(b: CooperativeRun) -> Path:
    """The broker moves m3 to epoch 3 at 25 s; at 26 s m3 heartbeats with epoch 2 again (a stale
    epoch; the broker fences it: FENCED_MEMBER_EPOCH) and rejoins at epoch 0, getting epoch 4."""
    b.through_steady()
    m3_joins(b)
    heartbeat(b, 25000, "m3", 2, given=3, assigned=[])
    heartbeat(b, 26000, "m3", 2, given=2, error=110)
    heartbeat(b, 26100, "m3", 0, given=4, owned=[], assigned=[], join=True)
    return m3_leaves(b)


@story(fails=("K2", ["m2 sent 1 SyncGroup assignment(s) for generation 6 although its JoinGroup response named no "
                     "leader"]), members=MEMBERS)
def k2(b: CooperativeRun) -> Path:
    """m2 rejoins the consumer group through the classic bridge at 25 s; its JoinGroup response names
    no leader, yet m2 runs its assignor and sends its own plan in SyncGroup."""
    b.through_steady()
    m3_joins(b)
    m2_rejoins_bridged(b, runs_assignor=True)
    return m3_leaves(b)


@story(fails=("K3", ["m3 did not converge to its assignment of epoch 2 (t-0) within 31.0 s"]), members=MEMBERS)
def k3(b: CooperativeRun) -> Path:
    """The broker gives m3 t-0 when it joins (20.1 s); m3 heartbeats every 10 s until it leaves at
    60.16 s and never reports owning t-0 (its owned stays empty): 40 s, past the rebalance timeout
    (30 s) plus a heartbeat."""
    b.through_steady()
    m3_joins(b, assigned=ALL4[:1])
    for ts in (30000, 40000, 50000):
        heartbeat(b, ts, "m3", 2)
    return m3_leaves(b)


@story(fails=("K4", ["the broker accepted m3's commit of t-0 from epoch 2 when the member's epoch was 3"]),
       members=MEMBERS)
def k4(b: CooperativeRun) -> Path:
    """The broker moves m3 to epoch 3 at 25 s; at 26 s it accepts m3's commit of t-0 from epoch 2,
    a partition m3 was never assigned (so KIP-1251's assignment epoch does not cover it)."""
    b.through_steady()
    m3_joins(b)
    heartbeat(b, 25000, "m3", 2, given=3, assigned=[])
    b.commit("m3", 26000, 2, [(T, 0, 100)])
    return m3_leaves(b)


@story(fails=("K4", ["the broker accepted classic member m2's commit of t-0 from generation 3 in a consumer group "
                     "when its member epoch was 6"]), members=MEMBERS)
def k4_classic(b: CooperativeRun) -> Path:
    """Classic m2 rejoins through the broker's bridge at 25 s (epoch 6: t-2, t-3); at 26 s the broker
    accepts its commit of t-0 from generation 3, a partition m2 never held (m1's), so KIP-1251's
    assignment epoch does not cover it: the bridge must refuse it (ILLEGAL_GENERATION)."""
    b.through_steady()
    m3_joins(b)
    m2_rejoins_bridged(b)
    b.commit("m2", 26000, 3, [(T, 0, 100)])
    return m3_leaves(b)


@story(members=MEMBERS)
def k4_classic_held_allowed(b: CooperativeRun) -> Path:
    """As k4-classic, but m2's generation-3 commit is of t-2, which it has held since generation 3
    (the conversion at 20 s gave it that assignment epoch; the bridge's answer of epoch 6 kept it):
    KIP-1251 (broker 4.4.0) accepts a commit from an epoch between the two. D2's generation order
    calls it stale, D2/member-epoch says whose epoch it is, and K4 holds."""
    b.through_steady()
    m3_joins(b)
    m2_rejoins_bridged(b)
    b.commit("m2", 26000, 3, [(T, 2, 100)])
    return m3_leaves(b)


@story(fails=("K4", ["the broker accepted classic member m2's commit of t-2 from generation 3 in a consumer group "
                     "when its member epoch was 6"]), members=MEMBERS, broker_version="4.2.2")
def k4_classic_before_kip1251(b: CooperativeRun) -> Path:
    """k4-classic-held-allowed on broker 4.2.2, before KIP-1251: the bridge must accept only the
    member's epoch, so the generation-3 commit of t-2 it accepted at 26 s is stale."""
    return k4_classic_held_allowed(b)


@story(members=MEMBERS)
def k_consumer_member_allowed(b: CooperativeRun) -> Path:
    """m3 joins the settled group at 20 s by ConsumerGroupHeartbeat, gets epoch 2 and nothing to
    own, acknowledges, heartbeats every 10 s and leaves at the end: every invariant holds, and no
    classic generation forms while the group is a consumer group, so no rule is needed."""
    b.through_steady()
    m3_joins(b)
    for ts in (30000, 40000, 50000):
        heartbeat(b, ts, "m3", 2)
    return m3_leaves(b)


@story(members=MEMBERS)
def l1_consumer_group_allowed(b: CooperativeRun) -> Path:
    """m2 rejoins through the broker's classic bridge at 25 s while m3 makes the group a consumer
    group: generation 6 has no leader and no SyncGroup assignments (the broker's assignment comes
    back in the SyncGroup response): allowed by L1/consumer-group."""
    b.through_steady()
    m3_joins(b)
    m2_rejoins_bridged(b)
    return m3_leaves(b)


@story(fails=("L1", ["leader m2 of generation 6 sent no SyncGroup assignments and no fault silenced it"]),
       members=MEMBERS)
def l1_consumer_group_gone(b: CooperativeRun) -> Path:
    """As l1-consumer-group-allowed, but m3 left at 22 s (epoch -1), so the group is classic again
    when m2 rejoins at 25 s: generation 6 names m2 its leader, with itself as the member, and m2
    sends no SyncGroup assignments."""
    b.through_steady()
    m3_joins(b)
    heartbeat(b, 22000, "m3", -1)
    b.stopped("m3", 22010)
    b.join(6, 25000, "m2", {"m2": b.subscription("m2", owned=ALL4[2:], generation=3)})
    return b.teardown()


@story(fails=("L2", ["final generation 6 leaves t-0, t-1 unassigned (2 of 4 partitions assigned)"]),
       members=MEMBERS)
def l2_consumer_group_gone(b: CooperativeRun) -> Path:
    """As l1-consumer-group-gone (m3 left at 22 s: the group is classic again), but at 25 s m2 leads
    generation 6 with m1 in it and assigns only t-2 and t-3 (to itself). The group ended classic, so
    its final generation is judged (L2/consumer-group excuses only a group that ended as a consumer
    group): t-0 and t-1 are unassigned."""
    b.through_steady()
    m3_joins(b)
    heartbeat(b, 22000, "m3", -1)
    b.stopped("m3", 22010)
    b.join(6, 25000, "m2", {"m1": b.subscription("m1", owned=ALL4[:2], generation=3),
                            "m2": b.subscription("m2", owned=ALL4[2:], generation=3)})
    b.sync(6, 25050, "m2", {"m1": [], "m2": ALL4[2:]})
    return b.teardown()


@story(fails=("L3", ["final generation 6 (cooperative-sticky) is unbalanced: m1=1, m2=3"]), members=MEMBERS)
def l3_consumer_group_gone(b: CooperativeRun) -> Path:
    """As l2-consumer-group-gone, but m2 assigns every partition: t-0 to m1 and t-1..3 to itself.
    The group ended classic, so its final balance is judged (L3/consumer-group excuses only a group
    that ended as a consumer group): 1 against 3."""
    b.through_steady()
    m3_joins(b)
    heartbeat(b, 22000, "m3", -1)
    b.stopped("m3", 22010)
    b.join(6, 25000, "m2", {"m1": b.subscription("m1", owned=ALL4[:2], generation=3),
                            "m2": b.subscription("m2", owned=ALL4[2:], generation=3)})
    b.sync(6, 25050, "m2", {"m1": ALL4[:1], "m2": ALL4[1:]})
    return b.teardown()


@story(members=MEMBERS)
def d2_member_epoch_allowed(b: CooperativeRun) -> Path:
    """m3 (epoch 2, its own) commits t-0 at 30 s, after classic generation 3 formed: generation
    order would call it stale; it is m3's epoch, allowed by D2/member-epoch (K4 judges it: fine)."""
    b.through_steady()
    m3_joins(b)
    b.commit("m3", 30000, 2, [(T, 0, 100)])
    return m3_leaves(b)


def m3_refused(b: CooperativeRun) -> Path:
    """m3 starts at 20 s and joins at epoch 0; the broker refuses with GROUP_ID_NOT_FOUND at 20.105 s
    (it will not convert the classic group of m1 and m2); m3, as Java does, reports the error as fatal
    and exits."""
    b.manifest["topic_ids"] = {T: TOPIC_ID}
    b.manifest["members"][2]["version"] = "4.4.0"
    b.started("m3", 20000)
    heartbeat(b, 20100, "m3", 0, given=0, owned=[], error=69, join=True)
    # As recorded (the reference, broker 4.4.0): the member's error and stop are stamped 1 ms before
    # the tap's stamp of the response it acted on.
    b.error("m3", 20104.0, "GroupIdNotFoundException: Cannot upgrade classic group g to consumer group because "
            "online upgrade is disabled.", fatal=True)
    b.stopped("m3", 20104.1, reason="fatal: GroupIdNotFoundException")
    return b.teardown()


@story(fails=("K5", ["the broker admitted m3's consumer-protocol join", "m1, m2",
                     "though migration-policy=disabled allows no online upgrade"]), members=MEMBERS)
def k5(b: CooperativeRun) -> Path:
    """The broker runs with migration-policy=disabled, yet when m3 joins the live classic group of m1
    and m2 at 20 s it admits it (epoch 2): it converted the group, which it must refuse."""
    b.through_steady()
    b.manifest["migration_policy"] = "disabled"
    m3_joins(b)
    for ts in (30000, 40000, 50000):
        heartbeat(b, ts, "m3", 2)
    return m3_leaves(b)


@story(fails=("K5", ["the broker refused m3's consumer-protocol join",
                     "to the live classic group (m1, m2) with GROUP_ID_NOT_FOUND", "though migration-policy=bidirectional allows the upgrade and no "
                     "assignment of generation 3 (leader m1) carries userData"]), members=MEMBERS)
def k5_refused(b: CooperativeRun) -> Path:
    """The broker runs with migration-policy=bidirectional and the classic generation 3's assignments
    carry no userData, yet it refuses m3's join at 20 s with GROUP_ID_NOT_FOUND (m3 stops on it)."""
    b.through_steady()
    b.manifest["migration_policy"] = "bidirectional"
    return m3_refused(b)


@story(members=MEMBERS)
def v1_migration_refused_allowed(b: CooperativeRun) -> Path:
    """The broker runs with migration-policy=disabled: it refuses m3's join to the live classic group
    at 20 s with GROUP_ID_NOT_FOUND, and m3 stops on the fatal error: allowed by V1/migration-refused
    (K5 holds: the refusal was due)."""
    b.through_steady()
    b.manifest["migration_policy"] = "disabled"
    return m3_refused(b)


@story(fails=("V1", ["m3 reported a fatal error"]), members=MEMBERS)
def v1_fatal_after_admitted(b: CooperativeRun) -> Path:
    """As v1-migration-refused-allowed, but the broker (migration-policy=bidirectional) admitted m3 at
    20 s (epoch 2); at 30 s m3's heartbeat gets GROUP_ID_NOT_FOUND and m3 stops on it as fatal: a
    member that was in the group crashed, which no rule excuses."""
    b.through_steady()
    b.manifest["migration_policy"] = "bidirectional"
    m3_joins(b)
    heartbeat(b, 30000, "m3", 2, given=2, error=69)
    b.error("m3", 30100, "GroupIdNotFoundException: Group g is not a consumer group.", fatal=True)
    b.stopped("m3", 30110, reason="fatal: GroupIdNotFoundException")
    return b.teardown()


def m2_paused_and_handed_to_m3(b: CooperativeRun, *, resumed: float) -> None:
    """m3 joins at 20 s; m2 (classic) is paused at 22 s until ``resumed``; at 33 s the broker gives
    m2's t-2, t-3 to m3 (epoch 3) and m3 records them assigned (33.1 s) while m2, frozen, still owns
    them. Back, m2 is answered UNKNOWN_MEMBER_ID (35.1 s), records them lost (35.2 s) and stops."""
    b.through_steady()
    m3_joins(b)
    b.fault(22000, "pause", "m2")
    if resumed < 33000:
        b.fault(resumed, "resume", "m2", phase="heal")
        # The broker hears m2 again: its heartbeat of generation 3 is answered without error.
        b.frame(resumed + 100, "m2", "Heartbeat", "request", generation=3)
        b.frame(resumed + 105, "m2", "Heartbeat", "response", generation=3, error_code=0)
    heartbeat(b, 33000, "m3", 2, given=3, owned=[], assigned=ALL4[2:])
    b.assigned("m3", 33100, ALL4[2:])
    if resumed >= 33000:
        b.fault(resumed, "resume", "m2", phase="heal")
    b.frame(35050, "m2", "Heartbeat", "request", generation=3)
    b.frame(35100, "m2", "Heartbeat", "response", generation=3, error_code=25)
    b.lost("m2", 35200, ALL4[2:])
    b.stopped("m2", 35500)


@story(members=MEMBERS)
def r2_handed_over_allowed(b: CooperativeRun) -> Path:
    """m2 is paused from 22 s to 35 s, past its session, in a consumer group; the broker tells only
    m2 of its removal, when it is back (35.1 s), but gave its partitions to m3 at 33 s without having
    heard m2 since the pause: the overlap (33.1-35.2 s) is allowed by R2/fault-window."""
    m2_paused_and_handed_to_m3(b, resumed=35000)
    for ts in (40000, 50000):
        heartbeat(b, ts, "m3", 3)
    heartbeat(b, END + 160, "m3", -1)
    return b.teardown(m2=False, m3=True)


@story(fails=("R2", ["m2 and m3 both owned t-2, t-3; first overlap t-2 for 2100 ms (kept by m2)"]), members=MEMBERS)
def r2_handed_over_heard(b: CooperativeRun) -> Path:
    """As r2-handed-over-allowed, but m2's pause ends at 29.9 s and the broker answers its heartbeat
    without error at 30 s: it was not removed, so it could have acknowledged giving t-2, t-3 up; yet
    it still records them owned when the broker gives them to m3 at 33 s."""
    m2_paused_and_handed_to_m3(b, resumed=29900)
    for ts in (40000, 50000):
        heartbeat(b, ts, "m3", 3)
    heartbeat(b, END + 160, "m3", -1)
    return b.teardown(m2=False, m3=True)
