"""Stories that break what a generation's leader does (L1-L5; checks in conformance/pipeline/checks/leadership.py).

Each story is the healthy cooperative run (:func:`stories.builder.healthy`) with one act changed;
its decorator says what the judge must find.
"""

from __future__ import annotations

from pathlib import Path

from conformance.protocol import Assignment, encode_assignment
from conformance.protocol.userdata import encode_sticky_userdata
from stories import story
from stories.builder import ALL4, FINAL, CooperativeRun, T, _group


def _after_generation_2_without_sync(b: CooperativeRun) -> Path:
    b.m1_commits_2()
    b.follow_up()
    return b.closing()


def _sync_for_generation_minus_1(b: CooperativeRun) -> None:
    """The leader's SyncGroup of generation 2 names generation -1; the broker refuses it (error 22)."""
    gave = [{"member_id": f"{m}-id", "assignment": encode_assignment(Assignment(3, _group(tps))).hex()}
            for m, tps in {"m1": ALL4[:2], "m2": []}.items()]
    b.frame(11100, "m1", "SyncGroup", "request", generation=-1, protocol_name="cooperative-sticky", assignments=gave)
    b.frame(11105, "m1", "SyncGroup", "response", generation=-1, error_code=22, assignment="")


def _killed_while_joining(b: CooperativeRun) -> None:
    """m1 sends its JoinGroup for generation 2 (10.8 s), is killed (10.9 s) and starts again under
    a new member id (10.96 s)."""
    b.frame(10800, "m1", "JoinGroup", "request", generation=-1,
            protocols=[{"name": "cooperative-sticky", "metadata": b.subscription("m1", owned=ALL4, generation=1)}])
    b.fault(10900, "kill", "m1")
    b.fault(10950, "start", "m1")
    b.ids["m1"] = "m1-id2"
    b.started("m1", 10960)


@story(fails=("L1", ["assigned nothing to member(s) m2-id"]))
def l1(b: CooperativeRun) -> Path:
    """The leader of generation 2 sends no assignment for m2 (m2's own SyncGroup request is sent)."""
    b.opening()
    b.generation_2()
    b.frame(11100, "m2", "SyncGroup", "request", generation=2, protocol_name="cooperative-sticky", assignments=[])
    b.sync_2({"m1": ALL4[:2]})
    return _after_generation_2_without_sync(b)


@story(fails=("L1", ["sent no SyncGroup assignments and no fault silenced it"]))
def l1_nosync(b: CooperativeRun) -> Path:
    """The leader of generation 2 sends no SyncGroup at all, and nothing stopped it."""
    b.opening()
    b.generation_2()
    return _after_generation_2_without_sync(b)


@story()
def l1_nosync_allowed(b: CooperativeRun) -> Path:
    """As l1-nosync, but m1 was being terminated (10.9 s) when generation 2 formed and sends its
    LeaveGroup 45 ms after its JoinGroup response (11.05 s), long before its SyncGroup was due
    (11.005 s + the 30 s rebalance timeout): allowed by L1/leader-stopping."""
    b.opening()
    b.generation_2()
    b.fault(10900, "terminate", "m1")
    b.frame(11050, "m1", "LeaveGroup", "request", members=[{"member_id": b.mid("m1"), "group_instance_id": None}])
    return _after_generation_2_without_sync(b)


@story(fails=("L1", ["leader m1 of generation 2 sent no SyncGroup assignments and no fault silenced it or the "
                     "coordinator and it neither left nor exited before its SyncGroup was due"]))
def l1_stopping_never_left(b: CooperativeRun) -> Path:
    """As l1-nosync-allowed, but m1 never leaves: the runner's terminate (10.9 s) came before the
    JoinGroup that elected it, and m1 goes on committing and rejoining, alive and silent past the
    time its SyncGroup was due. A stop asked for is no excuse without the LeaveGroup or exit it
    should bring."""
    b.opening()
    b.generation_2()
    b.fault(10900, "terminate", "m1")
    return _after_generation_2_without_sync(b)


@story()
def l1_pause_allowed(b: CooperativeRun) -> Path:
    """The leader of generation 2 is paused 50 ms after the join (resumed at 23 s) and sends no
    SyncGroup: allowed by L1/fault-hit-leader."""
    b.opening()
    b.generation_2()
    b.fault(11050, "pause", "m1")
    b.fault(23000, "resume", "m1", phase="heal")
    return _after_generation_2_without_sync(b)


