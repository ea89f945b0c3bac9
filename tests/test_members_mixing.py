"""Strategy lists of a mixed group (conformance.members.mixing): every list the planner or an
upgrade bounce hands out shares an assignor with every other member's, at every moment of the
bounce, and the protocol the group is expected to run follows the coordinator's vote (pure Python)."""

from __future__ import annotations

import itertools

import pytest

from conformance.errors import UsageError
from conformance.members.mixing import bounce_lists, bounce_steps, group_protocol, plan_mix
from conformance.members.spec import MemberSpec

COOP, MIXED, RANGE = ("cooperative-sticky",), ("cooperative-sticky", "range"), ("range",)


def _specs(*texts: str) -> list[MemberSpec]:
    return [MemberSpec.parse(t) for t in texts]


def test_a_member_without_cooperative_support_holds_the_group_on_its_eager_assignor():
    # Seen in upgrade-eager-to-cooperative with kafka-python 2.3.3: the second bounce moved the others to
    # [cooperative-sticky] alone and the coordinator refused their joins (INCONSISTENT_GROUP_PROTOCOL).
    specs = _specs("reference@0.1.0", "java@2.8.2", "librdkafka@2.16.1", "sarama@1.61.1", "kafka-python@2.3.3")
    plan = plan_mix(specs)
    assert plan.expected_protocol == "eager"
    after_first = bounce_lists(list(zip(specs, plan.strategies)), list(MIXED))
    assert after_first == [MIXED, MIXED, RANGE, MIXED, RANGE]
    after_second = bounce_lists(list(zip(specs, after_first)), list(COOP))
    assert after_second == after_first                  # nobody may drop range while kafka-python 2.x is there


def test_a_group_that_can_go_cooperative_does():
    specs = _specs("reference@0.1.0", "java@4.4.0", "sarama@1.61.1")
    first = bounce_lists([(s, RANGE) for s in specs], list(MIXED))
    assert first == [MIXED, MIXED, MIXED]
    assert bounce_lists(list(zip(specs, first)), list(COOP)) == [COOP, COOP, COOP]


def test_only_the_members_that_would_break_the_group_stay():
    # Both can take [cooperative-sticky] (librdkafka straight from range): they move. With kafka-python
    # 2.x, which cannot, java would share nothing with it: both keep their lists.
    specs = _specs("java@4.4.0", "librdkafka@2.16.1")
    assert bounce_lists([(specs[0], MIXED), (specs[1], RANGE)], list(COOP)) == [COOP, COOP]
    laggard = _specs("java@4.4.0", "kafka-python@2.3.3")
    assert bounce_lists([(laggard[0], MIXED), (laggard[1], RANGE)], list(COOP)) == [MIXED, RANGE]


def _shares(lists) -> bool:
    return not lists or bool(set(lists[0]).intersection(*map(set, lists[1:])))


def _walk(current, new, steps):
    """Every set of lists the group holds during the bounce: members of a step stop together, then
    start one by one with their new lists."""
    lists = {i: tuple(x) for i, x in enumerate(current)}
    for step in steps:
        for i in step:
            del lists[i]
        yield list(lists.values())
        for i in step:
            lists[i] = tuple(new[i])
            yield list(lists.values())


def test_the_upgrade_starts_eager_and_ends_cooperative_with_every_kind():
    specs = _specs("reference@0.1.0", "java@4.4.0", "librdkafka@2.16.1", "sarama@1.61.1", "kafka-python@3.0.12")
    plan = plan_mix(specs, ("range",))
    assert plan.strategies == (RANGE,) * 5 and plan.expected_protocol == "eager"
    first = bounce_lists(list(zip(specs, plan.strategies)), list(MIXED))
    assert first == [MIXED, MIXED, RANGE, MIXED, RANGE] and group_protocol(first) == "eager"
    assert bounce_steps(plan.strategies, first) == [(0,), (1,), (3,)]
    second = bounce_lists(list(zip(specs, first)), list(COOP))
    assert second == [COOP] * 5 and group_protocol(second) == "cooperative"
    # librdkafka and kafka-python 3.x cannot offer [cooperative-sticky, range]: either alone on
    # [cooperative-sticky] would share nothing with the other still on [range]. They restart together,
    # first, while the others still offer both.
    steps = bounce_steps(first, second)
    assert steps == [(2, 4), (0,), (1,), (3,)]
    assert all(_shares(lists) for lists in _walk(first, second, steps))


def test_one_member_that_cannot_mix_moves_first_and_alone():
    assert bounce_steps([MIXED, RANGE, MIXED], [COOP, COOP, COOP]) == [(1,), (0,), (2,)]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_every_moment_of_every_bounce_shares_an_assignor(n: int):
    options = [COOP, MIXED, RANGE, ("range", "roundrobin"), ("roundrobin",)]
    for current in itertools.product(options, repeat=n):
        if not _shares(current):
            continue
        for new in itertools.product(options, repeat=n):
            if not _shares(new):
                continue
            steps = bounce_steps(current, new)
            assert sorted(i for s in steps for i in s) == [i for i in range(n) if new[i] != current[i]]
            bad = [lists for lists in _walk(current, new, steps) if not _shares(lists)]
            assert not bad, (current, new, steps, bad[0])


def test_group_protocol_follows_the_coordinators_vote():
    assert group_protocol([COOP, MIXED]) == "cooperative"
    assert group_protocol([MIXED, RANGE]) == "eager"               # range is the only common assignor
    assert group_protocol([MIXED, MIXED]) == "cooperative"         # chosen by vote; members with range still revoke eagerly
    assert group_protocol([COOP, RANGE]) is None                   # no common assignor: the group cannot form
    assert group_protocol([MIXED, ("range", "cooperative-sticky")]) is None   # a tied vote


def test_a_start_list_a_member_cannot_hold_is_refused_naming_it():
    with pytest.raises(UsageError, match=r"starts every member on \[cooperative-sticky, range\]; librdkafka@2.16.1 "
                                         r"cannot list a cooperative and an eager assignor together"):
        plan_mix(_specs("java@4.4.0", "librdkafka@2.16.1"), ("cooperative-sticky", "range"))
    with pytest.raises(UsageError, match=r"kafka-python@2.3.3 supports only sticky, range, roundrobin"):
        plan_mix(_specs("java@4.4.0", "kafka-python@2.3.3"), ("cooperative-sticky",))
