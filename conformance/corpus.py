"""The bug corpus: documented client bugs, each a runnable pair of cells, and what the suite made of them.

An entry is one file ``fixtures/bug-corpus/<id>.toml`` (the id is the file's name): the bug's
upstream ``reference``, a ``title``, its ``mechanism`` (one paragraph, read from the client's
source, citing files and functions), the ``scenario`` (a catalog name, or a file relative to the
entry), the ``buggy`` member mix with the affected release, the ``culprit`` (the spec of that
release, one of the mix), the ``expect``\\ ed invariant, the ``seeds`` and the ``broker``
(default: the suite's default broker). ``control`` is the same mix with the culprit at a fixed
release; an entry without one is a bug no release has fixed yet. An entry the suite cannot
trigger says ``status = "not-reproduced"`` and ``tried`` (what was tried); it is listed, not run.
A bug that shows in some runs of a cell only (a race) says ``intermittent = true`` and gives
several seeds: one seed that catches it is enough, and the table says in how many of them it did.

Guarantees:

- :func:`load_corpus` checks every entry before anything starts and refuses a mistake in one line
  (:class:`~conformance.errors.UsageError`, exit 2): unknown or missing keys, a scenario the
  catalog does not have, specs that do not parse, a culprit that is not in the buggy mix, a
  control that differs from the buggy mix in anything but the culprit's version, and a reproduced
  entry with no row of the known-issues table (:mod:`conformance.members.known_issues`) of the
  culprit's kind, the expected invariant and the entry's ``reference`` that affects the buggy
  release and not the control's: the report of a caught bug always names its upstream reference.
- :func:`outcome` judges an entry from the verdicts of its cells only: a buggy cell **caught**
  the bug when one of its failing findings of the expected invariant names a member of the
  culprit's spec as its culprit; a control is **clean** when its cell passes
  (:func:`conformance.pipeline.matrix.cell_result`). A cell that did not run to a verdict is
  ``no verdict``, never caught and never clean.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance import config
from conformance.errors import UsageError
from conformance.members import known_issues
from conformance.members.spec import MemberSpec, parse_specs
from conformance.pipeline.matrix import cell_result
from conformance.scenarios.catalog import get_scenario
from conformance.scenarios.model import Scenario

CORPUS_DIR: Path = config.FIXTURES_DIR / "bug-corpus"
STATUSES: tuple[str, ...] = ("reproduced", "not-reproduced")
_REQUIRED = ("reference", "title", "mechanism", "scenario", "buggy", "culprit", "expect", "seeds")
_OPTIONAL = ("control", "broker", "status", "tried", "intermittent")


@dataclass(frozen=True)
class Entry:
    """One documented bug (see the module docstring for each field)."""

    id: str
    reference: str
    title: str
    mechanism: str
    scenario: Scenario
    buggy: tuple[MemberSpec, ...]
    culprit: MemberSpec
    expect: str
    seeds: tuple[int, ...]
    broker: str
    control: tuple[MemberSpec, ...] | None = None
    status: str = "reproduced"
    tried: str = ""
    intermittent: bool = False
    source: Path = field(default=Path("."), compare=False)

    @property
    def control_release(self) -> str | None:
        """The control's release of the culprit's kind: a release with the fix (not necessarily the
        first: a later one where the rest of the group's cell passes); None: no release fixes it."""
        if self.control is None:
            return None
        return next(c.version for c, b in zip(self.control, self.buggy) if c != b)

    @property
    def runs(self) -> bool:
        return self.status == "reproduced"


def load_entry(path: Path) -> Entry:
    """The entry in ``path``; UsageError, one line naming the file, for anything wrong in it."""
    where = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{where}: cannot read it: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{where}: not a corpus entry: not TOML ({exc})") from None
    unknown = sorted(set(data) - set(_REQUIRED) - set(_OPTIONAL))
    missing = [k for k in _REQUIRED if k not in data]
    if unknown or missing:
        raise UsageError(f"{where}: " + "; ".join(
            ([f"unknown key(s) {', '.join(unknown)}"] if unknown else [])
            + ([f"missing key(s) {', '.join(missing)}"] if missing else []))
            + f"; an entry has {', '.join(_REQUIRED)} and may have {', '.join(_OPTIONAL)}")
    for key in ("reference", "title", "mechanism", "scenario", "buggy", "culprit", "expect", "control",
                "broker", "status", "tried"):
        if key in data and (not isinstance(data[key], str) or not data[key].strip()):
            raise UsageError(f"{where}: {key} must be a non-empty string")
    seeds = data["seeds"]
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and s >= 0 for s in seeds):
        raise UsageError(f"{where}: seeds must be a non-empty list of non-negative integers")
    intermittent = data.get("intermittent", False)
    if not isinstance(intermittent, bool):
        raise UsageError(f"{where}: intermittent must be true or false")
    status = data.get("status", "reproduced")
    if status not in STATUSES:
        raise UsageError(f"{where}: status must be one of {', '.join(STATUSES)}, not {status!r}")
    if status == "not-reproduced" and not data.get("tried"):
        raise UsageError(f"{where}: a not-reproduced entry says what was tried (tried = \"...\")")
    broker = data.get("broker", config.DEFAULT_BROKER)
    if broker not in config.BROKER_VERSIONS:
        raise UsageError(f"{where}: broker {broker!r} is not supported; supported: {', '.join(config.BROKER_VERSIONS)}")
    scenario_name = data["scenario"]
    local = path.parent / scenario_name
    try:
        scenario = get_scenario(str(local) if local.suffix == ".scenario" else scenario_name)
        buggy = tuple(parse_specs(data["buggy"]))
        culprit = MemberSpec.parse(data["culprit"])
        control = tuple(parse_specs(data["control"])) if "control" in data else None
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None
    if culprit not in buggy:
        raise UsageError(f"{where}: culprit {culprit} is not in the buggy mix {data['buggy']}")
    entry = Entry(path.stem, data["reference"].strip(), data["title"].strip(), " ".join(data["mechanism"].split()),
                  scenario, buggy, culprit, data["expect"].strip(), tuple(seeds), broker, control, status,
                  " ".join(data.get("tried", "").split()), intermittent, path)
    if control is not None:
        _check_control(entry, where)
    if entry.runs:
        _check_known_issue(entry, where)
    return entry


