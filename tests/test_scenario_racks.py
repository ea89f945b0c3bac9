"""Racks in the scenario language (``members racks=``, ``broker rack=``): parsed, checked, and what the
members' harness configs, the broker on both backends and the manifest get from them."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest

from conformance import config
from conformance.cluster.broker import Broker
from conformance.cluster.supervisor import Supervisor
from conformance.errors import UsageError
from conformance.history import now_ms
from conformance.members.harness_config import HarnessConfig
from conformance.members.spec import parse_specs
from conformance.rundir import RunDir
from conformance.scenarios.parse import parse_scenario
from conformance.scenarios.runner import Cell, CellRun

PHASES = "phase go\n  start each\n  await stable timeout=60s\n"
RACKED = "name racked\nmembers racks=a,b\nbroker rack=a\n" + PHASES


def test_racks_parse_and_cycle_over_the_mix() -> None:
    sc = parse_scenario(RACKED, Path("racked.scenario"))
    assert sc.member_racks == ("a", "b") and sc.broker_rack == "a"
    assert [sc.member_rack(i) for i in range(5)] == ["a", "b", "a", "b", "a"]
    plain = parse_scenario("name plain\n" + PHASES)
    assert plain.member_racks == () and plain.broker_rack is None and plain.member_rack(0) is None


@pytest.mark.parametrize("line, message", [
    ("members racks=a,,b", r"racked.scenario:2: members racks: 'a,,b' is not a comma-separated list of rack ids"),
    ("members racks=a/b", r"racked.scenario:2: members racks: 'a/b' is not a rack id"),
    ("broker rack=", r"racked.scenario:2: broker: expected key=value, got 'rack='"),
    ("broker rack=us east", r"racked.scenario:2: broker: expected key=value, got 'east'"),
    ("broker racks=a", r"racked.scenario:2: broker: unknown key 'racks' \(known: migration-policy, rack\)"),
])
def test_a_wrong_rack_is_one_line_naming_file_and_line(line: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_scenario("name racked\n" + line + "\n" + PHASES, Path("racked.scenario"))


def _run(tmp_path: Path, mix: str) -> CellRun:
    cell = Cell(parse_scenario(RACKED, Path("racked.scenario")), tuple(parse_specs(mix)), config.DEFAULT_BROKER, 1)
    run = CellRun(cell, RunDir.create(tmp_path, "racks"))
    run.group_id, run.partitions, run.slots = "g", dict(cell.scenario.topics), []
    run.start_protocols, run.protocol_changes, run.phases = {}, [], []
    run.nemesis = run.observer = None
    run.start_ts, run.end_ts = now_ms(), None
    run._make_slots(lambda name: "127.0.0.1:1")
    return run


def test_each_member_gets_its_rack_in_its_harness_config_and_the_manifest(tmp_path: Path) -> None:
    # Three members over racks a,b: m0 a, m1 b, m2 a again; the config file a harness reads says so.
    run = _run(tmp_path, "java,java,reference")
    assert [s.config.rack_id for s in run.slots] == ["a", "b", "a"]
    written = HarnessConfig.load(run.slots[1].config.write(tmp_path / "m1.json"))
    assert json.loads(written.to_json())["rack_id"] == "b"
    manifest = run._manifest(complete=False)
    assert [m["rack_id"] for m in manifest["members"]] == ["a", "b", "a"] and manifest["broker_rack"] == "a"


def test_the_broker_gets_its_rack_on_both_backends(tmp_path: Path) -> None:
    from conformance.containers.cluster import DockerCluster

    broker = Broker(config.DEFAULT_BROKER, tmp_path, Supervisor(tmp_path / "logs"), [1111], rack="a")
    broker._configure()
    assert "broker.rack=a" in broker.config_path.read_text(encoding="utf-8").splitlines()
    bare = Broker(config.DEFAULT_BROKER, tmp_path / "bare", Supervisor(tmp_path / "logs2"), [1111])
    bare._configure()
    assert not any(line.startswith("broker.rack=") for line in bare.config_path.read_text(encoding="utf-8").splitlines())
    run = RunDir.create(tmp_path, "docker-rack")
    cluster = DockerCluster(run, config.DEFAULT_BROKER, Supervisor(run.logs), 1, {}, client=object(), broker_rack="a")
    cluster.network.subnet = ipaddress.IPv4Network("10.231.0.0/24")
    cluster.tap_ports = [30001]
    assert cluster._broker_properties("10.231.0.1")["broker.rack"] == "a"
