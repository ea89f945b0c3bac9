"""Scenarios as values: a name, topics, a producer rate, and phases of actions.

A scenario is one value with fixed slots (Jepsen's habit): every slot has a
no-op default, so a scenario file states only what it needs. Actions are
interpreted by :mod:`conformance.scenarios.runner`; this module only holds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.nemesis.faults import FAULTS

#: Targets an action may name. ``m<i>`` is the i-th member of the mix (0-based).
TARGET_WORDS: tuple[str, ...] = ("all", "each", "leader", "follower", "random", "reference")


@dataclass(frozen=True)
class Action:
    """One line of a scenario: ``verb [target] key=value...``."""

    verb: str
    target: str | None
    args: dict[str, Any]
    source: str  # "file:line", for messages


@dataclass(frozen=True)
class Phase:
    name: str
    actions: tuple[Action, ...]


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    source: Path | None
    topics: dict[str, int] = field(default_factory=lambda: {"orders": 12})
    producer_rate: int = 200              # records per second over all partitions
    processing_delay_ms: int = 0
    commit_mode: str = "sync-batch"
    static_members: bool = False          # give every member a group.instance.id
    start_strategies: tuple[str, ...] = ()  # every member's first list; () = planned from the mix
    leader_rotation: bool = False         # L5 applies
    start_protocol: str = "spec"          # "spec": each member starts on its spec's protocol; "classic": all do
    migration_policy: str = "bidirectional"  # the broker's group.consumer.migration.policy (KIP-848)
    member_racks: tuple[str, ...] = ()    # client.rack of the members, cycled in mix order; () = none
    broker_rack: str | None = None        # the broker's broker.rack; None = none
    phases: tuple[Phase, ...] = ()

    def member_rack(self, index: int) -> str | None:
        """The ``client.rack`` of the ``index``-th member of the mix (``members racks=``, cycled), or None."""
        return self.member_racks[index % len(self.member_racks)] if self.member_racks else None

    def fault_count(self) -> int:
        return sum(1 for ph in self.phases for a in ph.actions if a.verb in FAULT_VERBS)


#: Verbs that inject a fault (the last of them ends the fault window for V1): the table's rows.
FAULT_VERBS: frozenset[str] = frozenset(FAULTS)
