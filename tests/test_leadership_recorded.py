"""L1's exemptions are bound to their evidence, on real recorded runs (issue 38).

A leader that never sends its SyncGroup is excused only by what kept it from sending one before its
SyncGroup was due (its JoinGroup response plus the rebalance timeout): a fault that can silence it or
the coordinator (L1/fault-hit-leader), or its own way out, a LeaveGroup or an exit (L1/leader-stopping).

- ``latency``: the recorded corpus run reference-java-librdkafka (seed 26) whose leader's SyncGroup of
  generation 2 is removed, with a 100 ms latency toxic on its path right after its JoinGroup response
  (mutation ``leader-unsynced-under-latency``). The old rule excused it (a fault line against the
  leader between the join and the next one); 100 ms silences nobody: L1 fails, blaming the leader.
- ``after-stop``: the same leader, asked to stop 2 s before the JoinGroup it was elected by, alive and
  neither leaving nor exiting before its sync was due (mutation ``leader-unsynced-after-stop``). The
  old rule excused any earlier stop: L1 fails.
- ``paused`` (the neighbour still allowed): the same leader paused past its session 20 ms after its
  JoinGroup response: L1/fault-hit-leader excuses it.
- ``left`` (the neighbour still allowed, as recorded): the franz-go needed-move cell's teardown, where
  librdkafka, asked to stop, is elected leader of generation 24 while its close is under way; it sends
  its LeaveGroup and its history ends within a second: L1/leader-stopping excuses it.

All are judged with the session's other recorded runs by one real ``conformance report``
(tests/recorded.py).
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from conformance.mutate import (
    Mutation,
    leader_unsynced_after_stop,
    leader_unsynced_paused,
    leader_unsynced_under_latency,
    mutate,
)
from recorded import rename, unpack

pytestmark = [pytest.mark.slow]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CORPUS_RUN = FIXTURES / "real-runs" / "reference-java-librdkafka--seed-26.tar.xz"
LEFT_RUN = FIXTURES / "client-bugs" / "franz-go-1.22.3-generationless-owned-needed-move.tar.xz"
#: name -> the edit of the corpus run (Mutation: a run id suffix per copy).
EDITS = {
    "latency": Mutation("leader-unsynced-under-latency", "L1", leader_unsynced_under_latency),
    "after-stop": Mutation("leader-unsynced-after-stop", "L1", leader_unsynced_after_stop),
    "paused": Mutation("leader-unsynced-paused", "L1", leader_unsynced_paused),
}
LEADER = "m0-reference"


def recorded_copies(root: Path) -> dict[str, Path]:
    """The corpus run's three edits, and the needed-move cell as recorded."""
    with tarfile.open(CORPUS_RUN) as tar:
        tar.extractall(root / "original", filter="data")
    (original,) = (root / "original").iterdir()
    copies = {name: mutate(original, m, root / name).path for name, m in EDITS.items()}
    for run in copies.values():     # two are the mutation score's mutants of this run: other run ids
        rename(run, "~leadership")
    # test_client_bugs judges the same recorded run: this copy gets a run id of its own.
    copies["left"] = unpack(LEFT_RUN, root / "left")
    rename(copies["left"], "~leadership")
    return copies


@pytest.fixture(scope="module")
def verdicts(recorded_verdicts) -> dict[str, dict]:
    return recorded_verdicts


@pytest.mark.parametrize("name", ["latency", "after-stop"])
def test_a_leader_silent_for_no_reason_the_run_shows_fails_l1(verdicts, name):
    l1 = verdicts[name]["invariants"]["L1"]
    assert l1["status"] == "fail" and l1["allowed"] == [], l1
    (f,) = l1["violations"]
    assert f["culprit"] == LEADER and f["generation"] == 2, f
    assert "sent no SyncGroup assignments and no fault silenced it or the coordinator and it neither left nor " \
           "exited before its SyncGroup was due" in f["message"], f["message"]
    assert f["evidence"]["faults"] == [], f
    assert f["evidence"]["sync_due_ts"] - f["evidence"]["leader_join_response_ts"] == 30_000, f


def test_a_leader_paused_before_its_sync_was_due_is_allowed(verdicts):
    l1 = verdicts["paused"]["invariants"]["L1"]
    assert l1["status"] == "pass" and l1["violations"] == [], l1
    (f,) = l1["allowed"]
    assert f["allowed_by"] == "L1/fault-hit-leader" and f["generation"] == 2, f
    assert [x["fault"] for x in f["evidence"]["faults"]] == ["pause"], f


def test_a_leader_that_left_while_elected_is_allowed(verdicts):
    l1 = verdicts["left"]["invariants"]["L1"]
    assert l1["status"] == "pass" and l1["violations"] == [], l1
    (f,) = l1["allowed"]
    assert f["allowed_by"] == "L1/leader-stopping" and f["generation"] == 24, f
    assert f["members"] == ["m2-librdkafka"], f
    # Its LeaveGroup and the end of its history, both before its SyncGroup was due.
    ways_out = {x["fault"]: x["ts"] for x in f["evidence"]["faults"]}
    assert {"LeaveGroup", "exit (stopped)"} <= set(ways_out), f
    assert all(ts <= f["evidence"]["sync_due_ts"] for ts in ways_out.values()), f
