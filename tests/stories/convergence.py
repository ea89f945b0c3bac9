"""Stories in which the group does not converge or a member crashes (V1), rebalances without end (V2)
or a member does not rejoin when told (V3); checks in conformance/pipeline/checks/delivery.py,
rebalances.py and rejoin.py.

Each story is the healthy cooperative run (:func:`stories.builder.healthy`) with one act changed;
its decorator says what the judge must find.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from stories import story
from stories.builder import ALL4, END, CooperativeRun, T


@story(fails=("V1", ["fatal error"]))
def v1(b: CooperativeRun) -> Path:
    """m2 reports a fatal error (59.8 s) and never stops."""
    b.through_steady()
    b.stopped("m1", END + 100)
    b.error("m2", END - 200, "boom: unexpected client state", fatal=True)
    return b.write(END)


@story(fails=("V1", ["m2 never stopped (crashed or hung)"]))
def v1_hang(b: CooperativeRun) -> Path:
    """m2 never stops in a complete run (no error, no kill)."""
    b.through_steady()
    return b.teardown(m2=False)


@story(fails=("V1", ["m2 crashed (restarted without stopping)"]))
def v1_crash(b: CooperativeRun) -> Path:
    """m2 starts again at 30 s without having stopped and without a kill."""
    b.through_steady()
    b.started("m2", 30000)
    return b.teardown()


@story(fails=("V1", ["t-3 had no owner at the end of observation (60000)"]))
def v1_unowned(b: CooperativeRun) -> Path:
    """m2 loses t-3 at 30 s with no rebalance, and nobody owns it to the end."""
    b.through_steady()
    b.lost("m2", 30000, [(T, 3)])
    return b.teardown()


@story(fails=("V1", ["the group took 2710 ms to converge after the last fault; the bound is 1000 ms"]))
def v1_slow(b: CooperativeRun) -> Path:
    """m2's start (9.99 s) is the last fault, and the group converges 2.7 s later against a 1 s bound."""
    b.manifest["timing"] = {**b.manifest["timing"], "convergence_bound_ms": 1000}
    b.m1_leads_alone()
    b.fault(9990, "start", "m2")
    b.m2_starts()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.follow_up()
    return b.closing()


@story(fails=("V1", ["await stable timed out after 30 s in phase bounce: t-1 owned by m1, m2"]))
def v1_await(b: CooperativeRun) -> Path:
    """The runner's await stable of phase bounce timed out (the manifest's notes): the group never settled."""
    b.through_steady()
    return b.teardown(notes=[{"ts": 45000.0, "phase": "bounce", "await": "stable", "timeout_ms": 30000,
                              "state": "t-1 owned by m1, m2"}])


@story()
def v1_kill_allowed(b: CooperativeRun) -> Path:
    """m2 is killed at 30 s; m1 alone forms generation 4 (41 s) and takes t-2, t-3: a kill by the
    nemesis is not a crash, the whole cell passes."""
    b.through_steady()
    b.fault(30000, "kill", "m2")
    b.join(4, 41000, "m1", {"m1": b.subscription("m1", owned=ALL4[:2], generation=3)})
    b.sync(4, 41100, "m1", {"m1": ALL4})
    b.assigned("m1", 41200, ALL4[2:])
    return b.teardown(m2=False)


def _rejoins(b: CooperativeRun, generations: range, opener: str = "m2") -> None:
    """Rounds that move nothing: ``opener`` sends its JoinGroup 30 ms before the other member, every
    2 s from 20 s on; each forms the next generation with the final assignment, led by m1."""
    for k, gen in enumerate(generations):
        ts = 20000 + 2000 * k
        subs = {"m1": b.subscription("m1", owned=ALL4[:2], generation=gen - 1),
                "m2": b.subscription("m2", owned=ALL4[2:], generation=gen - 1)}
        other = "m1" if opener == "m2" else "m2"
        b.join(gen, ts, "m1", subs, sent={opener: ts - 30, other: ts})
        b.sync(gen, ts + 100, "m1", {"m1": ALL4[:2], "m2": ALL4[2:]})


@story(fails=("V2", ["the group formed 8 generations in a run without faults", "need at most 4",
                     "rounds opened by m2 5, m1 3"]))
def v2(b: CooperativeRun) -> Path:
    """After the steady state (generation 3, two members started), m2 rejoins every 2 s (20-28 s) and
    the group forms generations 4-8 with the same assignment: ownership never moves, the group never
    stops rebalancing."""
    b.through_steady()
    _rejoins(b, range(4, 9))
    return b.teardown()


