"""Scenario files: the whole catalog parses; every kind of mistake names file, line and problem."""

from pathlib import Path

import pytest

from conformance.errors import UsageError
from conformance.scenarios.catalog import get_scenario, scenario_names
from conformance.scenarios.parse import check_targets, load_scenario, parse_duration_ms, parse_scenario
from conformance.scenarios.schedule import Schedule

CATALOG = ["leader-rotation", "rolling-restart", "crash-restart", "pause", "static-restart", "latency",
           "partition", "reset-peer", "broker-restart", "upgrade-eager-to-cooperative", "partition-growth",
           "subscription-change", "chaos", "migrate-to-consumer", "downgrade-to-classic", "mixed-steady",
           "static-cross-protocol", "refused-migration", "custom-assignor-upgrade", "refused-downgrade"]


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


def test_the_scenarios_recordings_were_made_with_parse() -> None:
    # The scenario files beside recorded runs (fixtures/real-runs/, fixtures/client-behaviour/) and the
    # bug corpus's own (fixtures/bug-corpus/) stay valid: `conformance run --scenario FILE` re-records each.
    files = sorted((Path(__file__).resolve().parent.parent / "fixtures").glob("*/*.scenario"))
    files = [f for f in files if f.parent.name != "scenarios"]
    assert {f.parent.name for f in files} == {"real-runs", "client-behaviour", "bug-corpus"}, files
    for f in files:
        sc = load_scenario(f)
        assert sc.phases and sc.description, f


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
    with pytest.raises(UsageError, match="an empty scenario name; give one of broker-restart"):
        get_scenario("")  # not the current directory, '.'
    with pytest.raises(UsageError, match="cannot read scenario file .*: Is a directory"):
        get_scenario(str(Path(__file__).parent))


def test_durations() -> None:
    assert [parse_duration_ms(x) for x in ("250ms", "2s", "1.5s", "1m")] == [250, 2000, 1500, 60000]
    assert [parse_duration_ms(x) for x in ("2.3s", "0.0005s", "1440m")] == [2300, 0, 24 * 3600 * 1000]


def test_schedule_is_a_function_of_the_seed() -> None:
    a, b, c = Schedule(7), Schedule(7), Schedule(8)
    assert a.chaos(20, 5, 10_000) == b.chaos(20, 5, 10_000)
    assert Schedule(7).chaos(20, 5, 10_000) != c.chaos(20, 5, 10_000)


# Every number is checked (digits, finite, in range) and every name and topic, when the file is parsed.
@pytest.mark.parametrize("text, message", [
    (GOOD + "  chaos count=-5\n", r"demo.scenario:6: chaos count: -5 is out of range: give 1 to 10000"),
    (GOOD + "  chaos count=0\n", r"chaos count: 0 is out of range"),
    ("producer rate=-1\n" + GOOD, r"demo.scenario:1: producer rate: -1 is out of range: give 1 to"),
    ("producer rate=0\n" + GOOD, r"producer rate: 0 is out of range"),
    (GOOD + "  toxic m0 type=latency latency=5 for=1s toxicity=nan\n", r"toxicity: 'nan' is not a number from 0 to 1"),
    (GOOD + "  toxic m0 type=latency latency=5 for=1s toxicity=inf\n", r"toxicity: 'inf' is not a number from 0 to 1"),
    (GOOD + "  toxic m0 type=latency latency=5 for=1s toxicity=1.5\n", r"toxicity: '1.5' is not a number from 0 to 1"),
    (GOOD + "  toxic m0 type=latency latency=-5 for=1s\n", r"toxic latency: -5 is out of range: give 0 to"),
    (GOOD + "  toxic m0 type=latency rate=5 for=1s\n", r"demo.scenario:6: toxic latency: .*missing \['latency'\], "
                                                      r"unknown \['rate'\]"),
    (GOOD + "  pause m0 for=0s\n", r"pause for: '0s' must be longer than 0ms"),
    (GOOD + "  sleep 99999999999999m\n", r"sleep: '99999999999999m' is not a duration"),
    (GOOD + "  sleep 2000m\n", r"sleep: '2000m' is longer than a day: give at most 1440m"),
    (GOOD + "  sleep 1e3s\n", r"'1e3s' is not a duration"),
    (GOOD + "  await stable timeout=0ms\n", r"await timeout: '0ms' must be longer than 0ms"),
    (GOOD.replace("partitions=3", "partitions=0"), r"demo.scenario:2: topic partitions: 0 is out of range: give 1 to 1000"),
    (GOOD.replace("partitions=3", "partitions=99999999999999999999"), r"'99999999999999999999' is not an integer"),
    (GOOD + "  add-partitions orders total=3\n", r"demo.scenario:6: add-partitions orders: total=3 does not grow it"),
    (GOOD + "  add-partitions orders total=5\n  add-partitions orders total=4\n", r"demo.scenario:7: .*has 5 partitions"),
    (GOOD + "  resubscribe all topics=orders,audit\n", r"demo.scenario:6: resubscribe: undeclared topic 'audit'"),
    (GOOD + "  resubscribe all topics=orders,,\n", r"is not a comma-separated list of topics"),
    (GOOD.replace("topic orders", "topic or/ders"), r"demo.scenario:2: topic: 'or/ders' is not a valid name"),
    (GOOD.replace("name demo", "name ../../etc"), r"demo.scenario:1: name: '../../etc' is not a valid name"),
    (GOOD.replace("topic orders partitions=3", "topic orders\ntopic orders"), r"demo.scenario:3: topic orders is declared twice"),
    (GOOD.replace("stagger=100ms", "stagger=1s stagger=2s"), r"demo.scenario:4: start: stagger is given twice"),
    (GOOD + "  kill m٣\n", r"kill: unknown target 'm٣'"),
])
def test_every_value_is_checked(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_scenario(text, Path("demo.scenario"))


def test_values_in_range_parse() -> None:
    sc = parse_scenario(GOOD + "  toxic m0 type=latency latency=0 jitter=5 for=1s toxicity=0.5\n"
                               "  add-partitions orders total=6\n  chaos count=1 gap=0ms\n  sleep 1440m\n",
                        Path("demo.scenario"))
    toxic, grow, chaos, sleep = sc.phases[0].actions[2:]
    assert toxic.args["toxicity"] == 0.5 and grow.args["total"] == 6 and chaos.args["count"] == 1
    assert sleep.target == str(24 * 3600 * 1000)
    assert sc.topics == {"orders": 3}  # the declared count; add-partitions grows it during the run


def test_check_targets_against_the_mix() -> None:
    sc = parse_scenario(GOOD + "  kill m2\n  pause reference for=1s\n", Path("demo.scenario"))
    check_targets(sc, ["reference", "java", "sarama"])
    with pytest.raises(UsageError, match=r"demo.scenario:6: kill m2: the mix has 2 member\(s\), m0 to m1"):
        check_targets(sc, ["reference", "java"])
    with pytest.raises(UsageError, match=r"demo.scenario:7: pause reference: the mix has no reference member"):
        check_targets(sc, ["java", "java", "java"])


def test_scenario_file_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bad.scenario"
    path.write_bytes(b"\xff\xfe" + GOOD.encode("utf-16-le"))
    with pytest.raises(UsageError, match=rf"^scenario file {path} is not UTF-8 text: byte 0xff at offset 0"):
        load_scenario(path)
    bom = tmp_path / "bom.scenario"
    bom.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    assert load_scenario(bom).name == "demo"


def test_loaded_scenario_source_is_absolute(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "mine.scenario").write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    assert load_scenario(Path("mine.scenario")).source == tmp_path / "mine.scenario"
