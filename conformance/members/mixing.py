"""Mixed groups that form: every member gets a strategy list with a protocol in common.

Rule (the group is cooperative exactly when every member supports it, R5):

- every member supports cooperative-sticky -> every list is ``[cooperative-sticky]``,
  and the group is judged by cooperative rules;
- otherwise the group must agree on an eager assignor (``range``, else
  ``roundrobin``): members that can list a cooperative and an eager assignor
  together get ``[cooperative-sticky, range]`` (they run eager until every member
  is cooperative, like the first bounce of the upgrade); members that cannot
  mix the two and members without cooperative support get ``[range]``. The
  group is judged eager.

What each member can do comes from its kind's module (:func:`conformance.members.kinds.has_feature`):
``mix-eager-cooperative`` (librdkafka and kafka-python 3.x have not), ``assignor-list`` (Sarama
before 1.37 takes exactly one assignor, so it never gets a list of two) and the assignors it has.

A scenario may start every member on one list instead (``members strategies=range``: the
upgrade starts eager) and move members to others (``bounce-strategies``); the protocol the
group is then expected to end on follows from the members' final lists (:func:`group_protocol`).
The harness config carries the list.

KIP-848 (``+consumer`` members). A consumer-protocol member's list is not used while it speaks
that protocol: the broker assigns (its server assignor, ``uniform`` by default). The plan still
gives it the list it would get as a classic member, because a ``bounce-protocol to=classic`` (or
a scenario's ``members start-protocol=classic``) runs it classic with that list, and the broker
lets a classic member into a consumer group only when its list shares a name with every other
classic member's (``ConsumerGroup.supportsClassicProtocols``: INCONSISTENT_GROUP_PROTOCOL
otherwise; consumer members are not counted). A classic member inside a consumer group gets the
first name of its own list as the group's protocol and runs that name's rebalance protocol
(eager members revoke everything on each rejoin), so ``expected_protocol`` stays what the classic
lists make (R5 judges the classic members' JoinGroups). The planned lists never use ``sticky``:
Sarama's eager sticky assignor writes userData into assignments, and a classic group whose
assignments carry userData is not upgraded online ("an unsupported custom assignor is in use",
GROUP_ID_NOT_FOUND to the joining consumer member; KAFKA-18134). Which members a protocol
bounce moves is :func:`protocol_moves`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from conformance.config import COOPERATIVE_ASSIGNORS
from conformance.errors import UsageError
from conformance.members.kinds import has_feature, kind_module
from conformance.members.spec import MemberSpec

EAGER_CHOICES: tuple[str, ...] = ("range", "roundrobin")


@dataclass(frozen=True)
class MixPlan:
    strategies: tuple[tuple[str, ...], ...]   # one list per member, in mix order
    expected_protocol: str                     # "cooperative" | "eager"
    reason: str


def supported(spec: MemberSpec) -> list[str]:
    return list(kind_module(spec.kind).strategies_supported(spec.version))


def cannot_mix(spec: MemberSpec) -> bool:
    """True when ``spec`` cannot hold a cooperative and an eager assignor in one list."""
    return not has_feature(spec.kind, spec.version, "mix-eager-cooperative")


def one_assignor_only(spec: MemberSpec) -> bool:
    """True when ``spec`` takes exactly one assignor (no list)."""
    return not has_feature(spec.kind, spec.version, "assignor-list")


def group_protocol(lists: Sequence[Sequence[str]]) -> str | None:
    """The protocol ("cooperative" | "eager") a group of members offering ``lists`` runs, as the
    coordinator picks it: among the assignors every member offers, each member votes for the first
    it lists and the most votes win. None when the lists share no assignor or the vote is tied
    between a cooperative and an eager assignor (the coordinator's pick is then arbitrary)."""
    if not lists:
        return None
    candidates = set(lists[0]).intersection(*map(set, lists[1:]))
    if not candidates:
        return None
    votes: dict[str, int] = {}
    for offered in lists:
        choice = next(a for a in offered if a in candidates)
        votes[choice] = votes.get(choice, 0) + 1
    top = max(votes.values())
    kinds = {a in COOPERATIVE_ASSIGNORS for a, n in votes.items() if n == top}
    if len(kinds) > 1:
        return None
    return "cooperative" if kinds.pop() else "eager"


def plan_mix(specs: list[MemberSpec], start: Sequence[str] | None = None) -> MixPlan:
    """Strategy lists for ``specs`` with a protocol they all share; UsageError if none exists.

    With ``start`` (the scenario's ``members strategies=LIST``) every member starts on that list,
    and UsageError names a member that cannot hold it. A mix with ``+consumer`` members says in
    its reason that the broker assigns them (see the module docstring).
    """
    plan = _plan_lists(specs, start)
    consumers = [str(s) for s in specs if s.protocol == "consumer"]
    if not consumers:
        return plan
    return MixPlan(plan.strategies, plan.expected_protocol,
                   f"{plan.reason}; {', '.join(consumers)} {'speaks' if len(consumers) == 1 else 'speak'} the "
                   "consumer protocol: the broker assigns for it, and its list serves a bounce to classic")


def _plan_lists(specs: list[MemberSpec], start: Sequence[str] | None) -> MixPlan:
    """:func:`plan_mix` without the note on consumer-protocol members."""
    support = [supported(s) for s in specs]
    if start:
        lists = tuple(tuple(start) for _ in specs)
        for spec, sup in zip(specs, support):
            if bounce_list(spec, list(start), ()) != tuple(start):
                fits = all(s in sup for s in start)
                why = ("takes exactly one assignor" if fits and one_assignor_only(spec) and len(start) > 1
                       else "cannot list a cooperative and an eager assignor together" if fits and cannot_mix(spec)
                       else f"supports only {', '.join(sup)}")
                raise UsageError(f"the scenario starts every member on [{', '.join(start)}]; {spec} {why}")
        protocol = group_protocol(lists)
        if protocol is None:  # one list for all: shares itself; a tie cannot happen
            raise UsageError(f"strategy list [{', '.join(start)}] forms no group")
        return MixPlan(lists, protocol, f"the scenario starts every member on [{', '.join(start)}]")
    if all("cooperative-sticky" in sup for sup in support):
        return MixPlan(tuple(("cooperative-sticky",) for _ in specs), "cooperative",
                       "every member supports cooperative-sticky")
    for eager in EAGER_CHOICES:
        if all(eager in sup for sup in support):
            eager_lists: list[tuple[str, ...]] = []
            for spec, sup in zip(specs, support):
                if "cooperative-sticky" in sup and not cannot_mix(spec) and not one_assignor_only(spec):
                    eager_lists.append(("cooperative-sticky", eager))
                else:
                    eager_lists.append((eager,))
            laggards = [str(s) for s, sup in zip(specs, support) if "cooperative-sticky" not in sup]
            return MixPlan(tuple(eager_lists), "eager", f"{', '.join(laggards)} lack cooperative support: the group runs {eager}")
    raise UsageError("these members share no assignment strategy: "
                     + "; ".join(f"{s}: {', '.join(sup)}" for s, sup in zip(specs, support)))


def protocol_moves(specs: Sequence[MemberSpec], current: Sequence[str], to: str) -> list[int]:
    """The members (by index) a ``bounce-protocol to=TO`` restarts, in mix order.

    To ``consumer``: every member whose spec says ``+consumer`` (the protocol it ends on in this
    cell; the spec check already refused a release without the kind's ``consumer-protocol``
    feature) and that speaks ``classic`` now. To ``classic``: every member that speaks
    ``consumer`` now (every kind speaks classic). Members already on ``to`` and classic-only specs
    stay. ValueError for another ``to`` or lengths that differ."""
    if to not in ("consumer", "classic"):
        raise ValueError(f"bounce-protocol to={to!r}: expected consumer or classic")
    if len(specs) != len(current):
        raise ValueError(f"{len(specs)} specs but {len(current)} current protocols")
    if to == "classic":
        return [i for i, now in enumerate(current) if now == "consumer"]
    return [i for i, (spec, now) in enumerate(zip(specs, current))
            if now != "consumer" and spec.protocol == "consumer"
            and has_feature(spec.kind, spec.version, "consumer-protocol")]


def bounce_list(spec: MemberSpec, target: list[str], current: tuple[str, ...]) -> tuple[str, ...]:
    """The list ``spec`` moves to in an upgrade bounce towards ``target``.

    A member that cannot hold the whole target list keeps what it has, except
    that a member that cannot mix protocols goes straight to a cooperative-only
    target once that is the target (the second bounce).
    """
    sup = supported(spec)
    if not all(s in sup for s in target):
        return current
    if len(target) > 1 and one_assignor_only(spec):
        return current
    mixes = any(s == "cooperative-sticky" for s in target) and any(s != "cooperative-sticky" for s in target)
    if mixes and cannot_mix(spec):
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


def bounce_steps(current: Sequence[tuple[str, ...]], new: Sequence[tuple[str, ...]]) -> list[tuple[int, ...]]:
    """The order in which members (by index) move from their ``current`` lists to ``new`` ones.

    Each step is restarted together: all its members stopped, then all started with their new
    lists. Guarantee: when ``current`` and ``new`` each share an assignor, so do the lists of the
    members running at any moment of the bounce (the coordinator accepts every join). Members move
    one at a time where they can, in index order (the documented rolling bounce); a member whose
    new list shares nothing with its old one (librdkafka from [range] straight to
    [cooperative-sticky]) can move alone only while no other member holds the old list alone, so
    such members that cannot move alone move together, before the others (who still hold both).
    """
    lists = [tuple(x) for x in current]
    pending = [i for i in range(len(new)) if tuple(new[i]) != lists[i]]
    steps: list[tuple[int, ...]] = []

    def shares_after(step: tuple[int, ...]) -> bool:
        trial = [tuple(new[i]) if i in step else lists[i] for i in range(len(lists))]
        return not trial or bool(set(trial[0]).intersection(*map(set, trial[1:])))

    while pending:
        step: tuple[int, ...] | None = next(((i,) for i in pending if shares_after((i,))), None)
        if step is None:
            jumpers = tuple(i for i in pending if not set(lists[i]) & set(new[i]))
            step = jumpers if jumpers and shares_after(jumpers) else tuple(pending)
        for i in step:
            lists[i] = tuple(new[i])
            pending.remove(i)
        steps.append(step)
    return steps
