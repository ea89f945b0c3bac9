"""``conformance corpus``: run the bug corpus (:mod:`conformance.corpus`), buggy and control cells
judged together, and say which documented bugs the suite catches.

Guarantees: every entry and every cell is checked before anything starts (the entries by
:func:`conformance.corpus.load_corpus`, the cells by :func:`conformance.preflight.preflight`); a
mistake is one line and exit 2. ``--list`` runs nothing. The run is a matrix run (its directory,
site and ``summary.json`` as for ``conformance run``; Ctrl-C judges what ran) whose directory also
gets ``corpus.json``, ``corpus.md`` and ``corpus.html`` (:mod:`conformance.report.corpus`). Exit status: 0 when every entry that ran came out as
expected (caught on every buggy seed, or on one for an intermittent entry; every control passing), 1 when one did not, 2 on a suite
error, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from conformance.corpus import CORPUS_DIR, Entry, Outcome, load_corpus, outcome, to_json
from conformance.errors import one_line
from conformance.preflight import preflight
from conformance.report.corpus import render_html, render_markdown, render_text
from conformance.run.matrix import MatrixInterrupted, MatrixResult, run_dir_names, run_matrix
from conformance.run.options import add_cell_options
from conformance.scenarios.runner import Cell, reproduce_command


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("corpus", help="run the corpus of documented client bugs: each buggy release must "
                                             "fail its check, each fixed release pass")
    p.add_argument("--only", action="append", metavar="ID", help="only this entry (repeatable); default: every entry")
    p.add_argument("--list", action="store_true", help="list the entries and their cells; run nothing")
    p.add_argument("--corpus-dir", type=Path, default=CORPUS_DIR, help=f"the entries' folder (default {CORPUS_DIR})")
    add_cell_options(p, "the run directory")
    p.set_defaults(func=corpus)


def corpus_cells(entries: list[Entry], backend: str) -> list[tuple[Entry, str, int, Cell]]:
    """Each entry that runs: its buggy cell per seed, then its control cell per seed (two entries
    may share a cell: :func:`unique_cells` runs it once)."""
    cells = []
    for e in entries:
        if not e.runs:
            continue
        for role, specs in (("buggy", e.buggy), ("control", e.control)):
            if specs is None:
                continue
            for s in e.seeds:
                cells.append((e, role, s, Cell(e.scenario, specs, e.broker, s, backend)))
    return cells


def unique_cells(planned: list[tuple[Entry, str, int, Cell]]) -> tuple[list[Cell], list[str]]:
    """The cells to run, each once (equal cells are one), in order, and each planned cell's run
    directory name (a cell's equal shares it)."""
    cells: list[Cell] = []
    for _, _, _, cell in planned:
        if cell not in cells:
            cells.append(cell)
    dirs = run_dir_names(cells)
    return cells, [dirs[cells.index(cell)] for _, _, _, cell in planned]


def corpus(args: argparse.Namespace) -> int:
    entries = load_corpus(args.corpus_dir, args.only)
    planned = corpus_cells(entries, args.backend)
    if args.list:
        for e in entries:
            print(f"{e.id}: {e.title} ({e.reference}); {e.culprit}, expect {e.expect}, "
                  + (f"control {e.culprit.kind}@{e.control_release}" if e.control_release else "no fixed release")
                  + ("" if e.runs else f"; not reproduced: {e.tried}"))
        for e, role, s, cell in planned:
            print(f"  {e.id} {role} seed {s}: {reproduce_command(cell)}")
        return 0
    cells, names = unique_cells(planned)
    if cells:
        preflight(cells, args.runs_dir, args.spark_master)
    try:
        result = run_matrix(cells, args.runs_dir, args.spark_master, label="corpus") if cells else None
    except MatrixInterrupted as stop:
        result = stop.result
        print("conformance: interrupted; every process the run started has been stopped; "
              "the cells that ran are judged below", file=sys.stderr)
    outcomes = _outcomes(entries, planned, names, result)
    commands = {name: reproduce_command(cell) for (_, _, _, cell), name in zip(planned, names)}
    records = to_json(outcomes, commands)
    print(render_text(records))
    if result is not None:
        (result.path / "corpus.json").write_text(json.dumps(records, indent=2) + "\n")
        (result.path / "corpus.md").write_text(render_markdown(records))
        (result.path / "corpus.html").write_text(render_html(records))
        for err in result.errors:
            print(one_line(f"suite error: {err}"))
        print(f"run directory: {result.path}")
        if result.interrupted:
            return 130
        if result.errors:
            return 2
    return 0 if all(o.as_expected for o in outcomes) else 1


def _outcomes(entries: list[Entry], planned: list[tuple[Entry, str, int, Cell]], names: list[str],
              result: MatrixResult | None) -> list[Outcome]:
    verdicts = {Path(v["run_dir"]).name: v for v in (result.verdicts if result else []) if v.get("run_dir")}
    return [outcome(e, [(role, s, name) for (pe, role, s, _), name in zip(planned, names) if pe is e], verdicts)
            for e in entries]