@story(fails=("L1", ["leader m1 of generation 2 sent no SyncGroup assignments and no fault silenced it"]))
def l1_latency_not_silencing(b: CooperativeRun) -> Path:
    """The leader of generation 2 gets a 100 ms latency toxic 50 ms after the join (for 3 s) and
    sends no SyncGroup. 100 ms delays each request; it never keeps one from the coordinator (the
    toxic rule: a session timeout less a heartbeat, 9 s, would), so nothing silenced the leader."""
    b.opening()
    b.generation_2()
    b.fault(11050, "toxic-add", "m1", type="latency", stream="downstream", attributes={"latency": 100},
            toxic="m1-latency")
    b.fault(14050, "toxic-remove", "m1", phase="heal", toxic="m1-latency")
    return _after_generation_2_without_sync(b)


@story(fails=("L1", ["leader m1 of generation 2 sent its SyncGroup for generation -1 instead (error 22) and no "
                     "fault hit it"]))
def l1_sync_generation(b: CooperativeRun) -> Path:
    """The leader of generation 2 sends its SyncGroup for generation -1, which the broker refuses
    (librdkafka before 2.10 after a commit of the generation before failed)."""
    b.opening()
    b.generation_2()
    _sync_for_generation_minus_1(b)
    return _after_generation_2_without_sync(b)


@story(fails=("L1", ["leader m1 of generation 2 sent its SyncGroup for generation -1 instead (error 22) and a "
                     "pause does not excuse a leader that synced"]))
def l1_sync_generation_fault(b: CooperativeRun) -> Path:
    """As l1-sync-generation, with a short pause of the leader (11.05-11.08 s) in the window: not
    excused."""
    b.opening()
    b.generation_2()
    b.fault(11050, "pause", "m1")
    b.fault(11080, "resume", "m1", phase="heal")
    _sync_for_generation_minus_1(b)
    return _after_generation_2_without_sync(b)


@story()
def l1_killed_leader_allowed(b: CooperativeRun) -> Path:
    """m1 is killed while its JoinGroup for generation 2 is pending and starts again under a new
    member id; generation 2 names the killed id leader, which never syncs: allowed by
    L1/dead-leader-id."""
    b.m1_leads_alone()
    b.m2_starts()
    _killed_while_joining(b)
    b.generation_2(leader_id="m1-id")
    return _after_generation_2_without_sync(b)


@story()
def l1_killed_leader_follower_sync_allowed(b: CooperativeRun) -> Path:
    """As l1-killed-leader-allowed, and m1's new instance, a follower of generation 2, sends the
    follower's SyncGroup (no assignments): that is not the dead leader syncing, still allowed by
    L1/dead-leader-id (seen in a chaos hunt: reference killed, restarted 6 ms later)."""
    b.m1_leads_alone()
    b.m2_starts()
    _killed_while_joining(b)
    b.generation_2(leader_id="m1-id")
    b.frame(11100, "m1", "SyncGroup", "request", generation=2, protocol_name="cooperative-sticky", assignments=[])
    return _after_generation_2_without_sync(b)


@story(fails=("L1", ["leader m1 of generation 2 sent its SyncGroup of generation 2 with no assignments and no "
                     "fault hit it"]))
def l1_empty_sync(b: CooperativeRun) -> Path:
    """The leader of generation 2, under its own member id, sends its SyncGroup of generation 2 with
    no assignments: alive and talking, not excused."""
    b.opening()
    b.generation_2()
    b.frame(11100, "m1", "SyncGroup", "request", generation=2, protocol_name="cooperative-sticky", assignments=[])
    return _after_generation_2_without_sync(b)


@story(fails=("L1", ["leader m1 of generation 2 sent no SyncGroup assignments and no fault silenced it"]))
def l1_killed_leader(b: CooperativeRun) -> Path:
    """As l1-killed-leader-allowed, but generation 2 names m1's new instance leader, which does not sync."""
    b.m1_leads_alone()
    b.m2_starts()
    _killed_while_joining(b)
    b.generation_2()
    return _after_generation_2_without_sync(b)


