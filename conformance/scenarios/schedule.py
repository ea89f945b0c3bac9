"""The seeded schedule generator for ``chaos``, and the seeded choices of every scenario.

Guarantee: the same seed and the same member mix give the same sequence of
choices (which member ``random`` names, which faults ``chaos`` injects and
with which parameters). Real timing still varies; the schedule does not.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

#: Faults chaos chooses from, with their weight.
CHAOS_FAULTS: tuple[tuple[str, int], ...] = (
    ("restart-graceful", 3),
    ("restart-kill", 3),
    ("pause", 2),
    ("latency", 2),
    ("cut", 2),
    ("broker-restart", 1),
)


@dataclass(frozen=True)
class ChaosStep:
    fault: str
    member_index: int
    params: dict[str, Any]


class Schedule:
    """All randomness of one scenario execution, from one seed."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._rng = random.Random(seed)

    def pick(self, n: int) -> int:
        """A member index in ``range(n)``."""
        return self._rng.randrange(n)

    def chaos(self, count: int, members: int, session_timeout_ms: int) -> list[ChaosStep]:
        """``count`` faults over ``members`` members; durations scale with the session timeout."""
        names = [f for f, _ in CHAOS_FAULTS]
        weights = [w for _, w in CHAOS_FAULTS]
        steps = []
        for _ in range(count):
            fault = self._rng.choices(names, weights)[0]
            index = self._rng.randrange(members)
            params: dict[str, Any] = {}
            if fault == "pause":
                params["for_ms"] = self._rng.choice([session_timeout_ms // 2, session_timeout_ms + 3000])
            elif fault == "latency":
                params["latency"] = self._rng.choice([100, 300, 800])
                params["for_ms"] = self._rng.choice([3000, 8000])
            elif fault == "cut":
                params["for_ms"] = self._rng.choice([2000, session_timeout_ms + 3000])
            elif fault in ("restart-graceful", "restart-kill"):
                params["down_ms"] = self._rng.choice([0, 1000, 3000])
            steps.append(ChaosStep(fault, index, params))
        return steps
