"""Stories that break the cooperative revoke (R1-R5; checks in conformance/pipeline/checks/revoke.py).

Each story is the healthy cooperative run (:func:`stories.builder.healthy`) with one act changed;
its decorator says what the judge must find.
"""

from __future__ import annotations

from pathlib import Path

from stories import story
from stories.builder import ALL4, END, FINAL, CooperativeRun, T


@story(fails=("R1", ["gave t-2 to m2 although m1 validly declared"]))
def r1(b: CooperativeRun) -> Path:
    """Generation 2 hands t-2 to m2 while m1 validly declares it owned."""
    b.opening()
    b.generation_2()
    b.sync_2({"m1": ALL4[:2], "m2": [(T, 2)]})
    b.m1_commits_2()
    b.follow_up()
    return b.closing()


@story(fails=("R2", ["m1 and m2 both owned t-2; first overlap t-2 for 150 ms (kept by m1): leader m1 gave it to one "
                     "while the other validly declared it (R1; its SyncGroup: wire.jsonl:"]))
def r2_moved_by_leader(b: CooperativeRun) -> Path:
    """As r1, and m2 takes t-2 from that SyncGroup (11.25 s) while m1 keeps it until its revoke
    (11.4 s): the overlap is the leader's move, so R2 names the leader, m1, as its culprit."""
    b.opening()
    b.generation_2()
    b.sync_2({"m1": ALL4[:2], "m2": [(T, 2)]})
    b.m1_commits_2()
    return _m2_takes_t2_early(b)


def _m2_takes_t2_early(b: CooperativeRun) -> Path:
    """m2 records t-2 assigned at 11.25 s, before m1 revokes it (11.4 s); m2 then declares t-2 in
    generation 3 (no SyncGroup gave it t-2: E5's stale claim too) and records only t-3 new."""
    b.assigned("m2", 11250, [(T, 2)])
    b.m1_revokes_t2_t3()
    b.generation_3(b.subscriptions_3(m2_owns=[(T, 2)]))
    b.sync_3()
    b.m2_takes([(T, 3)])
    return b.closing()


@story(fails=("R2", ["m1 and m2 both owned t-2"]))
def r2(b: CooperativeRun) -> Path:
    """m2 records t-2 assigned while m1 still owns it."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    return _m2_takes_t2_early(b)


def _generation_4_without_m1(b: CooperativeRun, m2_owns: list) -> None:
    """m1 froze at 20 s: the coordinator expires its session and generation 4 forms at 31.5 s with m2
    alone (its leader, declaring ``m2_owns``), whose SyncGroup (31.6 s) gives it t-0..3."""
    b.join(4, 31500, "m2", {"m2": b.subscription("m2", owned=m2_owns, generation=3)})
    b.sync(4, 31600, "m2", {"m2": ALL4})


@story()
def r2_allowed(b: CooperativeRun) -> Path:
    """m1 is paused at 20 s for 13 s, past its session; generation 4 forms without it at 31.5 s and m2
    records t-0, t-1 assigned at 31.7 s while m1, frozen, still owns them. Resumed, m1 is answered
    UNKNOWN_MEMBER_ID (33.1 s), records them lost (33.2 s) and stops: allowed by R2/fault-window (the
    member that kept them is the paused one, and the wire removed it before the overlap)."""
    b.through_steady()
    b.fault(20000, "pause", "m1")
    _generation_4_without_m1(b, ALL4[2:])
    b.assigned("m2", 31700, ALL4[:2])
    b.fault(33000, "resume", "m1", phase="heal")
    b.frame(33050, "m1", "Heartbeat", "request", generation=3)
    b.frame(33100, "m1", "Heartbeat", "response", generation=3, error_code=25)
    b.lost("m1", 33200, ALL4[:2])
    b.stopped("m1", 33500)
    b.stopped("m2", END + 150)
    return b.write(END)


@story()
def r2_unhealed_allowed(b: CooperativeRun) -> Path:
    """m1 is paused at 20 s and never resumed (the run was interrupted: nobody stops, the manifest
    says incomplete); generation 4 forms without it at 31.5 s and m2 records t-0, t-1 assigned at
    40 s while m1 still owns them: allowed."""
    b.through_steady()
    b.fault(20000, "pause", "m1")
    _generation_4_without_m1(b, ALL4[2:])
    b.assigned("m2", 40000, ALL4[:2])
    return b.write(END, complete=False)


@story(fails=("R2", ["m1 and m2 both owned t-0, t-1; first overlap t-0 for"]))
def r2_before_removal(b: CooperativeRun) -> Path:
    """As r2-unhealed-allowed, but m2 records t-0, t-1 assigned at 25 s, 5 s after m1 froze and before
    anything on the wire removed m1 (generation 4 forms at 31.5 s, m2 declaring them owned): m2 took
    them while the coordinator still counted m1 in."""
    b.through_steady()
    b.fault(20000, "pause", "m1")
    b.assigned("m2", 25000, ALL4[:2])
    _generation_4_without_m1(b, ALL4)
    return b.write(END, complete=False)


@story(fails=("R2", ["m1 and m2 both owned t-2; first overlap t-2 for 3500 ms (kept by m2)"]))
def r2_healthy_holder(b: CooperativeRun) -> Path:
    """m1 is paused for 1 s at 20 s (its session holds); at 21.5 s m1 records t-2 assigned, which m2
    owns, and revokes it at 25 s. The overlap lies inside m1's pause window, but the member that kept
    t-2 is m2, which no fault touched."""
    b.through_steady()
    b.fault(20000, "pause", "m1")
    b.fault(21000, "resume", "m1", phase="heal")
    b.assigned("m1", 21500, [(T, 2)])
    b.revoked("m1", 25000, [(T, 2)])
    return b.teardown()


@story(fails=("R2", ["m1 and m2 both owned t-0; first overlap t-0 for 39600 ms (kept by m1)"]))
def r2_outlives_window(b: CooperativeRun) -> Path:
    """m1 is paused for 100 ms (20 s); m2 records t-0 assigned at 20.5 s and m1 keeps it until the
    end: the overlap outlives the pause's window."""
    b.through_steady()
    b.fault(20000, "pause", "m1")
    b.fault(20100, "resume", "m1", phase="heal")
    b.assigned("m2", 20500, [(T, 0)])
    return b.teardown()


