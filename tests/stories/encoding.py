"""Stories that break what the members' bytes say (E1-E5; checks in conformance/pipeline/checks/encoding.py).

Each story is the healthy cooperative run (:func:`stories.builder.healthy`) with one act changed;
its decorator says what the judge must find.
"""

from __future__ import annotations

from pathlib import Path

from stories import story
from stories.builder import ALL4, END, FINAL, CooperativeRun


@story(fails=("E1", ["does not decode"]))
def e1(b: CooperativeRun) -> Path:
    """m2's JoinGroup subscription is v3 but ends inside its topic array: two topics announced,
    one present."""
    b.opening()
    b.generation_2(m2_subscription="0003" + "00000002" + "0001" + "74")
    b.sync_2()
    b.m1_commits_2()
    b.follow_up()
    return b.closing()


@story(fails=("E2", ["does not decode"]))
def e2(b: CooperativeRun) -> Path:
    """The leader sends m2 an assignment that ends inside its partition array."""
    b.opening()
    b.generation_2()
    b.sync_2(raw={"m2": "0003" + "00000001" + "000174" + "00000002" + "00000000"})
    b.m1_commits_2()
    b.follow_up()
    return b.closing()


@story()
def e3(b: CooperativeRun) -> Path:
    """m2's cooperative-sticky userData is 3 garbage bytes: a warning naming them, not a failure."""
    b.opening()
    b.generation_2(m2_subscription=b.subscription("m2", user_data=b"\x01\x02\x03"))
    b.sync_2()
    b.m1_commits_2()
    b.follow_up()
    return b.closing()


@story(fails=("E4", ["canonical"]))
def e4(b: CooperativeRun) -> Path:
    """The reference member m2 writes its owned partitions unsorted (t: 1, 0): the bytes decode,
    but Java would write [0, 1]."""
    b.opening()
    # v1: topics [t], userData empty, owned [t: 1, 0].
    b.generation_2(m2_subscription="0001" + "00000001" + "000174" + "00000000" + "00000001" + "000174"
                   + "00000002" + "00000001" + "00000000")
    b.sync_2()
    b.m1_commits_2()
    b.follow_up()
    return b.closing()


@story(fails=("E5", ["m1 declared t-2, t-3 owned in JoinGroup (wire line 17), but its last assignment (SyncGroup "
                     "response, wire line 13) did not give it them: a stale claim"]))
def e5(b: CooperativeRun) -> Path:
    """m1 still declares t-2, t-3 owned in generation 3, a second after revoking them."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.m1_revokes_t2_t3()
    b.generation_3(b.subscriptions_3(m1_owns=ALL4))
    b.sync_3()
    b.m2_takes()
    return b.closing()


@story(fails=("E5", ["m2 offered cooperative-sticky with a v0 subscription"]))
def e5_v0(b: CooperativeRun) -> Path:
    """m2 offers cooperative-sticky in generation 3 with a v0 subscription, which has no owned partitions."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.m1_revokes_t2_t3()
    b.generation_3(b.subscriptions_3(m2_version=0))
    b.sync_3()
    b.m2_takes()
    return b.closing()


@story(fails=("E5", ["m1 owns t-0, t-1 per its history but did not declare them in JoinGroup"]))
def e5_missing(b: CooperativeRun) -> Path:
    """m1 declares nothing owned in generation 3 although it owns t-0, t-1."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.m1_revokes_t2_t3()
    b.generation_3(b.subscriptions_3(m1_owns=[]))
    b.sync_3()
    b.m2_takes()
    return b.closing()


@story(fails=("E5", ["m1 owns t-0, t-1 per its history but did not declare them in 3 JoinGroups (wire lines "]))
def e5_missing_retried(b: CooperativeRun) -> Path:
    """As e5-missing, but m1 sends that JoinGroup three times, the first two answered NOT_COORDINATOR:
    one finding naming the three requests."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.m1_revokes_t2_t3()
    members = b.subscriptions_3(m1_owns=[])
    for ts in (12200, 12350):
        b.frame(ts, "m1", "JoinGroup", "request", generation=-1,
                protocols=[{"name": "cooperative-sticky", "metadata": members["m1"]}])
        b.frame(ts + 5, "m1", "JoinGroup", "response", generation=-1, error_code=16, leader="",
                protocol_name=None, members=[])
    b.generation_3(members)
    b.sync_3()
    b.m2_takes()
    return b.closing()


@story()
def e5_slack_allowed(b: CooperativeRun) -> Path:
    """m2 rejoins for generation 4 at 12.65 s, 45 ms after its SyncGroup response gave it t-2, t-3,
    and declares them: its history records them assigned 50 ms later (12.7 s). Allowed by
    E5/clock-slack."""
    b.through_steady()
    b.join(4, 12650, "m1", {"m1": b.subscription("m1", owned=ALL4[:2], generation=3),
                            "m2": b.subscription("m2", owned=ALL4[2:], generation=3)})
    b.sync(4, 12750, "m1", FINAL)
    return b.teardown()





