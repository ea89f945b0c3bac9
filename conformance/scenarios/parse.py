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
list instead of the one planned from the mix (:mod:`conformance.members.mixing`);
the upgrade scenario starts on ``range``.

KIP-848: ``members start-protocol=classic`` starts every member on the classic protocol,
whatever its spec says; a ``+consumer`` spec is then the protocol ``bounce-protocol
to=consumer`` moves it to (the default, ``spec``, starts each member on its spec's protocol).
``broker migration-policy=bidirectional|upgrade|downgrade|disabled`` is the broker's
``group.consumer.migration.policy`` (default ``bidirectional``;
:data:`conformance.cluster.broker.MIGRATION_POLICIES`), recorded in the manifest.

Racks (KIP-881 rack-aware assignment): ``members racks=a,b`` gives the members ``client.rack``
(the harness config's ``rack_id``) from the list in mix order, cycled (``m0`` a, ``m1`` b, ``m2``
a, ...); ``broker rack=a`` is the broker's ``broker.rack``, so every partition's replica is on that
rack. A rack id is 1 to 249 of ``[A-Za-z0-9._-]``. Unset (the default), members send no rack and the
broker has none. Both are recorded in the manifest (each member's ``rack_id``, ``broker_rack``).

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
``disconnect TARGET``  the member's container off the run's network for
                       ``for=DUR``, then back (``--backend docker`` only)
``add-partitions T``   grow topic T to ``total=N``
``bounce-strategies``  rolling graceful restart with ``to=LIST`` strategies
                       (members that cannot move alone restart together:
                       ``mixing.bounce_steps``)
``bounce-protocol``    rolling graceful restart onto ``to=consumer|classic``
                       of each member that moves (``mixing.protocol_moves``),
                       the group settling after each
``resubscribe TARGET`` graceful restart subscribed to ``topics=A,B``
``subscribe TARGET``   the member's application changes its subscription to
                       ``topics=A,B`` in place (no restart; its control file)
``stall TARGET``       the member's application stops polling ``for=DUR``
                       (its client's own threads go on: past
                       ``max.poll.interval.ms`` the client leaves the group)
``rotate-leader``      stop the current leader until every kind has led
``chaos``              ``count=N`` seeded random faults, ``gap=DUR``
``sleep DUR``          wait
``await stable``       the group is stable and complete (``timeout=DUR``)
``await drained``      every produced record consumed (``timeout=DUR``)
=====================  ===================================================

Every verb but ``start``, ``sleep`` and ``await`` is a fault: its keys, its checks and what
the runner does for it are its row of the one table of faults, :data:`conformance.nemesis.faults.FAULTS`.

Values are checked when the file is parsed, so that a mistake never reaches a
cluster: a duration is ``N``, ``N.N`` then ``ms``, ``s`` or ``m``, at most
:data:`~conformance.values.MAX_DURATION_MS` (a day); ``timeout=`` and ``for=`` are above zero; every
integer is within the range :data:`~conformance.values.RANGES` gives its key (partitions 1 to
:data:`~conformance.values.MAX_PARTITIONS`, ``producer rate`` from 1, ``chaos count`` from 1, toxic
attributes from 0); ``toxicity`` is a number from 0 to 1; a toxic gets exactly
the attributes toxiproxy knows for its type; names (``name``, topics) are Kafka's
legal characters ``[A-Za-z0-9._-]``; ``add-partitions`` grows a topic (its
``total`` is above the topic's count at that point); ``resubscribe`` names
declared topics; a topic or a key is given once. What needs the member mix (an
``m<i>`` beyond the mix, ``reference`` without a reference member) is checked
by :func:`check_targets` before the cluster starts.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from conformance.cluster.broker import MIGRATION_POLICIES
from conformance.errors import UsageError
from conformance.nemesis.faults import FAULTS
from conformance.scenarios.model import TARGET_WORDS, Action, Phase, Scenario
from conformance.values import (
    Schema,
    boolean,
    choice,
    int_in,
    kafka_name,
    parse_duration_ms,
    positive_duration_ms,
    rack_list,
    rack_name,
    strategy_list,
)

#: verb -> (target: "required" | "none" | "topic" | "duration", keys, required keys). Every fault verb
#: comes from the one table of faults (:data:`conformance.nemesis.faults.FAULTS`), with its keys and checks.
ACTIONS: dict[str, tuple[str, Schema, tuple[str, ...]]] = {
    "start": ("required", {"stagger": parse_duration_ms}, ()),
    **{f.verb: ("required" if f.target == "member" else f.target, f.keys, f.required) for f in FAULTS.values()},
    "sleep": ("duration", {}, ()),
    "await": ("required", {"timeout": positive_duration_ms}, ()),
}
_AWAIT_WHAT = ("stable", "drained")

HEADERS: dict[str, Schema] = {
    "topic": {"partitions": int_in("topic partitions")},
    "producer": {"rate": int_in("producer rate")},
    "members": {"static": boolean, "processing-delay": parse_duration_ms, "commit": choice("auto", "sync-batch", "on-revoke"),
                "strategies": strategy_list, "start-protocol": choice("spec", "classic"), "racks": rack_list},
    "broker": {"migration-policy": choice(*MIGRATION_POLICIES), "rack": rack_name},
}


_MEMBER_RE = re.compile(r"m([0-9]{1,9})", re.ASCII)


def _target_ok(target: str) -> bool:
    return target in TARGET_WORDS or _MEMBER_RE.fullmatch(target) is not None


def _pairs(words: list[str], schema: Schema, where: str, verb: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for word in words:
        key, eq, value = word.partition("=")
        if not eq or not key or not value:
            raise UsageError(f"{where}: {verb}: expected key=value, got {word!r}")
        parse = schema.get(key) or schema.get("*")
        if key in out:
            raise UsageError(f"{where}: {verb}: {key} is given twice")
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
    grown: dict[str, int] = {}   # each topic's partitions at this point of the phases (add-partitions grows it)
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{label}:{number}"
        verb, *words = line.split()
        if verb == "name":
            if len(words) != 1:
                raise UsageError(f"{where}: name takes one word, got {len(words)}")
            try:
                fields["name"] = kafka_name(words[0])
            except ValueError as exc:
                raise UsageError(f"{where}: name: {exc}") from None
        elif verb == "describe":
            fields["description"] = (fields.get("description", "") + " " + " ".join(words)).strip()
        elif verb in HEADERS:
            if current is not None:
                raise UsageError(f"{where}: {verb!r} is a header statement; put it before the first phase")
            if verb == "topic":
                if not words or "=" in words[0]:
                    raise UsageError(f"{where}: topic needs a name, e.g. 'topic orders partitions=12'")
                try:
                    topic = kafka_name(words[0])
                except ValueError as exc:
                    raise UsageError(f"{where}: topic: {exc}") from None
                if topic in fields["topics"]:
                    raise UsageError(f"{where}: topic {topic} is declared twice; declare each topic once")
                args = _pairs(words[1:], HEADERS["topic"], where, verb)
                fields["topics"][topic] = args.get("partitions", 12)
            else:
                args = _pairs(words, HEADERS[verb], where, verb)
                if verb == "producer":
                    fields["producer_rate"] = args.get("rate", 200)
                elif verb == "broker":
                    if "migration-policy" in args:
                        fields["migration_policy"] = args["migration-policy"]
                    if "rack" in args:
                        fields["broker_rack"] = args["rack"]
                else:
                    if "static" in args:
                        fields["static_members"] = args["static"]
                    if "processing-delay" in args:
                        fields["processing_delay_ms"] = args["processing-delay"]
                    if "commit" in args:
                        fields["commit_mode"] = args["commit"]
                    if "strategies" in args:
                        fields["start_strategies"] = tuple(args["strategies"])
                    if "start-protocol" in args:
                        fields["start_protocol"] = args["start-protocol"]
                    if "racks" in args:
                        fields["member_racks"] = tuple(args["racks"])
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
            if not grown:
                grown.update(fields["topics"] or {"orders": 12})
            current[1].append(_parse_action(verb, words, where, grown))
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
        start_protocol=fields.get("start_protocol", "spec"),
        migration_policy=fields.get("migration_policy", "bidirectional"),
        member_racks=fields.get("member_racks", ()), broker_rack=fields.get("broker_rack"),
        phases=tuple(phases),
    )


def _parse_action(verb: str, words: list[str], where: str, topics: dict[str, int]) -> Action:
    """One action line; ``topics`` is every declared topic's partition count at this line
    (an ``add-partitions`` updates it)."""
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
    fault = FAULTS.get(verb)
    if fault is not None and fault.check is not None:
        try:
            fault.check(target, args, topics)
        except ValueError as exc:
            raise UsageError(f"{where}: {exc}") from None
    return Action(verb=verb, target=target, args=args, source=where)


def check_targets(scenario: Scenario, kinds: Sequence[str]) -> None:
    """UsageError (``file:line: ...``) unless every target of ``scenario`` exists in a mix of
    members of ``kinds`` (in mix order): ``m<i>`` needs more than i members, ``reference`` a
    reference member. Called before the cluster starts, so that a run never stops half-way for it."""
    has_reference = "reference" in kinds
    for phase in scenario.phases:
        for action in phase.actions:
            target = action.target or ""
            if ACTIONS[action.verb][0] != "required" or action.verb == "await":
                continue
            member = _MEMBER_RE.fullmatch(target)
            if member and int(member.group(1)) >= len(kinds):
                raise UsageError(f"{action.source}: {action.verb} {target}: the mix has {len(kinds)} member(s), "
                                 f"m0 to m{len(kinds) - 1}; target one of them or add members with --clients")
            if target == "reference" and not has_reference:
                raise UsageError(f"{action.source}: {action.verb} reference: the mix has no reference member; "
                                 f"add 'reference' to --clients or target another member")


def load_scenario(path: Path) -> Scenario:
    """Read and parse a scenario file. The scenario's ``source`` is the file's absolute path (what
    a manifest records, so that a run can be reproduced from any directory); messages name the
    path as given. UsageError, one line, for a file that cannot be read or is not UTF-8 text."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read scenario file {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # e.g. a NUL in the path
        raise UsageError(f"cannot read scenario file {path!r}: {exc}") from None
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark, which some editors write, is not text
    except UnicodeDecodeError as exc:
        raise UsageError(f"scenario file {path} is not UTF-8 text: byte 0x{data[exc.start]:02x} at offset "
                         f"{exc.start} ({exc.reason}); save it as UTF-8") from None
    return replace(parse_scenario(text, path), source=path.absolute())