def _check_control(entry: Entry, where: str) -> None:
    """The control is the buggy mix with every member of the culprit's spec (and nothing else) at one
    other release of its kind."""
    assert entry.control is not None
    changed = [(b, c) for b, c in zip(entry.buggy, entry.control) if b != c]
    swapped = {c for _, c in changed}
    if (len(entry.control) != len(entry.buggy) or not changed or len(swapped) != 1
            or any(b != entry.culprit for b, _ in changed) or entry.culprit in entry.control
            or any(c.kind != entry.culprit.kind or c.faults != entry.culprit.faults
                   or c.protocol != entry.culprit.protocol for c in swapped)):
        raise UsageError(f"{where}: the control must be the buggy mix with only the culprit {entry.culprit} at "
                         f"another release of {entry.culprit.kind}; it is {','.join(map(str, entry.control))}")


def _check_known_issue(entry: Entry, where: str) -> None:
    """A reproduced entry's bug is a known-issues row: the culprit's kind, the expected invariant and
    the entry's reference, affecting the buggy release and not the control's."""
    rows = [r for r in known_issues.table() if r.kind == entry.culprit.kind and r.invariant == entry.expect
            and r.reference.startswith(entry.reference)]
    if not any(r.affects(entry.culprit.kind, entry.culprit.version) for r in rows):
        raise UsageError(f"{where}: no known-issues row of {entry.culprit.kind}, {entry.expect} and reference "
                         f"{entry.reference!r} affects {entry.culprit}: add the row to the kind's KNOWN_ISSUES, or "
                         "mark the entry not-reproduced")
    if entry.control_release is not None and any(r.affects(entry.culprit.kind, entry.control_release) for r in rows):
        raise UsageError(f"{where}: the control's {entry.culprit.kind}@{entry.control_release} is still affected by the "
                         f"known-issues row of {entry.reference!r}: a control runs a fixed release")


def load_corpus(directory: Path = CORPUS_DIR, only: list[str] | None = None) -> list[Entry]:
    """Every entry of ``directory`` in name order (only those named by ``only``, each of which must
    exist); UsageError for the first entry that is wrong."""
    paths = sorted(directory.glob("*.toml"))
    if not paths:
        raise UsageError(f"{directory}: no corpus entries (*.toml) here")
    ids = [p.stem for p in paths]
    if only:
        unknown = [i for i in only if i not in ids]
        if unknown:
            raise UsageError(f"no corpus entry {', '.join(map(repr, unknown))}; entries: {', '.join(ids)}")
        paths = [p for p in paths if p.stem in only]
    return [load_entry(p) for p in paths]


