"""``conformance run`` and ``conformance reproduce``.

Guarantee: every input is checked before anything starts (no broker, no member, no
install): the broker version, the member specs and their versions
(:mod:`conformance.members.versions`; a member release that cannot work with the cell's broker,
by its kind's ``BROKER_LIMITS``, too), each scenario against the mix (its targets:
:func:`conformance.scenarios.parse.check_targets`; its start strategies:
:func:`conformance.members.mixing.plan_mix`), ``--spark-master``
(:mod:`conformance.spark_master`) and the runs directory, which is created. A mistake is one
line on stderr and exit 2. With ``--backend docker`` a Docker engine must answer and every fault
of the scenario must exist on that backend (checked the same way, before anything starts).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from conformance import config
from conformance.errors import UsageError, one_line
from conformance.members import kinds
from conformance.members.spec import MemberSpec, parse_specs
from conformance.preflight import MAX_SEED, preflight, seed
from conformance.run.matrix import MatrixInterrupted, build_cells, run_matrix, summary_table
from conformance.run.options import add_cell_options
from conformance.scenarios.catalog import get_scenario, is_builtin, scenario_names
from conformance.scenarios.model import Scenario
from conformance.scenarios.parse import load_scenario
from conformance.scenarios.runner import BACKENDS, Cell


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("run", help="run scenarios against a member mix and judge them")
    p.add_argument("--scenario", action="append", metavar="NAME|FILE",
                   help=f"scenario (repeatable); default: {', '.join(config.DEFAULT_SCENARIOS)}; "
                        f"known: {', '.join(scenario_names())}")
    p.add_argument("--clients", metavar="SPEC,...", help="member specs (default: one of each kind)")
    p.add_argument("--broker", default=None, metavar="VERSION",
                   help=f"broker version; supported: {', '.join(config.BROKER_VERSIONS)} (default {config.DEFAULT_BROKER})")
    p.add_argument("--seed", type=seed, default=None, help=f"schedule seed, 0 to {MAX_SEED} (default: random, recorded)")
    p.add_argument("--plan", type=Path, default=None, metavar="FILE",
                   help="run the cells of a plan file (conformance plan) instead of --scenario/--clients/--broker/--seed")
    p.add_argument("--shard", default=None, metavar="I/N", help="with --plan: only the plan's shard I of N")
    add_cell_options(p, "the run directory")
    p.set_defaults(func=run)

    r = subparsers.add_parser("reproduce", help="run a run directory's scenario, mix, broker and seed again")
    r.add_argument("run_dir", type=Path, help="a cell's run directory (holding manifest.json) or a matrix directory")
    add_cell_options(r, "the new run directory", backend=False)
    r.set_defaults(func=reproduce)


def _run(cells: list[Cell], runs_dir: Path | None, spark_master: str | None, label: str = "matrix",
         notices: Sequence[str] = ()) -> int:
    """Check ``cells`` (:func:`preflight`), then print ``notices`` (so that a mistake stays the one
    line on stderr), run and judge them; print the closing table, also after Ctrl-C (exit 130)."""
    preflight(cells, runs_dir, spark_master)
    for notice in notices:
        print(one_line(f"conformance: {notice}"), file=sys.stderr)
    try:
        result = run_matrix(cells, runs_dir, spark_master, label=label)
    except MatrixInterrupted as stop:
        result = stop.result
        print("conformance: interrupted; every process the run started has been stopped; "
              "the cells that ran are judged below", file=sys.stderr)
    print(summary_table(result))
    return result.exit_code


def _plan_cells(args: argparse.Namespace) -> tuple[list[Cell], str]:
    """The cells of ``--plan`` (its shard ``--shard I/N`` only, when given) and the run's label."""
    from conformance.planning.plan import load_plan, parse_shard, plan_id

    given = [f"--{name}" for name in ("scenario", "clients", "broker", "seed") if getattr(args, name) is not None]
    if given:
        raise UsageError(f"--plan takes every cell from the plan; drop {', '.join(given)}")
    plan = load_plan(args.plan)
    if args.shard is None:
        return [c.cell() for c in plan.cells], plan_id(plan)
    index, total = parse_shard(args.shard)
    if total != plan.shards:
        raise UsageError(f"--shard {args.shard}: {args.plan} is planned in {plan.shards} shard(s); "
                         f"give I/{plan.shards}, or plan again with --shards {total}")
    return [c.cell() for c in plan.shard(index)], f"{plan_id(plan)}-shard-{index}-of-{total}"


