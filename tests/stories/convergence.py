"""Stories in which the group does not converge or a member crashes (V1; check in
conformance/pipeline/checks/delivery.py).

Each story is the healthy cooperative run (:func:`stories.builder.healthy`) with one act changed;
its decorator says what the judge must find.
"""

from __future__ import annotations

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