@story()
def v2_one_more_round_allowed(b: CooperativeRun) -> Path:
    """As v2, but only generation 4 follows: four generations for two members started, within the
    bound."""
    b.through_steady()
    _rejoins(b, range(4, 5))
    return b.teardown()


def _told_then_dropped(b: CooperativeRun, meanwhile: Callable[[CooperativeRun], None] | None = None) -> Path:
    """m1 leads generation 1 alone; m2 asks to join at 10.1 s; m1's heartbeat is answered
    REBALANCE_IN_PROGRESS at 10.5 s and its commit at 11 s too; ``meanwhile`` (from 10.6 s); m1
    sends no JoinGroup. The coordinator completes generation 2 with m2 alone at 40.1 s (the rebalance
    timeout) and answers m1's next heartbeat UNKNOWN_MEMBER_ID at 41 s; m1 loses its partitions."""
    b.m1_leads_alone()
    b.m2_starts()
    m2_sub = b.subscription("m2")
    b.frame(10100, "m2", "JoinGroup", "request", generation=-1,
            protocols=[{"name": "cooperative-sticky", "metadata": m2_sub}])
    b.frame(10500, "m1", "Heartbeat", "request", generation=1)
    b.frame(10505, "m1", "Heartbeat", "response", generation=1, error_code=27)
    if meanwhile:
        meanwhile(b)
    b.commit("m1", 11000, 1, [(T, 0, 50)], error=27)
    b.frame(40105, "m2", "JoinGroup", "response", generation=2, error_code=0, leader=b.mid("m2"),
            protocol_name="cooperative-sticky",
            members=[{"member_id": b.mid("m2"), "group_instance_id": None, "metadata": m2_sub}])
    b.generation_of["m2"] = 2
    b.sync(2, 40200, "m2", {"m2": ALL4})
    b.assigned("m2", 40300, ALL4)
    b.frame(41000, "m1", "Heartbeat", "request", generation=1)
    b.frame(41005, "m1", "Heartbeat", "response", generation=1, error_code=25)
    b.lost("m1", 41100, ALL4)
    return b.teardown()


@story(fails=("V3", ["m1 was told a rebalance was in progress (Heartbeat answered REBALANCE_IN_PROGRESS",
                     "and sent no JoinGroup as m1-id before the group dropped it 30.5 s later (Heartbeat answered "
                     "UNKNOWN_MEMBER_ID", "2 request(s) meanwhile (Heartbeat, OffsetCommit)"]))
def v3(b: CooperativeRun) -> Path:
    """m1, live and committing, never rejoins after being told of m2's round (Java 3.2.0,
    KAFKA-14024): the coordinator drops it at the rebalance timeout."""
    return _told_then_dropped(b)


@story()
def v3_paused_allowed(b: CooperativeRun) -> Path:
    """As v3, but m1 is paused from 10.6 s until 40.9 s: it could not rejoin (V3/fault-window)."""
    def pause(run: CooperativeRun) -> None:
        run.fault(10600, "pause", "m1")
        run.fault(40900, "resume", "m1", phase="heal")
    return _told_then_dropped(b, pause)


@story(fails=("V3", ["sent no JoinGroup as m1-id before the group dropped it"]))
def v3_paused_late(b: CooperativeRun) -> Path:
    """As v3-paused-allowed, but the pause begins at 20 s, 9.5 s after m1 was told: it had time to
    rejoin before it (the neighbour of V3/fault-window)."""
    def pause(run: CooperativeRun) -> None:
        run.fault(20000, "pause", "m1")
        run.fault(40900, "resume", "m1", phase="heal")
    return _told_then_dropped(b, pause)


@story()
def v3_leaving_allowed(b: CooperativeRun) -> Path:
    """As v3, but the runner terminates m1 at 10.6 s: it is on its way out (V3/leaving)."""
    return _told_then_dropped(b, lambda run: run.fault(10600, "terminate", "m1"))


@story(fails=("V3", ["sent no JoinGroup as m1-id before the group dropped it"]))
def v3_leaving_late(b: CooperativeRun) -> Path:
    """As v3-leaving-allowed, but the runner terminates m1 at 20 s, 9.5 s after it was told (the
    neighbour of V3/leaving)."""
    return _told_then_dropped(b, lambda run: run.fault(20000, "terminate", "m1"))
