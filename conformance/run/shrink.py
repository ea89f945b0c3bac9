"""``conformance shrink RUN_DIR``: cut a failing cell down to the smallest scenario that still fails
the same way, by replaying candidates (:mod:`conformance.shrink`).

The target is one signature (:mod:`conformance.signatures`) of the cell's verdict: the first new
one, or the first of ``--check INV``. The cell's executed schedule becomes an explicit scenario,
which is replayed first: when it does not fail with the target, the shrink stops there (exit 1).
Then, while a pass finds a smaller failing candidate: fewer faults (delta debugging over the fault
units), fewer members (never the culprit nor a member the target's first finding harmed), shorter sleeps,
fewer partitions. A candidate **still fails** when at least 2 of ``--tries`` K replays (default 3)
fail with the target signature; replays stop as soon as the answer is known (2 failures, or too
few tries left to reach 2).

Guarantees: nothing is reported that was not replayed: every candidate tried is in ``shrink.json``
and ``shrink.md`` with its replays (run directories) and how many failed; the result is the last
candidate that still failed, written as ``shrunk.scenario`` with the command that replays it. Each
replay batch is a matrix run in the shrink's directory ``<runs>/<run-id>-shrink/``, which also gets
``draft.md``, a bug report's draft from a failing replay of the result
(:mod:`conformance.report.bug_draft`). A mistake in
the input is one line and exit 2 before anything starts; Ctrl-C stops the replay, keeps what was
tried and exits 130. Exit 0 when the explicit schedule reproduced the failure (the result is the
smallest candidate that still failed).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from conformance import config
from conformance.errors import UsageError, one_line
from conformance.members.spec import MemberSpec
from conformance.pipeline.matrix import failing_findings, known_findings
from conformance.preflight import preflight
from conformance.report.bug_draft import draft
from conformance.run.command import cells_from_manifests
from conformance.run.matrix import MatrixInterrupted, judge_and_report, run_matrix
from conformance.run.options import add_cell_options
from conformance.rundir import new_run_id
from conformance.scenarios.parse import load_scenario
from conformance.scenarios.runner import Cell
from conformance.shrink import Schedule, fewer_faults, fewer_members, fewer_partitions, schedule_of, shorter_gaps
from conformance.signatures import Signature, signature, tally

DEFAULT_TRIES = 3
DEFAULT_CANDIDATES = 30


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("shrink", help="cut a failing cell down to the smallest scenario that still fails "
                                             "the same way, by replaying candidates")
    p.add_argument("run_dir", type=Path, help="the failing cell's run directory (holding manifest.json)")
    p.add_argument("--check", default=None, metavar="INV",
                   help="the failure to keep: the first signature of this check (default: the first new one)")
    p.add_argument("--tries", type=int, default=DEFAULT_TRIES, metavar="K",
                   help=f"replays per candidate; it still fails when 2 of them do (default {DEFAULT_TRIES})")
    p.add_argument("--candidates", type=int, default=DEFAULT_CANDIDATES, metavar="N",
                   help=f"try at most N candidates (default {DEFAULT_CANDIDATES})")
    add_cell_options(p, "the shrink's directory", backend=False)
    p.set_defaults(func=shrink)


@dataclass
class Tried:
    """One candidate and its replays."""

    number: int
    schedule: Schedule
    how: str
    replays: list[tuple[str, bool]] = field(default_factory=list)   # (run_dir, failed with the target)
    example: dict[str, Any] | None = None   # the verdict of a replay that failed with the target

    @property
    def failed(self) -> int:
        return sum(1 for _, f in self.replays if f)

    def still_fails(self) -> bool:
        return self.failed >= 2

    def to_json(self) -> dict[str, Any]:
        return {"candidate": self.number, "how": self.how, "schedule": self.schedule.describe(),
                "tries": len(self.replays), "failed": self.failed, "still_fails": self.still_fails(),
                "replays": [{"run_dir": d, "failed": f} for d, f in self.replays]}


def _verdict_of(run_dir: Path, root: Path, spark_master: str | None) -> dict[str, Any]:
    """The cell's verdict: from the matrix run it belongs to, else judged now."""
    summary = run_dir.parent.parent / "summary.json"
    if summary.is_file():
        for v in json.loads(summary.read_text(encoding="utf-8")).get("cells") or []:
            if v.get("run_dir") and Path(v["run_dir"]).resolve() == run_dir.resolve():
                return v
    verdicts = judge_and_report([run_dir], root / "original", spark_master)
    return verdicts[0]


