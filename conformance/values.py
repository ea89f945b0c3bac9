"""The values a scenario file may give, each with its checker: durations, bounded integers,
fractions, names, lists and choices.

Every checker takes the text of one value and returns it parsed, or raises ``ValueError`` with
a message that says what is wrong and what to give instead (the parser adds file, line, verb
and key). They are shared by the scenario parser (:mod:`conformance.scenarios.parse`) and the
table of faults (:mod:`conformance.nemesis.faults`), whose arguments they check.
"""

from __future__ import annotations

import re
from typing import Any, Callable

#: A key's checker: the value's text in, the parsed value out (``ValueError`` otherwise).
Schema = dict[str, Callable[[str], Any]]

#: The longest duration a scenario may state (any ``DUR``): a day.
MAX_DURATION_MS: int = 24 * 60 * 60 * 1000
#: The most partitions a topic may have (declared or grown): the suite's broker is small.
MAX_PARTITIONS: int = 1000
#: Inclusive ranges of the integer keys, by ``verb key`` (``toxic *`` is every toxic attribute).
RANGES: dict[str, tuple[int, int]] = {
    "topic partitions": (1, MAX_PARTITIONS),
    "add-partitions total": (1, MAX_PARTITIONS),
    "producer rate": (1, 1_000_000),
    "chaos count": (1, 10_000),
    "toxic *": (0, 2**31 - 1),
}

_DURATION_RE = re.compile(r"(\d{1,12})(?:\.(\d{1,9}))?(ms|s|m)", re.ASCII)
#: Kafka's legal topic name: these characters, at most 249 of them, neither "." nor "..".
_NAME_RE = re.compile(r"[A-Za-z0-9._-]{1,249}", re.ASCII)


def parse_duration_ms(text: str) -> int:
    """``500ms`` -> 500, ``2s`` -> 2000, ``1m`` -> 60000; ValueError otherwise (also above a day)."""
    m = _DURATION_RE.fullmatch(text)
    if not m:
        raise ValueError(f"{text!r} is not a duration (e.g. 500ms, 10s, 1m)")
    whole, fraction, unit = m.groups()
    scale = 10 ** len(fraction or "")
    ms = (int(whole) * scale + int(fraction or 0)) * {"ms": 1, "s": 1000, "m": 60_000}[unit] // scale  # exact: 2.3s is 2300
    if ms > MAX_DURATION_MS:
        raise ValueError(f"{text!r} is longer than a day: give at most {MAX_DURATION_MS // 60_000}m")
    return ms


def positive_duration_ms(text: str) -> int:
    """A duration above zero (a timeout, how long a fault lasts)."""
    ms = parse_duration_ms(text)
    if ms <= 0:
        raise ValueError(f"{text!r} must be longer than 0ms")
    return ms


def integer(text: str) -> int:
    """An integer, written as digits (ASCII, an optional minus); range checks are :func:`int_in`'s."""
    if not re.fullmatch(r"-?[0-9]{1,19}", text, re.ASCII):
        raise ValueError(f"{text!r} is not an integer")
    return int(text)


def int_in(where: str) -> Callable[[str], int]:
    """An integer within ``RANGES[where]``; ValueError naming the range otherwise."""
    low, high = RANGES[where]

    def check(text: str) -> int:
        value = integer(text)
        if not low <= value <= high:
            raise ValueError(f"{value} is out of range: give {low} to {high}")
        return value
    return check


def fraction(text: str) -> float:
    """A number from 0 to 1 written as digits (``0.5``, ``1``): never NaN or infinite."""
    if not re.fullmatch(r"[0-9]{1,9}(?:\.[0-9]{1,9})?", text, re.ASCII) or not 0.0 <= float(text) <= 1.0:
        raise ValueError(f"{text!r} is not a number from 0 to 1 (e.g. 0.5)")
    return float(text)


def kafka_name(text: str) -> str:
    """A Kafka-legal name (topics; the scenario's own name, which names groups and run directories)."""
    if not _NAME_RE.fullmatch(text) or text in (".", ".."):
        raise ValueError(f"{text!r} is not a valid name: use 1 to 249 of the characters A-Z a-z 0-9 . _ - "
                         f"(and not '.' or '..')")
    return text


def topic_list(text: str) -> list[str]:
    items = text.split(",")
    if not text or not all(items):
        raise ValueError(f"{text!r} is not a comma-separated list of topics (e.g. orders,audit)")
    return [kafka_name(t) for t in items]


def rack_name(text: str) -> str:
    """A rack id (``client.rack``, ``broker.rack``): 1 to 249 of ``[A-Za-z0-9._-]``, like a Kafka name."""
    if not _NAME_RE.fullmatch(text):
        raise ValueError(f"{text!r} is not a rack id: use 1 to 249 of the characters A-Z a-z 0-9 . _ -")
    return text


def rack_list(text: str) -> list[str]:
    """A comma-separated list of rack ids (``a,b``), each as :func:`rack_name` takes it."""
    items = text.split(",")
    if not text or not all(items):
        raise ValueError(f"{text!r} is not a comma-separated list of rack ids (e.g. a,b)")
    return [rack_name(r) for r in items]


def boolean(text: str) -> bool:
    if text not in ("true", "false"):
        raise ValueError(f"{text!r} is not true or false")
    return text == "true"


def choice(*options: str) -> Callable[[str], str]:
    def check(text: str) -> str:
        if text not in options:
            raise ValueError(f"{text!r} is not one of {', '.join(options)}")
        return text
    return check


def strategy_list(text: str) -> list[str]:
    from conformance.members.harness_config import STRATEGIES
    items = [s for s in text.split(",") if s]
    bad = [s for s in items if s not in STRATEGIES]
    if not items or bad:
        raise ValueError(f"{text!r}: strategies must be a comma-separated list of {', '.join(STRATEGIES)}")
    return items
