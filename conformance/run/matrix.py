"""The matrix: every cell of scenarios x member mix x broker, run, judged and summarised.

Guarantees: each cell runs in its own run directory under
``<runs>/<run-id>/runs/<cell-id>/``: :func:`build_cells` runs a cell asked for twice
(the same scenario file, mix, broker and seed) once, and says so; cells that are
different yet share an id (two scenario files with one ``name``) get directories
``<cell-id>``, ``<cell-id>--2``, ... in order (:func:`run_dir_names`). The matrix
directory gets ``summary.json`` and the reports even when a cell fails or the run is interrupted (the cells
that finished are judged; the interrupted one is marked incomplete), and then
the interrupt goes on to the caller as :class:`MatrixInterrupted`, which
carries that result. The exit status is 0 when every cell passes or is a
known issue (every failing finding a known client bug), 1 when
any cell failed (an invariant violated or unknown, or input lines that
could not be used: the report's rule,
:func:`conformance.pipeline.matrix.cell_result`), else 2 on a suite error
(its cell, cut short, is judged "incomplete": what it observed, not what only
its scenario's end would show), 130 when interrupted.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from conformance import config
from conformance.errors import SuiteError
from conformance.members.spec import MemberSpec
from conformance.pipeline.matrix import cell_result
from conformance.rundir import RunDir, new_run_id
from conformance.scenarios.catalog import get_scenario
from conformance.scenarios.runner import Cell, CellRun


class ProgressLine:
    """Progress lines: a bar over the matrix, cell i/n, scenario and mix, the message, elapsed time."""

    def __init__(self, total: int, stream: Any = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self.cell = ""

    def begin(self, index: int, cell: Cell) -> None:
        self.cell = f"[{index}/{self.total}] {cell.scenario.name} · {','.join(str(s) for s in cell.specs)}"
        self.cell_started = time.monotonic()
        self(f"start (broker {cell.broker}, seed {cell.seed})")

    def __call__(self, message: str) -> None:
        width = 20
        filled = int(width * self.done / max(1, self.total))
        bar = "#" * filled + "." * (width - filled)
        elapsed = time.monotonic() - getattr(self, "cell_started", self.started)
        line = f"{bar} {self.cell} · {message} · {elapsed:5.1f}s"
        print(line, file=self.stream, flush=True)


@dataclass
class MatrixResult:
    path: Path
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    interrupted: bool = False

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        results = {cell_result(v) for v in self.verdicts}
        if "fail" in results or "malformed" in results:
            return 1
        return 2 if self.errors or "incomplete" in results else 0


class MatrixInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run_matrix`, raised once the cells that ran are judged and
    ``summary.json`` is written; ``result`` is what was judged. A KeyboardInterrupt, so a
    caller that does not look for it stops as it would on Ctrl-C."""

    def __init__(self, result: MatrixResult) -> None:
        super().__init__(f"interrupted; partial verdicts in {result.path}")
        self.result = result


def build_cells(scenarios: list[str], specs: list[MemberSpec], broker: str, seed: int,
                notice: Callable[[str], None] | None = None) -> list[Cell]:
    """One cell per scenario (a catalog name or a file), in order; a cell equal to an earlier one
    (the same scenario, however named, with the same mix, broker and seed) is left out, and
    ``notice`` is told so in one line."""
    cells: list[Cell] = []
    for name in scenarios:
        cell = Cell(get_scenario(name), tuple(specs), broker, seed)
        if cell in cells:
            if notice:
                notice(f"scenario {name} is given more than once with the same mix, broker and seed; its cell runs once")
            continue
        cells.append(cell)
    return cells


def run_dir_names(cells: list[Cell]) -> list[str]:
    """Each cell's run directory name: its ``cell_id``, then ``--2``, ``--3``... appended for a
    later cell whose id an earlier one has, so that no two cells share a directory."""
    names: list[str] = []
    for cell in cells:
        name, n = cell.cell_id, 1
        while name in names:
            n += 1
            name = f"{cell.cell_id}--{n}"
        names.append(name)
    return names