def run(args: argparse.Namespace) -> int:
    if args.plan is not None:
        cells, label = _plan_cells(args)
        return _run([replace(c, backend=args.backend) for c in cells], args.runs_dir, args.spark_master, label=label)
    if args.shard is not None:
        raise UsageError("--shard needs --plan: a shard is part of a plan file (conformance plan)")
    args.broker = config.DEFAULT_BROKER if args.broker is None else args.broker
    if args.broker not in config.BROKER_VERSIONS:
        raise UsageError(f"broker {args.broker!r} is not supported; supported: {', '.join(config.BROKER_VERSIONS)}")
    specs = parse_specs(args.clients) if args.clients is not None else [MemberSpec.parse(s) for s in kinds.default_mix()]
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    notices: list[str] = []
    cells = build_cells(args.scenario or list(config.DEFAULT_SCENARIOS), specs, args.broker, seed, notice=notices.append)
    return _run([replace(c, backend=args.backend) for c in cells], args.runs_dir, args.spark_master, notices=notices)


def _manifest_scenario(data: dict[str, Any], where: Path) -> Scenario:
    """The scenario a manifest ran: the catalog's when its file was the catalog's own (of this
    checkout, or of another one: ``.../fixtures/scenarios/<name>.scenario`` that is not here),
    else the file it names (which must still say the same ``name``)."""
    name, source = data["scenario"], data.get("scenario_file")
    if not isinstance(name, str) or not (source is None or isinstance(source, str)):
        raise UsageError(f"{where}: not a usable manifest: 'scenario' must be a name and 'scenario_file' a path")
    if source is None or is_builtin(name, source):
        return get_scenario(name)
    path = Path(source)
    if not path.is_file() and path.parts[-3:] == ("fixtures", "scenarios", f"{name}.scenario"):
        return get_scenario(name)  # a run on another machine or checkout: its catalog, by name
    if not path.is_file():
        raise UsageError(f"{where}: the run's scenario file {source} no longer exists; "
                         "restore it, or run the scenario again with conformance run --scenario")
    scenario = load_scenario(path)
    if scenario.name != name:
        raise UsageError(f"{where}: the run's scenario file {source} now says 'name {scenario.name}', "
                         f"the run was {name!r}: the file has changed since")
    return scenario


def cells_from_manifests(path: Path) -> list[Cell]:
    """The cells the manifests at ``path`` (a cell's run directory, or a matrix directory's
    ``runs/*/``) ran; UsageError (one plain line) for anything that is not a usable manifest."""
    manifests = [path / "manifest.json"] if (path / "manifest.json").exists() else sorted(path.glob("runs/*/manifest.json"))
    if not manifests:
        raise UsageError(f"{path}: no manifest.json here or under runs/*/: not a run directory")
    cells = []
    for m in manifests:
        try:
            data = json.loads(m.read_bytes().decode("utf-8"))
        except OSError as exc:
            raise UsageError(f"{m}: cannot read it: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise UsageError(f"{m}: not a usable manifest: not UTF-8 text (byte offset {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise UsageError(f"{m}: not a usable manifest: not JSON ({exc.msg} at line {exc.lineno}, "
                             f"column {exc.colno})") from None
        try:
            if not isinstance(data, dict):
                raise TypeError("it is not a JSON object")
            scenario = _manifest_scenario(data, m)
            members = data["members"]
            if not isinstance(members, list) or not all(isinstance(x, dict) and isinstance(x.get("spec"), str)
                                                        for x in members):
                raise TypeError("'members' must be a list of objects, each with a 'spec'")
            specs = tuple(MemberSpec.parse(x["spec"]) for x in members)
            broker, seed = data["broker_version"], data["seed"]
            if not isinstance(broker, str) or not isinstance(seed, int) or isinstance(seed, bool):
                raise TypeError("'broker_version' must be a string and 'seed' an integer")
            backend = data.get("backend", "processes")
            if backend not in BACKENDS:
                raise ValueError(f"'backend' must be one of {', '.join(BACKENDS)}, not {backend!r}")
            cells.append(Cell(scenario, specs, broker, seed, backend))
        except KeyError as exc:
            raise UsageError(f"{m}: not a usable manifest: it has no {exc.args[0]!r} field") from None
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{m}: not a usable manifest: {exc}") from None
    return cells


def reproduce(args: argparse.Namespace) -> int:
    cells = cells_from_manifests(args.run_dir)
    unsupported = sorted({c.broker for c in cells} - set(config.BROKER_VERSIONS))
    if unsupported:
        raise UsageError(f"{args.run_dir}: the run used broker {', '.join(unsupported)}, which this suite no longer "
                         f"supports; supported: {', '.join(config.BROKER_VERSIONS)}")
    return _run(cells, args.runs_dir, args.spark_master, label="reproduce")
