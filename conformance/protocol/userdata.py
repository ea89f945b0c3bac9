"""Classify the assignor ``UserData`` carried in a subscription (or assignment).

Formats, as the clients write them (checked against Java's StickyAssignor /
CooperativeStickyAssignor and Sarama's sticky_assignor_user_data.go):

- ``null``: no user data (-1 length); ``empty``: zero bytes (librdkafka,
  kafka-python and others write this when they have nothing to say).
- ``cooperative-generation``: exactly 4 bytes, a bare int32 generation
  (Java CooperativeStickyAssignor, Sarama 1.60+ cooperative-sticky); -1
  (``ff ff ff ff``) before the member's first assignment.
- ``sticky-v0``: the previous assignment only:
  ``[Topic string, Partitions [int32]]`` (int32 counts, int16-length
  strings, no version prefix). Old Java StickyAssignor.
- ``sticky-v1``: the previous assignment, then an int32 generation (Java
  StickyAssignor; Sarama eager sticky; librdkafka and franz-go
  cooperative-sticky). franz-go writes no generation while it has none (-1,
  before its first assignment): then its sticky and cooperative-sticky
  userData is ``sticky-v0``, ``00 00 00 00`` for a new member.
- ``unknown``: none of the above parse exactly; ``fields == {"hex": ...}``.

Parsing is strict (no bytes left over, valid UTF-8, no null arrays or
strings), so a blob matches a format only if it is exactly that encoding.
The only blob that matches more than one format is ``00 00 00 00``
(generation 0, or an empty sticky-v0 assignment: what a new franz-go member
writes). When it happens, the ``assignor`` name (the JoinGroup protocol name)
decides: the format that assignor writes is preferred (for cooperative-sticky,
the bare generation), so a new franz-go member's blob reads as generation 0;
:func:`readings` lists every format a blob parses as. Without a deciding name the result carries
``ambiguous=True`` and a note listing every candidate; ``format`` is then the
first candidate in the order cooperative-generation, sticky-v1, sticky-v0,
and must not be trusted on its own.

:func:`classify_userdata` never raises, whatever it is given.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Sequence

from conformance.protocol.model import TopicPartitions
from conformance.protocol.wire import (
    DecodeError,
    read_topic_partitions,
    write_int32,
    write_topic_partitions,
)

NULL = "null"
EMPTY = "empty"
COOPERATIVE_GENERATION = "cooperative-generation"
STICKY_V0 = "sticky-v0"
STICKY_V1 = "sticky-v1"
UNKNOWN = "unknown"

#: Order in which candidates are listed when nothing decides between them.
_DEFAULT_ORDER = (COOPERATIVE_GENERATION, STICKY_V1, STICKY_V0)

#: Formats each assignor (JoinGroup protocol name) writes, most likely first.
ASSIGNOR_FORMATS: dict[str, tuple[str, ...]] = {
    # Java / Sarama write a bare generation; librdkafka / franz-go the sticky v1 layout.
    "cooperative-sticky": (COOPERATIVE_GENERATION, STICKY_V1),
    # Java StickyAssignor writes v1 (v0 before the generation was added); Sarama v1.
    "sticky": (STICKY_V1, STICKY_V0),
}

_unpack32 = struct.Struct(">i").unpack_from


@dataclass(frozen=True)
class UserDataInfo:
    """What a user-data blob is. ``fields`` is JSON-ready (lists and dicts only)."""

    format: str
    fields: dict = field(default_factory=dict)
    ambiguous: bool = False
    note: str | None = None


def _previous_json(tps: Sequence[TopicPartitions]) -> list[dict]:
    return [{"topic": tp.topic, "partitions": list(tp.partitions)} for tp in tps]


def _candidates(data: bytes) -> tuple[dict[str, dict], str | None]:
    """Every format ``data`` parses as exactly, with its fields; and why sticky did not parse."""
    found: dict[str, dict] = {}
    if len(data) == 4:
        found[COOPERATIVE_GENERATION] = {"generation": _unpack32(data, 0)[0]}
    why_not_sticky = None
    try:
        previous, pos = read_topic_partitions(data, 0, "previous_assignment")
    except DecodeError as exc:
        why_not_sticky = str(exc)
    else:
        left = len(data) - pos
        if left == 0:
            found[STICKY_V0] = {"previous_assignment": _previous_json(previous)}
        elif left == 4:
            found[STICKY_V1] = {
                "previous_assignment": _previous_json(previous),
                "generation": _unpack32(data, pos)[0],
            }
        else:
            why_not_sticky = f"{left} bytes after the sticky previous assignment at byte {pos} (expected 0 or 4)"
    return found, why_not_sticky


def _describe(fmt: str, fields: dict) -> str:
    if fmt == COOPERATIVE_GENERATION:
        return f"{fmt} (generation {fields['generation']})"
    n = sum(len(tp["partitions"]) for tp in fields["previous_assignment"])
    gen = f", generation {fields['generation']}" if "generation" in fields else ""
    return f"{fmt} ({n} previous partitions{gen})"


def _classify(data: bytes | None, assignor: str | None) -> UserDataInfo:
    if data is None:
        return UserDataInfo(NULL, {})
    if not isinstance(data, (bytes, bytearray, memoryview)):
        return UserDataInfo(UNKNOWN, {"hex": ""}, note=f"not bytes: {type(data).__name__}")
    data = bytes(data)
    if not data:
        return UserDataInfo(EMPTY, {})
    found, why_not_sticky = _candidates(data)
    if not found:
        note = "not a cooperative generation (length is not 4)" if len(data) != 4 else None
        if why_not_sticky:
            note = f"{note}; not sticky: {why_not_sticky}" if note else f"not sticky: {why_not_sticky}"
        return UserDataInfo(UNKNOWN, {"hex": data.hex()}, note=note)

    key = assignor.strip().lower() if isinstance(assignor, str) else None
    preferred = ASSIGNOR_FORMATS.get(key, ()) if key else ()
    order = tuple(f for f in preferred if f in found) + tuple(
        f for f in _DEFAULT_ORDER if f in found and f not in preferred
    )
    chosen = order[0]
    others = order[1:]
    if len(found) == 1:
        note = None
        if key in ASSIGNOR_FORMATS and chosen not in preferred:
            note = f"assignor {assignor!r} does not normally write {chosen} (it writes {', '.join(preferred)})"
        return UserDataInfo(chosen, found[chosen], note=note)
    if chosen in preferred:
        note = (
            f"also parses as {', '.join(_describe(f, found[f]) for f in others)}; "
            f"chose {chosen} because assignor {assignor!r} writes it"
        )
        return UserDataInfo(chosen, found[chosen], note=note)
    note = (
        f"ambiguous: parses as {', '.join(_describe(f, found[f]) for f in order)}; "
        "pass the assignor name to decide"
    )
    return UserDataInfo(chosen, found[chosen], ambiguous=True, note=note)


def readings(data: bytes) -> dict[str, dict]:
    """Every format among cooperative-generation, sticky-v1 and sticky-v0 that ``data`` parses as
    exactly, with its fields (``{}`` when none does). Never raises for bytes."""
    try:
        return _candidates(bytes(data))[0]
    except Exception:
        return {}


def classify_userdata(data: bytes | None, assignor: str | None = None) -> UserDataInfo:
    """Name the format of ``data`` (see the module docstring). Never raises."""
    try:
        return _classify(data, assignor)
    except Exception as exc:  # a bug here must not take a pipeline down; say so instead
        try:
            hexed = bytes(data).hex()  # type: ignore[arg-type]
        except Exception:
            hexed = ""
        return UserDataInfo(UNKNOWN, {"hex": hexed}, note=f"classifier error: {type(exc).__name__}: {exc}")


def encode_cooperative_generation(generation: int) -> bytes:
    """The 4-byte user data of Java's CooperativeStickyAssignor (``-1`` before the first assignment)."""
    out: list[bytes] = []
    write_int32(out, generation, "generation")
    return out[0]


def encode_sticky_userdata(previous: Sequence[TopicPartitions], generation: int | None) -> bytes:
    """StickyAssignor user data: v1 (previous assignment then generation), or v0 when ``generation`` is None.

    Topics are written in the order given (Java groups by topic; this does not reorder).
    """
    out: list[bytes] = []
    write_topic_partitions(out, previous, "previous_assignment")
    if generation is not None:
        write_int32(out, generation, "generation")
    return b"".join(out)