@dataclass(frozen=True)
class CellOutcome:
    """One cell of an entry: its role (``buggy`` or ``control``), seed, run directory name, the
    cell's result (``pass``, ``fail``, ``known-issue``, ``malformed``, ``incomplete``, or ``no
    verdict``), and for a buggy cell whether it caught the bug, with the catching finding's message
    and the known issue it was reported as."""

    role: str
    seed: int
    run: str
    result: str
    caught: bool = False
    finding: str = ""
    known_issue: str = ""


@dataclass(frozen=True)
class Outcome:
    """An entry and its cells; ``verdict`` in one word (see :func:`outcome`)."""

    entry: Entry
    cells: tuple[CellOutcome, ...]

    @property
    def caught(self) -> int:
        return sum(c.caught for c in self.cells if c.role == "buggy")

    @property
    def verdict(self) -> str:
        """``caught`` (every buggy seed caught it and every control passed, or no release fixes it),
        ``caught, control not clean``, ``missed`` (no buggy seed caught it), ``caught in k of n``
        (some seeds did), or ``not-reproduced`` (not run)."""
        if not self.entry.runs:
            return "not-reproduced"
        buggy = [c for c in self.cells if c.role == "buggy"]
        controls = [c for c in self.cells if c.role == "control"]
        if not self.caught:
            return "missed"
        if self.caught < len(buggy):
            return f"caught in {self.caught} of {len(buggy)}"
        if any(c.result != "pass" for c in controls):
            return "caught, control not clean"
        return "caught"

    @property
    def as_expected(self) -> bool:
        """Caught on every seed with clean controls (or not run); an intermittent entry's bug needs one
        seed that caught it, every control clean."""
        if self.entry.intermittent and self.verdict.startswith("caught in "):
            return all(c.result == "pass" for c in self.cells if c.role == "control")
        return self.verdict in ("caught", "not-reproduced")


def _caught(entry: Entry, verdict: dict[str, Any]) -> tuple[bool, str, str]:
    """Whether ``verdict`` has a failing finding of the expected invariant whose culprit is of the
    culprit's spec; that finding's message and known-issue reference."""
    specs: dict[str, str] = verdict.get("member_specs") or {}
    inv = (verdict.get("invariants") or {}).get(entry.expect) or {}
    if inv.get("status") not in ("fail", "known-issue"):
        return False, "", ""
    for viol in inv.get("violations") or []:
        if (viol.get("evidence") or {}).get("severity") == "warning":
            continue
        spec = specs.get(viol.get("culprit") or "")
        if spec is not None and MemberSpec.parse(spec) == entry.culprit:
            return True, str(viol.get("message", "")), str((viol.get("known_issue") or {}).get("reference", ""))
    return False, "", ""


def outcome(entry: Entry, cells: list[tuple[str, int, str]], verdicts: dict[str, dict[str, Any]]) -> Outcome:
    """The entry's outcome: ``cells`` are its (role, seed, run directory name), ``verdicts`` the
    judged cells by run directory name (a cell missing there has no verdict)."""
    out = []
    for role, seed, run in cells:
        verdict = verdicts.get(run)
        if verdict is None:
            out.append(CellOutcome(role, seed, run, "no verdict"))
            continue
        caught, finding, known = _caught(entry, verdict) if role == "buggy" else (False, "", "")
        out.append(CellOutcome(role, seed, run, cell_result(verdict), caught, finding, known))
    return Outcome(entry, tuple(out))


def to_json(outcomes: list[Outcome], commands: dict[str, str]) -> list[dict[str, Any]]:
    """The outcomes as JSON: each entry's facts, cells, outcome and the command that reproduces its
    buggy cell (``commands``: run directory name -> command)."""
    result = []
    for o in outcomes:
        e = o.entry
        result.append({
            "id": e.id, "reference": e.reference, "title": e.title, "mechanism": e.mechanism,
            "scenario": e.scenario.name, "culprit": str(e.culprit), "control_release": e.control_release, "expect": e.expect,
            "status": e.status, "tried": e.tried or None, "intermittent": e.intermittent, "outcome": o.verdict,
            "as_expected": o.as_expected,
            "cells": [{"role": c.role, "seed": c.seed, "run": c.run, "result": c.result, "caught": c.caught,
                       "finding": c.finding or None, "known_issue": c.known_issue or None,
                       "command": commands.get(c.run)} for c in o.cells],
        })
    return result
