"""The registry of mutations (:data:`MUTATIONS`, and the KIP-848 ones kept apart) and :func:`mutate`,
which applies one to a copy of a run.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from conformance.mutate.consumer import (
    bridged_assignor,
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
from conformance.mutate.rejoin import ignored_rebalance
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
from conformance.mutate.run_edit import RunEdit


@dataclass(frozen=True)
class Mutation:
    """One anomaly class: its name, the invariant that must fail, and the edit (see the module docstring)."""

    name: str
    invariant: str
    apply: Callable[[RunEdit], tuple[str | None, str]]


#: Every mutation, in catalog order of the invariant it must fail.
MUTATIONS: tuple[Mutation, ...] = (
    Mutation("malformed-subscription", "E1", malformed_subscription),
    Mutation("malformed-assignment", "E2", malformed_assignment),
    Mutation("non-canonical-subscription", "E4", non_canonical_subscription),
    Mutation("stale-claim", "E5", stale_claim),
    Mutation("forgotten-claim", "E5", forgotten_claim),
    Mutation("declared-after-lost", "E5", declared_after_lost),
    Mutation("leader-sync-missing-member", "L1", leader_sync_missing_member),
    Mutation("leader-unsynced-under-latency", "L1", leader_unsynced_under_latency),
    Mutation("leader-unsynced-after-stop", "L1", leader_unsynced_after_stop),
    Mutation("partition-assigned-twice", "L2", partition_assigned_twice),
    Mutation("unbalanced-final", "L3", unbalanced_final),
    Mutation("needless-moves", "L4", needless_moves),
    Mutation("leader-reassigns-owned", "R1", leader_reassigns_owned),
    Mutation("skipped-revoke", "R2", skipped_revoke),
    Mutation("retained-revoked", "R3", retained_revoked),
    Mutation("kept-revoked-across-rebalance", "R3", kept_revoked_across_rebalance),
    Mutation("revoke-unreached", "R4", revoke_unreached),
    Mutation("eager-rejoin-holding", "R5", eager_rejoin_holding),
    Mutation("consumed-after-revoke", "C1", consumed_after_revoke),
    Mutation("consumed-after-fence", "C2", consumed_after_fence),
    Mutation("dropped-consumption", "D1", dropped_consumption),
    Mutation("commit-backwards", "D2", commit_backwards),
    Mutation("stale-generation-commit", "D2", stale_generation_commit),
    Mutation("reread-after-rebalance", "D3", reread_after_rebalance),
    Mutation("new-owner-ignores-commit", "D3", new_owner_ignores_commit),
    Mutation("resumed-below-commit-in-fault", "D3", resumed_below_commit_in_fault),
    Mutation("unowned-reread", "D3", unowned_reread),
    Mutation("stalled-partition", "P1", stalled_partition),
    Mutation("unowned-at-end", "V1", unowned_at_end),
    Mutation("rebalance-storm", "V2", rebalance_storm),
    Mutation("ignored-rebalance", "V3", ignored_rebalance),
    # R2/fault-window and P1/fault-window narrowed to their evidence (issue 38).
    Mutation("taken-before-removal", "R2", taken_before_removal),
    Mutation("held-beside-faulted", "R2", held_beside_faulted),
    Mutation("stalled-across-short-pause", "P1", stalled_across_short_pause),
    Mutation("stalled-across-restarts", "P1", stalled_across_restarts),
    # P1's bound from the owner's own settings (issue 38): a stall the convergence bound excused.
    Mutation("stalled-past-own-bound", "P1", stalled_past_own_bound),
)


@dataclass(frozen=True)
class Neighbour:
    """A legitimate behaviour next to a narrowed rule's bug class: its name, the invariant it concerns,
    the rule that must allow it (the invariant passes, with an allowed finding of that rule), and the
    edit. It shows a narrowed rule still allows what it exists for."""

    name: str
    invariant: str
    allowed_by: str
    apply: Callable[[RunEdit], tuple[str | None, str]]


#: The neighbours ``conformance mutation-score`` builds beside the mutants: each must be allowed.
NEIGHBOURS: tuple[Neighbour, ...] = (
    Neighbour("stalled-through-rebalance", "P1", "P1/rebalance", stalled_through_rebalance),
)

#: The mutations of a KIP-848 group (a consumer-protocol member beside classic ones). Kept apart from
#: :data:`MUTATIONS`: the corpus of ``conformance mutation-score`` (fixtures/real-runs/) holds no
#: such run; tests/test_consumer_protocol_recorded.py applies them to the recorded KIP-848 runs of
#: fixtures/client-behaviour/.
CONSUMER_PROTOCOL_MUTATIONS: tuple[Mutation, ...] = (
    Mutation("cross-protocol-skipped-revoke", "R2", cross_protocol_skipped_revoke),
    Mutation("stale-heartbeat-epoch", "K1", stale_heartbeat_epoch),
    Mutation("bridged-assignor", "K2", bridged_assignor),
    Mutation("unacknowledged-assignment", "K3", unacknowledged_assignment),
    Mutation("stale-epoch-commit", "K4", stale_epoch_commit),
    Mutation("bridged-stale-commit", "K4", bridged_stale_commit),
    Mutation("handed-over-after-heard", "R2", handed_over_after_heard),
)

#: The mutations of a KIP-848 online migration (K5): the first two need a group that converted
#: online (the classic-first recorded run), the third a run whose upgrade the policy refused (the
#: recorded refused-migration run), the last one a run whose upgrade userData refused (the recorded
#: custom-assignor-upgrade run), and a classic join refused under a policy that admits it (the recorded
#: refused-downgrade run); tests/test_consumer_protocol_recorded.py applies each to its run.
MIGRATION_MUTATIONS: tuple[Mutation, ...] = (
    Mutation("upgrade-despite-policy", "K5", upgrade_despite_policy),
    Mutation("upgrade-despite-userdata", "K5", upgrade_despite_userdata),
    Mutation("refusal-despite-policy", "K5", refusal_despite_policy),
    Mutation("refusal-without-userdata", "K5", refusal_without_userdata),
    Mutation("classic-refusal-despite-policy", "K5", classic_refusal_despite_policy),
)


@dataclass
class Mutant:
    """A mutated copy of a run: where it is, what it must fail, whom it blames, what was edited."""

    mutation: str
    invariant: str
    original: Path
    path: Path
    culprit: str | None
    detail: str


def mutate(original: Path, mutation: Mutation | Neighbour, dest: Path) -> Mutant:
    """Copy ``original`` to ``dest`` and apply ``mutation`` to the copy. The copy's run id is the
    original's with ``~<mutation>`` appended (so one judge call tells them apart). Raises
    :class:`NotApplicable` (the copy removed) when the original has no place for the anomaly."""
    original, dest = Path(original), Path(dest)
    shutil.copytree(original, dest, ignore=shutil.ignore_patterns("logs", "broker"))
    try:
        run = RunEdit.load(dest)
        culprit, detail = mutation.apply(run)
        run.manifest["run_id"] = f"{run.manifest.get('run_id') or original.name}~{mutation.name}"
        run.save()
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return Mutant(mutation.name, mutation.invariant, original, dest, culprit, detail)
