"""Time the reference cooperative-sticky assignor: 100 members, 2,000 partitions (goal <= 1 s).

Prints three figures: a fresh group (nobody owns anything), a join on a
converged group (one new member, everyone else declares its partitions) and a
leave (one member gone). Run: ``.venv/bin/python bench/reference_assignor.py``.
"""

from __future__ import annotations

import time

from conformance.reference.assignor import MemberClaim, cooperative_sticky_assign

MEMBERS = 100
TOPICS = {f"topic-{i}": 200 for i in range(10)}  # 2,000 partitions
GOAL_S = 1.0


def timed(label: str, members: dict[str, MemberClaim]):
    start = time.perf_counter()
    plan = cooperative_sticky_assign(members, TOPICS)
    elapsed = time.perf_counter() - start
    given = sum(len(v) for v in plan.assignment.values())
    print(f"{label:<40} {elapsed * 1000:8.1f} ms  assigned={given} withheld={len(plan.withheld)}"
          f"  {'OK' if elapsed <= GOAL_S else 'OVER GOAL'}")
    return plan


def main() -> None:
    topics = frozenset(TOPICS)
    fresh = {f"member-{i:03d}": MemberClaim(f"member-{i:03d}", topics) for i in range(MEMBERS)}
    plan = timed(f"fresh group ({MEMBERS} members, {sum(TOPICS.values())} partitions)", fresh)
    converged = {m: MemberClaim(m, topics, tuple(tps), 1) for m, tps in plan.assignment.items()}
    joined = dict(converged)
    joined["member-new"] = MemberClaim("member-new", topics)
    timed("one member joins a converged group", joined)
    left = dict(converged)
    left.pop("member-000")
    timed("one member leaves a converged group", left)


if __name__ == "__main__":
    main()
