"""Reading back what members did: the wire capture and the histories of one group.

Used by the reference consumer's real-broker tests and its rebalance bench to
assert from what crossed the wire (``wire.jsonl``, :mod:`conformance.cluster.tap`) and what
the members recorded (``members/<name>.jsonl``), never from a fault's flag.

Guarantees: every function is a pure function of the records it is given
(readers aside); a line that is not a record (a line being written while the
file is read) is skipped, never raised. Reading and request/response pairing
are the wire log's (:mod:`conformance.wirelog`); what a history says is owned
is :mod:`conformance.ownership`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conformance import ownership, wirelog
from conformance.protocol import Assignment, Subscription, decode_assignment, decode_subscription

TP = tuple[str, int]
Record = dict[str, Any]


def group_wire(path: Path, group_id: str) -> list[Record]:
    """The wire records of ``group_id`` (requests, and responses through their request), in file order."""
    return [r for r in wirelog.load(path) if r.get("group_id") == group_id]


def select(records: Iterable[Record], api: str, direction: str = "request", member: str | None = None) -> list[Record]:
    """Records of one API and direction, optionally of one member, in file order."""
    return [r for r in records if r.get("api") == api and r.get("direction") == direction
            and (member is None or r.get("member") == member)]


def response_to(records: list[Record], request: Record) -> Record | None:
    """The response that answers ``request`` (:func:`conformance.wirelog.response_to`)."""
    return wirelog.response_to(records, request)


def join_metadata(request: Record, protocol: str = "cooperative-sticky") -> bytes:
    """The subscription bytes a JoinGroup request carried for ``protocol``; KeyError naming what it had."""
    for p in request.get("protocols") or []:
        if p.get("name") == protocol:
            return bytes.fromhex(p.get("metadata") or "")
    raise KeyError(f"JoinGroup request of {request.get('member')} has no {protocol!r} protocol: "
                   f"{[p.get('name') for p in request.get('protocols') or []]}")


def join_subscription(request: Record, protocol: str = "cooperative-sticky") -> Subscription:
    """The decoded subscription of a JoinGroup request (DecodeError if it does not decode strictly)."""
    return decode_subscription(join_metadata(request, protocol))


def sync_assignment(response: Record) -> Assignment:
    """The decoded assignment of a SyncGroup response."""
    return decode_assignment(bytes.fromhex(response.get("assignment") or ""))


def owned_at(events: list[Record], ts: float) -> set[TP]:
    """What a history says its member owned at ``ts`` (:func:`conformance.ownership.owned_at`)."""
    return ownership.owned_at(events, ts)


def generation_at(events: list[Record], ts: float) -> int | None:
    """The generation of the last event at or before ``ts`` that names one (None if none does)."""
    generation = None
    for e in events:
        if e.get("ts", 0) > ts:
            break
        if e.get("generation") is not None:
            generation = e["generation"]
    return generation


def in_window(records: Iterable[Record], start_ts: float, end_ts: float) -> list[Record]:
    """Records with ``start_ts < ts < end_ts``."""
    return [r for r in records if start_ts < r.get("ts", 0) < end_ts]


def heartbeats_while_joining(records: list[Record], member: str) -> list[tuple[Record, list[Record]]]:
    """For each answered JoinGroup request of ``member``: the Heartbeat requests it sent before the answer.

    Java sends none then (its heartbeat thread is disabled in PREPARING_REBALANCE); one sent just
    before the JoinGroup may still be recorded after it, by the tap's own scheduling.
    """
    out = []
    heartbeats = select(records, "Heartbeat", "request", member)
    for join in select(records, "JoinGroup", "request", member):
        answer = response_to(records, join)
        if answer is not None:
            out.append((join, in_window(heartbeats, join["ts"], answer["ts"])))
    return out


def heartbeats_while_syncing(records: list[Record], member: str) -> list[tuple[Record, Record, list[Record]]]:
    """For each successful JoinGroup of ``member`` and its SyncGroup: the Heartbeats of that generation between.

    Returns ``(join response, SyncGroup request, heartbeat requests)`` for every SyncGroup
    request of ``member`` whose generation a successful JoinGroup response gave it; the
    heartbeats are those carrying that generation sent after the JoinGroup response and
    before the SyncGroup response (Java heartbeats in COMPLETING_REBALANCE).
    """
    out = []
    heartbeats = select(records, "Heartbeat", "request", member)
    joined = {r.get("generation"): r for r in select(records, "JoinGroup", "response", member)
              if r.get("error_code") == 0}
    for sync in select(records, "SyncGroup", "request", member):
        join = joined.get(sync.get("generation"))
        answer = response_to(records, sync)
        if join is None or answer is None:
            continue
        during = [h for h in in_window(heartbeats, join["ts"], answer["ts"])
                  if h.get("generation") == sync.get("generation")]
        out.append((join, sync, during))
    return out
