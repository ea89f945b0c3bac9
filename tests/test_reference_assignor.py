"""The reference consumer's assignors: worked examples and property tests over long join/leave sequences.

The group simulation (``_Group``) plays the members' side of KIP-429 exactly as
the reference member does: every member declares what it owns and its
generation, takes the leader's answer, revokes what it lost, and anyone who
revoked something triggers a follow-up rebalance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.reference.assignor import (
    TP,
    AssignorError,
    MemberClaim,
    Plan,
    assign,
    cooperative_sticky_assign,
    range_assign,
    resolve_ownership,
    roundrobin_assign,
    sticky_assign,
)


def claim(member: str, topics=("t",), owned=(), generation=-1, instance=None) -> MemberClaim:
    return MemberClaim(member_id=member, topics=frozenset(topics), owned=tuple(owned), generation=generation,
                       group_instance_id=instance)


def t(*ps: int, topic: str = "t") -> list[TP]:
    return [(topic, p) for p in ps]


# ---------------------------------------------------------------------------
# Worked examples (the module docstring's, and Java's documented behaviour)
# ---------------------------------------------------------------------------

def test_docstring_example_withholds_then_hands_over() -> None:
    members = {"A": claim("A", owned=t(0, 1, 2), generation=7), "B": claim("B", owned=t(3, 4, 5), generation=7),
               "C": claim("C")}
    plan = cooperative_sticky_assign(members, {"t": 6})
    assert plan.assignment == {"A": t(0, 1), "B": t(3, 4), "C": []}
    assert plan.withheld == {("t", 2): "C", ("t", 5): "C"}
    # Follow-up: A and B revoked t2 and t5.
    members = {"A": claim("A", owned=t(0, 1), generation=8), "B": claim("B", owned=t(3, 4), generation=8),
               "C": claim("C", generation=8)}
    plan = cooperative_sticky_assign(members, {"t": 6})
    assert plan.assignment == {"A": t(0, 1), "B": t(3, 4), "C": t(2, 5)}
    assert plan.withheld == {}


def test_uncontested_claims_stand_whatever_their_generation() -> None:
    # A missed generation 7 (declares 6); kafka-python 3.0.12-style D declares none (-1).
    members = {"A": claim("A", owned=t(0, 1, 2), generation=6), "B": claim("B", owned=t(3, 4, 5), generation=7),
               "C": claim("C", generation=7), "D": claim("D", owned=t(6, 7), generation=-1)}
    own = resolve_ownership(members, {"t": 8})
    assert own.max_generation == 7
    assert own.stale == {}
    assert own.owner == {**{tp: "A" for tp in t(0, 1, 2)}, **{tp: "B" for tp in t(3, 4, 5)},
                         **{tp: "D" for tp in t(6, 7)}}
    plan = cooperative_sticky_assign(members, {"t": 8})
    # Whatever moves to C is withheld first: nobody gets a partition another member still owns.
    for m, tps in plan.assignment.items():
        assert all(own.owner.get(tp, m) == m for tp in tps)
    assert set(plan.withheld.values()) <= {"C"}


def test_contested_claims_go_to_the_highest_generation_and_lower_ones_are_stale() -> None:
    members = {"A": claim("A", owned=t(0, 1, 2), generation=6), "B": claim("B", owned=t(2, 3), generation=7),
               "C": claim("C", owned=t(3), generation=-1)}
    own = resolve_ownership(members, {"t": 6})
    assert own.owner == {("t", 0): "A", ("t", 1): "A", ("t", 2): "B", ("t", 3): "B"}
    assert own.stale == {"A": (("t", 2),), "C": (("t", 3),)}
    assert own.conflicted == frozenset()
    plan = cooperative_sticky_assign(members, {"t": 6})
    # The stale claims are nobody's property: A and C are never told to keep t2/t3.
    assert ("t", 2) not in plan.assignment["A"] and ("t", 3) not in plan.assignment["C"]


def test_equal_generation_conflict_voids_both_claims_and_withholds() -> None:
    members = {"A": claim("A", owned=t(0, 1), generation=3), "B": claim("B", owned=t(1, 2), generation=3)}
    own = resolve_ownership(members, {"t": 4})
    assert own.conflicted == frozenset(t(1))
    assert own.owner == {("t", 0): "A", ("t", 2): "B"}
    plan = cooperative_sticky_assign(members, {"t": 4})
    assert ("t", 1) in plan.withheld
    assert all(("t", 1) not in tps for tps in plan.assignment.values())


def test_higher_generation_wins_a_contested_partition() -> None:
    members = {"A": claim("A", owned=t(0), generation=4), "B": claim("B", owned=t(0), generation=5)}
    own = resolve_ownership(members, {"t": 2})
    assert own.owner == {("t", 0): "B"} and not own.conflicted


def test_claims_outside_the_metadata_are_reported_not_owned() -> None:
    members = {"A": claim("A", owned=[("t", 9), ("gone", 0)], generation=1)}
    own = resolve_ownership(members, {"t": 2})
    assert own.unknown == {"A": (("gone", 0), ("t", 9))}
    assert own.owner == {}


def test_owned_partition_of_an_unsubscribed_topic_is_withheld_not_handed_over() -> None:
    # A still owns u0 but has stopped subscribing to u; B subscribes to u. Java withholds u0.
    members = {"A": claim("A", topics=("t",), owned=[("u", 0)], generation=2),
               "B": claim("B", topics=("t", "u"), generation=2)}
    plan = cooperative_sticky_assign(members, {"t": 2, "u": 1})
    assert plan.withheld == {("u", 0): "B"}
    assert ("u", 0) not in plan.assignment["A"]


def test_range_matches_java_layout() -> None:
    members = {"c0": claim("c0", topics=("t0", "t1")), "c1": claim("c1", topics=("t0", "t1"))}
    plan = range_assign(members, {"t0": 3, "t1": 3})
    assert plan.assignment == {"c0": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)], "c1": [("t0", 2), ("t1", 2)]}


def test_range_orders_static_members_first() -> None:
    members = {"a": claim("a"), "z": claim("z", instance="i1")}
    assert range_assign(members, {"t": 3}).assignment == {"z": t(0, 1), "a": t(2)}


def test_roundrobin_matches_java_layout_and_skips_unsubscribed() -> None:
    members = {"c0": claim("c0", topics=("t0",)), "c1": claim("c1", topics=("t0", "t1")),
               "c2": claim("c2", topics=("t0", "t1", "t2"))}
    plan = roundrobin_assign(members, {"t0": 1, "t1": 2, "t2": 3})
    # Java's documented example (RoundRobinAssignor javadoc).
    assert plan.assignment == {"c0": [("t0", 0)], "c1": [("t1", 0)],
                               "c2": [("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)]}


def test_unknown_strategy_and_bad_input_are_typed_errors() -> None:
    with pytest.raises(AssignorError, match="unknown assignment strategy 'foo'"):
        assign("foo", {}, {})
    with pytest.raises(AssignorError, match="does not match"):
        cooperative_sticky_assign({"A": claim("B")}, {"t": 1})
    with pytest.raises(AssignorError, match="negative partition count"):
        range_assign({"A": claim("A")}, {"t": -1})


# ---------------------------------------------------------------------------
# Checks, each shown to reject a violating plan
# ---------------------------------------------------------------------------

def check_disjoint(plan: Plan) -> list[str]:
    seen: dict[TP, str] = {}
    out = []
    for m, tps in plan.assignment.items():
        for tp in tps:
            if tp in seen:
                out.append(f"{tp} given to {seen[tp]} and {m}")
            seen[tp] = m
    return out


def check_cooperative_rule(members: dict[str, MemberClaim], plan: Plan, partitions: dict[str, int]) -> list[str]:
    """R1: nobody receives a partition another member validly owns (recomputed here, independently)."""
    max_gen = max([c.generation for c in members.values()] + [-1])
    claims: dict[TP, list[str]] = {}
    for c in members.values():
        if c.generation == max_gen or (c.generation < -1 and max_gen == -1):
            for tp in set(c.owned):
                claims.setdefault(tp, []).append(c.member_id)
    out = []
    for m, tps in plan.assignment.items():
        for tp in tps:
            owners = claims.get(tp, [])
            if len(owners) > 1:
                out.append(f"{tp} claimed by {owners} (conflict) was handed to {m}")
            elif owners and owners[0] != m:
                out.append(f"{tp} validly owned by {owners[0]} was handed to {m}")
    return out


def check_complete(plan: Plan, members: dict[str, MemberClaim], partitions: dict[str, int]) -> list[str]:
    wanted = {(tp, p) for tp, n in partitions.items() for p in range(n)
              if any(tp in c.topics for c in members.values())}
    got = set(sum(plan.assignment.values(), [])) | set(plan.withheld)
    return [f"missing {sorted(wanted - got)}"] if wanted != got else []


def check_balanced(plan: Plan) -> list[str]:
    counts = {m: len(tps) + sum(1 for w in plan.withheld.values() if w == m) for m, tps in plan.assignment.items()}
    if counts and max(counts.values()) - min(counts.values()) > 1:
        return [f"unbalanced: {counts}"]
    return []


def test_checks_reject_violating_plans() -> None:
    members = {"A": claim("A", owned=t(0), generation=2), "B": claim("B", generation=2)}
    bad = Plan(assignment={"A": t(0), "B": t(0, 1)})
    assert check_disjoint(bad)
    assert check_cooperative_rule(members, bad, {"t": 2})
    assert check_complete(Plan(assignment={"A": t(0), "B": []}), members, {"t": 2})
    assert check_balanced(Plan(assignment={"A": t(0, 1, 2), "B": []}))
    good = cooperative_sticky_assign(members, {"t": 2})
    assert not (check_disjoint(good) or check_cooperative_rule(members, good, {"t": 2})
                or check_complete(good, members, {"t": 2}) or check_balanced(good))


# ---------------------------------------------------------------------------
# Group simulation over long random join/leave sequences
# ---------------------------------------------------------------------------

@dataclass
class _Member:
    owned: set[TP] = field(default_factory=set)
    generation: int = -1


@dataclass
class _Group:
    topics: dict[str, int]
    members: dict[str, _Member] = field(default_factory=dict)
    generation: int = 0
    rounds: int = 0

    def claims(self) -> dict[str, MemberClaim]:
        return {m: MemberClaim(member_id=m, topics=frozenset(self.topics), owned=tuple(sorted(s.owned)),
                               generation=s.generation) for m, s in self.members.items()}

    def rebalance(self) -> Plan:
        """One generation: assign, check, and let members apply it (revoking what they lost)."""
        self.generation += 1
        self.rounds += 1
        claims = self.claims()
        plan = cooperative_sticky_assign(claims, self.topics)
        problems = (check_disjoint(plan) + check_cooperative_rule(claims, plan, self.topics)
                    + check_complete(plan, claims, self.topics) + check_balanced(plan))
        assert not problems, (problems, claims, plan)
        for m, state in self.members.items():
            state.owned = set(plan.assignment[m])
            state.generation = self.generation
        return plan

    def converge(self) -> tuple[Plan, int]:
        """Rebalance until nothing is withheld; returns the last plan and how many rounds it took."""
        plan = self.rebalance()
        rounds = 1
        while plan.withheld:
            plan = self.rebalance()
            rounds += 1
            assert rounds <= 2, f"withheld partitions not handed over in the follow-up: {plan.withheld}"
        return plan, rounds


_events = st.lists(st.one_of(st.just(("join",)), st.tuples(st.just("leave"), st.integers(0, 50)),
                             st.tuples(st.just("grow"), st.integers(1, 4))),
                   min_size=5, max_size=40)


@settings(max_examples=60, deadline=None)
@given(events=_events, partitions=st.integers(1, 40), n_topics=st.integers(1, 3))
def test_random_join_leave_sequences_keep_every_guarantee(events, partitions, n_topics) -> None:
    topics = {f"t{i}": partitions for i in range(n_topics)}
    group = _Group(topics=topics)
    group.members["m0"] = _Member()
    group.converge()
    next_id = 1
    for event in events:
        before = {m: set(s.owned) for m, s in group.members.items()}
        if event[0] == "join":
            group.members[f"m{next_id:03d}"] = _Member()
            next_id += 1
        elif event[0] == "leave" and len(group.members) > 1:
            del group.members[sorted(group.members)[event[1] % len(group.members)]]
        elif event[0] == "grow":
            name = sorted(topics)[event[1] % len(topics)]
            topics[name] += event[1]
        plan, _ = group.converge()
        total = sum(topics.values())
        floor = total // len(group.members)
        # Stickiness: a surviving member keeps at least min(what it had, floor) partitions.
        for m, had in before.items():
            if m in group.members:
                kept = had & group.members[m].owned
                assert len(kept) >= min(len(had), floor), (m, had, group.members[m].owned, floor)
        # Complete and balanced at convergence.
        owned = [tp for s in group.members.values() for tp in s.owned]
        assert len(owned) == len(set(owned)) == total
        counts = [len(s.owned) for s in group.members.values()]
        assert max(counts) - min(counts) <= 1


_claims = st.dictionaries(
    keys=st.sampled_from([f"m{i}" for i in range(6)]),
    values=st.tuples(st.lists(st.integers(0, 11), max_size=8), st.integers(-1, 4)),
    min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(raw=_claims)
def test_arbitrary_claims_never_break_the_cooperative_rule(raw) -> None:
    members = {m: claim(m, owned=t(*owned), generation=gen) for m, (owned, gen) in raw.items()}
    parts = {"t": 12}
    plan = cooperative_sticky_assign(members, parts)
    assert not check_disjoint(plan)
    assert not check_cooperative_rule(members, plan, parts)
    assert not check_complete(plan, members, parts)
    assert not check_balanced(plan)
    own = plan.ownership
    assert own is not None
    # Per partition: the highest claimed generation wins alone; ties own nothing; lower claims are stale.
    for tp in {tp for c in members.values() for tp in c.owned}:
        gens = {m: max(c.generation, -1) for m, c in members.items() if tp in c.owned}
        best = max(gens.values())
        at_best = sorted(m for m, g in gens.items() if g == best)
        if len(at_best) == 1:
            assert own.owner.get(tp) == at_best[0]
        else:
            assert tp in own.conflicted and tp not in own.owner
        for m, g in gens.items():
            assert (g < best) == (tp in own.stale.get(m, ()))


@settings(max_examples=100, deadline=None)
@given(raw=_claims, topics=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True))
def test_unequal_subscriptions_stay_valid(raw, topics) -> None:
    parts = {"a": 5, "b": 3, "c": 7}
    members = {}
    for i, (m, (owned, gen)) in enumerate(sorted(raw.items())):
        subs = topics[: 1 + i % len(topics)]
        members[m] = claim(m, topics=subs, owned=[(tp, p % parts[tp]) for tp in subs for p in owned][:6],
                           generation=gen)
    plan = cooperative_sticky_assign(members, parts)
    assert not check_disjoint(plan)
    assert not check_cooperative_rule(members, plan, parts)
    for m, tps in plan.assignment.items():
        assert all(tp[0] in members[m].topics for tp in tps)
    for tp, m in plan.withheld.items():
        assert tp[0] in members[m].topics


@settings(max_examples=100, deadline=None)
@given(raw=_claims)
def test_eager_assignors_are_complete_and_disjoint(raw) -> None:
    members = {m: claim(m, owned=t(*owned), generation=gen) for m, (owned, gen) in raw.items()}
    parts = {"t": 12, "u": 5}
    members = {m: MemberClaim(m, frozenset({"t", "u"}), c.owned, c.generation) for m, c in members.items()}
    for fn in (sticky_assign, range_assign, roundrobin_assign):
        plan = fn(members, parts)
        assert not plan.withheld
        assert not check_disjoint(plan)
        assert not check_complete(plan, members, parts)
    assert not check_balanced(sticky_assign(members, parts))
    assert not check_balanced(roundrobin_assign(members, parts))
