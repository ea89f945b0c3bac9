"""Shrinking a failing cell: its executed schedule as an explicit scenario, and the smaller
candidates delta debugging tries (``conformance shrink``, :mod:`conformance.run.shrink`).

:func:`schedule_of` reads what a cell did, not what its scenario said: the nemesis log's lines from
the first phase's start to the scenario's end (teardown left out), each line a step at its time
(``start m1``, ``kill m2``, ``pause m1 for=12000ms`` from a pause and its resume, ``toxic`` from its
add and remove, ``cut``, ``disconnect``, ``stall``, ``broker-restart``, ``add-partitions``,
``subscribe``), with the time between them as ``sleep``. A ``chaos`` or ``rotate-leader`` line of
the scenario thus becomes the faults it injected. :class:`Schedule` renders as a scenario file
whose header is the original file's (its topics, producer and member settings), renamed, ending
with the group settling and the records drained.

The candidates (:func:`fewer_faults`, :func:`shorter_gaps`, :func:`fewer_members`,
:func:`fewer_partitions`) each return smaller schedules, never the same one. A fault and the start
that brings its member back are one unit (dropping a kill drops the restart with it). Members are
named ``m<i>`` by their place in the mix, so dropping one renumbers the others' steps.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator

from conformance.nemesis.faults import FAULTS, RUNNER_LINES

# What each nemesis log line says, from the one table of faults: a fault that lasts ``for`` a stated time
# logs an invoke line and the heal line that ends it; the others, one line a step.
_TIMED_ROWS = [f for f in FAULTS.values() if "for" in f.keys and len(f.lines) == 2]
#: A heal line -> the invoke line it ends; an invoke line -> the verb that replays it.
_TIMED = {f.lines[1].name: f.lines[0].name for f in _TIMED_ROWS}
_VERB = {f.lines[0].name: f.verb for f in _TIMED_ROWS}
_TOXIC = FAULTS["toxic"].lines[0].name
#: A stop line -> its verb (a graceful stop, a kill).
_STOPS = {line.name: f.verb for f in (FAULTS["stop"], FAULTS["kill"]) for line in f.lines}
#: A broker line -> its restart's mode (the row logs a clean restart's line, then a kill's).
_BROKER = dict(zip((line.name for line in FAULTS["broker-restart"].lines), ("clean", "kill")))
_GROW = FAULTS["add-partitions"].lines[0].name
_SUBSCRIBE = FAULTS["subscribe"].lines[0].name
_START = RUNNER_LINES[0].name
_MEMBER_TARGET = re.compile(r"m(\d+)(?:-|$)")
#: The shortest gap a shrink makes (below it, two steps are one moment).
MIN_GAP_MS = 500


@dataclass(frozen=True)
class Step:
    """One line of the explicit schedule: ``verb``, its member index (None for a broker or topic
    step), its ``args`` as the scenario language writes them, ``gap_ms`` of sleep before it, and
    ``unit``: the steps of one unit (a fault and the start that brings its member back) share it."""

    verb: str
    member: int | None
    args: tuple[tuple[str, str], ...] = ()
    gap_ms: int = 0
    unit: int = 0
    topic: str | None = None

    def line(self) -> str:
        target = f" m{self.member}" if self.member is not None else (f" {self.topic}" if self.topic else "")
        return f"{self.verb}{target}" + "".join(f" {k}={v}" for k, v in self.args)


@dataclass(frozen=True)
class Schedule:
    """An explicit schedule: the original scenario file's ``header`` lines (before its first phase),
    the member ``specs`` (strings) and the ``steps``; ``partitions`` overrides topic sizes;
    ``origin`` is each member's place in the original cell's mix (a shrink drops members)."""

    name: str
    header: tuple[str, ...]
    specs: tuple[str, ...]
    steps: tuple[Step, ...]
    partitions: tuple[tuple[str, int], ...] = ()
    origin: tuple[int, ...] = ()

    @property
    def faults(self) -> int:
        return len({s.unit for s in self.steps if s.unit})

    def render(self) -> str:
        sizes = dict(self.partitions)
        out = []
        for raw in self.header:
            words = raw.split()
            if words[:1] == ["name"]:
                out.append(f"name {self.name}")
            elif words[:1] == ["topic"] and len(words) > 1 and words[1] in sizes:
                out.append(f"topic {words[1]} partitions={sizes[words[1]]}")
            else:
                out.append(raw)
        out.append("phase schedule")
        for s in self.steps:
            if s.gap_ms:
                out.append(f"  sleep {s.gap_ms}ms")
            out.append(f"  {s.line()}")
        out += ["phase settle", "  await stable timeout=90s", "  await drained timeout=90s"]
        return "\n".join(out) + "\n"

    def describe(self) -> str:
        return (f"{len(self.specs)} members, {self.faults} fault(s), "
                f"{sum(s.gap_ms for s in self.steps) / 1000:.1f} s of sleeps"
                + (f", partitions {dict(self.partitions)}" if self.partitions else ""))


def header_of(scenario_text: str) -> tuple[str, ...]:
    """The statements of a scenario file before its first ``phase`` (comments and blank lines dropped)."""
    out = []
    for raw in scenario_text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        if line.split()[0] == "phase":
            break
        out.append(line.strip())
    return tuple(out)


def _member(target: str) -> int | None:
    m = _MEMBER_TARGET.match(target or "")
    return int(m.group(1)) if m else None


def _ms(value: float) -> str:
    return f"{max(1, round(value))}ms"


def schedule_of(run_dir: Path, scenario_text: str) -> Schedule:
    """The explicit schedule a cell executed (see the module docstring). ValueError when the run
    directory has no usable manifest or nemesis log."""
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    phases = manifest.get("phases") or []
    t0 = float(phases[0]["start_ts"]) if phases else float(manifest.get("start_ts") or 0)
    end = float(manifest.get("end_ts") or float("inf"))
    lines = [json.loads(x) for x in (run_dir / "nemesis.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    lines = [x for x in lines if t0 <= float(x["ts"]) <= end]
    steps: list[tuple[float, float, Step]] = []   # (ts, end of the step's own time, step)
    open_timed: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    unit = 0
    down: dict[int, int] = {}   # member -> unit of the fault that stopped it
    started: set[int] = set()
    for x in lines:
        fault, target, ts, details = x["fault"], x.get("target") or "", float(x["ts"]), x.get("details") or {}
        member = _member(target)
        if fault in _TIMED:
            begin = open_timed.pop((_TIMED[fault], target), None)
            if begin is None:
                continue
            index, _ = begin
            b_ts, _, step = steps[index]
            steps[index] = (b_ts, ts, replace(step, args=(*step.args, ("for", _ms(ts - b_ts)))))
            continue
        if fault in _VERB:
            unit += 1
            args: list[tuple[str, str]] = []
            if fault == _TOXIC:
                args = [("type", str(details.get("type"))), ("stream", str(details.get("stream", "downstream")))]
                args += [(k, str(v)) for k, v in sorted((details.get("attributes") or {}).items())]
            open_timed[(fault, target)] = (len(steps), details)
            steps.append((ts, ts, Step(_VERB[fault], member, tuple(args), unit=unit)))
        elif fault in _STOPS:
            unit += 1
            if member is not None:
                down[member] = unit
            steps.append((ts, ts, Step(_STOPS[fault], member, unit=unit)))
        elif fault == _START and member is not None:
            restart = member in started
            started.add(member)
            steps.append((ts, ts, Step("start", member, unit=down.pop(member, 0) if restart else 0)))
        elif fault in _BROKER:
            if x.get("phase") == "heal":
                continue
            unit += 1
            steps.append((ts, ts, Step("broker-restart", None, (("mode", _BROKER[fault]),), unit=unit)))
        elif fault == _GROW:
            unit += 1
            steps.append((ts, ts, Step("add-partitions", None, (("total", str(details.get("total"))),), unit=unit,
                                       topic=str(details.get("topic")))))
        elif fault == _SUBSCRIBE:
            unit += 1
            steps.append((ts, ts, Step("subscribe", member, (("topics", ",".join(details.get("topics") or [])),),
                                       unit=unit)))
    out: list[Step] = []
    cursor = t0
    for ts, until, step in steps:
        gap = ts - cursor
        out.append(replace(step, gap_ms=int(gap) if gap >= MIN_GAP_MS else 0))
        cursor = max(cursor, until, ts)
    specs = tuple(str(m["spec"]) for m in manifest["members"])
    name = f"{manifest['scenario']}-shrunk"
    return Schedule(name, header_of(scenario_text), specs, tuple(out), origin=tuple(range(len(specs))))


# -- candidates ---------------------------------------------------------------------------------


def _without_units(s: Schedule, units: set[int]) -> Schedule:
    return replace(s, steps=tuple(x for x in s.steps if x.unit not in units))


def fewer_faults(s: Schedule) -> Iterator[Schedule]:
    """Delta debugging's complements over the fault units: drop halves, then quarters, ... then one
    unit at a time (each candidate keeps at least one fault)."""
    units = sorted({x.unit for x in s.steps if x.unit})
    n = 2
    while len(units) >= 1 and n <= 2 * len(units):
        size = max(1, len(units) // n)
        for i in range(0, len(units), size):
            drop = set(units[i:i + size])
            if 0 < len(drop) < len(units):
                yield _without_units(s, drop)
        if size == 1:
            break
        n *= 2


def shorter_gaps(s: Schedule) -> Iterator[Schedule]:
    """Every sleep halved (down to :data:`MIN_GAP_MS`), when that takes at least a second off in all."""
    steps = tuple(replace(x, gap_ms=max(MIN_GAP_MS, x.gap_ms // 2) if x.gap_ms else 0) for x in s.steps)
    if sum(x.gap_ms for x in s.steps) - sum(x.gap_ms for x in steps) >= 1000:
        yield replace(s, steps=steps)


def fewer_members(s: Schedule, keep: set[int]) -> Iterator[Schedule]:
    """The schedule without one member (each member whose original place is not in ``keep``, in
    turn; never below two members): its steps dropped (and the units they belong to), the later
    members renumbered."""
    for gone in range(len(s.specs)):
        if s.origin[gone] in keep or len(s.specs) <= 2:
            continue
        units = {x.unit for x in s.steps if x.member == gone and x.unit}
        steps = tuple(replace(x, member=None if x.member is None else x.member - (x.member > gone))
                      for x in s.steps if x.member != gone and x.unit not in units)
        yield replace(s, specs=s.specs[:gone] + s.specs[gone + 1:], steps=steps,
                      origin=s.origin[:gone] + s.origin[gone + 1:])


def fewer_partitions(s: Schedule, topics: dict[str, int]) -> Iterator[Schedule]:
    """Each topic (that no step grows) at half its partitions, at least one."""
    grown = {x.topic for x in s.steps if x.verb == "add-partitions"}
    sizes = {**topics, **dict(s.partitions)}
    for topic, n in sizes.items():
        if topic in grown or n <= 1:
            continue
        yield replace(s, partitions=tuple(sorted({**dict(s.partitions), topic: n // 2}.items())))
