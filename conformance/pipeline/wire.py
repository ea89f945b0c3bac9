"""Decoding the wire capture (``wire.jsonl``, :mod:`conformance.cluster.tap`) into rows.

Runs in Python during ingestion, before Spark sees the data: the embedded
bytes (subscriptions, assignments, assignor user data) are decoded with the
project's codec (:mod:`conformance.protocol`), so no Python UDF and no Python
worker is needed inside Spark (a Python worker costs seconds per job here).
Only JoinGroup/SyncGroup frames carry bytes, so this stays small even when the
histories are large.

Guarantees:
- every non-blank line yields either rows or one ``malformed`` entry with the
  file and line (a frame the tap could not decode is reported the same way,
  with the tap's reason); nothing is dropped silently and nothing raises;
- a subscription or assignment that does not decode strictly yields a row
  with ``decode_error`` set (E1/E2 judge those), never an exception;
- embedded bytes that are not hex are damage to the capture, not a client's
  bytes (the tap writes whatever crossed the wire as hex): the frame's line is
  malformed, and none of its rows (frame, subscriptions, assignments, commits)
  is kept, so no invariant judges a client on it;
- a received assignment (SyncGroup response) carries the generation of the
  SyncGroup request it answers (the response itself has none), or None when
  the capture has no such request; an OffsetCommit response's errors go to
  the rows of the request it answers. Reading and pairing are the wire log's
  own (:mod:`conformance.wirelog`).
- OffsetFetch frames (what a member was told its committed offsets are) make
  no row and no malformed entry (:data:`UNJUDGED_APIS`): no check reads them;
  they are in ``wire.jsonl`` for the reader of a finding;
- an OffsetForLeaderEpoch response (where a consumer was told a leader epoch
  ended, KIP-320) makes one ``epoch_ends`` row per partition and no frame row
  (it is no group API); an undecodable one (a version before 2) makes nothing;
- an OffsetCommit request's rows carry the leader epoch it committed each
  offset with (``leader_epoch``, -1 for none);
- topics named by id (OffsetCommit v10+, ConsumerGroupHeartbeat) are named
  by topic in every row, through the manifest's ``topic_ids``; a frame with an
  id the manifest does not name is a malformed line (its partitions cannot be
  told apart from another topic's), never a row under the id;
- a ConsumerGroupHeartbeat (KIP-848) frame is one ``heartbeats`` row: a
  request's ``owned`` and ``subscribed`` and a response's ``assigned`` are
  null where the frame omits them (the protocol's "unchanged"), an empty list
  where it sends none; a response carries its request's epoch, line and time
  (``request_epoch``, ``request_line``, ``request_ts``; null when the capture
  has no such request) and the broker's ``error_message``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from conformance.protocol import (
    DecodeError,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_subscription,
)
from conformance.protocol.userdata import STICKY_V0, STICKY_V1, classify_userdata
from conformance.wirelog import Pending, read_wire


@dataclass
class WireRows:
    """Rows of the six wire tables plus the malformed lines, for one file."""

    frames: list[dict] = field(default_factory=list)
    subscriptions: list[dict] = field(default_factory=list)
    assignments: list[dict] = field(default_factory=list)
    commits: list[dict] = field(default_factory=list)
    heartbeats: list[dict] = field(default_factory=list)
    epoch_ends: list[dict] = field(default_factory=list)
    malformed: list[dict] = field(default_factory=list)


def _tps(tps: Iterable[Any]) -> list[dict]:
    return [{"topic": tp.topic, "partition": int(p)} for tp in tps for p in tp.partitions]


def _hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def _userdata(data: bytes | None, assignor: str | None) -> dict:
    try:
        info = classify_userdata(data, assignor)
    except Exception as exc:  # the classifier must not take ingestion down
        return {"userdata_format": "unknown", "userdata_note": f"classifier failed: {exc}"}
    previous = [{"topic": tp["topic"], "partition": int(part)}
                for tp in info.fields.get("previous_assignment", []) for part in tp["partitions"]]
    return {"userdata_format": info.format, "userdata_note": info.note, "userdata_ambiguous": bool(info.ambiguous),
            "userdata_previous": previous if info.format in (STICKY_V0, STICKY_V1) else None}


def canonical(sub: Subscription) -> Subscription:
    """The same content as Java writes it: topics sorted, owned partitions sorted by topic then partition.

    Java sorts because the broker compares member metadata byte for byte and an
    unstable order causes needless rebalances (a member whose metadata changed
    makes the coordinator rebalance).
    """
    owned: dict[str, set[int]] = {}
    for tp in sub.owned_partitions:
        owned.setdefault(tp.topic, set()).update(tp.partitions)
    return replace(sub, topics=tuple(sorted(sub.topics)),
                   owned_partitions=tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(owned.items())))


def _bytes_of(text: str, what: str) -> bytes:
    """The bytes a frame's hex field holds; ValueError (the line is damaged) when it is not hex."""
    try:
        return bytes.fromhex(text)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{what} is not hex, so the capture is damaged (the tap writes every byte "
                         f"as hex): {exc}") from None


