"""The scenario file format, and its parser with errors that name file, line and problem.

A scenario file (``fixtures/scenarios/<name>.scenario``) is one statement a
line; ``#`` starts a comment. Header statements come first, then phases::

    name leader-rotation
    describe Each member kind leads the group at least once.
    topic orders partitions=12
    producer rate=200
    members static=false processing-delay=0ms commit=sync-batch
    expect leader-rotation

    phase join
      start each stagger=500ms
      await stable timeout=60s
    phase rotate
      rotate-leader timeout=60s
    phase settle
      await drained timeout=60s

``members strategies=LIST`` starts every member on that assignment strategy
list instead of the one planned from the mix (:mod:`conformance.scenarios.mixing`);
the upgrade scenario starts on ``range``.

Actions (``TARGET`` is ``all``, ``each`` (one after another, the group
settling in between), ``leader``, ``follower``, ``random`` (seeded),
``reference`` (the first reference member), or ``m<i>``, the i-th member of
the mix):

=====================  ===================================================
``start TARGET``       start members; ``stagger=DUR`` between starts
``stop TARGET``        graceful stop (SIGTERM)
``kill TARGET``        SIGKILL
``restart TARGET``     ``mode=graceful|kill``, ``down=DUR`` before the start
``pause TARGET``       SIGSTOP for ``for=DUR`` then SIGCONT
``broker-restart``     ``mode=clean|kill``
``toxic TARGET``       ``type=latency|bandwidth|timeout|reset_peer|slicer|
                       slow_close|limit_data``, ``for=DUR``,
                       ``stream=upstream|downstream``, toxic attributes as
                       further ``key=INT`` pairs (``latency=500 jitter=50``)
``cut TARGET``         toxiproxy proxy down for ``for=DUR``, then up
``add-partitions T``   grow topic T to ``total=N``
``bounce-strategies``  rolling graceful restart with ``to=LIST`` strategies
                       (members that cannot move alone restart together:
                       ``mixing.bounce_steps``)
``resubscribe TARGET`` graceful restart subscribed to ``topics=A,B``
``rotate-leader``      stop the current leader until every kind has led
``chaos``              ``count=N`` seeded random faults, ``gap=DUR``
``sleep DUR``          wait
``await stable``       the group is stable and complete (``timeout=DUR``)
``await drained``      every produced record consumed (``timeout=DUR``)
=====================  ===================================================
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

from conformance.errors import UsageError
from conformance.scenarios.model import TARGET_WORDS, Action, Phase, Scenario

_DURATION_RE = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m)$")
_TOXICS = ("latency", "bandwidth", "timeout", "reset_peer", "slicer", "slow_close", "limit_data")


def parse_duration_ms(text: str) -> int:
    """``500ms`` -> 500, ``2s`` -> 2000, ``1m`` -> 60000; ValueError otherwise."""
    m = _DURATION_RE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a duration (e.g. 500ms, 10s, 1m)")
    value, unit = float(m.group(1)), m.group(2)
    return int(value * {"ms": 1, "s": 1000, "m": 60_000}[unit])


def _int(text: str) -> int:
    if not re.fullmatch(r"-?\d+", text):
        raise ValueError(f"{text!r} is not an integer")
    return int(text)


def _bool(text: str) -> bool:
    if text not in ("true", "false"):
        raise ValueError(f"{text!r} is not true or false")
    return text == "true"


def _choice(*options: str) -> Callable[[str], str]:
    def check(text: str) -> str:
        if text not in options:
            raise ValueError(f"{text!r} is not one of {', '.join(options)}")
        return text
    return check


def _strategy_list(text: str) -> list[str]:
    from conformance.members.harness_config import STRATEGIES
    items = [s for s in text.split(",") if s]
    bad = [s for s in items if s not in STRATEGIES]
    if not items or bad:
        raise ValueError(f"{text!r}: strategies must be a comma-separated list of {', '.join(STRATEGIES)}")
    return items


Schema = dict[str, Callable[[str], Any]]

#: verb -> (target: "required" | "none" | "topic" | "duration", keys, required keys)
ACTIONS: dict[str, tuple[str, Schema, tuple[str, ...]]] = {
    "start": ("required", {"stagger": parse_duration_ms}, ()),
    "stop": ("required", {}, ()),
    "kill": ("required", {}, ()),
    "restart": ("required", {"mode": _choice("graceful", "kill"), "down": parse_duration_ms}, ()),
    "pause": ("required", {"for": parse_duration_ms}, ("for",)),
    "broker-restart": ("none", {"mode": _choice("clean", "kill")}, ()),
    "toxic": ("required", {"type": _choice(*_TOXICS), "for": parse_duration_ms,
                           "stream": _choice("upstream", "downstream"), "toxicity": float, "*": _int},
              ("type", "for")),
    "cut": ("required", {"for": parse_duration_ms}, ("for",)),
    "add-partitions": ("topic", {"total": _int}, ("total",)),
    "bounce-strategies": ("none", {"to": _strategy_list}, ("to",)),
    "resubscribe": ("required", {"topics": lambda t: [x for x in t.split(",") if x]}, ("topics",)),
    "rotate-leader": ("none", {"timeout": parse_duration_ms}, ()),
    "chaos": ("none", {"count": _int, "gap": parse_duration_ms}, ("count",)),
    "sleep": ("duration", {}, ()),
    "await": ("required", {"timeout": parse_duration_ms}, ()),
}
_AWAIT_WHAT = ("stable", "drained")

HEADERS: dict[str, Schema] = {
    "topic": {"partitions": _int},
    "producer": {"rate": _int},
    "members": {"static": _bool, "processing-delay": parse_duration_ms, "commit": _choice("auto", "sync-batch", "on-revoke"),
                "strategies": _strategy_list},
}


def _target_ok(target: str) -> bool:
    return target in TARGET_WORDS or re.fullmatch(r"m\d+", target) is not None


def _pairs(words: list[str], schema: Schema, where: str, verb: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for word in words:
        key, eq, value = word.partition("=")
        if not eq or not key or not value:
            raise UsageError(f"{where}: {verb}: expected key=value, got {word!r}")
        parse = schema.get(key) or schema.get("*")
        if parse is None:
            known = ", ".join(k for k in schema if k != "*") or "none"
            raise UsageError(f"{where}: {verb}: unknown key {key!r} (known: {known})")
        try:
            out[key] = parse(value)
        except ValueError as exc:
            raise UsageError(f"{where}: {verb} {key}: {exc}") from None
    return out


def parse_scenario(text: str, source: Path | None = None) -> Scenario:
    """Parse a scenario file; UsageError ``file:line: what is wrong`` on any mistake."""
    label = str(source) if source else "<scenario>"
    fields: dict[str, Any] = {"topics": {}}
    phases: list[Phase] = []
    current: tuple[str, list[Action]] | None = None
    seen_expect: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{label}:{number}"
        verb, *words = line.split()
        if verb == "name":
            if len(words) != 1:
                raise UsageError(f"{where}: name takes one word, got {len(words)}")
            fields["name"] = words[0]
        elif verb == "describe":
            fields["description"] = (fields.get("description", "") + " " + " ".join(words)).strip()
        elif verb in HEADERS:
            if current is not None:
                raise UsageError(f"{where}: {verb!r} is a header statement; put it before the first phase")
            if verb == "topic":
                if not words or "=" in words[0]:
                    raise UsageError(f"{where}: topic needs a name, e.g. 'topic orders partitions=12'")
                args = _pairs(words[1:], HEADERS["topic"], where, verb)
                parts = args.get("partitions", 12)
                if parts < 1:
                    raise UsageError(f"{where}: topic {words[0]}: partitions must be at least 1")
                fields["topics"][words[0]] = parts
            else:
                args = _pairs(words, HEADERS[verb], where, verb)
                if verb == "producer":
                    fields["producer_rate"] = args.get("rate", 200)
                else:
                    if "static" in args:
                        fields["static_members"] = args["static"]
                    if "processing-delay" in args:
                        fields["processing_delay_ms"] = args["processing-delay"]
                    if "commit" in args:
                        fields["commit_mode"] = args["commit"]
                    if "strategies" in args:
                        fields["start_strategies"] = tuple(args["strategies"])
        elif verb == "expect":
            for w in words:
                if w != "leader-rotation":
                    raise UsageError(f"{where}: expect: unknown expectation {w!r} (known: leader-rotation)")
                seen_expect.add(w)
        elif verb == "phase":
            if len(words) != 1:
                raise UsageError(f"{where}: phase takes one name, e.g. 'phase join'")
            if current is not None:
                phases.append(Phase(current[0], tuple(current[1])))
            current = (words[0], [])
        elif verb in ACTIONS:
            if current is None:
                raise UsageError(f"{where}: {verb!r} is an action; it must be inside a phase ('phase NAME' first)")
            current[1].append(_parse_action(verb, words, where, fields["topics"]))
        else:
            raise UsageError(f"{where}: unknown statement {verb!r}; known: name, describe, "
                             f"{', '.join(HEADERS)}, expect, phase, {', '.join(ACTIONS)}")
    if current is not None:
        phases.append(Phase(current[0], tuple(current[1])))
    if "name" not in fields:
        raise UsageError(f"{label}: no 'name' statement")
    if not phases or not any(a.verb == "start" for p in phases for a in p.actions):
        raise UsageError(f"{label}: a scenario needs at least one phase that starts members ('start each')")
    if not fields["topics"]:
        fields["topics"] = {"orders": 12}
    return Scenario(
        name=fields["name"], description=fields.get("description", ""), source=source,
        topics=fields["topics"], producer_rate=fields.get("producer_rate", 200),
        processing_delay_ms=fields.get("processing_delay_ms", 0), commit_mode=fields.get("commit_mode", "sync-batch"),
        static_members=fields.get("static_members", False), start_strategies=fields.get("start_strategies", ()),
        leader_rotation="leader-rotation" in seen_expect,
        phases=tuple(phases),
    )


def _parse_action(verb: str, words: list[str], where: str, topics: dict[str, int]) -> Action:
    target_kind, schema, required = ACTIONS[verb]
    target: str | None = None
    if target_kind != "none":
        if not words or "=" in words[0]:
            raise UsageError(f"{where}: {verb} needs a {'target' if target_kind == 'required' else target_kind} first")
        target, words = words[0], words[1:]
        if verb == "await":
            if target not in _AWAIT_WHAT:
                raise UsageError(f"{where}: await {target!r}: expected one of {', '.join(_AWAIT_WHAT)}")
        elif target_kind == "required" and not _target_ok(target):
            raise UsageError(f"{where}: {verb}: unknown target {target!r}; use all, each, leader, follower, "
                             f"random, reference or m<i>")
        elif target_kind == "topic" and target not in topics:
            raise UsageError(f"{where}: {verb}: unknown topic {target!r}; declared: {', '.join(topics) or 'none'}")
        elif target_kind == "duration":
            try:
                target = str(parse_duration_ms(target))
            except ValueError as exc:
                raise UsageError(f"{where}: sleep: {exc}") from None
    args = _pairs(words, schema, where, verb)
    missing = [k for k in required if k not in args]
    if missing:
        raise UsageError(f"{where}: {verb}: missing {', '.join(missing)}")
    return Action(verb=verb, target=target, args=args, source=where)


def load_scenario(path: Path) -> Scenario:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read scenario file {path}: {exc.strerror}") from None
    return parse_scenario(text, path)