def _generation_3_then_early_rejoin(b: CooperativeRun, *, before_rejoin=lambda: None) -> Path:
    """The healthy run through generation 3's SyncGroup, whose response gives m2 t-2, t-3 (12.605 s).
    A new rebalance begins before m2's callback runs: m2 rejoins 93 ms later (12.698 s) declaring
    t-2, t-3 owned (generation 3); m1 rejoins at its next poll (13.6 s); generation 4 (13.65 s)
    keeps every assignment, and m2 records t-2, t-3 assigned in generation 4 (13.72 s), over a
    heartbeat after its JoinGroup. ``before_rejoin`` plays between the response and the rejoin."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.m1_revokes_t2_t3()
    b.generation_3()
    b.sync_3()
    before_rejoin()
    b.join(4, 13600, "m1", {"m1": b.subscription("m1", owned=ALL4[:2], generation=3),
                            "m2": b.subscription("m2", owned=ALL4[2:], generation=3)}, sent={"m2": 12698})
    b.sync(4, 13650, "m1", FINAL)
    b.assigned("m2", 13720, ALL4[2:])
    return b.closing()


@story()
def e5_not_yet_applied_allowed(b: CooperativeRun) -> Path:
    """m2 rejoins 93 ms after generation 3's SyncGroup response gave it t-2, t-3, before its callback
    ran, and declares them owned: the last assignment it received (KIP-429). Its history has no
    event of generation 3 and records them only in generation 4, 1.02 s after that JoinGroup.
    Allowed by E5/not-yet-applied."""
    return _generation_3_then_early_rejoin(b)


@story(fails=("E5", ["m2 declared owned t-2, t-3 in JoinGroup, which its history says it does not own"]))
def e5_not_yet_applied_lost(b: CooperativeRun) -> Path:
    """As e5-not-yet-applied-allowed, but m2 records t-2, t-3 lost 45 ms after that SyncGroup
    response (12.65 s, stamped with generation 2, the last it applied) and 48 ms later still
    declares them owned: it gave them up, so the claim is stale."""
    return _generation_3_then_early_rejoin(b, before_rejoin=lambda: b.event(
        "m2", 12650, "lost", partitions=[["t", 2], ["t", 3]], generation=2))


@story(fails=("E5", ["m1 declared owned t-0, t-1 in JoinGroup, which its history says it does not own",
                     "its history lost them before"]))
def e5_declared_after_lost(b: CooperativeRun) -> Path:
    """m1's history records t-0, t-1 lost at 20 s (its session expired); 50 ms later it rejoins still
    declaring them owned: the history gave them up before the JoinGroup, which no clock lag explains."""
    b.through_steady()
    b.lost("m1", 20000, ALL4[:2])
    b.join(4, 20050, "m1", {"m1": b.subscription("m1", owned=ALL4[:2], generation=3),
                            "m2": b.subscription("m2", owned=ALL4[2:], generation=3)})
    b.sync(4, 20150, "m1", FINAL)
    b.assigned("m1", 20200, ALL4[:2])
    return b.teardown()


@story()
def e5_missing_slack_allowed(b: CooperativeRun) -> Path:
    """m1 rejoins at 20 s declaring only t-0 (it revoked t-1 in its client); its history records the
    revoke of t-1 50 ms later: the history lags the wire, allowed (visibly) by E5/clock-slack."""
    b.through_steady()
    b.join(4, 20000, "m1", {"m1": b.subscription("m1", owned=ALL4[:1], generation=3),
                            "m2": b.subscription("m2", owned=ALL4[2:], generation=3)})
    b.revoked("m1", 20050, ALL4[1:2])
    b.sync(4, 20150, "m1", {"m1": ALL4[:1], "m2": ALL4[1:]})
    b.assigned("m2", 20200, ALL4[1:2])
    return b.teardown()


@story()
def e5_closing_allowed(b: CooperativeRun) -> Path:
    """The runner asks m1 to stop at 60 s; m1's close revokes t-0, t-1 (60.05 s) and a JoinGroup it had
    queued still declares them 20 ms later, right before its LeaveGroup: allowed by E5/closing."""
    b.through_steady()
    b.fault(END, "terminate", "m1")
    b.revoked("m1", END + 50, ALL4[:2])
    b.frame(END + 70, "m1", "JoinGroup", "request", generation=-1,
            protocols=[{"name": "cooperative-sticky", "metadata": b.subscription("m1", owned=ALL4[:2], generation=3)}])
    b.frame(END + 70, "m1", "LeaveGroup", "request")
    return b.teardown()