def decode_subscription_row(metadata_hex: str | None, assignor: str | None) -> dict:
    """Columns describing one subscription's bytes (strict decode, canonical re-encode)."""
    row: dict[str, Any] = {"metadata_hex": metadata_hex}
    data = _bytes_of(metadata_hex or "", "metadata")
    try:
        sub = decode_subscription(data)
    except DecodeError as exc:
        row["decode_error"] = str(exc)
        return row
    row.update(
        version=sub.version,
        topics=list(sub.topics),
        owned=_tps(sub.owned_partitions),
        sub_generation=sub.generation_id,
        rack_id=sub.rack_id,
        userdata_hex=_hex(sub.user_data),
        trailing_len=len(sub.trailing),
    )
    row.update(_userdata(sub.user_data, assignor))
    try:
        row["canonical_equal"] = encode_subscription(canonical(sub)) == data
    except Exception as exc:
        row["canonical_equal"] = False
        row["canonical_error"] = str(exc)
    return row


def decode_assignment_row(assignment_hex: str | None, assignor: str | None) -> dict:
    row: dict[str, Any] = {"assignment_hex": assignment_hex}
    if not assignment_hex:
        # An empty assignment (e.g. a failed SyncGroup) carries no bytes to judge.
        row["empty"] = True
        return row
    data = _bytes_of(assignment_hex, "assignment")
    try:
        a = decode_assignment(data)
    except DecodeError as exc:
        row["decode_error"] = str(exc)
        return row
    row.update(version=a.version, partitions=_tps(a.assigned_partitions), userdata_hex=_hex(a.user_data))
    row.update(_userdata(a.user_data, assignor))
    return row


#: APIs the tap records as evidence for people (drafts, timelines) that no check reads yet: no row.
UNJUDGED_APIS: tuple[str, ...] = ("OffsetFetch",)

_ENVELOPE = ("ts", "member", "api", "api_key", "version", "correlation_id", "direction", "group_id",
             "member_id", "group_instance_id", "generation", "protocol_type", "error_code", "leader",
             "protocol_name", "member_epoch")


#: Tables of :class:`WireRows` that one frame's rows go to (all of a line's rows, or none).
_TABLES = ("frames", "subscriptions", "assignments", "commits", "heartbeats", "epoch_ends")


def decode_wire(run: str, file: str, lines: Iterable[str], topic_ids: dict[str, str] | None = None) -> WireRows:
    """Decode one run's ``wire.jsonl``; see the module docstring for guarantees. ``topic_ids``: the
    manifest's topic -> id (hex)."""
    out = WireRows()
    names = {tid.lower(): topic for topic, tid in (topic_ids or {}).items()}
    # Requests awaiting their response: a SyncGroup's generation, an OffsetCommit's rows, a heartbeat's request.
    pending: Pending[Any] = Pending()
    for number, f, problem in read_wire(lines):
        if problem is not None:
            out.malformed.append({"run": run, "file": file, "line": number, "problem": problem})
            continue
        assert f is not None  # read_wire: a record whenever there is no problem
        if f.get("api") in UNJUDGED_APIS:
            continue
        try:
            rows = WireRows()
            _decode_frame(run, number, f, rows, pending, names)
            for name in _TABLES:
                getattr(out, name).extend(getattr(rows, name))   # all of a line's rows, or none
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            out.malformed.append({"run": run, "file": file, "line": number, "problem": str(exc)})
    return out


def _topic_of(names: dict[str, str], topic_id: str) -> str:
    """The topic the manifest names ``topic_id`` (hex); ValueError when it names none."""
    topic = names.get(str(topic_id).lower())
    if topic is None:
        raise ValueError(f"topic id {topic_id} is not in the manifest's topic_ids "
                         f"({', '.join(f'{t}={i}' for i, t in sorted(names.items())) or 'none recorded'}): "
                         f"its partitions cannot be named")
    return topic


def _id_tps(names: dict[str, str], tps: Any) -> list[dict] | None:
    """[{topic, partition}] of a heartbeat's [{topic_id, partitions}] (None stays None: "unchanged")."""
    if tps is None:
        return None
    return [{"topic": _topic_of(names, t["topic_id"]), "partition": int(p)} for t in tps for p in t["partitions"]]


