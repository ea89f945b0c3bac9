"""Mixed groups that form: every member gets a strategy list with a protocol in common.

Rule (the group is cooperative exactly when every member supports it, R5):

- every member supports cooperative-sticky -> every list is ``[cooperative-sticky]``,
  and the group is judged by cooperative rules;
- otherwise the group must agree on an eager assignor (``range``, else
  ``roundrobin``): members that can list a cooperative and an eager assignor
  together get ``[cooperative-sticky, range]`` (they run eager until every member
  is cooperative, like the first bounce of the upgrade); members that cannot
  mix the two (librdkafka, kafka-python 3.x; see PROTOCOL-FACTS) and members
  without cooperative support get ``[range]``. The group is judged eager.

The harness config carries the list; the scenario may override it (``bounce-strategies``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from conformance.errors import UsageError
from conformance.members.kinds import kind_module
from conformance.members.spec import MemberSpec

#: Kinds whose consumer cannot hold a cooperative and an eager assignor in one list.
CANNOT_MIX: frozenset[str] = frozenset({"librdkafka", "kafka-python"})
EAGER_CHOICES: tuple[str, ...] = ("range", "roundrobin")


@dataclass(frozen=True)
class MixPlan:
    strategies: tuple[tuple[str, ...], ...]   # one list per member, in mix order
    expected_protocol: str                     # "cooperative" | "eager"
    reason: str


def supported(spec: MemberSpec) -> list[str]:
    return list(kind_module(spec.kind).strategies_supported(spec.version))


def plan_mix(specs: list[MemberSpec]) -> MixPlan:
    """Strategy lists for ``specs`` with a protocol they all share; UsageError if none exists."""
    support = [supported(s) for s in specs]
    if all("cooperative-sticky" in sup for sup in support):
        return MixPlan(tuple(("cooperative-sticky",) for _ in specs), "cooperative",
                       "every member supports cooperative-sticky")
    for eager in EAGER_CHOICES:
        if all(eager in sup for sup in support):
            lists = []
            for spec, sup in zip(specs, support):
                if "cooperative-sticky" in sup and spec.kind not in CANNOT_MIX:
                    lists.append(("cooperative-sticky", eager))
                else:
                    lists.append((eager,))
            laggards = [str(s) for s, sup in zip(specs, support) if "cooperative-sticky" not in sup]
            return MixPlan(tuple(lists), "eager", f"{', '.join(laggards)} lack cooperative support: the group runs {eager}")
    raise UsageError("these members share no assignment strategy: "
                     + "; ".join(f"{s}: {', '.join(sup)}" for s, sup in zip(specs, support)))


def bounce_list(spec: MemberSpec, target: list[str], current: tuple[str, ...]) -> tuple[str, ...]:
    """The list ``spec`` moves to in an upgrade bounce towards ``target``.

    A member that cannot hold the whole target list keeps what it has, except
    that a member that cannot mix protocols goes straight to a cooperative-only
    target once that is the target (the second bounce).
    """
    sup = supported(spec)
    if not all(s in sup for s in target):
        return current
    mixes = any(s == "cooperative-sticky" for s in target) and any(s != "cooperative-sticky" for s in target)
    if mixes and spec.kind in CANNOT_MIX:
        return current
    return tuple(target)


def bounce_lists(members: Sequence[tuple[MemberSpec, tuple[str, ...]]], target: list[str]) -> list[tuple[str, ...]]:
    """The lists a group's members (spec, current list) move to in one upgrade bounce towards ``target``.

    Each moves as :func:`bounce_list` says, except that a member keeps its current list when its
    new one would share no assignor with another member's list after the bounce: the coordinator
    refuses such a join (INCONSISTENT_GROUP_PROTOCOL). So a group holding a member without
    cooperative support (kafka-python 2.x) never reaches the cooperative-only step: as the upgrade
    is documented, members drop the eager assignor only once every member can go cooperative.
    Guarantee: if the current lists share an assignor, the returned lists do too.
    """
    lists = [bounce_list(spec, target, current) for spec, current in members]
    changed = True
    while changed:
        changed = False
        for i, mine in enumerate(lists):
            if mine != members[i][1] and any(not set(mine) & set(other) for j, other in enumerate(lists) if j != i):
                lists[i] = members[i][1]
                changed = True
    return lists
