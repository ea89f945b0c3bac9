"""``await stable`` waits for a member whose fault healed to be back (issue #38 item 8).

Measured before: a ``cut m0 for=14s`` then ``await stable`` ended the cell 0.2 s after the heal,
before the cut member sent a single request, so its return (fencing answers, rejoin, what it
consumed meanwhile) was never observed. The observer now reads the nemesis log's heals and holds
the group unstable until the coordinator has answered the healed member without error.
"""

from __future__ import annotations

import json
from pathlib import Path

from conformance import config
from conformance.history import now_ms
from conformance.scenarios.observe import GroupObserver

TOPICS = {"orders": 2}


def _heartbeat(ts: float, member: str, error: int = 0) -> list[dict]:
    req = {"ts": ts, "member": member, "api": "Heartbeat", "direction": "request", "connection": 1,
           "correlation_id": int(ts), "generation": 3}
    return [req, {**req, "ts": ts + 2, "direction": "response", "error_code": error}]


def _observer(tmp_path: Path, wire: list[dict], nemesis: list[dict],
              owned: dict[str, list[int]] | None = None) -> GroupObserver:
    """Each member owns its partitions of ``owned`` (default: m0 orders-0, m1 orders-1) since 20 s
    ago; ``wire`` and ``nemesis`` as given."""
    members = tmp_path / "members"
    members.mkdir()
    long_ago = now_ms() - 20_000
    for name, parts in (owned or {"m0": [0], "m1": [1]}).items():
        events = [{"ts": long_ago, "member": name, "event": "started"},
                  {"ts": long_ago + 1, "member": name, "event": "assigned",
                   "partitions": [["orders", p] for p in parts]}]
        (members / f"{name}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    (tmp_path / "wire.jsonl").write_text("".join(json.dumps(r) + "\n" for r in wire), encoding="utf-8")
    (tmp_path / "nemesis.jsonl").write_text("".join(json.dumps(r) + "\n" for r in nemesis), encoding="utf-8")
    return GroupObserver(members, tmp_path / "wire.jsonl", None, quiet_ms=config.QUIET_MS,
                         nemesis_log=tmp_path / "nemesis.jsonl")


def _cut(ts: float) -> list[dict]:
    """m0's proxy down 14 s, up at ``ts``."""
    return [{"ts": ts - 14_000, "fault": "proxy-disable", "target": "m0", "phase": "invoke", "details": {}},
            {"ts": ts, "fault": "proxy-enable", "target": "m0", "phase": "heal", "details": {}}]


def test_a_member_healed_a_moment_ago_and_silent_since_keeps_the_group_unstable(tmp_path: Path) -> None:
    # m0's cut healed 6 s ago; m1 heartbeats on, m0 has sent nothing since: ownership looks settled
    # and quiet, but m0's return has not been seen.
    now = now_ms()
    wire = _heartbeat(now - 30_000, "m0") + _heartbeat(now - 5_000, "m1")
    ok, why = _observer(tmp_path, wire, _cut(now - 6_000)).stable({"m0": {"orders"}, "m1": {"orders"}}, TOPICS)
    assert (ok, why) == (False, "m0 has not been answered by the coordinator since its proxy-enable")


def test_a_fencing_answer_after_the_heal_is_not_a_return(tmp_path: Path) -> None:
    # m0's first heartbeat after the heal is answered UNKNOWN_MEMBER_ID (25): its session expired
    # during the cut; until it rejoins, the group has not settled with it.
    now = now_ms()
    wire = _heartbeat(now - 5_500, "m0", error=25) + _heartbeat(now - 5_000, "m1")
    assert not _observer(tmp_path, wire, _cut(now - 6_000)).stable({"m0": {"orders"}, "m1": {"orders"}}, TOPICS)[0]


def test_a_member_answered_after_the_heal_is_back(tmp_path: Path) -> None:
    # m0's heartbeat 5.5 s ago, after the heal, was answered without error: the group is stable.
    now = now_ms()
    wire = _heartbeat(now - 5_500, "m0") + _heartbeat(now - 5_000, "m1")
    ok, why = _observer(tmp_path, wire, _cut(now - 6_000)).stable({"m0": {"orders"}, "m1": {"orders"}}, TOPICS)
    assert (ok, why) == (True, "stable")


def test_a_healed_member_that_stopped_is_not_waited_for(tmp_path: Path) -> None:
    # m0 never came back and is no longer live (its client stopped it); m1 took both partitions
    # long ago: only m1 is awaited.
    now = now_ms()
    wire = _heartbeat(now - 5_000, "m1")
    obs = _observer(tmp_path, wire, _cut(now - 6_000), owned={"m0": [], "m1": [0, 1]})
    assert obs.stable({"m1": {"orders"}}, TOPICS) == (True, "stable")
