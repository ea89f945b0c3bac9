"""``conformance hunt``: run one scenario over one mix with fresh seeds, judge the cells batch by
batch, and group what failed by signature (:mod:`conformance.signatures`).

The seeds are drawn from the hunt's own seed (``--seed``; random when not given, and recorded), so a
hunt can be run again cell for cell. Cells run one at a time; every ``--batch`` cells are judged
together (one judge per batch, not per cell). The hunt stops after ``--cells`` cells, or starts no
batch once ``--budget`` has passed (a batch is sized from the cells so far to end within it).

Guarantees: every input is checked before anything starts (the cells differ only in their seeds:
:func:`conformance.preflight.preflight` over one of them); a mistake is one line and exit 2. The
hunt's directory ``<runs>/<run-id>-hunt/`` holds each batch's matrix run (its cells, verdicts and
site, as for ``conformance run``) and ``hunt.json`` and ``hunt.md``, the signature table, rewritten
after every batch: an interrupted hunt keeps what it found. Ctrl-C stops the cell that runs, judges
the batch's cells, writes the table and exits 130; every process it started is stopped. Exit
status: 0 when every signature found is a known issue (or none was found), 1 when a new one was, 2
on a usage error, or when suite errors left no cell judged.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from conformance import config
from conformance.errors import UsageError, one_line
from conformance.members import kinds
from conformance.members.spec import MemberSpec, parse_specs
from conformance.preflight import MAX_SEED, preflight, seed
from conformance.run.matrix import MatrixInterrupted, MatrixResult, run_matrix
from conformance.run.options import add_cell_options
from conformance.rundir import new_run_id
from conformance.scenarios.catalog import get_scenario
from conformance.scenarios.runner import Cell
from conformance.signatures import Seen, tally
from conformance.values import positive_duration_ms

DEFAULT_CELLS = 20
DEFAULT_BATCH = 4


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("hunt", help="run one scenario over one mix with fresh seeds and group what failed "
                                           "by signature")
    p.add_argument("--clients", metavar="SPEC,...", help="member specs (default: one of each kind)")
    p.add_argument("--scenario", default="chaos", metavar="NAME|FILE", help="the scenario (default chaos)")
    p.add_argument("--broker", default=None, metavar="VERSION",
                   help=f"broker version; supported: {', '.join(config.BROKER_VERSIONS)} (default {config.DEFAULT_BROKER})")
    how_long = p.add_mutually_exclusive_group()
    how_long.add_argument("--cells", type=int, default=None, metavar="N",
                          help=f"run N cells (default {DEFAULT_CELLS} when --budget is not given)")
    how_long.add_argument("--budget", type=_duration, default=None, metavar="DURATION",
                          help="start cells until this much time has passed (30m, 2h, 90s)")
    p.add_argument("--batch", type=int, default=DEFAULT_BATCH, metavar="K",
                   help=f"cells judged together (default {DEFAULT_BATCH})")
    p.add_argument("--seed", type=seed, default=None,
                   help=f"the hunt's seed, from which every cell's is drawn, 0 to {MAX_SEED} (default: random, recorded)")
    add_cell_options(p, "the hunt's directory")
    p.set_defaults(func=hunt)


def _duration(text: str) -> int:
    """A ``--budget``: the scenario language's durations plus hours (``2h``); milliseconds."""
    if text.endswith("h") and text[:-1].isdigit():
        text = f"{int(text[:-1]) * 60}m"
    try:
        return positive_duration_ms(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cell_seeds(hunt_seed: int) -> "random.Random":
    """The generator of a hunt's cell seeds (the same hunt seed gives the same cells)."""
    return random.Random(hunt_seed)


def next_batch_size(args: argparse.Namespace, ran: int, elapsed_s: float, per_cell_s: float | None) -> int:
    """How many cells the next batch runs: at most ``--batch``; with ``--cells``, at most what is left;
    with ``--budget``, none once it has passed, else as many as the time per cell so far (running
    and judging) lets end within it, at least one."""
    if args.budget is None:
        return max(0, min(args.batch, args.cells - ran))
    left = args.budget / 1000 - elapsed_s
    if left <= 0:
        return 0
    if per_cell_s is None:
        return args.batch
    return max(1, min(args.batch, int(left // per_cell_s)))


def hunt(args: argparse.Namespace) -> int:
    if args.batch < 1:
        raise UsageError(f"--batch {args.batch}: give at least 1")
    if args.cells is not None and args.cells < 1:
        raise UsageError(f"--cells {args.cells}: give at least 1")
    if args.budget is None and args.cells is None:
        args.cells = DEFAULT_CELLS
    args.broker = config.DEFAULT_BROKER if args.broker is None else args.broker
    if args.broker not in config.BROKER_VERSIONS:
        raise UsageError(f"broker {args.broker!r} is not supported; supported: {', '.join(config.BROKER_VERSIONS)}")
    specs = tuple(parse_specs(args.clients) if args.clients is not None
                  else [MemberSpec.parse(s) for s in kinds.default_mix()])
    scenario = get_scenario(args.scenario)
    hunt_seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    seeds = cell_seeds(hunt_seed)
    template = Cell(scenario, specs, args.broker, 0, args.backend)
    preflight([template], args.runs_dir, args.spark_master)   # the hunt's cells differ only in their seeds
    root = Path(args.runs_dir or config.RUNS_DIR) / new_run_id("hunt")
    root.mkdir(parents=True, exist_ok=True)
    header = {"scenario": scenario.name, "clients": [str(s) for s in specs], "broker": args.broker,
              "backend": args.backend, "hunt_seed": hunt_seed, "path": str(root),
              "replay_hunt": _replay(args, scenario.name, hunt_seed)}
    print(one_line(f"conformance: hunt {root.name}: {scenario.name} over {','.join(header['clients'])}, "
                   f"hunt seed {hunt_seed}"), file=sys.stderr)
    verdicts: list[dict[str, Any]] = []
    errors: list[str] = []
    cells: list[Cell] = []
    started = time.monotonic()
    interrupted = False
    batches = 0
    while True:
        elapsed = time.monotonic() - started
        size = next_batch_size(args, len(cells), elapsed, elapsed / len(cells) if cells else None)
        if size == 0:
            break
        batch = [replace(template, seed=seeds.randrange(1, MAX_SEED)) for _ in range(size)]
        cells += batch
        batches += 1
        result: MatrixResult
        try:
            result = run_matrix(batch, root, args.spark_master, label=f"batch-{batches:03d}")
        except MatrixInterrupted as stop:
            result, interrupted = stop.result, True
        verdicts += result.verdicts
        errors += result.errors
        found = tally(verdicts)
        write_table(root, header, found, verdicts, errors, interrupted)
        new = sum(1 for s in found if s.signature.known is None)
        print(one_line(f"hunt: {len(verdicts)} cells judged in {time.monotonic() - started:.0f}s: "
                       f"{len(found)} signature(s), {new} new"), file=sys.stderr)
        if interrupted:
            print("conformance: interrupted; every process the hunt started has been stopped; "
                  "what it found is below", file=sys.stderr)
            break
    found = tally(verdicts)
    print(render_text(found, verdicts))
    print(f"hunt directory: {root}")
    if interrupted:
        return 130
    if errors and not verdicts:
        for err in errors:
            print(one_line(f"suite error: {err}"), file=sys.stderr)
        return 2
    return 1 if any(s.signature.known is None for s in found) else 0


def _replay(args: argparse.Namespace, scenario: str, hunt_seed: int) -> str:
    how = f"--budget {args.budget // 1000}s" if args.budget is not None else f"--cells {args.cells}"
    clients = f" --clients {args.clients}" if args.clients else ""
    backend = f" --backend {args.backend}" if args.backend != "processes" else ""
    return (f"conformance hunt --scenario {scenario}{clients} --broker {args.broker} {how} --batch {args.batch} "
            f"--seed {hunt_seed}{backend}")


def to_json(header: dict[str, Any], found: list[Seen], verdicts: list[dict[str, Any]], errors: list[str],
            interrupted: bool) -> dict[str, Any]:
    results: dict[str, int] = {}
    for v in verdicts:
        results[str(v.get("verdict"))] = results.get(str(v.get("verdict")), 0) + 1
    signatures = [{**s.to_json(), "replay": f"conformance reproduce {s.first.get('run_dir')}"} for s in found]
    return {**header, "cells": len(verdicts), "verdicts": results, "suite_errors": errors,
            "interrupted": interrupted, "signatures": signatures}


def write_table(root: Path, header: dict[str, Any], found: list[Seen], verdicts: list[dict[str, Any]],
                errors: list[str], interrupted: bool) -> None:
    """``hunt.json`` and ``hunt.md`` in ``root``, each replaced whole (written aside, then renamed)."""
    data = to_json(header, found, verdicts, errors, interrupted)
    for name, text in (("hunt.json", json.dumps(data, indent=2) + "\n"), ("hunt.md", render_markdown(data))):
        tmp = root / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(root / name)


def _rows(found: list[Seen]) -> list[tuple[str, ...]]:
    return [(str(len(s.cells)), str(s.count), s.signature.invariant, s.signature.culprit,
             s.signature.known or "new", str(s.first.get("seed", "?")), s.signature.what) for s in found]


_HEAD = ("cells", "findings", "check", "culprit", "known issue", "first seed", "what")


def render_text(found: list[Seen], verdicts: list[dict[str, Any]]) -> str:
    """The closing table: one row per signature (new ones first)."""
    if not found:
        return f"no failing finding in {len(verdicts)} cell(s)"
    rows = [_HEAD, *_rows(found)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEAD) - 1)]
    lines = ["  ".join([*(c.ljust(w) for c, w in zip(r[:-1], widths)), r[-1]]) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  ----")
    new = sum(1 for s in found if s.signature.known is None)
    lines.append(f"{len(found)} signature(s) in {len(verdicts)} cell(s), {new} new")
    return "\n".join(lines)


def render_markdown(data: dict[str, Any]) -> str:
    out = [f"# Hunt: {data['scenario']} over {', '.join(data['clients'])}", "",
           f"Broker {data['broker']}, backend {data['backend']}, hunt seed {data['hunt_seed']}: "
           f"{data['cells']} cell(s) judged ({', '.join(f'{n} {k}' for k, n in sorted(data['verdicts'].items())) or 'none'})"
           + (", interrupted" if data["interrupted"] else "") + ".", "",
           f"Run it again: `{data['replay_hunt']}`", ""]
    if not data["signatures"]:
        return "\n".join(out + ["No failing finding.", ""])
    out += ["| cells | findings | check | culprit | known issue | what | replay the first |",
            "|---|---|---|---|---|---|---|"]
    for s in data["signatures"]:
        out.append(f"| {s['cells']} | {s['findings']} | {s['invariant']} | {s['culprit']} | {s['known_issue'] or 'new'} "
                   f"| {s['what'].replace('|', '/')} | `{s['replay']}` |")
    return "\n".join(out + [""])
