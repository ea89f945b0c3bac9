"""The seeded schedule generator for ``chaos``, and the seeded choices of every scenario.

Guarantee: the same seed and the same member mix give the same sequence of
choices (which member ``random`` names, which faults ``chaos`` injects and
with which parameters). Real timing still varies; the schedule does not.
The faults chaos chooses from, their weights and how their arguments are
drawn are the chaos picks of the table of faults (:data:`conformance.nemesis.faults.CHAOS_PICKS`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from conformance.nemesis.faults import CHAOS_PICKS


@dataclass(frozen=True)
class ChaosStep:
    """One fault of a chaos action: the pick's name (``restart-kill``), the member it targets (its
    index in the mix), and the verb and arguments of the fault it injects (as a scenario line
    would give them)."""

    fault: str
    member_index: int
    verb: str
    args: dict[str, Any]


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
        weights = [pick.weight for pick, _ in CHAOS_PICKS]
        steps = []
        for _ in range(count):
            pick, verb = self._rng.choices(CHAOS_PICKS, weights)[0]
            index = self._rng.randrange(members)
            steps.append(ChaosStep(pick.name, index, verb, pick.args(self._rng, session_timeout_ms)))
        return steps