@story(fails=("L1", ["generation 2 has 2 leaders in JoinGroup responses: m1-id, m2-id"]))
def l1_two_leaders(b: CooperativeRun) -> Path:
    """m2's JoinGroup response of generation 2 names m2 the leader, m1's names m1."""
    b.opening()
    b.generation_2(leader_of={"m2": "m2"})
    b.sync_2()
    b.m1_commits_2()
    b.follow_up()
    return b.closing()


@story(fails=("L2", ["which subscribed only to t"]))
def l2(b: CooperativeRun) -> Path:
    """The leader of generation 2 assigns m1 a partition of a topic nobody subscribed to."""
    b.opening()
    b.generation_2()
    b.sync_2({"m1": ALL4[:2] + [("other", 0)], "m2": []})
    b.m1_commits_2()
    b.follow_up()
    return b.closing()


@story(fails=("L1", ["sent its SyncGroup for generation -1 instead"]))
def l1_synced_minus_one_in_two_rounds(b: CooperativeRun) -> Path:
    """Leader m1 syncs generations 2 and 3 as generation -1 (librdkafka before 2.10, its issue
    4059): the first plan gives t-0 to m1, the second gives it to m2. Each plan gives each partition
    once, so L2 has nothing to say: two plans are not one generation's."""
    b.opening()
    b.generation_2()
    b.sync(-1, 11100, "m1", {"m1": ALL4, "m2": []})
    b.m1_revokes_t2_t3()
    b.generation_3()
    b.sync(-1, 12600, "m1", {"m1": ALL4[1:2], "m2": [(T, 0), *ALL4[2:]]})
    return b.closing()


@story(fails=("L2", ["generation 2 assigns t-0 to 2 members: m1, m2"]))
def l2_double(b: CooperativeRun) -> Path:
    """The leader of generation 2 assigns t-0 to both m1 and m2."""
    b.opening()
    b.generation_2()
    b.sync_2({"m1": ALL4[:2], "m2": [(T, 0)]})
    b.m1_commits_2()
    b.follow_up()
    return b.closing()


@story(fails=("L2", ["final generation 3 leaves t-3 unassigned (3 of 4 partitions assigned)"]))
def l2_incomplete(b: CooperativeRun) -> Path:
    """The final generation 3 assigns nobody t-3."""
    final = {"m1": ALL4[:2], "m2": [(T, 2)]}
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.m1_revokes_t2_t3()
    b.generation_3()
    b.sync_3(final)
    b.m2_takes([(T, 2)])
    b.steady(final)
    return b.teardown()


@story(fails=("L3", ["unbalanced"]))
def l3(b: CooperativeRun) -> Path:
    """The final generation gives m1 one partition and m2 three."""
    final = {"m1": ALL4[:1], "m2": ALL4[1:]}
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.m1_revokes_t2_t3()
    b.generation_3()
    b.sync_3(final)
    b.revoked("m1", 12650, [(T, 1)])
    b.m2_takes(ALL4[1:])
    b.steady(final)
    return b.teardown()


def _generation_4_swapping(b: CooperativeRun, *, declare: bool) -> None:
    """Generation 4 (20 s), same members, swaps every partition; ``declare``: each member declares
    what it owns (cooperative), else nothing (eager)."""
    b.join(4, 20000, "m1", {"m1": b.subscription("m1", owned=ALL4[:2] if declare else [], generation=3),
                            "m2": b.subscription("m2", owned=ALL4[2:] if declare else [], generation=3)})
    b.sync(4, 20100, "m1", {"m1": ALL4[2:], "m2": ALL4[:2]})


def _generation_4_sticky(b: CooperativeRun, protocol: str, *, stale: bool) -> None:
    """Generation 4 (20 s) whose members name their partitions in sticky userData: generation 3's
    assignment (declaring nothing owned), or (``stale``) one partition each of generation 2, owned
    and in userData."""
    named = {"m1": [(T, 0)], "m2": [(T, 3)]} if stale else FINAL
    told = 2 if stale else 3
    b.join(4, 20000, "m1", {m: b.subscription(m, owned=named[m] if stale else [], generation=told,
                                              user_data=encode_sticky_userdata(_group(named[m]), told))
                            for m in ("m1", "m2")}, protocol=protocol)
    b.sync(4, 20100, "m1", {"m1": [(T, 0), (T, 2)], "m2": [(T, 1), (T, 3)]} if stale
           else {"m1": ALL4[2:], "m2": ALL4[:2]}, protocol=protocol)


