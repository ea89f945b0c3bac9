"""How long one cell takes, launch to judged, per scenario: what plans estimate shard walls with.

Figures are measured (wall of a real cell: cluster start, members, schedule, teardown; judging is
once per shard and not counted here), each with where it came from. A scenario without a
measured figure is counted at :data:`UNMEASURED_CELL_WALL_S`, the top of the range real cells
took on the project's 2-core machine, and the plan says how many cells were counted so.
Re-measure with ``bench/scenario_wall.py --scenario NAME``.
"""

from __future__ import annotations

#: Measured wall of one cell per scenario (seconds).
MEASURED_CELL_WALL_S: dict[str, float] = {}

#: What a cell of a scenario without a measured figure is counted at (seconds).
UNMEASURED_CELL_WALL_S: float = 300.0


def cell_wall_s(scenario: str) -> tuple[float, bool]:
    """The estimated wall of one cell of ``scenario`` and whether it was measured."""
    if scenario in MEASURED_CELL_WALL_S:
        return MEASURED_CELL_WALL_S[scenario], True
    return UNMEASURED_CELL_WALL_S, False
