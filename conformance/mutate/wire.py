"""Editing the wire capture, shared by the families: a leader SyncGroup's assignments (and the
responses that carried its bytes), the cooperative subscriptions of JoinGroup requests, the owned
partitions a leader saw declared.
"""

from __future__ import annotations

from typing import Any, Iterator

from conformance import config
from conformance.mutate.run_edit import TP, RunEdit
from conformance.protocol import Assignment, DecodeError, TopicPartitions, decode_subscription, encode_assignment


def _group(tps) -> tuple[TopicPartitions, ...]:
    by: dict[str, set[int]] = {}
    for t, p in tps:
        by.setdefault(t, set()).add(int(p))
    return tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(by.items()))


def _flat(tps: tuple[TopicPartitions, ...]) -> list[TP]:
    return [(tp.topic, p) for tp in tps for p in tp.partitions]


def _replace_leader_view(run: RunEdit, request_i: int, member_id: str, old: str, new: str) -> int:
    """Put ``new`` subscription bytes where the leader's JoinGroup responses after frame ``request_i``
    show ``member_id`` with ``old`` (what the broker forwards of that join); how many were changed."""
    changed = 0
    for f in run.wire[request_i + 1:]:
        if f.get("api") == "JoinGroup" and f.get("direction") == "response":
            for m in f.get("members") or []:
                if m.get("member_id") == member_id and m.get("metadata") == old:
                    m["metadata"] = new
                    changed += 1
        if f.get("api") == "JoinGroup" and f.get("direction") == "request" and f.get("member_id") == member_id:
            break
    return changed


def _cooperative_subscriptions(frame: dict) -> Iterator[tuple[dict, Any]]:
    """(protocol, decoded subscription) of each cooperative protocol of a JoinGroup request that
    decodes at v1 or later (one that can declare owned partitions)."""
    for proto in frame.get("protocols") or []:
        if proto.get("name") not in config.COOPERATIVE_ASSIGNORS:
            continue
        try:
            sub = decode_subscription(bytes.fromhex(proto["metadata"]))
        except (DecodeError, ValueError):
            continue
        if sub.version >= 1:
            yield proto, sub


def _leader_syncs(run: RunEdit, min_members: int = 2) -> list[int]:
    return [i for i in run.frames("SyncGroup", "request") if len(run.wire[i].get("assignments") or []) >= min_members]


def _sync_response(run: RunEdit, member_id: str, generation: int, after: int) -> int | None:
    for j in range(after, len(run.wire)):
        f = run.wire[j]
        if (f.get("api") == "SyncGroup" and f.get("direction") == "response" and f.get("member_id") == member_id
                and f.get("generation") == generation and (f.get("error_code") or 0) == 0):
            return j
    return None


def _set_assignment(run: RunEdit, i: int, entry: dict, new_hex: str) -> None:
    """Give ``entry`` (an assignment of the leader SyncGroup request at wire line ``i``) the bytes
    ``new_hex``, and the member's SyncGroup response of that generation too when it carried the old
    ones (the broker forwards the leader's bytes)."""
    old, entry["assignment"] = entry["assignment"], new_hex
    j = _sync_response(run, entry["member_id"], run.wire[i].get("generation"), i)
    if j is not None and run.wire[j].get("assignment") == old:
        run.wire[j]["assignment"] = new_hex


def _move(run: RunEdit, i: int, given: dict[str, Any], moves: list[tuple[str, list, list]]) -> None:
    """Re-encode, in the leader SyncGroup request at wire line ``i`` (and the responses that carried
    it), each member's decoded assignment ``given[mid]`` with the partitions ``add`` added and ``drop``
    removed, for each ``(mid, add, drop)`` of ``moves``."""
    changed = {}
    for mid, add, drop in moves:
        d = given[mid]
        tps = [x for x in _flat(d.assigned_partitions) if x not in drop] + add
        changed[mid] = encode_assignment(Assignment(d.version, _group(tps), d.user_data, d.trailing)).hex()
    for a in run.wire[i]["assignments"]:
        if a["member_id"] in changed:
            _set_assignment(run, i, a, changed[a["member_id"]])