def target_of(verdict: dict[str, Any], check: str | None) -> tuple[Signature, set[str]]:
    """The signature to keep and the members (names) its first finding names as culprit or harmed (the
    failure a shrink keeps is that one; the signature's other findings may have harmed others)."""
    found = [s.signature for s in tally([verdict]) if check is None or s.signature.invariant == check]
    if not found:
        raise UsageError(f"{verdict.get('run_dir')}: no failing finding" + (f" of {check}" if check else "")
                         + " to shrink")
    target = found[0]
    first = next(f for f in failing_findings(verdict) + known_findings(verdict) if signature(verdict, f) == target)
    return target, {first.get("culprit") or "", *(first.get("harmed") or [])} - {""}


def _candidates(current: Schedule, keep: set[int], topics: dict[str, int]) -> Iterator[tuple[str, Schedule]]:
    for how, gen in (("fewer faults", fewer_faults(current)), ("fewer members", fewer_members(current, keep)),
                     ("shorter sleeps", shorter_gaps(current)), ("fewer partitions", fewer_partitions(current, topics))):
        for candidate in gen:
            yield how, candidate


def shrink(args: argparse.Namespace) -> int:
    run_dir: Path = args.run_dir
    if args.tries < 2:
        raise UsageError(f"--tries {args.tries}: give at least 2 (a candidate still fails when 2 replays do)")
    if args.candidates < 1:
        raise UsageError(f"--candidates {args.candidates}: give at least 1")
    for name in ("manifest.json", "nemesis.jsonl"):
        if not (run_dir / name).is_file():
            raise UsageError(f"{run_dir}: no {name}: give a cell's run directory (reports/<run-id>/runs/<cell>)")
    cell = cells_from_manifests(run_dir)[0]
    source = cell.scenario.source
    if source is None or not Path(source).is_file():
        raise UsageError(f"{run_dir}: the cell's scenario file is gone; shrink needs its header")
    try:
        base = schedule_of(run_dir, Path(source).read_text(encoding="utf-8"))
    except (ValueError, KeyError, OSError) as exc:
        raise UsageError(f"{run_dir}: cannot read its schedule: {exc}") from None
    preflight([cell], args.runs_dir, args.spark_master)
    root = Path(args.runs_dir or config.RUNS_DIR) / new_run_id("shrink")
    (root / "candidates").mkdir(parents=True, exist_ok=True)
    target, names = target_of(_verdict_of(run_dir, root, args.spark_master), args.check)
    members = [m["name"] for m in json.loads((run_dir / "manifest.json").read_text())["members"]]
    keep = {i for i, name in enumerate(members) if name in names}
    print(one_line(f"conformance: shrink {root.name}: keep {target}; "
                   f"{base.describe()}; {args.tries} replays a candidate"), file=sys.stderr)
    tried: list[Tried] = []
    result: Schedule | None = None
    status = 0
    try:
        first = _replay(Tried(0, base, "the executed schedule"), cell, target, root, args)
        tried.append(first)
        if not first.still_fails():
            status = 1
        else:
            result = base
            progress = True
            while progress and len(tried) <= args.candidates:
                progress = False
                for how, candidate in _candidates(result, keep, dict(cell.scenario.topics)):
                    if len(tried) > args.candidates:
                        break
                    t = _replay(Tried(len(tried), candidate, how), cell, target, root, args)
                    tried.append(t)
                    print(one_line(f"shrink: candidate {t.number} ({how}: {candidate.describe()}): "
                                   f"{t.failed} of {len(t.replays)} failed"), file=sys.stderr)
                    if t.still_fails():
                        result, progress = candidate, True
                        break
    except MatrixInterrupted:
        status = 130
        print("conformance: interrupted; every process the shrink started has been stopped; "
              "what it tried is below", file=sys.stderr)
    report = write_report(root, cell, target, tried, result)
    print(report)
    return status


