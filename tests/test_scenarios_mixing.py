"""Strategy lists of a mixed group (conformance.scenarios.mixing): every list the planner or an
upgrade bounce hands out shares an assignor with every other member's (pure Python)."""

from __future__ import annotations

from conformance.members.spec import MemberSpec
from conformance.scenarios.mixing import bounce_lists, plan_mix

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
