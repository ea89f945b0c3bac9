"""The invariant catalog as functions over the tables (docs/contracts.md lists it with its rules).

Each check is ``check(t: Tables) -> list[dict]``: the violations it found in
every run of the batch, each a finding of
:func:`conformance.pipeline.checks.common.violation` plus its ``run``.
Checks work on Spark DataFrames and collect only the violating rows (or small
per-generation aggregates). A check that raises makes that invariant
"unknown" for the runs of the batch (see :mod:`conformance.pipeline.verdicts`).
"""

from __future__ import annotations

from typing import Callable

from conformance.pipeline.checks import (
    consumer,
    consumption,
    delivery,
    encoding,
    leadership,
    progress,
    rebalances,
    rejoin,
    revoke,
)
from conformance.pipeline.derived import Tables

Check = Callable[[Tables], list[dict]]

#: id -> (check, one-line statement). Order = report order.
CATALOG: dict[str, tuple[Check, str]] = {
    "E1": (encoding.check_e1, "every JoinGroup subscription decodes strictly at its declared version"),
    "E2": (encoding.check_e2, "every assignment sent by a leader or received by a member decodes strictly"),
    "E3": (encoding.check_e3, "assignor userData is a known format (else a warning naming the bytes)"),
    "E4": (encoding.check_e4, "the reference consumer's subscription bytes equal the canonical (Java) encoding"),
    "E5": (encoding.check_e5, "owned partitions declared in JoinGroup equal what the history says is owned"),
    "L1": (leadership.check_l1, "one leader per generation whose SyncGroup assigns every member"),
    "L2": (leadership.check_l2, "assignments are disjoint, only subscribed topics, complete once stable"),
    "L3": (leadership.check_l3, "balanced at convergence (same subscriptions: max - min <= 1)"),
    "L4": (leadership.check_l4, "sticky: no more partitions move than needed"),
    "L5": (leadership.check_l5, "every member kind led in the leadership scenario"),
    "R1": (revoke.check_r1, "a cooperative leader never hands out a partition validly owned by another member"),
    "R2": (revoke.check_r2, "no two live members own the same partition at the same time"),
    "R3": (revoke.check_r3, "retained partitions are not revoked and re-assigned (consumption during the "
                            "rebalance is measured as pause_ms; a stall with records waiting is P1's)"),
    "R4": (revoke.check_r4, "a revoked partition reaches its new owner within the revoke bound"),
    "R5": (revoke.check_r5, "cooperative exactly when all members support it; eager members revoke all before rejoin"),
    "C1": (consumption.check_c1, "every record a member hands to its application is of a partition its own history "
                                 "owns at that moment"),
    "C2": (consumption.check_c2, "after a fencing answer a member hands no record of a partition it held to its "
                                 "application until it is given that partition again (its poll in flight excepted)"),
    "K1": (consumer.check_k1, "a member id's epochs only grow (reset only after a leave or a fence)"),
    "K2": (consumer.check_k2, "classic members in a consumer group get the broker's assignment and run no assignor"),
    "K3": (consumer.check_k3, "every consumer member converges to its assignment within the rebalance timeout"),
    "K4": (consumer.check_k4, "no commit from a stale member epoch is accepted"),
    "K5": (consumer.check_k5, "online migration follows the broker's migration policy, both directions"),
    "D1": (delivery.check_d1, "every acknowledged record is consumed at least once"),
    "D2": (delivery.check_d2, "committed offsets never go backwards; no stale-generation commit is accepted"),
    "D3": (delivery.check_d3, "duplicates are counted and attributed to a rebalance or fault"),
    "P1": (progress.check_p1, "a live, unpaused owner consumes a partition with records available within its "
                              "own bound (its fetch wait plus its max poll interval)"),
    "V1": (delivery.check_v1, "the group converges after the last fault; no member crashes"),
    "V2": (rebalances.check_v2, "after the last fault the group forms at most two generations per membership change"),
    "V3": (rejoin.check_v3, "a classic member told a rebalance is in progress rejoins before the group drops it"),
}


#: The severity classes, worst first: what breaking an invariant of each costs a user.
SEVERITIES: tuple[str, ...] = ("safety", "liveness", "protocol", "efficiency")

#: invariant -> its one severity class (a report shows the worst class of an entry's findings; the
#: cell verdict and the exit status do not depend on it). safety: two owners, records lost or
#: consumed outside ownership, offsets backwards; liveness: no convergence, stalls, crashes;
#: protocol: encoding, leadership and protocol rules; efficiency: stickiness, balance, needless
#: revokes and re-reads. A new invariant adds one row here (a test refuses a catalog entry without).
SEVERITY: dict[str, str] = {
    "E1": "protocol", "E2": "protocol", "E3": "protocol", "E4": "protocol", "E5": "protocol",
    "L1": "protocol", "L2": "safety", "L3": "efficiency", "L4": "efficiency", "L5": "protocol",
    "R1": "safety", "R2": "safety", "R3": "efficiency", "R4": "liveness", "R5": "protocol",
    "K1": "protocol", "K2": "protocol", "K3": "liveness", "K4": "safety", "K5": "protocol",
    "D1": "safety", "D2": "safety", "D3": "efficiency",
    "C1": "safety", "C2": "safety",
    "P1": "liveness",
    "V1": "liveness", "V2": "liveness", "V3": "liveness",
}


def worst_severity(invariants) -> str | None:
    """The worst class of ``invariants`` (ids), by :data:`SEVERITIES`; None for none."""
    ranks = [SEVERITIES.index(SEVERITY[i]) for i in invariants if i in SEVERITY]
    return SEVERITIES[min(ranks)] if ranks else None


from conformance.pipeline.checks.common import violation  # noqa: E402,F401