def _healthy_then(b: CooperativeRun, later) -> Path:
    """The healthy run up to m2 taking t-2, t-3; then ``later(b)``; then the steady state and teardown."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.follow_up()
    later(b)
    return b.closing()


@story(fails=("L4", ["moved 4 partitions"]))
def l4(b: CooperativeRun) -> Path:
    """A generation 4 with the same members swaps every partition."""
    return _healthy_then(b, lambda b: _generation_4_swapping(b, declare=True))


@story()
def l4_eager_allowed(b: CooperativeRun) -> Path:
    """As l4, but both members declare nothing owned in generation 4 (eager): the leader had no
    ownership to keep."""
    return _healthy_then(b, lambda b: _generation_4_swapping(b, declare=False))


@story(fails=("L4", ["generation 3 -> 4 moved 4 partitions away from members that stayed, 0 would do"]))
def l4_userdata(b: CooperativeRun) -> Path:
    """As l4, but generation 4 is eager sticky: the members declare nothing owned and name
    generation 3's assignment in sticky userData, which that assignor reads."""
    return _healthy_then(b, lambda b: _generation_4_sticky(b, "sticky", stale=False))


@story()
def l4_cooperative_userdata_allowed(b: CooperativeRun) -> Path:
    """As l4-userdata, but generation 4 is cooperative-sticky, whose assignors read only the
    declared owned partitions: allowed."""
    return _healthy_then(b, lambda b: _generation_4_sticky(b, "cooperative-sticky", stale=False))


@story()
def l4_stale_userdata_allowed(b: CooperativeRun) -> Path:
    """In generation 4 each member names only one partition (owned and sticky userData of
    generation 2), and only the unnamed ones move: allowed."""
    return _healthy_then(b, lambda b: _generation_4_sticky(b, "cooperative-sticky", stale=True))


@story(members=(("m1", "java@4.4.0"), ("m2", "reference@0.1.0"), ("m3", "librdkafka@2.16.1")))
def l4_lost_allowed(b: CooperativeRun) -> Path:
    """librdkafka m3 starts at 19 s and joins generation 4, which takes t-3 from m2; m1 then loses
    t-0, t-1 (21 s) and declares nothing in generation 5 (22 s), which gives t-0 to m3: one move
    needed and made by a leader that was never told about it: allowed."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.follow_up()
    b.started("m3", 19000)
    b.join(4, 20000, "m1", {"m1": b.subscription("m1", owned=ALL4[:2], generation=3),
                            "m2": b.subscription("m2", owned=ALL4[2:], generation=3), "m3": b.subscription("m3")})
    b.sync(4, 20100, "m1", {"m1": ALL4[:2], "m2": [(T, 2)], "m3": []})
    b.revoked("m2", 20200, [(T, 3)])
    b.lost("m1", 21000, ALL4[:2])
    b.join(5, 22000, "m1", {"m1": b.subscription("m1", generation=4),
                            "m2": b.subscription("m2", owned=[(T, 2)], generation=4),
                            "m3": b.subscription("m3", generation=4)})
    b.sync(5, 22100, "m1", {"m1": [(T, 1)], "m2": [(T, 2)], "m3": [(T, 0), (T, 3)]})
    b.assigned("m1", 22200, [(T, 1)])
    b.assigned("m3", 22200, [(T, 0), (T, 3)])
    b.steady()
    return b.teardown(m3=True)


@story(fails=("L5", ["never led a generation: reference"]), leader_rotation=True)
def l5(b: CooperativeRun) -> Path:
    """A leader-rotation cell in which the reference member m2 never leads."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.follow_up()
    return b.closing()


@story(leader_rotation=True)
def l5_every_kind_led(b: CooperativeRun) -> Path:
    """A leader-rotation cell in which the reference member m2 leads generation 4 (20 s): the
    whole cell passes."""
    def m2_leads(b: CooperativeRun) -> None:
        b.join(4, 20000, "m2", {"m1": b.subscription("m1", owned=ALL4[:2], generation=3),
                                "m2": b.subscription("m2", owned=ALL4[2:], generation=3)})
        b.sync(4, 20100, "m2", FINAL)
    return _healthy_then(b, m2_leads)
