"""KIP-848 scenarios without a cluster: the migration-policy header and the start protocol, the
``bounce-protocol`` verb and which members it moves, the plumbing of the policy to both backends'
broker settings and to the manifest, and the live observer's reading of ConsumerGroupHeartbeat."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest

from conformance import config
from conformance.cluster.broker import MIGRATION_POLICIES, Broker
from conformance.cluster.supervisor import Supervisor
from conformance.errors import UsageError
from conformance.history import now_ms
from conformance.members.mixing import protocol_moves
from conformance.members.spec import parse_specs
from conformance.nemesis.faults import FAULTS
from conformance.rundir import RunDir
from conformance.scenarios.catalog import get_scenario
from conformance.scenarios.observe import GroupObserver
from conformance.scenarios.parse import parse_scenario
from conformance.scenarios.runner import Cell, CellRun

HEAD = "name demo\n"
START = "phase one\n  start each\n"


def test_the_four_kip848_scenarios_parse_with_their_protocol_settings() -> None:
    migrate, downgrade = get_scenario("migrate-to-consumer"), get_scenario("downgrade-to-classic")
    steady, static = get_scenario("mixed-steady"), get_scenario("static-cross-protocol")
    assert (migrate.start_protocol, migrate.migration_policy) == ("classic", "bidirectional")
    assert downgrade.start_protocol == "spec" and steady.start_protocol == "spec"
    assert static.static_members and static.start_protocol == "classic"
    verbs = [[a.verb for p in sc.phases for a in p.actions] for sc in (migrate, downgrade, static)]
    assert verbs[0].count("bounce-protocol") == 1 and verbs[1].count("bounce-protocol") == 1
    assert [a.args["to"] for p in static.phases for a in p.actions if a.verb == "bounce-protocol"] == [
        "consumer", "classic"]
    assert {"restart", "pause", "cut", "toxic"} <= {a.verb for p in steady.phases for a in p.actions}


def test_the_refused_upgrade_scenarios_start_classic_under_their_policies() -> None:
    refused, custom = get_scenario("refused-migration"), get_scenario("custom-assignor-upgrade")
    assert (refused.start_protocol, refused.migration_policy) == ("classic", "disabled")
    assert (custom.start_protocol, custom.migration_policy) == ("classic", "bidirectional")
    assert custom.start_strategies == ("sticky",)
    for sc in (refused, custom):
        assert [a.args["to"] for p in sc.phases for a in p.actions if a.verb == "bounce-protocol"] == ["consumer"]


def test_a_scenario_without_the_headers_runs_bidirectional_on_the_specs_protocols() -> None:
    sc = parse_scenario(HEAD + START)
    assert (sc.migration_policy, sc.start_protocol) == ("bidirectional", "spec")


@pytest.mark.parametrize("policy", MIGRATION_POLICIES)
def test_every_migration_policy_is_accepted(policy: str) -> None:
    assert parse_scenario(HEAD + f"broker migration-policy={policy}\n" + START).migration_policy == policy


@pytest.mark.parametrize("line, message", [
    ("broker migration-policy=sideways",
     "demo.scenario:2: broker migration-policy: 'sideways' is not one of bidirectional, upgrade, downgrade, disabled"),
    ("broker policy=upgrade", "demo.scenario:2: broker: unknown key 'policy' (known: migration-policy, rack)"),
    ("members start-protocol=consumer", "demo.scenario:2: members start-protocol: 'consumer' is not one of spec, classic"),
])
def test_a_bad_header_is_one_line_naming_file_line_and_values(line: str, message: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_scenario(HEAD + line + "\n" + START, Path("demo.scenario"))
    assert str(err.value) == message


def test_a_header_after_a_phase_is_refused() -> None:
    with pytest.raises(UsageError, match=r"demo.scenario:4: 'broker' is a header statement"):
        parse_scenario(HEAD + START + "broker migration-policy=upgrade\n", Path("demo.scenario"))


@pytest.mark.parametrize("line, message", [
    ("bounce-protocol to=kip848", "bounce-protocol to: 'kip848' is not one of consumer, classic"),
    ("bounce-protocol", "bounce-protocol: missing to"),
    ("bounce-protocol m1 to=consumer", "bounce-protocol: expected key=value, got 'm1'"),
])
def test_bounce_protocol_arguments_are_checked(line: str, message: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_scenario(HEAD + START + f"  {line}\n", Path("demo.scenario"))
    assert str(err.value) == f"demo.scenario:4: {message}"


def test_bounce_protocol_is_a_row_of_the_table_of_faults() -> None:
    row = FAULTS["bounce-protocol"]
    assert row.target == "none" and row.required == ("to",) and not row.looks_dead
    assert set(row.backends) == {"processes", "docker"}


def test_a_protocol_bounce_moves_the_consumer_specs_up_and_every_consumer_member_down() -> None:
    # The group, all started classic: only the +consumer specs go to consumer (the spec
    # says where a member ends); going back, everyone on consumer moves, nobody else.
    specs = parse_specs("reference,java+consumer,librdkafka+consumer,sarama,kafka-python")
    classic = ["classic"] * 5
    assert protocol_moves(specs, classic, "consumer") == [1, 2]
    after = ["classic", "consumer", "consumer", "classic", "classic"]
    assert protocol_moves(specs, after, "consumer") == []
    assert protocol_moves(specs, after, "classic") == [1, 2]
    assert protocol_moves(specs, classic, "classic") == []
    with pytest.raises(ValueError, match="expected consumer or classic"):
        protocol_moves(specs, classic, "eager")


def test_the_broker_writes_the_scenarios_migration_policy(tmp_path: Path) -> None:
    # Processes backend: the Broker of a run carries the policy into server.properties.
    broker = Broker(config.DEFAULT_BROKER, tmp_path, Supervisor(tmp_path / "logs"), [1111], migration_policy="upgrade")
    broker._configure()
    lines = broker.config_path.read_text(encoding="utf-8").splitlines()
    assert "group.consumer.migration.policy=upgrade" in lines
    with pytest.raises(ValueError, match="'sideways' is not one of"):
        Broker(config.DEFAULT_BROKER, tmp_path, Supervisor(tmp_path / "logs"), [], migration_policy="sideways")


def test_the_broker_container_gets_the_scenarios_migration_policy(tmp_path: Path) -> None:
    # Docker backend: the policy is one of the $KAFKA_PROPERTIES lines that override the image's default.
    from conformance.containers.cluster import DockerCluster

    run = RunDir.create(tmp_path, "docker-policy")
    cluster = DockerCluster(run, config.DEFAULT_BROKER, Supervisor(run.logs), 2, {}, client=object(),
                            migration_policy="downgrade")
    cluster.network.subnet = ipaddress.IPv4Network("10.231.0.0/24")
    cluster.tap_ports = [30001, 30002]
    props = cluster._broker_properties("10.231.0.1")
    assert props["group.consumer.migration.policy"] == "downgrade"
    assert "SLOT1://10.231.0.1:30002" in props["advertised.listeners"]


def test_the_runner_starts_members_on_the_scenarios_protocol_and_records_it(tmp_path: Path) -> None:
    # migrate-to-consumer starts the +consumer spec classic; its manifest says so, with the policy.
    scenario = get_scenario("migrate-to-consumer")
    cell = Cell(scenario, tuple(parse_specs("java+consumer,sarama")), config.DEFAULT_BROKER, 1)
    run = CellRun(cell, RunDir.create(tmp_path, "manifest"))
    run.group_id, run.partitions, run.slots = "g", dict(scenario.topics), []
    run.start_protocols, run.protocol_changes, run.phases = {}, [], []
    run.nemesis = run.observer = None
    run.start_ts, run.end_ts = now_ms(), None
    run._make_slots(lambda name: "127.0.0.1:1")
    assert [s.config.group_protocol for s in run.slots] == ["classic", "classic"]
    manifest = run._manifest(complete=False)
    assert manifest["migration_policy"] == "bidirectional" and manifest["protocol_changes"] == []
    assert [m["group_protocol"] for m in manifest["members"]] == ["classic", "classic"]
    steady = Cell(get_scenario("mixed-steady"), cell.specs, config.DEFAULT_BROKER, 1)
    assert CellRun(steady, run.run_dir)._start_protocol(cell.specs[0]) == "consumer"


# -- the observer --------------------------------------------------------------------------------

def _cgh(ts: float, direction: str, epoch: int, assigned: list | None = None, error: int | None = 0) -> dict:
    rec = {"ts": ts, "member": "m0-java", "api": "ConsumerGroupHeartbeat", "direction": direction,
           "member_epoch": epoch, "connection": 1, "correlation_id": int(ts)}
    if direction == "response":
        rec.update(error_code=error, assigned=assigned)
    return rec


def _observer(tmp_path: Path, wire: list[dict]) -> GroupObserver:
    members = tmp_path / "members"
    members.mkdir()
    long_ago = now_ms() - 20_000
    history = [{"ts": long_ago, "member": "m0-java", "event": "started"},
               {"ts": long_ago + 1, "member": "m0-java", "event": "assigned", "protocol": "consumer",
                "partitions": [["orders", 0], ["orders", 1]]}]
    (members / "m0-java.jsonl").write_text("".join(json.dumps(e) + "\n" for e in history), encoding="utf-8")
    (tmp_path / "wire.jsonl").write_text("".join(json.dumps(r) + "\n" for r in wire), encoding="utf-8")
    return GroupObserver(members, tmp_path / "wire.jsonl", None, quiet_ms=config.QUIET_MS)


ASSIGNED = [{"topic_id": "t-id", "partitions": [0, 1]}]


def test_steady_heartbeats_of_a_consumer_member_are_not_movement(tmp_path: Path) -> None:
    # The member joined and got its assignment 15 s ago; since then only light heartbeats with
    # no assignment and the same epoch, the last a moment ago: the group is stable.
    t = now_ms() - 15_000
    wire = [_cgh(t, "request", 0), _cgh(t + 10, "response", 2, ASSIGNED)]
    wire += [r for i in range(1, 15) for r in (_cgh(t + i * 1000, "request", 2), _cgh(t + i * 1000 + 5, "response", 2))]
    assert _observer(tmp_path, wire).stable({"m0-java": {"orders"}}, {"orders": 2}) == (True, "stable")


def test_a_full_heartbeat_answered_with_the_same_assignment_is_not_movement(tmp_path: Path) -> None:
    # After a reconnect the member sends a full heartbeat and gets its whole, unchanged assignment.
    t = now_ms() - 15_000
    wire = [_cgh(t, "request", 0), _cgh(t + 10, "response", 2, ASSIGNED),
            _cgh(now_ms() - 100, "request", 2), _cgh(now_ms() - 90, "response", 2, ASSIGNED)]
    assert _observer(tmp_path, wire).stable({"m0-java": {"orders"}}, {"orders": 2})[0]


@pytest.mark.parametrize("late", [
    [_cgh(0, "response", 3, [{"topic_id": "t-id", "partitions": [0]}])],   # the broker takes partition 1 away
    [_cgh(0, "response", 3)],                                             # a new epoch (a new target)
    [_cgh(0, "response", 2, None, error=110)],                            # FENCED_MEMBER_EPOCH
    [_cgh(0, "request", -1)],                                             # the member leaves
    [_cgh(0, "request", 0)],                                              # a member joins
], ids=["assignment-changed", "epoch-bumped", "fenced", "leave", "join"])
def test_an_assignment_change_epoch_error_join_or_leave_is_movement(tmp_path: Path, late: list[dict]) -> None:
    # Stable for 15 s, then one heartbeat that moves the group a moment ago: not stable yet.
    t = now_ms() - 15_000
    wire = [_cgh(t, "request", 0), _cgh(t + 10, "response", 2, ASSIGNED)]
    wire += [dict(r, ts=now_ms() - 200) for r in late]
    ok, why = _observer(tmp_path, wire).stable({"m0-java": {"orders"}}, {"orders": 2})
    assert not ok and why.startswith("still moving"), why


def test_a_launched_member_that_has_not_joined_keeps_the_group_unsettled(tmp_path: Path) -> None:
    # m0 owns every partition and is quiet; m1 was launched and has started (its history says so)
    # but has sent no join yet: the group is not stable until m1's SyncGroup is answered.
    observer = _observer(tmp_path, [])
    launch = now_ms() - 10_000
    observer.launched("m1-sarama", launch)
    (tmp_path / "members" / "m1-sarama.jsonl").write_text(
        json.dumps({"ts": launch + 500, "member": "m1-sarama", "event": "started"}) + "\n", encoding="utf-8")
    live = {"m0-java": {"orders"}, "m1-sarama": {"orders"}}
    assert observer.stable(live, {"orders": 2}) == (False, "m1-sarama has not joined the group since it was started")
    with open(tmp_path / "wire.jsonl", "a", encoding="utf-8") as wire:
        wire.write(json.dumps({"ts": launch + 2000, "member": "m1-sarama", "api": "SyncGroup", "direction": "response",
                               "error_code": 0, "connection": 1, "correlation_id": 3}) + "\n")
    assert observer.stable(live, {"orders": 2}) == (True, "stable")


def test_the_mix_reason_names_the_consumer_members_and_their_lists_stay_shared() -> None:
    # Consumer members keep a classic list that shares an assignor with the classic members, for
    # a bounce to classic; the reason says the broker assigns for them. A classic mix says nothing.
    from conformance.members.mixing import plan_mix

    specs = parse_specs("reference,java+consumer,sarama")
    plan = plan_mix(specs)
    assert set.intersection(*map(set, plan.strategies)) == {"cooperative-sticky"}
    assert plan.reason.endswith(f"; {specs[1]} speaks the consumer protocol: the broker assigns for it, "
                                "and its list serves a bounce to classic"), plan.reason
    assert "consumer" not in plan_mix(parse_specs("reference,sarama")).reason
