"""The wire log: what the wire tap saw of every member's group APIs, one JSON object a line.

This module is the single written-down definition of ``wire.jsonl``, as
:mod:`conformance.history` is of histories: its fields, its reader and how a
response is paired with its request. Standard library only. The writer is the
tap (:mod:`conformance.cluster.tap`), which decodes each frame with
:mod:`conformance.cluster.wire_decode`; the bytes a record carries as hex
(subscriptions, assignments) are decoded by :mod:`conformance.protocol`.

File: ``<run>/wire.jsonl``, appended and flushed per line by the tap (a reader
may see a last line still being written). Lines are in the order the tap saw
the frames, over all members.

Every record has :data:`COMMON_FIELDS`: ``ts`` (epoch ms when the tap saw the
frame), ``member`` (whose tap slot), ``api`` (:data:`APIS`), ``api_key``,
``version``, ``correlation_id``, ``direction`` (``request`` | ``response``),
the envelope ``group_id``, ``member_id``, ``group_instance_id``,
``generation``, ``protocol_type``, ``error_code`` (null where the frame has
none; a response carries ``group_id``/``member_id``/``generation`` from its
request when it lacks them), and from the tap ``slot`` and ``connection`` (a
per-tap connection number). Requests also have ``client_id``. Per API and
direction, :data:`API_FIELDS`. A frame that cannot be decoded is a record with
``undecodable`` (the reason) and ``raw`` (its first bytes, hex).

Pairing (:func:`pair_key`, :class:`Pending`, :func:`response_to`): a response
answers the earlier request of the same API, member, connection and
correlation id; correlation ids are unique per connection only. A record
without ``connection`` (hand-made ones) pairs by API, member and correlation id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Generic, Iterable, Iterator, TypeVar

Record = dict[str, Any]
V = TypeVar("V")

#: The group APIs the tap records.
APIS: tuple[str, ...] = ("OffsetCommit", "OffsetFetch", "OffsetForLeaderEpoch", "JoinGroup", "Heartbeat",
                         "LeaveGroup", "SyncGroup", "ConsumerGroupHeartbeat")

COMMON_FIELDS: tuple[str, ...] = ("ts", "member", "api", "api_key", "version", "correlation_id", "direction",
                                  "group_id", "member_id", "group_instance_id", "generation", "protocol_type",
                                  "error_code")

#: (api, direction) -> the fields a decoded record of it carries beyond the common ones.
API_FIELDS: dict[tuple[str, str], tuple[str, ...]] = {
    # protocols: [{name, metadata (subscription, hex)}], in the member's order of preference
    ("JoinGroup", "request"): ("protocols",),
    # members: [{member_id, group_instance_id, metadata}], filled for the leader only
    ("JoinGroup", "response"): ("leader", "protocol_name", "members"),
    # assignments: [{member_id, assignment (hex)}], the leader's only
    ("SyncGroup", "request"): ("protocol_name", "assignments"),
    ("SyncGroup", "response"): ("protocol_name", "assignment"),
    # offsets: [[topic, partition, offset]]; leader_epochs: [[topic, partition, committed leader epoch]]
    # (v6+, -1 for none; null below v6)
    ("OffsetCommit", "request"): ("offsets", "leader_epochs"),
    # partition_errors: [[topic, partition, error_code]]; error_code: the one code of all, else null
    ("OffsetCommit", "response"): ("partition_errors",),
    # partitions: [[topic, partition]] asked for (null: all of the group's); member_epoch (v9+, -1 classic)
    ("OffsetFetch", "request"): ("partitions", "member_epoch"),
    # fetched: [[topic, partition, committed_offset (-1: none), committed leader epoch (-1: none), error_code]]:
    # the offsets a member was told it resumes from; error_code the group's (v2+)
    ("OffsetFetch", "response"): ("fetched",),
    # epochs: [[topic, partition, leader_epoch asked about, current_leader_epoch]] (KIP-320 validation)
    ("OffsetForLeaderEpoch", "request"): ("epochs",),
    # epoch_ends: [[topic, partition, leader_epoch, end_offset, error_code]]: where that epoch ended
    ("OffsetForLeaderEpoch", "response"): ("epoch_ends",),
    ("LeaveGroup", "request"): ("members",),
}

#: What every line must have to be a record at all.
REQUIRED: tuple[str, ...] = ("ts", "member", "api", "direction")


class WireFormatError(ValueError):
    """A line that is not a wire record; says why."""


def validate_record(record: Any) -> None:
    """Raise :class:`WireFormatError` unless ``record`` is a wire record: an object with
    :data:`REQUIRED`, a numeric ``ts`` and a ``direction`` of request|response."""
    if not isinstance(record, dict):
        raise WireFormatError(f"frame is a {type(record).__name__}, not an object")
    for key in REQUIRED:
        if key not in record:
            raise WireFormatError(f"missing field {key!r}")
    if not isinstance(record["ts"], (int, float)) or isinstance(record["ts"], bool):
        raise WireFormatError(f"ts must be epoch ms, got {record['ts']!r}")
    if record["direction"] not in ("request", "response"):
        raise WireFormatError(f"direction must be request|response, got {record['direction']!r}")


def read_wire(lines: Iterable[str]) -> Iterator[tuple[int, Record | None, str | None]]:
    """Yield ``(line_number, record, problem)`` for every non-blank line: tolerant parsing,
    strict checking (a line that is not JSON or not a record yields ``record=None`` and why)."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            validate_record(record)
        except (json.JSONDecodeError, WireFormatError) as exc:
            yield number, None, str(exc)
            continue
        yield number, record, None


def load(path: Path) -> list[Record]:
    """Every record of a wire log, in file order; a line that is not a record (one being
    written, or damaged) is skipped. A missing file is an empty log."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    return [r for _, r, _ in read_wire(text.splitlines()) if r is not None]


def pair_key(record: Record) -> tuple:
    """The key a request and its response share: (api, member, connection, correlation id)."""
    return (record.get("api"), record.get("member"), record.get("connection"), record.get("correlation_id"))


class Pending(Generic[V]):
    """Requests awaiting their responses, read in file order: :meth:`request` files a value
    under a request, :meth:`response` takes the value of the request a response answers (None
    when none is pending: its request was not captured, or was answered already)."""

    def __init__(self) -> None:
        self._open: dict[tuple, V] = {}

    def request(self, record: Record, value: V) -> None:
        self._open[pair_key(record)] = value

    def response(self, record: Record) -> V | None:
        return self._open.pop(pair_key(record), None)


def response_to(records: list[Record], request: Record) -> Record | None:
    """The response in ``records`` (file order) that answers ``request``, one of them."""
    key = pair_key(request)
    seen = False
    for r in records:
        if r is request:
            seen = True
            continue
        if seen and r.get("direction") == "response" and pair_key(r) == key:
            return r
    return None
