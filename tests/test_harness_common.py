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

from conformance import wirelog
from conformance.history import read_history


class HistoryProblem(AssertionError):
    """A harness history that breaks the format or the ordering rules."""


def produce_records(bootstrap: str, topic: str, per_partition: int, partitions: int) -> dict[tuple[str, int], int]:
    """Write ``per_partition`` JSON records ``{"seq": i}`` to each partition of ``topic`` (acks=all).

    Returns (topic, partition) -> records written; raises if the broker does not acknowledge them all.
    """
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        futures = [producer.send(topic, value=json.dumps({"seq": i}).encode(), partition=i % partitions)
                   for i in range(partitions * per_partition)]
        producer.flush(30)
        for f in futures:
            f.get(timeout=30)
    finally:
        producer.close()
    return {(topic, p): per_partition for p in range(partitions)}


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


def incarnations(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The history split at each ``started`` event (one list per process incarnation)."""
    out: list[list[dict[str, Any]]] = []
    for e in events:
        if e["event"] == "started" or not out:
            out.append([])
        out[-1].append(e)
    return out


def ownership_problems(owned: dict[str, set[tuple[str, int]]], everything: set[tuple[str, int]]) -> list[str]:
    """Why ``owned`` (member -> partitions) is not "every partition owned exactly once" ([] when it is)."""
    problems = []
    seen: dict[tuple[str, int], str] = {}
    for member, tps in sorted(owned.items()):
        for tp in sorted(tps):
            if tp in seen:
                problems.append(f"{tp} owned by both {seen[tp]} and {member}")
            seen[tp] = member
    if set(seen) - everything:
        problems.append(f"owned but not in the topic: {sorted(set(seen) - everything)}")
    if everything - set(seen):
        problems.append(f"owned by nobody: {sorted(everything - set(seen))}")
    return problems


# -- the wire capture (conformance/wirelog.py) ---------------------------

def wire_records(path: Path) -> list[dict[str, Any]]:
    """Every record of a run's wire.jsonl (a line being written at the end is skipped)."""
    return wirelog.load(path)


def requests(records: list[dict[str, Any]], api: str, member: str, after_ts: float = 0.0) -> list[dict[str, Any]]:
    """``api`` requests that crossed ``member``'s tap at or after ``after_ts``."""
    return [r for r in records if r.get("api") == api and r.get("direction") == "request"
            and r.get("member") == member and r.get("ts", 0) >= after_ts]


def last_assignment_generation(records: list[dict[str, Any]], member: str) -> int | None:
    """Generation of the last successful SyncGroup response ``member`` received (None if none)."""
    gens = [r["generation"] for r in records if r.get("api") == "SyncGroup" and r.get("direction") == "response"
            and r.get("member") == member and r.get("error_code") == 0 and isinstance(r.get("generation"), int)]
    return gens[-1] if gens else None


def assigned_after_generation(records: list[dict[str, Any]], member: str, generation: int) -> set[tuple[str, int]]:
    """Partitions in ``member``'s successful SyncGroup responses of generations above ``generation``."""
    from conformance.protocol import decode_assignment

    out: set[tuple[str, int]] = set()
    for r in records:
        if (r.get("api") == "SyncGroup" and r.get("direction") == "response" and r.get("member") == member
                and r.get("error_code") == 0 and isinstance(r.get("generation"), int)
                and r["generation"] > generation and r.get("assignment")):
            for tps in decode_assignment(bytes.fromhex(r["assignment"])).assigned_partitions:
                out.update((tps.topic, p) for p in tps.partitions)
    return out


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


def test_ownership_exactly_once_is_checked() -> None:
    everything = {("t", 0), ("t", 1), ("t", 2)}
    assert ownership_problems({"a": {("t", 0)}, "b": {("t", 1), ("t", 2)}}, everything) == []
    assert ownership_problems({"a": {("t", 0), ("t", 1)}, "b": {("t", 1), ("t", 2)}}, everything) == [
        "('t', 1) owned by both a and b"]
    assert ownership_problems({"a": {("t", 0)}}, everything) == ["owned by nobody: [('t', 1), ('t', 2)]"]


def test_incarnations_split_at_started() -> None:
    assert [len(i) for i in incarnations(CLEAN + CLEAN[:2])] == [len(CLEAN), 2]


# Story: m1 was assigned t-0 and t-1 in generation 1 and was then killed; m2 got t-1 in generation 1
# and, after m1's session expired, everything in generation 2. A LeaveGroup from m2 only.
def _sync(member: str, generation: int, partitions: list[int], error: int = 0) -> dict[str, Any]:
    from conformance.protocol import Assignment, TopicPartitions, encode_assignment

    blob = encode_assignment(Assignment(version=0, assigned_partitions=(TopicPartitions("t", tuple(partitions)),)))
    return {"ts": float(generation), "member": member, "api": "SyncGroup", "direction": "response",
            "generation": generation, "error_code": error, "assignment": blob.hex()}


WIRE = [
    _sync("m1", 1, [0]), _sync("m2", 1, [1]),
    _sync("m2", 2, [0, 1]), _sync("m2", 3, [1], error=27),
    {"ts": 9.0, "member": "m2", "api": "LeaveGroup", "direction": "request", "members": []},
]


def test_wire_helpers_find_the_later_generation_and_the_leave() -> None:
    assert last_assignment_generation(WIRE, "m1") == 1
    assert assigned_after_generation(WIRE, "m2", 1) == {("t", 0), ("t", 1)}
    assert assigned_after_generation(WIRE, "m2", 2) == set()  # generation 3 failed (error 27)
    assert not assigned_after_generation(WIRE[:2], "m2", 1)  # no later generation: the check fails
    assert requests(WIRE, "LeaveGroup", "m2") and not requests(WIRE, "LeaveGroup", "m1")
    assert not requests(WIRE, "LeaveGroup", "m2", after_ts=10.0)
