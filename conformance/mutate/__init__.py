"""Mutation of real run directories: one anomaly class injected into a copy of a run.

Hand-made stories (the tests' ``tests/stories/``) have unreal timing: every
event on a round millisecond, no clock skew, no heartbeat noise. A mutant is a
REAL recorded run (``fixtures/real-runs/``) with one short, deterministic edit
of its histories, wire capture or manifest: the edit a real buggy client (or
leader, or broker) would have produced, everything else as recorded. Timing
stays real: an edit reuses recorded timestamps, and an inserted event is
placed milliseconds from a real one, as real members stamp theirs.

Each function of :data:`MUTATIONS` takes a :class:`RunEdit` (a copy of the
run, loaded), edits it in place and returns ``(culprit, detail)``: the member
whose misbehaviour the edit plays (None where the recorded evidence cannot
point at one) and one line saying exactly what was edited. It raises
:class:`NotApplicable` when the original has no place for the anomaly (e.g.
no cooperative revoke to skip); that is reported, never silently skipped.
Choices are deterministic: the first (or middle) candidate in time order.

Each mutation names the invariant it must fail (the catalog of
:mod:`conformance.pipeline.checks`); ``conformance mutation-score``
(:mod:`conformance.mutation_score`) judges every mutant and reports the
mutants an invariant did not catch.

The package is split as :mod:`conformance.pipeline.checks` is: :mod:`~conformance.mutate.run_edit`
loads a run for editing, :mod:`~conformance.mutate.wire` edits its wire capture, one module per
family of invariants holds that family's mutations (``encoding``, ``leadership``, ``revoke``,
``consumption``, ``delivery``, ``progress``, ``rebalances``, ``consumer``), and
:mod:`~conformance.mutate.catalog` is the registry and :func:`mutate`. Every public name is
importable from ``conformance.mutate``.
"""

from __future__ import annotations

from conformance.mutate.catalog import (
    CONSUMER_PROTOCOL_MUTATIONS,
    MIGRATION_MUTATIONS,
    MUTATIONS,
    NEIGHBOURS,
    Mutant,
    Mutation,
    Neighbour,
    mutate,
)
from conformance.mutate.consumer import (
    SHORT_REBALANCE_TIMEOUT_MS,
    bridged_assignor,
    bridged_held_commit,
    bridged_stale_commit,
    classic_refusal_despite_policy,
    cross_protocol_skipped_revoke,
    handed_over_after_heard,
    refusal_despite_policy,
    refusal_without_userdata,
    stale_epoch_commit,
    stale_heartbeat_epoch,
    unacknowledged_assignment,
    upgrade_despite_policy,
    upgrade_despite_userdata,
)
from conformance.mutate.consumption import consumed_after_fence, consumed_after_revoke
from conformance.mutate.delivery import (
    commit_backwards,
    dropped_consumption,
    new_owner_ignores_commit,
    reread_after_rebalance,
    resumed_below_commit_in_fault,
    stale_generation_commit,
    unowned_at_end,
    unowned_reread,
)
from conformance.mutate.encoding import (
    declared_after_lost,
    forgotten_claim,
    malformed_assignment,
    malformed_subscription,
    non_canonical_subscription,
    stale_claim,
)
from conformance.mutate.leadership import (
    leader_sync_missing_member,
    leader_unsynced_after_stop,
    leader_unsynced_paused,
    leader_unsynced_under_latency,
    needless_moves,
    partition_assigned_twice,
    unbalanced_final,
)
from conformance.mutate.progress import (
    stalled_across_restarts,
    stalled_across_short_pause,
    stalled_partition,
    stalled_past_own_bound,
    stalled_through_rebalance,
)
from conformance.mutate.rebalances import rebalance_storm
from conformance.mutate.revoke import (
    eager_rejoin_holding,
    held_beside_faulted,
    kept_revoked_across_rebalance,
    leader_reassigns_owned,
    retained_revoked,
    revoke_unreached,
    skipped_revoke,
    taken_before_removal,
)
from conformance.mutate.run_edit import TP, BadRun, Interval, NotApplicable, RunEdit

__all__ = ["BadRun", "CONSUMER_PROTOCOL_MUTATIONS", "Interval", "MIGRATION_MUTATIONS", "MUTATIONS", "Mutant",
           "Mutation", "NEIGHBOURS", "Neighbour", "NotApplicable", "RunEdit", "SHORT_REBALANCE_TIMEOUT_MS", "TP",
           "bridged_assignor", "bridged_held_commit", "bridged_stale_commit", "classic_refusal_despite_policy",
           "commit_backwards", "consumed_after_fence", "consumed_after_revoke", "cross_protocol_skipped_revoke",
           "declared_after_lost", "dropped_consumption", "eager_rejoin_holding", "forgotten_claim",
           "handed_over_after_heard", "held_beside_faulted", "kept_revoked_across_rebalance", "leader_reassigns_owned",
           "leader_sync_missing_member", "leader_unsynced_after_stop", "leader_unsynced_paused",
           "leader_unsynced_under_latency", "malformed_assignment", "malformed_subscription", "mutate",
           "needless_moves", "new_owner_ignores_commit", "non_canonical_subscription", "partition_assigned_twice",
           "rebalance_storm", "refusal_despite_policy", "refusal_without_userdata", "reread_after_rebalance",
           "resumed_below_commit_in_fault", "retained_revoked", "revoke_unreached", "skipped_revoke", "stale_claim",
           "stale_epoch_commit", "stale_generation_commit", "stale_heartbeat_epoch", "stalled_across_restarts",
           "stalled_across_short_pause", "stalled_partition", "stalled_past_own_bound", "stalled_through_rebalance",
           "taken_before_removal", "unacknowledged_assignment", "unbalanced_final", "unowned_at_end", "unowned_reread",
           "upgrade_despite_policy", "upgrade_despite_userdata"]
