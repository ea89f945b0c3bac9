"""E5/not-yet-applied on a recorded real run (fixtures/client-behaviour/), and the bugs it must not hide.

In the recorded crash-restart cell (reference, Java, librdkafka, Sarama 1.61.1, kafka-python
3.0.12, franz-go 1.22.3; broker 4.4.0), the generation-4 SyncGroup response gives m3-sarama
orders-4 and orders-8 (wire line 555). 93 ms later, a new rebalance under way, Sarama rejoins
declaring exactly those two owned (line 577): the last assignment it received, as KIP-429 asks.
Its ConsumerGroupHandler.Setup never ran for generation 4, so its history has no event of that
generation, and it records orders-4 only in generation 5, 1.08 s after the JoinGroup (outside
E5/clock-slack's heartbeat). E5's history branch read it as a stale declaration: a false alarm.
It must be an allowed finding of E5/not-yet-applied, and E5 must pass.

The bug classes the rule could hide are still caught, each in a mutant copy of the same run:

- ``revoked``: m3's history records orders-4 revoked 40 ms after that SyncGroup response, before
  the JoinGroup (stamped generation 3, the harness's last applied one): the member gave it up and
  still declares it.
- ``not-synced``: the generation-4 SyncGroup response gives m3 only orders-8: declaring orders-4 is
  a stale claim by the wire's exact check.
- ``applied``: m3's history has an event of generation 4 (a commit of orders-8, 50 ms after the
  SyncGroup response) but no orders-4: the member applied that generation, and its history
  disagrees with what it declares.

All copies are judged by the session's one real ``conformance report`` (tests/recorded.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.protocol import Assignment, TopicPartitions, encode_assignment
from recorded import TEST_TIMEOUT, copy_run, read_jsonl, rename, unpack, write_jsonl

pytestmark = [pytest.mark.slow, pytest.mark.timeout(TEST_TIMEOUT)]

ARCHIVE = (Path(__file__).resolve().parent.parent / "fixtures" / "client-behaviour"
           / "sarama-1.61.1-crash-restart-not-yet-applied.tar.xz")
MEMBER = "m3-sarama"
SYNC_LINE, JOIN_LINE = 555, 577   # generation 4's SyncGroup response to m3, and m3's next JoinGroup
RULE = "E5/not-yet-applied"
MUTANTS = ("revoked", "not-synced", "applied")


def _rewrite(path: Path, edit) -> None:
    write_jsonl(path, edit(read_jsonl(path)))


def _sync_frame(run_dir: Path) -> dict:
    frame = json.loads((run_dir / "wire.jsonl").read_text(encoding="utf-8").splitlines()[SYNC_LINE - 1])
    assert (frame["member"], frame["api"], frame["direction"], frame["generation"]) == (
        MEMBER, "SyncGroup", "response", 4), frame
    return frame


def _insert_event(run_dir: Path, event: dict) -> None:
    def edit(events: list[dict]) -> list[dict]:
        assert not any(e.get("generation") == 4 for e in events), "the recorded run: nothing of generation 4"
        at = next(i for i, e in enumerate(events) if e["ts"] > event["ts"])
        return events[:at] + [event] + events[at:]
    _rewrite(run_dir / "members" / f"{MEMBER}.jsonl", edit)


def _mutate(name: str, run_dir: Path) -> None:
    sync_ts = _sync_frame(run_dir)["ts"]
    history = read_jsonl(run_dir / "members" / f"{MEMBER}.jsonl")
    gen3 = next(e for e in history if e["event"] == "assigned" and e["generation"] == 3)
    if name == "revoked":
        _insert_event(run_dir, {**gen3, "event": "revoked", "ts": sync_ts + 40, "partitions": [["orders", 4]]})
    elif name == "applied":
        base = {k: v for k, v in gen3.items() if k != "partitions"}
        _insert_event(run_dir, {**base, "event": "committed", "ts": sync_ts + 50, "generation": 4,
                                "offsets": [["orders", 8, 39]], "error": None})
    elif name == "not-synced":
        only_8 = encode_assignment(Assignment(version=3, assigned_partitions=(TopicPartitions("orders", (8,)),))).hex()

        def edit(frames: list[dict]) -> list[dict]:
            frames[SYNC_LINE - 1]["assignment"] = only_8
            return frames
        _rewrite(run_dir / "wire.jsonl", edit)
    rename(run_dir, f"-{name}")


def recorded_copies(root: Path) -> dict[str, Path]:
    """The recorded run and its mutants (the module docstring tells each story)."""
    src = unpack(ARCHIVE, root / "original")
    dirs = {name: copy_run(src, root / "runs" / name) for name in ("recorded", *MUTANTS)}
    for name in MUTANTS:
        _mutate(name, dirs[name])
    return dirs


def test_sarama_declaring_its_last_assignment_before_its_callback_is_allowed(recorded_verdicts):
    v = recorded_verdicts["recorded"]
    e5 = v["invariants"]["E5"]
    assert e5["status"] == "pass" and e5["violations"] == [], e5["violations"]
    (allowed,) = [f for f in e5["allowed"] if f["allowed_by"] == RULE]
    assert allowed["members"] == [MEMBER] and allowed["partitions"] == [["orders", 4]], allowed
    assert allowed["evidence"] == {"wire_line": JOIN_LINE, "kind": "not-yet-applied", "assignment_wire_line": SYNC_LINE,
                                   "assignment_generation": 4, "assignment_applied": False}, allowed
    assert "SyncGroup response of generation 4 (wire line 555) 93 ms before" in allowed["message"], allowed["message"]
    assert v["allowed"][RULE] == 1


def _e5_of_m3(verdict: dict) -> tuple[dict, list[dict]]:
    e5 = verdict["invariants"]["E5"]
    assert not [f for f in e5["allowed"] if f["allowed_by"] == RULE], e5["allowed"]
    assert e5["status"] == "fail", e5
    return e5, [x for x in e5["violations"] if x["culprit"] == MEMBER and ["orders", 4] in x["partitions"]]


def test_declaring_a_partition_revoked_after_the_sync_still_fails_e5(recorded_verdicts):
    _e5, (found,) = _e5_of_m3(recorded_verdicts["revoked"])
    assert found["evidence"]["kind"] == "stale" and found["evidence"]["wire_line"] == JOIN_LINE, found
    assert "which its history says it does not own" in found["message"], found["message"]


def test_declaring_a_partition_the_last_sync_did_not_give_still_fails_e5(recorded_verdicts):
    _e5, (found,) = _e5_of_m3(recorded_verdicts["not-synced"])
    assert found["evidence"]["kind"] == "stale-claim" and found["evidence"]["assignment_wire_line"] == SYNC_LINE, found
    assert found["evidence"]["wire_line"] == JOIN_LINE and found["partitions"] == [["orders", 4]], found


def test_declaring_a_partition_after_applying_a_generation_without_it_still_fails_e5(recorded_verdicts):
    _e5, (found,) = _e5_of_m3(recorded_verdicts["applied"])
    assert found["evidence"]["kind"] == "stale" and found["evidence"]["wire_line"] == JOIN_LINE, found
