"""Partition assignors of the reference consumer: pure functions, no I/O, no codec.

The group leader runs one of these over the members' decoded subscriptions
(see :mod:`conformance.reference.claims` for turning wire bytes into
:class:`MemberClaim`). Every function is deterministic: the same input gives
the same output, whatever the order of the mapping it is given.

Assignors and the Java assignors they match
-------------------------------------------

``cooperative_sticky_assign``  Java ``CooperativeStickyAssignor`` (KIP-429)
``sticky_assign``              Java ``StickyAssignor`` (eager; no withholding)
``range_assign``               Java ``RangeAssignor``
``roundrobin_assign``          Java ``RoundRobinAssignor``

Guarantees of the sticky assignors
----------------------------------

1. **Ownership is resolved per partition, by generation** (:func:`resolve_ownership`,
   the rule of Java's ``AbstractStickyAssignor`` since 3.5, KAFKA-14639): a
   claim nobody contests is valid whatever its generation; among several
   claims on one partition the highest generation wins and the lower ones are
   stale; two or more claims at that highest generation are all void (and, in
   cooperative mode, the partition is withheld from everyone this round so
   that every claimer revokes it first). An unknown generation (no
   ``GenerationId`` and no usable userData) counts as -1, so it loses every
   contest with a claim that carries a generation but stands when uncontested.
   (Java up to 3.4 dropped *every* claim of a member below the group's highest
   generation, and of a member declaring none once anyone declared one; a
   member that had missed one round, or that writes no generation at all,
   lost partitions it still held and they went straight to someone else.)
2. **Complete**: every partition of every subscribed topic goes to a member
   subscribed to its topic, except partitions withheld by rule 4.
3. **Balanced**: when all members subscribe to the same topics, partition
   counts differ by at most one (before withholding). With unequal
   subscriptions the assignor moves partitions from a member to one with at
   least two fewer that can take them until no such move exists.
4. **Cooperative rule** (cooperative mode only): a member is never given a
   partition that another member validly owns in this generation; such a
   partition is *withheld* (left out of every assignment) and its owner, seeing
   it missing, revokes it and rejoins, and the follow-up rebalance hands it to
   its new owner. Conflicting claims are withheld likewise.
5. **Sticky**: a member keeps every valid claim it still subscribes to, except
   the partitions that must move for balance; a member that owned no more than
   ``floor(P/N)`` partitions (equal subscriptions) loses none. Partitions newly
   placed on an over-full member are moved before partitions it already owned.

Worked example (cooperative)
----------------------------

Topic ``t`` has 6 partitions. Generation 7 was ``A: t0 t1 t2``, ``B: t3 t4 t5``.
``C`` joins (generation -1, owns nothing); ``A`` and ``B`` rejoin declaring
generation 7 and their partitions.

- Ownership: max generation 7; valid owners t0-t2 -> A, t3-t5 -> B; no conflict.
- Sticky + balanced target: 6 / 3 = 2 each. A keeps t0 t1, B keeps t3 t4;
  t2 (A's highest) and t5 (B's highest) move to C.
- Cooperative rule: t2 is validly owned by A and t5 by B, so both are withheld.
  Result: ``A: t0 t1``, ``B: t3 t4``, ``C: (nothing)``; withheld
  ``{t2: C, t5: C}``.
- A and B revoke t2 and t5 and rejoin; in generation 8 nobody claims them, so
  the same computation gives ``A: t0 t1``, ``B: t3 t4``, ``C: t2 t5``.

Had ``A`` declared generation 6 instead (it missed generation 7), nothing
would change: nobody else claims t0-t2, so A's claims stand. Had ``B`` also
claimed t2 at generation 7, A's claim on t2 would be stale and B would own it.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field

#: A topic partition: ``(topic, partition)``.
TP = tuple[str, int]

#: The generation assumed when a member declares none (Java's DEFAULT_GENERATION).
DEFAULT_GENERATION = -1

#: Canonical strategy names this module implements; "cooperative-sticky" is the only cooperative one.
COOPERATIVE_STRATEGIES: frozenset[str] = frozenset({"cooperative-sticky"})
EAGER_STRATEGIES: frozenset[str] = frozenset({"sticky", "range", "roundrobin"})


class AssignorError(ValueError):
    """The input cannot be assigned (a member with no id, a negative partition count)."""


@dataclass(frozen=True)
class MemberClaim:
    """What one member told the leader in its JoinGroup subscription.

    ``owned`` is what it declares it owns (``OwnedPartitions``, or the previous
    assignment carried in sticky userData); ``generation`` the generation it
    declares (``GenerationId`` or from userData), -1 when unknown.
    """

    member_id: str
    topics: frozenset[str]
    owned: tuple[TP, ...] = ()
    generation: int = DEFAULT_GENERATION
    group_instance_id: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True)
class Ownership:
    """The outcome of resolving ownership claims (guarantee 1).

    ``owner``: partition -> its valid previous owner. ``conflicted``: partitions
    claimed by several members at that partition's highest claimed generation.
    ``stale``: member -> its claims that lost to a claim of a higher generation
    on the same partition. ``max_generation``: the highest generation any
    member declared (informational; validity is decided per partition).
    ``unknown``: member -> claims of partitions that do not exist in the
    metadata (unsubscribed topic, partition beyond the count).
    """

    max_generation: int
    owner: dict[TP, str]
    conflicted: frozenset[TP]
    stale: dict[str, tuple[TP, ...]]
    unknown: dict[str, tuple[TP, ...]]

    def valid_for(self, member_id: str) -> set[TP]:
        return {tp for tp, m in self.owner.items() if m == member_id}


@dataclass(frozen=True)
class Plan:
    """An assignor's answer.

    ``assignment``: member -> sorted partitions to hand it now. ``withheld``:
    partition -> the member it is meant for once its current owner revoked it
    (cooperative only). ``ownership``: the resolved claims the plan rests on.
    """

    assignment: dict[str, list[TP]]
    withheld: dict[TP, str] = field(default_factory=dict)
    ownership: Ownership | None = None


def all_partitions(partitions_per_topic: Mapping[str, int]) -> list[TP]:
    """Every partition of the given topics, sorted by topic then partition."""
    out: list[TP] = []
    for topic in sorted(partitions_per_topic):
        count = partitions_per_topic[topic]
        if count < 0:
            raise AssignorError(f"topic {topic!r} has a negative partition count {count}")
        out.extend((topic, p) for p in range(count))
    return out


def _check_members(members: Mapping[str, MemberClaim]) -> None:
    for key, claim in members.items():
        if not key or key != claim.member_id:
            raise AssignorError(f"member key {key!r} does not match its claim's member_id {claim.member_id!r}")


def _subscribed_partitions(members: Mapping[str, MemberClaim], partitions_per_topic: Mapping[str, int]) -> list[TP]:
    """Partitions of the topics some member subscribes to and the metadata knows."""
    wanted = set().union(*(m.topics for m in members.values())) if members else set()
    return all_partitions({t: n for t, n in partitions_per_topic.items() if t in wanted})


def resolve_ownership(members: Mapping[str, MemberClaim], partitions_per_topic: Mapping[str, int]) -> Ownership:
    """Apply guarantee 1 partition by partition: the highest generation wins, ties void all.

    Claims are checked against the partitions of topics some member subscribes
    to (``partitions_per_topic`` restricted to the group's subscriptions); a
    claim outside them is reported in ``unknown`` and owns nothing. The result
    does not depend on the order of ``members``.
    """
    _check_members(members)
    existing = set(_subscribed_partitions(members, partitions_per_topic))
    max_gen = max((m.generation for m in members.values()), default=DEFAULT_GENERATION)
    max_gen = max(max_gen, DEFAULT_GENERATION)
    claimers: dict[TP, list[tuple[int, str]]] = {}
    unknown: dict[str, tuple[TP, ...]] = {}
    for member_id in sorted(members):
        claim = members[member_id]
        owned = sorted(set(claim.owned))
        missing = tuple(tp for tp in owned if tp not in existing)
        if missing:
            unknown[member_id] = missing
        generation = max(claim.generation, DEFAULT_GENERATION)
        for tp in owned:
            if tp in existing:
                claimers.setdefault(tp, []).append((generation, member_id))
    owner: dict[TP, str] = {}
    conflicted: set[TP] = set()
    stale_lists: dict[str, list[TP]] = {}
    for tp, claims in claimers.items():
        best = max(g for g, _ in claims)
        winners = [m for g, m in claims if g == best]
        if len(winners) == 1:
            owner[tp] = winners[0]
        else:
            conflicted.add(tp)
        for g, m in claims:
            if g < best:
                stale_lists.setdefault(m, []).append(tp)
    stale = {m: tuple(sorted(tps)) for m, tps in sorted(stale_lists.items())}
    return Ownership(max_generation=max_gen, owner=owner, conflicted=frozenset(conflicted), stale=stale,
                     unknown=unknown)


def _sticky_core(members: Mapping[str, MemberClaim], partitions: list[TP],
                 ownership: Ownership) -> dict[str, set[TP]]:
    """Sticky and balanced placement (guarantees 2, 3, 5) before any withholding."""
    ids = sorted(members)
    subs = {m: members[m].topics for m in ids}
    assignment: dict[str, set[TP]] = {m: set() for m in ids}
    previously: dict[str, set[TP]] = {m: set() for m in ids}
    for tp, m in ownership.owner.items():
        if m in assignment and tp[0] in subs[m]:
            assignment[m].add(tp)
            previously[m].add(tp)
    taken = set().union(*assignment.values()) if assignment else set()
    unassigned = [tp for tp in partitions if tp not in taken]
    if not ids:
        return assignment

    equal = len({subs[m] for m in ids}) == 1
    if equal:
        # A heap of (count, member) gives the least-loaded member in O(log N).
        heap = [(len(assignment[m]), m) for m in ids]
        heapq.heapify(heap)
        for tp in unassigned:
            if tp[0] not in subs[ids[0]]:
                continue
            count, m = heapq.heappop(heap)
            assignment[m].add(tp)
            heapq.heappush(heap, (count + 1, m))
    else:
        for tp in unassigned:
            eligible = [m for m in ids if tp[0] in subs[m]]
            if eligible:
                m = min(eligible, key=lambda x: (len(assignment[x]), x))
                assignment[m].add(tp)

    _balance(assignment, subs, previously, ids)
    return assignment


def _balance(assignment: dict[str, set[TP]], subs: Mapping[str, frozenset[str]],
             previously: Mapping[str, set[TP]], ids: list[str]) -> None:
    """Move partitions from a member to one with at least two fewer until no move is possible.

    Each move lowers the sum of squared counts, so this terminates. With equal
    subscriptions every partition fits every member, so it ends with
    ``max - min <= 1``. A donor gives away partitions it did not previously own
    first, then its highest owned partitions.
    """
    while True:
        order = sorted(ids, key=lambda m: (len(assignment[m]), m))
        moved = False
        for donor in reversed(order):
            for recipient in order:
                if len(assignment[donor]) - len(assignment[recipient]) < 2:
                    break
                movable = [tp for tp in assignment[donor] if tp[0] in subs[recipient]]
                if not movable:
                    continue
                tp = max(movable, key=lambda x: (x not in previously[donor], x))
                assignment[donor].discard(tp)
                assignment[recipient].add(tp)
                moved = True
                break
            if moved:
                break
        if not moved:
            return


def sticky_assign(members: Mapping[str, MemberClaim], partitions_per_topic: Mapping[str, int]) -> Plan:
    """Eager sticky assignment (Java ``StickyAssignor``): guarantees 1, 2, 3, 5; nothing withheld.

    Eager members revoke everything before joining, so handing a partition
    straight to a new owner is safe here.
    """
    _check_members(members)
    ownership = resolve_ownership(members, partitions_per_topic)
    placed = _sticky_core(members, _subscribed_partitions(members, partitions_per_topic), ownership)
    return Plan(assignment={m: sorted(tps) for m, tps in placed.items()}, ownership=ownership)


def cooperative_sticky_assign(members: Mapping[str, MemberClaim], partitions_per_topic: Mapping[str, int]) -> Plan:
    """Cooperative sticky assignment (Java ``CooperativeStickyAssignor``): guarantees 1-5.

    A partition placed on a member other than its valid owner, or claimed by
    several members at the highest generation, is withheld: absent from every
    assignment, listed in ``Plan.withheld`` with the member it is meant for.
    """
    _check_members(members)
    ownership = resolve_ownership(members, partitions_per_topic)
    placed = _sticky_core(members, _subscribed_partitions(members, partitions_per_topic), ownership)
    withheld: dict[TP, str] = {}
    for m, tps in placed.items():
        for tp in list(tps):
            prev = ownership.owner.get(tp)
            if (prev is not None and prev != m) or tp in ownership.conflicted:
                tps.discard(tp)
                withheld[tp] = m
    return Plan(assignment={m: sorted(tps) for m, tps in placed.items()}, withheld=withheld, ownership=ownership)


def _java_member_order(claim: MemberClaim) -> tuple[int, str]:
    """Java's ``MemberInfo`` order: static members by instance id first, then dynamic by member id."""
    if claim.group_instance_id is not None:
        return (0, claim.group_instance_id)
    return (1, claim.member_id)


def range_assign(members: Mapping[str, MemberClaim], partitions_per_topic: Mapping[str, int]) -> Plan:
    """Java ``RangeAssignor``: per topic, consecutive ranges to members in Java's member order.

    With ``n`` partitions and ``k`` subscribers, each gets ``n // k`` and the
    first ``n % k`` one more. Members receive only subscribed topics.
    """
    _check_members(members)
    out: dict[str, list[TP]] = {m: [] for m in members}
    for topic in sorted(partitions_per_topic):
        subscribers = sorted((c for c in members.values() if topic in c.topics), key=_java_member_order)
        if not subscribers:
            continue
        n = partitions_per_topic[topic]
        if n < 0:
            raise AssignorError(f"topic {topic!r} has a negative partition count {n}")
        per, extra = divmod(n, len(subscribers))
        start = 0
        for i, claim in enumerate(subscribers):
            length = per + (1 if i < extra else 0)
            out[claim.member_id].extend((topic, p) for p in range(start, start + length))
            start += length
    return Plan(assignment={m: sorted(tps) for m, tps in out.items()})


def roundrobin_assign(members: Mapping[str, MemberClaim], partitions_per_topic: Mapping[str, int]) -> Plan:
    """Java ``RoundRobinAssignor``: all partitions in topic order dealt to members in a circle.

    A member not subscribed to a partition's topic is skipped for that partition.
    """
    _check_members(members)
    order = sorted(members.values(), key=_java_member_order)
    out: dict[str, list[TP]] = {m: [] for m in members}
    if not order:
        return Plan(assignment=out)
    i = 0
    for tp in _subscribed_partitions(members, partitions_per_topic):
        for step in range(len(order)):
            claim = order[(i + step) % len(order)]
            if tp[0] in claim.topics:
                out[claim.member_id].append(tp)
                i = (i + step + 1) % len(order)
                break
    return Plan(assignment={m: sorted(tps) for m, tps in out.items()})


ASSIGNORS = {
    "cooperative-sticky": cooperative_sticky_assign,
    "sticky": sticky_assign,
    "range": range_assign,
    "roundrobin": roundrobin_assign,
}


def assign(strategy: str, members: Mapping[str, MemberClaim], partitions_per_topic: Mapping[str, int]) -> Plan:
    """Run the assignor named ``strategy`` (a canonical name); AssignorError for an unknown one."""
    try:
        fn = ASSIGNORS[strategy]
    except KeyError:
        raise AssignorError(f"unknown assignment strategy {strategy!r}; known: {', '.join(ASSIGNORS)}") from None
    return fn(members, partitions_per_topic)


def is_cooperative(strategy: str) -> bool:
    """True for strategies whose members revoke incrementally (KIP-429)."""
    return strategy in COOPERATIVE_STRATEGIES
