"""The event history: what every member process observed, one JSON object a line.

This module is the single written-down definition of the history format. It
uses the standard library only, so that harnesses running in their own virtual
environments (librdkafka, kafka-python) can import it with the repository root
on ``PYTHONPATH``.

File: one per member process, ``<run>/members/<member>.jsonl``, appended and
flushed per line (a crash loses at most the line being written). A restarted
member appends to the same file; its ``started`` event opens a new incarnation.

Every event has ``ts`` (epoch milliseconds, float), ``member``, ``client``,
``client_version`` and ``event``; where known also ``member_id``,
``generation`` and ``protocol`` (``eager`` | ``cooperative`` | ``consumer``).
A ``consumer`` member (KIP-848) has no group generation: its ``generation`` is its member
epoch, and its ``assigned`` / ``revoked`` / ``lost`` events also carry ``member_epoch``.

Ordering rules a harness must keep:

1. ``started`` is the first line of an incarnation; ``stopped`` (with a
   ``reason``) is the last line of a clean one. A killed incarnation has none.
2. ``assigned`` lists the partitions just added (cooperative) or the whole new
   set (eager); ``revoked`` lists partitions taken away after they were
   committed (per the commit mode); ``lost`` lists partitions taken away without
   a clean revoke. A partition is owned from its ``assigned`` to its next
   ``revoked``/``lost``/``stopped``, or to the incarnation's end.
3. ``consumed`` is one event per batch of one partition that the client handed
   to the application, written after the records were processed. Every batch
   the application received is recorded, whatever the harness believes it
   owns: this is the application boundary the consumption checks (C1, C2)
   judge. ``poll_ts`` is when the application's call that returned the batch
   began (``poll()``, ``consume()``, a fetch; Sarama's wait on the claim's
   channel): records of a call begun before a fencing answer were in flight
   at it. Histories written before harnesses recorded it lack it.
4. ``committed`` carries the offsets the client asked to commit (next offset to
   read) and ``error`` (null on success).
5. ``error`` records every client error; ``fatal: true`` means the harness is
   about to exit non-zero.
6. ``control`` is written when the harness acts on a command of its control file
   (:mod:`conformance.members.control`: ``seq``, ``op`` and the command's arguments),
   before it acts.

The producer harness writes ``produced`` events: acknowledged offsets.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Iterable, Iterator

from conformance.jsonl import JsonLinesAppender

PROTOCOLS = ("eager", "cooperative", "consumer")

#: Required fields per event, beyond the common ones.
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "started": (),
    "stopped": ("reason",),
    "assigned": ("partitions",),
    "revoked": ("partitions",),
    "lost": ("partitions",),
    "consumed": ("topic", "partition", "first_offset", "last_offset", "count"),
    "committed": ("offsets", "error"),
    "error": ("error", "fatal"),
    "produced": ("topic", "partition", "first_offset", "last_offset", "count"),
    "control": ("seq", "op"),
}

COMMON_FIELDS: tuple[str, ...] = ("ts", "member", "client", "client_version", "event")


class HistoryFormatError(ValueError):
    """An event that does not follow the history format; says which field and why."""


def now_ms() -> float:
    """Epoch milliseconds as a float, the ``ts`` of every event."""
    return time.time() * 1000.0


def _is_tp_list(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(tp, list) and len(tp) == 2 and isinstance(tp[0], str) and isinstance(tp[1], int) for tp in value
    )


def validate_event(event: Any) -> None:
    """Raise :class:`HistoryFormatError` unless ``event`` follows the format."""
    if not isinstance(event, dict):
        raise HistoryFormatError(f"event is a {type(event).__name__}, not an object")
    for key in COMMON_FIELDS:
        if key not in event:
            raise HistoryFormatError(f"missing field {key!r}")
    if not isinstance(event["ts"], (int, float)) or isinstance(event["ts"], bool):
        raise HistoryFormatError(f"ts must be a number of epoch ms, got {event['ts']!r}")
    kind = event["event"]
    if kind not in EVENT_FIELDS:
        raise HistoryFormatError(f"unknown event {kind!r}; known: {', '.join(EVENT_FIELDS)}")
    for key in EVENT_FIELDS[kind]:
        if key not in event:
            raise HistoryFormatError(f"{kind} event lacks {key!r}")
    if "protocol" in event and event["protocol"] is not None and event["protocol"] not in PROTOCOLS:
        raise HistoryFormatError(f"protocol must be one of {PROTOCOLS}, got {event['protocol']!r}")
    if kind in ("assigned", "revoked", "lost") and not _is_tp_list(event["partitions"]):
        raise HistoryFormatError(f"{kind}.partitions must be [[topic, partition], ...], got {event['partitions']!r}")
    if kind in ("consumed", "produced"):
        first, last, count = event["first_offset"], event["last_offset"], event["count"]
        if not all(isinstance(v, int) for v in (first, last, count)) or first > last or count < 1:
            raise HistoryFormatError(f"{kind} offsets must satisfy first <= last, count >= 1: {first}, {last}, {count}")
        poll_ts = event.get("poll_ts")
        if poll_ts is not None and (not isinstance(poll_ts, (int, float)) or isinstance(poll_ts, bool)
                                    or poll_ts > event["ts"]):
            raise HistoryFormatError(f"{kind}.poll_ts must be epoch ms no later than ts, got {poll_ts!r}")
    if kind == "committed":
        offs = event["offsets"]
        if not isinstance(offs, list) or not all(isinstance(o, list) and len(o) == 3 for o in offs):
            raise HistoryFormatError(f"committed.offsets must be [[topic, partition, offset], ...], got {offs!r}")


class HistoryWriter:
    """Appends events to one member's history file, one flushed line each.

    Thread-safe (client callbacks and the main loop may both record). The
    common fields are filled in from the constructor; ``ts`` is taken when
    :meth:`record` is called unless given.
    """

    def __init__(self, path: str | os.PathLike[str], member: str, client: str, client_version: str) -> None:
        self._base = {"member": member, "client": client, "client_version": client_version}
        self._out = JsonLinesAppender(path)
        self.context: dict[str, Any] = {}  # member_id / generation / protocol, kept current by the harness

    def record(self, event: str, **fields: Any) -> dict[str, Any]:
        entry: dict[str, Any] = {"ts": fields.pop("ts", None) or now_ms(), **self._base, "event": event}
        entry.update({k: v for k, v in self.context.items() if v is not None})
        entry.update(fields)
        self._out.write(entry)
        return entry

    def close(self) -> None:
        self._out.close(fsync=True)


def read_history(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """Yield ``(line_number, event, problem)`` for every non-blank line.

    Tolerant parsing, strict checking: a line that is not JSON or breaks the
    format yields ``event=None`` with the problem, so callers can count and
    report it without losing the rest of the file.
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
            validate_event(event)
        except (json.JSONDecodeError, HistoryFormatError) as exc:
            yield number, None, str(exc)
            continue
        yield number, event, None
