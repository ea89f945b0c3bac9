"""kafka-python 3.0.x declares the partitions it has just lost (docs/client-bugs/kafka-python-lost-partitions-declared.md).

In the recorded default-matrix ``partition`` cell, m4-kafka-python is cut off past its session;
when its path heals its history records orders-6 and orders-11 lost, and 1 ms later it sends a
JoinGroup (wire lines 6326 and 6329) whose v1 subscription still declares them owned. E5 must name
it, saying the history lost them before, and the known-issue row must excuse exactly that.

The row must not excuse the neighbouring bug class: a declaration of partitions the member had
*revoked* (a cooperative revoke it completed, then claimed again). The mutant copy turns that
``lost`` event into ``revoked``: the same JoinGroup is then a new E5 failure, not a known issue.

Judged by the session's one real ``conformance report`` (tests/recorded.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from recorded import TEST_TIMEOUT, copy_run, read_jsonl, unpack, write_jsonl

pytestmark = [pytest.mark.slow, pytest.mark.timeout(TEST_TIMEOUT)]

ARCHIVE = Path(__file__).resolve().parent.parent / "fixtures" / "client-bugs" / "kafka-python-3.0.12-lost-partitions-declared.tar.xz"
MEMBER = "m4-kafka-python"
LOST = [["orders", 6], ["orders", 11]]


def recorded_copies(root: Path) -> dict[str, Path]:
    src = unpack(ARCHIVE, root / "original")
    runs = root / "runs"
    dirs = {"recorded": copy_run(src, runs / "recorded"), "revoked": copy_run(src, runs / "revoked", "-revoked")}
    history = dirs["revoked"] / "members" / f"{MEMBER}.jsonl"
    events = read_jsonl(history)
    (lost,) = [e for e in events if e["event"] == "lost" and e["partitions"] == LOST]
    lost["event"] = "revoked"
    write_jsonl(history, events)
    return dirs


@pytest.fixture(scope="module")
def verdicts(recorded_verdicts) -> dict[str, dict]:
    return recorded_verdicts


def _declared_after(verdict: dict) -> list[dict]:
    return [f for f in verdict["invariants"]["E5"]["violations"]
            if f["culprit"] == MEMBER and f["partitions"] == LOST and f["evidence"]["kind"] == "stale"]


def test_the_declaration_of_lost_partitions_is_the_known_issue(verdicts):
    v = verdicts["recorded"]
    (f,) = _declared_after(v)
    assert f["evidence"]["history_ended"] == "lost" and f["evidence"]["wire_lines"] == [6326, 6329], f
    assert "its history lost them before" in f["message"], f["message"]
    assert "kafka-python-lost-partitions-declared" in f["known_issue"]["reference"], f
    assert v["invariants"]["E5"]["status"] == "known-issue", v["invariants"]["E5"]


def test_the_same_declaration_after_a_revoke_still_fails(verdicts):
    v = verdicts["revoked"]
    (f,) = _declared_after(v)
    assert f["evidence"]["history_ended"] == "revoked" and not f.get("known_issue"), f
    assert v["invariants"]["E5"]["status"] == "fail", v["invariants"]["E5"]