def run_matrix(cells: list[Cell], runs_dir: Path | None = None, spark_master: str | None = None,
               label: str = "matrix") -> MatrixResult:
    """Run every cell, judge them together, write summary and reports.

    Raises :class:`MatrixInterrupted` (after judging what ran) on Ctrl-C."""
    root = Path(runs_dir or config.RUNS_DIR) / new_run_id(label)
    try:
        (root / "runs").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SuiteError(f"cannot create the run directory {root}: {exc.strerror or exc}") from None
    result = MatrixResult(root)
    progress = ProgressLine(len(cells))
    run_dirs: list[Path] = []
    try:
        for i, (cell, dir_name) in enumerate(zip(cells, run_dir_names(cells)), start=1):
            rd = RunDir(root / "runs" / dir_name)
            for sub in ("members", "logs"):
                (rd.path / sub).mkdir(parents=True, exist_ok=True)
            run_dirs.append(rd.path)
            progress.begin(i, cell)
            try:
                CellRun(cell, rd, progress).execute()
            except SuiteError as exc:
                result.errors.append(f"{dir_name}: {exc}")
                progress(f"suite error: {exc}")
            except Exception as exc:  # a bug in the suite must not lose the other cells
                result.errors.append(f"{dir_name}: {exc!r}")
                (rd.logs / "suite-error.txt").write_text(traceback.format_exc())
                progress(f"suite error: {exc!r} (see {rd.logs / 'suite-error.txt'})")
            progress.done += 1
    except KeyboardInterrupt:
        result.interrupted = True
        progress("interrupted: judging the cells that ran")
    finally:
        judged = [p for p in run_dirs if (p / "manifest.json").exists()]
        try:
            if judged:
                result.verdicts = judge_and_report(judged, root, spark_master)
        except KeyboardInterrupt:
            result.interrupted = True
            result.errors.append("interrupted while judging: verdicts are missing")
        finally:
            write_summary(result)
    if result.interrupted:
        raise MatrixInterrupted(result)
    return result


def judge_and_report(run_dirs: list[Path], out: Path, spark_master: str | None) -> list[dict[str, Any]]:
    """Judge the cells in one Spark session; write the site (index.html, matrix.json,
    summary.md, junit.xml, allure-results/) into the matrix directory."""
    from conformance.pipeline import judge
    from conformance.pipeline.timelines import timelines
    from conformance.report.site import write_site

    verdicts = judge(run_dirs, out / "pipeline", spark_master=spark_master)
    write_site(verdicts, out, timelines(out / "pipeline", spark_master))
    return verdicts


def write_summary(result: MatrixResult) -> None:
    summary = {
        "path": str(result.path),
        "interrupted": result.interrupted,
        "suite_errors": result.errors,
        "cells": result.verdicts,
        "passed": result.exit_code == 0,
    }
    tmp = result.path / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    tmp.replace(result.path / "summary.json")


def summary_table(result: MatrixResult) -> str:
    """The closing table: one row per cell, failing invariants named."""
    rows = [("scenario", "members", "broker", "verdict", "violations")]
    for v in result.verdicts:
        failing = sorted(k for k, inv in v.get("invariants", {}).items() if inv.get("status") != "pass")
        why = [f"{k}({v['invariants'][k]['status']})" for k in failing]
        if v.get("malformed"):
            why.append(f"malformed({len(v['malformed'])} lines)")
        rows.append((v.get("scenario", "?"), ",".join(v.get("members", [])), v.get("broker_version", "?"),
                     cell_result(v).upper(), " ".join(why) or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for err in result.errors:
        lines.append(f"suite error: {err}")
    results = [cell_result(v) for v in result.verdicts]
    cut, known, bad = results.count("incomplete"), results.count("known-issue"), results.count("malformed")
    lines.append(f"{results.count('pass')} passed, {results.count('fail')} failed"
                 + (f", {known} known issue(s)" if known else "")
                 + (f", {bad} malformed (damaged input, no client blamed)" if bad else "")
                 + (f", {cut} cut short (incomplete)" if cut else ""))
    lines.append(f"run directory: {result.path}")
    return "\n".join(lines)
