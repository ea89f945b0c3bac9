"""Helpers shared by the harness tests, and their own tests on hand-written histories.

The helpers read a member's history the way the checks will: tolerant
parsing, strict checking. Each is shown here to fail on a violating history
and pass on a clean one.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from conformance.history import read_history


class HistoryProblem(AssertionError):
    """A harness history that breaks the format or the ordering rules."""


def load_history(path: Path) -> list[dict[str, Any]]:
    """Every event of ``path``; HistoryProblem for a line that is not a valid event."""
    if not path.exists():
        return []
    events, problems = [], []
    with open(path, encoding="utf-8") as f:
        for number, event, problem in read_history(f):
            if problem:
                problems.append(f"line {number}: {problem}")
            else:
                events.append(event)
    if problems:
        raise HistoryProblem(f"{path}: {len(problems)} malformed line(s): {problems[:5]}")
    return events


def check_clean_incarnation(events: list[dict[str, Any]]) -> None:
    """One clean incarnation: ``started`` first, ``stopped`` last, nothing fatal, one client/version."""
    if not events:
        raise HistoryProblem("empty history")
    kinds = [e["event"] for e in events]
    if kinds[0] != "started":
        raise HistoryProblem(f"first event is {kinds[0]!r}, not 'started'")
    if kinds[-1] != "stopped":
        raise HistoryProblem(f"last event is {kinds[-1]!r}, not 'stopped' (events: {kinds[-5:]})")
    if kinds.count("started") != 1 or kinds.count("stopped") != 1:
        raise HistoryProblem(f"expected one started and one stopped, got {kinds.count('started')} and "
                             f"{kinds.count('stopped')}")
    fatal = [e for e in events if e["event"] == "error" and e.get("fatal")]
    if fatal:
        raise HistoryProblem(f"fatal error in a clean run: {fatal[0]['error']}")
    versions = {(e["client"], e["client_version"]) for e in events}
    if len(versions) != 1:
        raise HistoryProblem(f"events name several clients/versions: {sorted(versions)}")


def owned_after(events: list[dict[str, Any]]) -> set[tuple[str, int]]:
    """Partitions owned after the last event (assigned adds; revoked/lost remove; stopped clears).

    HistoryProblem when a partition is revoked that is not owned, or assigned
    while already owned (cooperative assigned lists only additions).
    """
    owned: set[tuple[str, int]] = set()
    for e in events:
        tps = {(t, p) for t, p in e.get("partitions", [])}
        if e["event"] == "assigned":
            if e.get("protocol") == "eager":
                owned = set()
            dup = owned & tps
            if dup:
                raise HistoryProblem(f"assigned {sorted(dup)} already owned (owned: {sorted(owned)})")
            owned |= tps
        elif e["event"] in ("revoked", "lost"):
            missing = tps - owned
            if missing:
                raise HistoryProblem(f"{e['event']} {sorted(missing)} which is not owned (owned: {sorted(owned)})")
            owned -= tps
        elif e["event"] == "stopped":
            owned = set()
    return owned


def consumed_offsets(events: list[dict[str, Any]]) -> dict[tuple[str, int], set[int]]:
    """Offsets consumed per partition (from ``consumed`` events' ranges)."""
    out: dict[tuple[str, int], set[int]] = {}
    for e in events:
        if e["event"] == "consumed":
            out.setdefault((e["topic"], e["partition"]), set()).update(range(e["first_offset"], e["last_offset"] + 1))
    return out


def missing_records(events: list[dict[str, Any]], expected: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """Partition -> number of the first ``expected[tp]`` offsets never consumed (empty when complete)."""
    got = consumed_offsets(events)
    missing = {tp: n - len(got.get(tp, set()) & set(range(n))) for tp, n in expected.items()}
    return {tp: m for tp, m in missing.items() if m}


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.25) -> None:
    """Poll ``predicate`` until true; AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


# ---------------------------------------------------------------------------
# The helpers on hand-written histories
# ---------------------------------------------------------------------------

def _ev(event: str, **fields: Any) -> dict[str, Any]:
    return {"ts": 1.0, "member": "m1", "client": "x", "client_version": "1", "event": event, **fields}


CLEAN = [
    _ev("started"),
    _ev("assigned", partitions=[["t", 0], ["t", 1]], protocol="cooperative"),
    _ev("consumed", topic="t", partition=0, first_offset=0, last_offset=9, count=10),
    _ev("consumed", topic="t", partition=1, first_offset=0, last_offset=4, count=5),
    _ev("revoked", partitions=[["t", 1]], protocol="cooperative"),
    _ev("stopped", reason="sigterm"),
]


def test_clean_history_passes() -> None:
    check_clean_incarnation(CLEAN)
    assert owned_after(CLEAN[:-1]) == {("t", 0)}
    assert owned_after(CLEAN) == set()
    assert missing_records(CLEAN, {("t", 0): 10, ("t", 1): 5}) == {}


def test_missing_stopped_and_fatal_errors_are_caught() -> None:
    with pytest.raises(HistoryProblem, match="not 'stopped'"):
        check_clean_incarnation(CLEAN[:-1])
    with pytest.raises(HistoryProblem, match="fatal error"):
        check_clean_incarnation(CLEAN[:-1] + [_ev("error", error="boom", fatal=True), CLEAN[-1]])
    with pytest.raises(HistoryProblem, match="not 'started'"):
        check_clean_incarnation(CLEAN[1:])


def test_revoking_what_is_not_owned_and_double_assign_are_caught() -> None:
    with pytest.raises(HistoryProblem, match="not owned"):
        owned_after([_ev("revoked", partitions=[["t", 3]])])
    with pytest.raises(HistoryProblem, match="already owned"):
        owned_after([_ev("assigned", partitions=[["t", 0]], protocol="cooperative")] * 2)


def test_gaps_in_consumption_are_counted() -> None:
    assert missing_records(CLEAN, {("t", 0): 12, ("t", 1): 5, ("t", 2): 3}) == {("t", 0): 2, ("t", 2): 3}


def test_malformed_history_line_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "m1.jsonl"
    path.write_text(json.dumps(CLEAN[0]) + "\n" + json.dumps(_ev("consumed", topic="t")) + "\n")
    with pytest.raises(HistoryProblem, match="malformed"):
        load_history(path)
    path.write_text("".join(json.dumps(e) + "\n" for e in CLEAN))
    assert len(load_history(path)) == len(CLEAN)