@story(fails=("R3", ["revoked and then assigned back"]))
def r3(b: CooperativeRun) -> Path:
    """m1 revokes t-0 (11.3 s) and gets it back (11.35 s) with no other owner in between."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.revoked("m1", 11300, [(T, 0)])
    b.assigned("m1", 11350, [(T, 0)])
    b.follow_up()
    return b.closing()


@story()
def r3_allowed(b: CooperativeRun) -> Path:
    """As r3, but during a broker restart (11.29-11.32 s): the session was cut, not rebalanced.
    Allowed by R3/fault-window."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.fault(11290, "broker-restart", "broker")
    b.fault(11320, "broker-restart", "broker", phase="heal")
    b.revoked("m1", 11300, [(T, 0)])
    b.assigned("m1", 11350, [(T, 0)])
    b.follow_up()
    return b.closing()


def _r3_beside_stall(b: CooperativeRun, start: float, end: float) -> Path:
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.fault(start, "stall", "m1", ms=end - start)
    b.fault(end, "stall-end", "m1", phase="heal")
    b.revoked("m1", 11300, [(T, 0)])
    b.assigned("m1", 11350, [(T, 0)])
    b.follow_up()
    return b.closing()


@story(fails=("R3", ["m1 had t-0 revoked and then assigned back"]))
def r3_short_stall(b: CooperativeRun) -> Path:
    """As r3, with m1's application stalled from 11.0 to 11.4 s: far below its max poll interval,
    m1 stayed in the group and heartbeated, so the stall opens no fault window and excuses nothing."""
    return _r3_beside_stall(b, 11000, 11400)


@story()
def r3_max_poll_stall_allowed(b: CooperativeRun) -> Path:
    """As r3_short_stall, but the stall lasts from 1 s to 31 s, the max poll interval: its client
    could leave the group, so its window (to 31 s plus a session and a heartbeat) covers the revoke
    and the assignment back. Allowed by R3/fault-window."""
    return _r3_beside_stall(b, 1000, 31000)


def _regrouped(b: CooperativeRun, *, retained: bool, unnamed: bool) -> Path:
    """m2 is killed (12 s) after m1 revoked t-2, t-3 for it in generation 2; generation 3 (m1
    alone) gives them back to m1, planned for a smaller group. ``retained``: m1 also revokes t-0
    (11.3 s), which generation 2 left it, and gets it back in generation 3. ``unnamed``: m1's
    history names no member id or generation (the Java harness before 2.5)."""
    if unnamed:
        b.unnamed.add("m1")
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    if retained:
        b.revoked("m1", 11300, [(T, 0)])
    b.m1_revokes_t2_t3()
    b.fault(12000, "kill", "m2")
    b.generation_3({"m1": b.subscriptions_3(m1_owns=[(T, 1)] if retained else ALL4[:2])["m1"]})
    b.sync_3({"m1": ALL4})
    b.assigned("m1", 12700, ([(T, 0)] if retained else []) + ALL4[2:])
    b.steady({"m1": ALL4})
    return b.teardown(m2=False)