def _replay(t: Tried, cell: Cell, target: Signature, root: Path, args: argparse.Namespace) -> Tried:
    """Replay ``t``'s schedule until 2 replays failed with ``target`` or too few tries are left."""
    path = root / "candidates" / f"{t.number:02d}.scenario"
    path.write_text(t.schedule.render(), encoding="utf-8")
    scenario = load_scenario(path)
    specs = tuple(MemberSpec.parse(s) for s in t.schedule.specs)
    while t.failed < 2 and (args.tries - len(t.replays)) >= 2 - t.failed:
        n = 2 - t.failed if not t.replays else 1
        cells = [Cell(scenario, specs, cell.broker, cell.seed, cell.backend)] * n
        try:
            result = run_matrix(cells, root, args.spark_master, label=f"candidate-{t.number:02d}")
        except MatrixInterrupted as stop:
            _record(t, stop.result.verdicts, target)
            raise
        _record(t, result.verdicts, target)
        if not result.verdicts:
            break
    return t


def _record(t: Tried, verdicts: list[dict[str, Any]], target: Signature) -> None:
    for v in verdicts:
        failed = any(s.signature == target for s in tally([v]))
        t.replays.append((str(v.get("run_dir")), failed))
        if failed and t.example is None:
            t.example = v


def replay_command(root: Path, cell: Cell, result: Schedule) -> str:
    return shlex.join(["conformance", "run", "--scenario", str(root / "shrunk.scenario"), "--clients",
                       ",".join(result.specs), "--broker", cell.broker, "--seed", str(cell.seed)])


def write_report(root: Path, cell: Cell, target: Signature, tried: list[Tried], result: Schedule | None) -> str:
    """``shrink.json``, ``shrink.md`` and (when a candidate still failed) ``shrunk.scenario``; returns the text."""
    data: dict[str, Any] = {"target": str(target), "original": tried[0].schedule.describe() if tried else None,
                            "tried": [t.to_json() for t in tried], "path": str(root)}
    lines = [f"# Shrink: {target}", ""]
    if result is not None:
        (root / "shrunk.scenario").write_text(result.render(), encoding="utf-8")
        data["shrunk"] = result.describe()
        data["replay"] = replay_command(root, cell, result)
        best = next(t for t in reversed(tried) if t.schedule == result)
        data["shrunk_failed"] = f"{best.failed} of {len(best.replays)}"
        lines += [f"Smallest failing schedule: {result.describe()}, failed {best.failed} of {len(best.replays)} replays.",
                  "", f"Replay: `{data['replay']}`", "", "```", result.render().rstrip(), "```", ""]
        if best.example is not None:
            page = draft(best.example, Path(str(best.example.get("run_dir"))), target, data["replay"],
                         data["shrunk_failed"])
            (root / "draft.md").write_text(page, encoding="utf-8")
            data["draft"] = str(root / "draft.md")
            lines += [f"A bug report's draft from one of its failing replays: {root / 'draft.md'}", ""]
    else:
        lines += ["The executed schedule, replayed, did not fail with this signature in 2 replays: nothing to shrink.", ""]
    lines += ["| candidate | how | schedule | failed | still fails |", "|---|---|---|---|---|"]
    lines += [f"| {t.number} | {t.how} | {t.schedule.describe()} | {t.failed} of {len(t.replays)} | "
              f"{'yes' if t.still_fails() else 'no'} |" for t in tried]
    (root / "shrink.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (root / "shrink.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return "\n".join(lines) + f"\nshrink directory: {root}"
