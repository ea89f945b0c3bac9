"""Stories that break delivery and commits (D1-D3; checks in conformance/pipeline/checks/delivery.py).

Each story is the healthy cooperative run (:func:`stories.builder.healthy`) with one act changed;
its decorator says what the judge must find.
"""

from __future__ import annotations

from pathlib import Path

from stories import story
from stories.builder import CooperativeRun, T


@story(fails=("D1", ["90-99"]))
def d1(b: CooperativeRun) -> Path:
    """m2 never consumes offsets 90-99 of t-3 (it reads 50-89 only)."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.follow_up()
    b.steady(short={(T, 3): 89})
    return b.teardown()


@story(fails=("D2", ["went back from 50"]))
def d2(b: CooperativeRun) -> Path:
    """m1's accepted commit of generation 2 moves t-1 back from 50 to 30."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2([(T, 0, 50), (T, 1, 30)])
    b.follow_up()
    return b.closing()


@story(fails=("D2", ["the broker accepted m1's commit of t-0 from generation 1 after generation 2 had formed"]))
def d2_stale(b: CooperativeRun) -> Path:
    """The broker accepts m1's commit from generation 1 (11.3 s) after generation 2 formed."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.commit("m1", 11300, 1, [(T, 0, 50)])
    b.follow_up()
    return b.closing()


@story(fails=("D3", ["again with no rebalance or fault"]))
def d3(b: CooperativeRun) -> Path:
    """m1 re-reads t-0 90-99 at 15 s with no rebalance or fault since it read them at 14 s."""
    b.through_steady()
    b.consumed("m1", 15000, T, 0, 90, 99)
    return b.teardown()


@story(fails=("D3", ["m1 consumed 50 record(s) of t-2 from offset 50 again without owning it (first read by m2)"]))
def d3_later_read_from_lower(b: CooperativeRun) -> Path:
    """m1, which gave t-2 up at 11.4 s, reads t-2 45-99 at 15 s, after m2, its owner, read 50-99 at
    14 s. The later read is the re-read although it starts at the lower offset: m1 is to blame for
    50-99, m2 read them first."""
    b.through_steady()
    b.consumed("m1", 15000, T, 2, 45, 99)
    return b.teardown()


@story()
def d3_allowed(b: CooperativeRun) -> Path:
    """As d3, but m1 was paused in between (14.5-14.6 s): counted, allowed by D3/fault."""
    b.through_steady()
    b.fault(14500, "pause", "m1")
    b.fault(14600, "resume", "m1", phase="heal")
    b.consumed("m1", 15000, T, 0, 90, 99)
    return b.teardown()


@story()
def d3_rebalance_allowed(b: CooperativeRun) -> Path:
    """m1 reads t-2 50-59 (produced at 11.25 s) without committing before giving it up; m2 reads
    them again: allowed by D3/rebalance."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.produced(11250, T, 2, 50, 59)
    b.consumed("m1", 11300, T, 2, 50, 59)
    b.follow_up()
    return b.closing()


@story()
def d3_commit_back_allowed(b: CooperativeRun) -> Path:
    """m1's commits of t-2 go out of order (50 at 11.2 s, then 45 at 11.35 s); m2 takes t-2 over
    and reads 45-49 again, from the last commit: allowed by D3/rebalance (D2 fails)."""
    b.through_steady()
    b.commit("m1", 11350, 2, [(T, 2, 45)])          # out of order: the broker's last commit of t-2 is 45
    b.consumed("m2", 13900, T, 2, 45, 49)           # m2 resumes from it: at-least-once, not below it
    return b.teardown()


@story(fails=("D3", ["m2 consumed 10 record(s) of t-2 from offset 40 again below offset 50, committed before "
                     "it acquired the partition"]))
def d3_below_commit(b: CooperativeRun) -> Path:
    """m2 takes t-2 over and reads 40-49 again, below the 50 m1 committed before."""
    b.through_steady()
    b.consumed("m2", 13900, T, 2, 40, 49)
    return b.teardown()


def _stale_epoch_takeover(b: CooperativeRun) -> None:
    """The healthy run, but m1's commit of 50 (11.2 s) names leader epoch 0, and when m2 takes t-2 over the
    broker tells it (12.8 s) that epoch 0 ended at 40."""
    b.opening()
    b.generation_2()
    b.sync_2()
    b.commit("m1", 11200, 2, [(T, p, 50) for p in range(4)], leader_epoch=0)
    b.follow_up()
    b.epoch_end("m2", 12800, T, 2, epoch=0, end_offset=40)
    b.steady()


@story(fails=("D3", ["m2 consumed 10 record(s) of t-2 from offset 40 again below offset 50, committed before it "
                     "acquired the partition; it resumed there because m1 committed offset 50"]))
def d3_stale_epoch(b: CooperativeRun) -> Path:
    """m2 resumes t-2 at 40, where the broker says the epoch of m1's commit of 50 ended (KIP-320), and reads
    40-49 again: m1, whose commit named an epoch offset 50 is not in, is the culprit; m2 is harmed."""
    _stale_epoch_takeover(b)
    b.consumed("m2", 13900, T, 2, 40, 49)
    return b.teardown()


@story(fails=("D2", ["went back from 50 (m1) to 45 (m2); it resumed there because m1 committed offset 50"]))
def d2_stale_epoch(b: CooperativeRun) -> Path:
    """m2 resumes t-2 at 40 for the same stale epoch and commits 45: the offset goes back, m1's doing."""
    _stale_epoch_takeover(b)
    b.commit("m2", 13950, 3, [(T, 2, 45)])
    return b.teardown()


@story()
def d3_resumed_allowed(b: CooperativeRun) -> Path:
    """m2 is paused at 20 s; m1 reads t-2 90-99 at 35 s; m2 is resumed at 40 s and reads them again
    at once, its history's whole millisecond just before the heal's: counted, allowed."""
    b.through_steady()
    b.fault(20000, "pause", "m2")
    b.consumed("m1", 35000, T, 2, 90, 99)
    b.consumed("m2", 40000, T, 2, 90, 99)
    b.fault(40000.4, "resume", "m2", phase="heal")
    return b.teardown()