@story()
def r3_regrouped_allowed(b: CooperativeRun) -> Path:
    """m2 is killed after m1 revoked t-2, t-3 for it in generation 2; generation 3 (m1 alone)
    gives them back to m1, planned for a smaller group: allowed by R3/replanned, the whole cell passes."""
    return _regrouped(b, retained=False, unnamed=False)


@story(fails=("R3", ["m1 had t-0 revoked and then assigned back"]))
def r3_regrouped(b: CooperativeRun) -> Path:
    """As r3-regrouped-allowed, but m1 also revokes t-0, which generation 2 left it, and gets it
    back in generation 3."""
    return _regrouped(b, retained=True, unnamed=False)


@story()
def r3_regrouped_unnamed_allowed(b: CooperativeRun) -> Path:
    """As r3-regrouped-allowed, but m1's history names no generation (the Java harness before
    2.5): the wire's SyncGroups tell them. Allowed."""
    return _regrouped(b, retained=False, unnamed=True)


@story(fails=("R3", ["m1 had t-0 revoked and then assigned back"]))
def r3_regrouped_unnamed(b: CooperativeRun) -> Path:
    """As r3-regrouped, with m1's history naming no generation."""
    return _regrouped(b, retained=True, unnamed=True)


@story(topics={"t": 4, "u": 4})
def r3_new_topic_allowed(b: CooperativeRun) -> Path:
    """Both subscribe to t and u, which generation 2's leader does not know yet: it withholds t-2,
    t-3 from m1 for m2; generation 3, which knows u, gives m2 u-0..3 and m1 t-2, t-3 back: allowed."""
    final = {"m1": ALL4, "m2": [("u", p) for p in range(4)]}
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.m1_revokes_t2_t3()
    b.generation_3()
    b.sync_3(final)
    b.m2_takes(final["m2"])
    b.assigned("m1", 12700, ALL4[2:])
    b.steady(final)
    return b.teardown()


@story(fails=("R4", ["reached no new owner"]))
def r4(b: CooperativeRun) -> Path:
    """m1 revokes t-2, t-3 and rejoins at once, but generation 3 gives them to nobody for the
    rest of a long run (nobody consumes them again: D1 fails too)."""
    final = {"m1": ALL4[:2], "m2": []}
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.m1_revokes_t2_t3()
    b.generation_3()
    b.sync_3(final)
    b.steady(final)
    return b.teardown()


@story()
def r4_broker_allowed(b: CooperativeRun) -> Path:
    """A broker restart at 14.5 s cuts m1's session: it revokes t-0, t-1 (Sarama-style) and gets
    them back in generation 4 at 50 s, past the 30 s revoke bound: allowed by R4/fault-window."""
    b.through_steady()
    b.fault(14500, "broker-restart", "broker")
    b.fault(14600, "broker-restart", "broker", phase="heal")
    b.revoked("m1", 14550, ALL4[:2])
    b.join(4, 50000, "m1", {"m1": b.subscription("m1", generation=3),
                            "m2": b.subscription("m2", owned=ALL4[2:], generation=3)})
    b.sync(4, 50100, "m1", FINAL)
    b.assigned("m1", 50200, ALL4[:2])
    return b.teardown()


@story(fails=("R5", ["every member preferred a cooperative assignor",
                     "final generation 3 is eager (range); the member mix makes it cooperative"]))
def r5(b: CooperativeRun) -> Path:
    """Every member offers only cooperative-sticky, but the final generation 3 is range."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.m1_revokes_t2_t3()
    b.generation_3(protocol="range", offered={"m1": ["cooperative-sticky"], "m2": ["cooperative-sticky"]})
    b.sync_3(protocol="range")
    b.m2_takes()
    return b.closing()


@story(fails=("R5", ["generation 3 is cooperative (cooperative-sticky) although m2 did not offer a "
                     "cooperative assignor"]))
def r5_not_offered(b: CooperativeRun) -> Path:
    """Generation 3 is cooperative-sticky although m2 offered only range."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.m1_revokes_t2_t3()
    b.generation_3(offered={"m1": ["cooperative-sticky"], "m2": ["range"]})
    b.sync_3()
    b.m2_takes()
    return b.closing()
