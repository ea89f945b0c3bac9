"""``conformance plan MATRIX_FILE [--seed N] [--shards N] -o PLAN``.

Writes the plan of a matrix file (:mod:`conformance.planning.plan`) and prints its cell count
and the estimated wall of each shard. Everything is checked before the file is written: the
matrix file (:func:`~conformance.planning.matrix_file.load_matrix`), every member version
(:func:`conformance.members.versions.check_specs`: the cache, else the kind's registry), that
every planned cell can run (targets, a common assignor) and that ``-o``'s folder is writable.
A mistake is one line on stderr and exit 2; nothing is written then.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from conformance.errors import UsageError
from conformance.members.versions import check_specs
from conformance.planning.matrix_file import load_matrix
from conformance.planning.pairwise import required_pairs
from conformance.planning.plan import Plan, build_plan, uncovered, write_plan
from conformance.planning.walls import UNMEASURED_CELL_WALL_S
from conformance.preflight import seed
from conformance.rundir import ready_dir

#: The most shards a plan may have (a GitHub Actions matrix allows 256 jobs).
MAX_SHARDS: int = 256


def shards(text: str) -> int:
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_SHARDS):
        raise argparse.ArgumentTypeError(f"{text!r} is not a shard count: give an integer from 1 to {MAX_SHARDS}")
    return int(text)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("plan", help="plan a matrix file's cells (pairwise) into shards")
    p.add_argument("matrix_file", type=Path, metavar="MATRIX_FILE", help="a matrix file, e.g. fixtures/matrices/nightly.toml")
    p.add_argument("--seed", type=seed, default=None, help="plan seed (default: the matrix file's)")
    p.add_argument("--shards", type=shards, default=1, help="how many shards to split the cells into (default 1)")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="PLAN", help="the plan file to write (JSON)")
    p.set_defaults(func=run)


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def describe(plan: Plan) -> list[str]:
    """The lines ``conformance plan`` prints: the cell count, then each shard's estimate."""
    must = sum(1 for c in plan.cells if c.must_have)
    per_class = ", ".join(f"{name} {sum(1 for c in plan.cells if c.scenario_class == name)}" for name in plan.classes)
    required = len(required_pairs(plan.members, plan.brokers))
    met = all(not missing for missing in uncovered(plan).values())
    lines = [f"plan: {len(plan.cells)} cells ({per_class}; must-have {must}), seed {plan.seed}, "
             f"{plan.shards} shard(s); {'every one' if met else 'NOT every one'} of the {required} required pairs "
             f"meets in each of the {len(plan.classes)} scenario class(es)"]
    for i in range(1, plan.shards + 1):
        cells = plan.shard(i)
        guessed = sum(1 for c in cells if not c.measured)
        note = f" ({guessed} of them without a measured wall, counted at {UNMEASURED_CELL_WALL_S:.0f} s)" if guessed else ""
        lines.append(f"shard {i}/{plan.shards}: {len(cells)} cell{'s' if len(cells) != 1 else ''}, estimated wall "
                     f"{_duration(sum(c.estimated_s for c in cells))} of cells (set-up and judging on top){note}")
    return lines


def run(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.matrix_file)
    out: Path = args.output
    if out.is_dir():
        raise UsageError(f"-o {out}: a directory; give the plan file's path, e.g. {out / 'plan.json'}")
    plan = build_plan(matrix, matrix.seed if args.seed is None else args.seed, args.shards)
    if len(plan.cells) < plan.shards:
        raise UsageError(f"--shards {plan.shards}: the plan has only {len(plan.cells)} cell(s); give at most that many")
    check_specs([*matrix.members, *(s for m in matrix.must_have for s in m.specs)])
    ready_dir(out.parent if str(out.parent) else Path("."), "-o's folder")
    write_plan(plan, out)
    for line in describe(plan):
        print(line)
    print(f"plan written to {out}")
    return 0
