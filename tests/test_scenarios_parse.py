"""Scenario files: the whole catalog parses; every kind of mistake names file, line and problem."""

from pathlib import Path

import pytest

from conformance.errors import UsageError
from conformance.scenarios.catalog import get_scenario, scenario_names
from conformance.scenarios.parse import parse_duration_ms, parse_scenario
from conformance.scenarios.schedule import Schedule

CATALOG = ["leader-rotation", "rolling-restart", "crash-restart", "pause", "static-restart", "latency",
           "partition", "reset-peer", "broker-restart", "upgrade-eager-to-cooperative", "partition-growth",
           "subscription-change", "chaos"]


def test_catalog_is_complete_and_parses() -> None:
    assert sorted(CATALOG) == scenario_names()
    for name in CATALOG:
        sc = get_scenario(name)
        assert sc.name == name and sc.phases and sc.description
    assert get_scenario("leader-rotation").leader_rotation
    assert get_scenario("static-restart").static_members
    assert get_scenario("subscription-change").topics == {"orders": 12, "audit": 4}
    assert get_scenario("upgrade-eager-to-cooperative").start_strategies == ("range",)
    assert get_scenario("rolling-restart").start_strategies == ()


GOOD = """\
name demo
topic orders partitions=3
phase one
  start each stagger=100ms
  await stable timeout=5s
"""


@pytest.mark.parametrize("text, message", [
    (GOOD.replace("stagger=100ms", "stagger=fast"), r"demo.scenario:4: start stagger: 'fast' is not a duration"),
    (GOOD.replace("start each", "start everybody"), r"demo.scenario:4: start: unknown target 'everybody'"),
    (GOOD.replace("await stable", "await calm"), r"demo.scenario:5: await 'calm'"),
    (GOOD + "  pause m1\n", r"demo.scenario:6: pause: missing for"),
    (GOOD + "  toxic m1 type=latency for=1s lateny=x\n", r"demo.scenario:6: toxic lateny: 'x' is not an integer"),
    (GOOD + "  add-partitions audit total=4\n", r"demo.scenario:6: add-partitions: unknown topic 'audit'"),
    (GOOD + "  explode m1\n", r"demo.scenario:6: unknown statement 'explode'"),
    (GOOD + "topic late partitions=2\n", r"demo.scenario:6: 'topic' is a header statement"),
    ("name demo\nstart all\n", r"demo.scenario:2: 'start' is an action; it must be inside a phase"),
    ("topic orders\nphase p\n  start all\n", r"demo.scenario: no 'name' statement"),
    ("name demo\nphase p\n  sleep 1s\n", r"needs at least one phase that starts members"),
    (GOOD.replace("stagger=100ms", "stagger"), r"expected key=value, got 'stagger'"),
    ("members strategies=rang\n" + GOOD, r"demo.scenario:1: members strategies: 'rang': strategies must be a "
                                        r"comma-separated list of"),
])
def test_errors_name_file_line_and_problem(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_scenario(text, Path("demo.scenario"))


def test_unknown_scenario_lists_the_catalog() -> None:
    with pytest.raises(UsageError, match="unknown scenario 'nope'; known: broker-restart"):
        get_scenario("nope")


def test_durations() -> None:
    assert [parse_duration_ms(x) for x in ("250ms", "2s", "1.5s", "1m")] == [250, 2000, 1500, 60000]


def test_schedule_is_a_function_of_the_seed() -> None:
    a, b, c = Schedule(7), Schedule(7), Schedule(8)
    assert a.chaos(20, 5, 10_000) == b.chaos(20, 5, 10_000)
    assert Schedule(7).chaos(20, 5, 10_000) != c.chaos(20, 5, 10_000)