def _heartbeat(base: dict, f: dict, pending: Pending[Any], names: dict[str, str]) -> dict:
    """The ``heartbeats`` row of one ConsumerGroupHeartbeat frame (module docstring)."""
    row = {**base, "direction": f["direction"], "member_id": f.get("member_id"),
           "group_instance_id": f.get("group_instance_id"), "member_epoch": f.get("member_epoch"),
           "error_code": f.get("error_code"), "owned": None, "subscribed": None, "assigned": None,
           "request_epoch": None, "request_line": None, "request_ts": None,
           "error_message": None if f.get("error_message") is None else str(f["error_message"])}
    if f["direction"] == "request":
        row["owned"] = _id_tps(names, f.get("owned"))
        subscribed = f.get("subscribed_topic_names")
        row["subscribed"] = None if subscribed is None else [str(t) for t in subscribed]
        pending.request(f, (f.get("member_epoch"), base["line"], base["ts"]))
    else:
        row["assigned"] = _id_tps(names, f.get("assigned"))
        row["request_epoch"], row["request_line"], row["request_ts"] = pending.response(f) or (None, None, None)
    return row


def _decode_frame(run: str, number: int, f: dict, out: WireRows, pending: Pending[Any],
                  names: dict[str, str]) -> None:
    base = {"run": run, "line": number, "ts": float(f["ts"]), "member": f["member"]}
    if f["api"] == "OffsetForLeaderEpoch":   # no frame row; an undecodable one carries no epoch_ends
        if f["direction"] == "response":
            out.epoch_ends.extend({**base, "topic": str(topic), "partition": int(partition), "leader_epoch": int(epoch),
                                   "end_offset": int(end), "error_code": int(error)}
                                  for topic, partition, epoch, end, error in f.get("epoch_ends") or [])
        return
    frame = {"run": run, "line": number, **{k: f.get(k) for k in _ENVELOPE}}
    frame["ts"] = float(f["ts"])
    if f.get("undecodable"):
        frame["undecodable"] = str(f["undecodable"])
    frame["n_members"] = len(f.get("members") or []) if isinstance(f.get("members"), list) else None
    out.frames.append(frame)
    if f.get("undecodable"):
        return
    api, direction = f["api"], f["direction"]
    if api == "JoinGroup" and direction == "request":
        for index, proto in enumerate(f.get("protocols") or []):
            row = {**base, "source": "request", "subject_member_id": f.get("member_id"), "generation": f.get("generation"),
                   "protocol_name": proto["name"], "protocol_index": index}
            row.update(decode_subscription_row(proto.get("metadata"), proto["name"]))
            out.subscriptions.append(row)
    elif api == "JoinGroup" and direction == "response":
        for m in f.get("members") or []:
            row = {**base, "source": "leader-view", "subject_member_id": m["member_id"], "generation": f.get("generation"),
                   "protocol_name": f.get("protocol_name"), "protocol_index": None,
                   "group_instance_id": m.get("group_instance_id")}
            row.update(decode_subscription_row(m.get("metadata"), f.get("protocol_name")))
            out.subscriptions.append(row)
    elif api == "SyncGroup" and direction == "request":
        # The response carries no generation: it is the request's.
        pending.request(f, f.get("generation"))
        for a in f.get("assignments") or []:
            row = {**base, "source": "leader", "subject_member_id": a["member_id"], "generation": f.get("generation"),
                   "protocol_name": f.get("protocol_name"), "error_code": None}
            row.update(decode_assignment_row(a.get("assignment"), f.get("protocol_name")))
            out.assignments.append(row)
    elif api == "SyncGroup" and direction == "response":
        row = {**base, "source": "received", "subject_member_id": None,
               "generation": pending.response(f),
               "protocol_name": f.get("protocol_name"), "error_code": f.get("error_code")}
        row.update(decode_assignment_row(f.get("assignment"), f.get("protocol_name")))
        out.assignments.append(row)
    elif api == "ConsumerGroupHeartbeat":
        out.heartbeats.append(_heartbeat(base, f, pending, names))
    elif api == "OffsetCommit" and direction == "request":
        rows = []
        by_id = int(f.get("version") or 0) >= 10   # v10+ names topics by id
        epochs = {(str(t), int(p)): int(e) for t, p, e in f.get("leader_epochs") or []}
        for topic, partition, offset in f.get("offsets") or []:
            rows.append({**base, "member_id": f.get("member_id"), "generation": f.get("generation"),
                         "topic": _topic_of(names, topic) if by_id else str(topic), "partition": int(partition),
                         "offset": int(offset), "leader_epoch": epochs.get((str(topic), int(partition)), -1),
                         "error_code": None, "response_ts": None})
        out.commits.extend(rows)
        pending.request(f, rows)
    elif api == "OffsetCommit" and direction == "response":
        rows = pending.response(f) or []
        by_id = int(f.get("version") or 0) >= 10
        errors = {(_topic_of(names, t) if by_id else str(t), int(p)): int(e)
                  for t, p, e in (f.get("partition_errors") or [])}
        for row in rows:
            row["error_code"] = errors.get((row["topic"], row["partition"]), f.get("error_code"))
            row["response_ts"] = float(f["ts"])
