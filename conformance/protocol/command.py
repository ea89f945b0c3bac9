"""``conformance decode``: print embedded consumer-protocol bytes as JSON.

    conformance decode subscription HEX
    conformance decode assignment HEX
    conformance decode userdata [--assignor NAME] HEX      (HEX may be "null")

Output is one JSON object on stdout, exit 0. Malformed input, including bad
hex, prints exactly one line ``error at byte N: REASON`` on stderr and exits
2 (for bad hex, N is the byte the offending hex digit belongs to, and the
message gives the digit's position in the text as typed, counted from 0,
spaces and ``0x`` included; a byte that is not text, from a terminal in another
encoding, is shown as ``(the byte 0xNN, not text)``). A
subscription or assignment whose declared version is above 3 is not an
error: it is shown with its declared version and the unparsed ``trailing``
bytes in hex.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Sequence

from conformance.protocol.consumer_protocol import LATEST_VERSION, decode_assignment, decode_subscription
from conformance.protocol.model import Assignment, Subscription, TopicPartitions
from conformance.protocol.userdata import UserDataInfo, classify_userdata
from conformance.protocol.wire import DecodeError

_NOT_HEX = re.compile(r"[^0-9a-fA-F]")


def _shown(char: str) -> str:
    """A character for a message: quoted when printable, ``(the byte 0xNN, not text)`` for a byte of the command
    line that was not text (Python holds it as a lone surrogate), else its code point."""
    if "\udc80" <= char <= "\udcff":
        return f"(the byte 0x{ord(char) - 0xDC00:02x}, not text)"
    return repr(char) if char.isprintable() else f"U+{ord(char):04X}"


def parse_hex(text: str) -> bytes:
    """Hex digits to bytes; whitespace and a leading ``0x`` are ignored.

    Raises DecodeError at the byte the first bad digit belongs to; the message names the digit's
    position in ``text`` itself (from 0).
    """
    typed = [i for i, c in enumerate(text) if not c.isspace()]  # where each digit is in what was typed
    digits = "".join(text[i] for i in typed)
    if digits[:2] in ("0x", "0X"):
        digits, typed = digits[2:], typed[2:]
    bad = _NOT_HEX.search(digits)
    if bad:
        i = bad.start()
        raise DecodeError(i // 2, f"invalid hex digit {_shown(bad.group())} at character {typed[i]}")
    if len(digits) % 2:
        raise DecodeError(len(digits) // 2, f"odd number of hex digits ({len(digits)})")
    return bytes.fromhex(digits)


def _tps_json(tps: Sequence[TopicPartitions]) -> list[dict]:
    return [{"topic": tp.topic, "partitions": list(tp.partitions)} for tp in tps]


def _hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def subscription_json(s: Subscription) -> dict:
    """The JSON form printed by ``decode subscription``."""
    out = {
        "version": s.version,
        "topics": list(s.topics),
        "user_data": _hex(s.user_data),
        "owned_partitions": _tps_json(s.owned_partitions),
        "generation_id": s.generation_id,
        "rack_id": s.rack_id,
    }
    if s.version > LATEST_VERSION:
        out["trailing"] = s.trailing.hex()
    return out


def assignment_json(a: Assignment) -> dict:
    """The JSON form printed by ``decode assignment``."""
    out = {
        "version": a.version,
        "assigned_partitions": _tps_json(a.assigned_partitions),
        "user_data": _hex(a.user_data),
    }
    if a.version > LATEST_VERSION:
        out["trailing"] = a.trailing.hex()
    return out


def userdata_json(info: UserDataInfo) -> dict:
    """The JSON form printed by ``decode userdata``."""
    return {"format": info.format, "fields": info.fields, "ambiguous": info.ambiguous, "note": info.note}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "decode",
        help="decode embedded consumer-protocol bytes (subscription, assignment, assignor userdata) to JSON",
        description=(
            "Print embedded consumer-protocol bytes as one JSON object. Malformed input prints "
            "'error at byte N: REASON' on stderr and exits 2."
        ),
    )
    kinds = p.add_subparsers(dest="what", metavar="WHAT", required=True)
    sub = kinds.add_parser("subscription", help="a ConsumerProtocolSubscription (JoinGroup protocol metadata)")
    sub.add_argument("hex", metavar="HEX", help="hex digits (whitespace and a leading 0x are ignored)")
    sub.set_defaults(func=_run, decode=lambda data, args: subscription_json(decode_subscription(data)))
    asg = kinds.add_parser("assignment", help="a ConsumerProtocolAssignment (SyncGroup assignment)")
    asg.add_argument("hex", metavar="HEX", help="hex digits (whitespace and a leading 0x are ignored)")
    asg.set_defaults(func=_run, decode=lambda data, args: assignment_json(decode_assignment(data)))
    ud = kinds.add_parser("userdata", help='assignor UserData ("null" for a null one)')
    ud.add_argument("--assignor", metavar="NAME", help="the assignor (protocol name) that wrote it, e.g. cooperative-sticky")
    ud.add_argument("hex", metavar="HEX", help="hex digits (whitespace and a leading 0x are ignored)")
    ud.set_defaults(func=_run, decode=_decode_userdata)


def _decode_userdata(data: bytes | None, args: argparse.Namespace) -> dict:
    return userdata_json(classify_userdata(data, args.assignor))


def _run(args: argparse.Namespace) -> int:
    try:
        if args.what == "userdata" and args.hex.strip().lower() == "null":
            data = None
        else:
            data = parse_hex(args.hex)
        result = args.decode(data, args)
    except DecodeError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0
