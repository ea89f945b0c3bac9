"""How long one cell takes per scenario: what plans estimate shard walls with.

Figures are measured (wall of a real cell: cluster start, members, schedule, teardown; judging
runs once per shard, after its cells, and is not counted), each with where it came from. A
scenario without a measured figure (one of your own) is counted at
:data:`UNMEASURED_CELL_WALL_S`, the top of the range real cells took on the project's 2-core
machine, and the plan says how many cells were counted so.
Re-measure with ``bench/scenario_wall.py --scenario NAME``.
"""

from __future__ import annotations

#: Measured wall of one cell per scenario (seconds): the median of ``teardown_end_ts - start_ts``
#: (cluster start to the end of teardown) over the complete real run directories found on the
#: project's 2-core machine on 2026-11-26 (other work running beside them), mostly 5-member
#: groups; the number of runs each figure comes from is in the comment.
MEASURED_CELL_WALL_S: dict[str, float] = {
    "broker-restart": 83.0,       # 2 runs (78-83 s)
    "chaos": 116.0,               # 2 runs (67-116 s)
    "crash-restart": 49.0,        # 8 runs (40-65 s)
    "latency": 36.0,              # 1 run
    "leader-rotation": 83.0,      # 7 runs (57-94 s)
    "partition": 44.0,            # 7 runs (34-54 s)
    "partition-growth": 23.0,     # 1 run
    "pause": 49.0,                # 2 runs (41-49 s)
    "reset-peer": 30.0,           # 1 run
    "rolling-restart": 69.0,      # 21 runs (48-370 s; 3 to 5 members)
    "static-restart": 29.0,       # 1 run
    "subscription-change": 29.0,  # 1 run
    "upgrade-eager-to-cooperative": 59.0,  # 1 run
}

#: What a cell of a scenario without a measured figure is counted at (seconds).
UNMEASURED_CELL_WALL_S: float = 300.0


def cell_wall_s(scenario: str) -> tuple[float, bool]:
    """The estimated wall of one cell of ``scenario`` and whether it was measured."""
    if scenario in MEASURED_CELL_WALL_S:
        return MEASURED_CELL_WALL_S[scenario], True
    return UNMEASURED_CELL_WALL_S, False
