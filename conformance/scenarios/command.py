"""``conformance run`` and ``conformance reproduce``."""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from conformance import config
from conformance.errors import UsageError
from conformance.members.spec import MemberSpec, parse_specs
from conformance.scenarios.catalog import get_scenario, scenario_names
from conformance.scenarios.matrix import MatrixInterrupted, build_cells, run_matrix, summary_table
from conformance.scenarios.runner import Cell


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("run", help="run scenarios against a member mix and judge them")
    p.add_argument("--scenario", action="append", metavar="NAME|FILE",
                   help=f"scenario (repeatable); default: {', '.join(config.DEFAULT_SCENARIOS)}; "
                        f"known: {', '.join(scenario_names())}")
    p.add_argument("--clients", metavar="SPEC,...", help="member specs (default: one of each kind)")
    p.add_argument("--broker", default=config.DEFAULT_BROKER, help="broker version")
    p.add_argument("--seed", type=int, default=None, help="schedule seed (default: random, recorded)")
    p.add_argument("--runs-dir", type=Path, default=None, help="where the run directory goes")
    p.add_argument("--spark-master", default=None, help="Spark master URL for judging (default local[*])")
    p.set_defaults(func=run)

    r = subparsers.add_parser("reproduce", help="run a run directory's scenario, mix, broker and seed again")
    r.add_argument("run_dir", type=Path, help="a cell's run directory (holding manifest.json) or a matrix directory")
    r.add_argument("--runs-dir", type=Path, default=None)
    r.add_argument("--spark-master", default=None)
    r.set_defaults(func=reproduce)


def _run(cells: list[Cell], runs_dir: Path | None, spark_master: str | None, label: str = "matrix") -> int:
    """Run and judge ``cells``; print the closing table, also after Ctrl-C (exit 130)."""
    try:
        result = run_matrix(cells, runs_dir, spark_master, label=label)
    except MatrixInterrupted as stop:
        result = stop.result
        print("conformance: interrupted; every process the run started has been stopped; "
              "the cells that ran are judged below", file=sys.stderr)
    print(summary_table(result))
    return result.exit_code


def run(args: argparse.Namespace) -> int:
    if args.broker not in config.BROKER_VERSIONS:
        raise UsageError(f"broker {args.broker!r} is not supported; supported: {', '.join(config.BROKER_VERSIONS)}")
    specs = parse_specs(args.clients) if args.clients else [MemberSpec.parse(s) for s in config.DEFAULT_MIX]
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    cells = build_cells(args.scenario or list(config.DEFAULT_SCENARIOS), specs, args.broker, seed)
    return _run(cells, args.runs_dir, args.spark_master)


def cells_from_manifests(path: Path) -> list[Cell]:
    manifests = [path / "manifest.json"] if (path / "manifest.json").exists() else sorted(path.glob("runs/*/manifest.json"))
    if not manifests:
        raise UsageError(f"{path}: no manifest.json here or under runs/*/: not a run directory")
    cells = []
    for m in manifests:
        try:
            data = json.loads(m.read_text())
            name = data["scenario"]
            scenario = get_scenario(name if name in scenario_names() else data.get("scenario_file") or name)
            specs = tuple(MemberSpec.parse(x["spec"]) for x in data["members"])
            cells.append(Cell(scenario, specs, data["broker_version"], int(data["seed"])))
        except (KeyError, ValueError, TypeError) as exc:
            raise UsageError(f"{m}: not a usable manifest ({exc!r})") from None
    return cells


def reproduce(args: argparse.Namespace) -> int:
    cells = cells_from_manifests(args.run_dir)
    return _run(cells, args.runs_dir, args.spark_master, label="reproduce")
