"""Stories of what members hand to their applications (C1, C2; checks in
conformance/pipeline/checks/consumption.py).

Each story is the healthy cooperative run (:func:`stories.builder.healthy`) with one act changed;
its decorator says what the judge must find.
"""

from __future__ import annotations

from pathlib import Path

from stories import story
from stories.builder import CooperativeRun, T


@story(fails=("C1", ["m1 handed 10 record(s) of t-2", "after its history revoked it", "m2 owned it meanwhile"]))
def c1(b: CooperativeRun) -> Path:
    """m1 revokes t-2 and t-3 (11.4 s) as its callback should, then hands 10 more records of t-2 to
    its application (13.5 s), after m2 took t-2 over (12.7 s): a zombie whose callbacks are right."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.follow_up()
    b.consumed("m1", 13500, T, 2, 50, 59)
    return b.closing()


@story(fails=("C1", ["without its history ever assigning it"]))
def c1_never_assigned(b: CooperativeRun) -> Path:
    """m2 hands records of t-0, which nobody ever assigned to it, to its application (15 s)."""
    b.through_steady()
    b.consumed("m2", 15000, T, 0, 50, 60)
    return b.teardown()


def _m1_fenced_at_20s(b: CooperativeRun, poll_ts: float) -> Path:
    """Steady state; m1's heartbeat of generation 3 is answered UNKNOWN_MEMBER_ID at 20 s (its
    session expired); m1 hands 10 records of t-0 to its application at 20.6 s from a poll begun at
    ``poll_ts``, and records t-0 and t-1 lost at 21 s."""
    b.through_steady()
    b.frame(19990, "m1", "Heartbeat", "request", generation=3)
    b.frame(20000, "m1", "Heartbeat", "response", generation=3, error_code=25)
    b.consumed("m1", 20600, T, 0, 100, 109, poll_ts=poll_ts)
    b.lost("m1", 21000, [(T, 0), (T, 1)])
    return b.teardown()


@story(fails=("C2", ["m1 was answered UNKNOWN_MEMBER_ID on Heartbeat", "still handed 10 record(s) of t-0"]))
def c2(b: CooperativeRun) -> Path:
    """m1 is told it is fenced at 20 s and then begins a poll (20.5 s) that hands it t-0's records."""
    return _m1_fenced_at_20s(b, poll_ts=20500)


@story()
def c2_poll_in_flight_allowed(b: CooperativeRun) -> Path:
    """As c2, but the poll that hands over t-0's records began at 19.9 s, before the answer: it was in
    flight, and the member could not have known."""
    return _m1_fenced_at_20s(b, poll_ts=19900)
