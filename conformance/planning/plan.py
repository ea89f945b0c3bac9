"""Plans: the cells a matrix file asks for, split into shards, as a JSON file.

:func:`build_plan` turns a :class:`~conformance.planning.matrix_file.MatrixFile` into cells:

- for every scenario class, the groups of :func:`conformance.planning.pairwise.cover` (every pair
  of member specs and every (member spec, broker) pair meets in at least one group of the class),
  each group one cell of one of the class's scenarios, taken in turn from a seeded starting point
  (the next one when the group cannot run it: a target it lacks, no common assignor);
- then the matrix file's must-have cells, as written.

Each cell's run seed is drawn from the plan's seed. Guarantees: the plan is a function of the
matrix file and the seed (the same seed gives the same file, byte for byte); every cell passes
:func:`conformance.preflight.check_cell`, or planning stops with one line saying which
class and group no scenario of it can run; a member that cannot work with one of the matrix's
brokers (:func:`conformance.members.versions.broker_problem`) stops it first, since the cover
puts every member on every broker; shards are balanced by estimated wall
(:mod:`conformance.planning.walls`): longest cell first, each to the shard with the least so far.

A plan file holds what it was planned from (the members, brokers, classes, group size), so that
its coverage can be checked from it alone (:func:`uncovered`). :func:`load_plan` checks a plan
file and raises one-line UsageErrors; :func:`parse_shard` reads ``I/N``.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from conformance.errors import UsageError
from conformance.members.spec import MemberSpec
from conformance.members.versions import broker_problem
from conformance.planning.matrix_file import MatrixFile
from conformance.planning.pairwise import Group, cover, covered_pairs, required_pairs
from conformance.planning.walls import cell_wall_s
from conformance.preflight import check_cell
from conformance.scenarios.catalog import get_scenario
from conformance.scenarios.runner import Cell

#: The plan file format's version (``"plan"`` in the file).
FORMAT: int = 1


@dataclass(frozen=True)
class PlannedCell:
    scenario: str                 # a catalog scenario name
    clients: tuple[str, ...]      # member specs, in mix order
    broker: str
    seed: int
    scenario_class: str | None    # None for a must-have cell
    must_have: str | None         # the must-have cell's name
    shard: int                    # 1-based
    estimated_s: float
    measured: bool                # whether estimated_s is a measured figure

    def cell(self) -> Cell:
        return Cell(get_scenario(self.scenario), tuple(MemberSpec.parse(c) for c in self.clients), self.broker,
                    self.seed)


@dataclass(frozen=True)
class Plan:
    matrix: str
    seed: int
    shards: int
    group_size: int
    brokers: tuple[str, ...]
    members: tuple[str, ...]
    classes: dict[str, tuple[str, ...]]
    cells: tuple[PlannedCell, ...]

    def shard(self, index: int) -> list[PlannedCell]:
        return [c for c in self.cells if c.shard == index]


def _first_runnable(scenarios: list[str], specs: tuple[MemberSpec, ...], broker: str) -> str | None | UsageError:
    first: UsageError | None = None
    for name in scenarios:
        try:
            check_cell(Cell(get_scenario(name), specs, broker, 0))
            return name
        except UsageError as exc:
            first = first or exc
    return first


def assign_shards(walls: list[float], shards: int) -> list[int]:
    """Each cell's shard (1-based): longest first, each to the shard with the least estimated wall
    so far (the lowest index on a tie); equal walls keep their order."""
    totals = [0.0] * shards
    out = [0] * len(walls)
    for i in sorted(range(len(walls)), key=lambda i: (-walls[i], i)):
        s = min(range(shards), key=lambda s: (totals[s], s))
        totals[s] += walls[i]
        out[i] = s + 1
    return out


def build_plan(matrix: MatrixFile, seed: int, shards: int) -> Plan:
    """The plan of ``matrix`` for ``seed`` in ``shards`` shards (see the module's guarantees)."""
    specs = {str(s): s for s in matrix.members}
    labels = list(specs)
    for spec in matrix.members:
        for broker in matrix.brokers:
            problem = broker_problem(spec.kind, spec.version, broker)
            if problem:
                raise UsageError(f"{matrix.path}: members and brokers: {problem} (a plan puts every member on every "
                                 "broker: drop one of the two)")
    rows: list[tuple[str, tuple[str, ...], str, int, str | None, str | None]] = []
    for class_name, scenarios in matrix.classes.items():
        rng = random.Random(f"{seed}:class:{class_name}")
        groups = cover(labels, matrix.brokers, matrix.group_size, rng)
        start = rng.randrange(len(scenarios))
        for i, g in enumerate(groups):
            turn = [scenarios[(start + i + j) % len(scenarios)] for j in range(len(scenarios))]
            found = _first_runnable(turn, tuple(specs[x] for x in g.labels), g.broker)
            if not isinstance(found, str):
                raise UsageError(f"{matrix.path}: class {class_name}: no scenario of it can run the group "
                                 f"{','.join(g.labels)} on broker {g.broker} ({found}); add a scenario that can, "
                                 "or change the members")
            rows.append((found, g.labels, g.broker, rng.randrange(1, 2**31), class_name, None))
    rng = random.Random(f"{seed}:must-have")
    for m in matrix.must_have:
        found = _first_runnable([m.scenario], m.specs, m.broker)
        if not isinstance(found, str):
            raise UsageError(f"{matrix.path}: must-have {m.name!r}: {found}")
        drawn = rng.randrange(1, 2**31)
        rows.append((m.scenario, tuple(str(s) for s in m.specs), m.broker, m.seed if m.seed is not None else drawn,
                     None, m.name))
    walls = [cell_wall_s(r[0]) for r in rows]
    shard_of = assign_shards([w for w, _ in walls], shards)
    cells = tuple(PlannedCell(r[0], r[1], r[2], r[3], r[4], r[5], s, w, measured)
                  for r, s, (w, measured) in zip(rows, shard_of, walls))
    return Plan(str(matrix.path), seed, shards, matrix.group_size, tuple(matrix.brokers), tuple(labels),
                dict(matrix.classes), cells)


def uncovered(plan: Plan) -> dict[str, set[tuple[str, str]]]:
    """Per scenario class, the required pairs (:func:`~conformance.planning.pairwise.required_pairs`)
    no cell of the class covers; empty sets when the plan is complete."""
    out = {}
    for name in plan.classes:
        groups = [Group(c.clients, c.broker) for c in plan.cells if c.scenario_class == name]
        out[name] = required_pairs(plan.members, plan.brokers) - covered_pairs(groups)
    return out


def to_json(plan: Plan) -> str:
    data = asdict(plan)
    data = {"plan": FORMAT, **data}
    return json.dumps(data, indent=1) + "\n"


def plan_id(plan: Plan) -> str:
    """``plan-<12 hex digits>``: a digest of the plan file's content, the name of the matrix run
    that its shards' directories make together (:data:`conformance.pipeline.matrix.PLAN_RUN`)."""
    return "plan-" + hashlib.sha256(to_json(plan).encode("utf-8")).hexdigest()[:12]


def write_plan(plan: Plan, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(to_json(plan), encoding="utf-8")
    tmp.replace(path)


def load_plan(path: Path) -> Plan:
    """Read a plan file ``conformance plan`` wrote; UsageError, one line, for anything else."""
    try:
        data: Any = json.loads(Path(path).read_bytes().decode("utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read plan file {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not a plan file (not JSON: {exc})") from None
    if not isinstance(data, dict) or data.get("plan") != FORMAT:
        raise UsageError(f"{path}: not a plan file of this suite (write one with conformance plan MATRIX_FILE -o PLAN)")
    try:
        cells = tuple(PlannedCell(c["scenario"], tuple(c["clients"]), c["broker"], int(c["seed"]),
                                  c["scenario_class"], c["must_have"], int(c["shard"]), float(c["estimated_s"]),
                                  bool(c["measured"])) for c in data["cells"])
        plan = Plan(str(data["matrix"]), int(data["seed"]), int(data["shards"]), int(data["group_size"]),
                    tuple(data["brokers"]), tuple(data["members"]),
                    {k: tuple(v) for k, v in data["classes"].items()}, cells)
    except KeyError as exc:
        raise UsageError(f"{path}: not a usable plan file: no {exc.args[0]!r}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"{path}: not a usable plan file: {exc}") from None
    bad = next((c for c in plan.cells if not 1 <= c.shard <= plan.shards), None)
    if bad is not None:
        raise UsageError(f"{path}: a cell of shard {bad.shard}, but the plan has {plan.shards} shard(s)")
    return plan


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` -> (I, N) with 1 <= I <= N; UsageError otherwise."""
    index, _, total = text.partition("/")
    if not (index.isascii() and index.isdigit() and total.isascii() and total.isdigit()) \
            or not 1 <= int(index) <= int(total):
        raise UsageError(f"--shard {text!r}: give I/N with 1 <= I <= N, e.g. --shard 2/4")
    return int(index), int(total)
