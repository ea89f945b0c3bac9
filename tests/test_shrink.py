"""Shrinking (conformance/shrink.py): a cell's executed schedule read back from its nemesis log as an
explicit scenario, and the smaller candidates. The replaying command on real cells:
tests/test_hunt_e2e.py (nightly)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.scenarios.parse import parse_scenario
from conformance.shrink import fewer_faults, fewer_members, fewer_partitions, schedule_of, shorter_gaps

SCENARIO = """name storm
describe a test scenario
topic orders partitions=8
producer rate=50
phase go
  start each stagger=300ms
  chaos count=3
"""
T0 = 1_000_000.0


def _run(tmp_path: Path, lines: list[tuple[float, str, str, str, dict]], end: float = 60_000) -> Path:
    # A cell that ran chaos: its nemesis log is the truth of what happened, whatever the scenario said.
    d = tmp_path / "cell"
    d.mkdir()
    members = [{"name": f"m{i}-{k}", "spec": s} for i, (k, s) in
               enumerate([("reference", "reference@0.1.0"), ("java", "java@4.4.0"), ("sarama", "sarama@1.61.1")])]
    (d / "manifest.json").write_text(json.dumps({"scenario": "storm", "members": members, "end_ts": T0 + end,
                                                 "phases": [{"name": "go", "start_ts": T0, "end_ts": T0 + end}]}))
    (d / "nemesis.jsonl").write_text("".join(
        json.dumps({"ts": T0 + ts, "fault": f, "target": target, "phase": phase, "details": det}) + "\n"
        for ts, f, target, phase, det in lines))
    return d


LOG = [
    (0, "start", "m0-reference", "invoke", {}), (300, "start", "m1-java", "invoke", {}),
    (600, "start", "m2-sarama", "invoke", {}),
    (10_000, "pause", "m1-java", "invoke", {}), (22_000, "resume", "m1-java", "heal", {}),
    (27_000, "kill", "m2-sarama", "invoke", {}), (28_000, "start", "m2-sarama", "invoke", {}),
    (35_000, "toxic-add", "m0-reference", "invoke",
     {"type": "latency", "stream": "downstream", "attributes": {"latency": 300}, "toxic": "t1"}),
    (43_000, "toxic-remove", "m0-reference", "heal", {"toxic": "t1"}),
    (50_000, "broker-restart", "broker", "invoke", {}), (52_000, "broker-restart", "broker", "heal", {}),
    (61_000, "terminate", "m0-reference", "invoke", {}),   # teardown, after the scenario's end
]


def test_the_executed_schedule_is_an_explicit_scenario(tmp_path: Path) -> None:
    s = schedule_of(_run(tmp_path, LOG), SCENARIO)
    text = s.render()
    assert [line.strip() for line in text.splitlines()[5:]] == [
        "start m0", "start m1", "start m2",
        "sleep 9400ms", "pause m1 for=12000ms",
        "sleep 5000ms", "kill m2", "sleep 1000ms", "start m2",
        "sleep 7000ms", "toxic m0 type=latency stream=downstream latency=300 for=8000ms",
        "sleep 7000ms", "broker-restart mode=clean",
        "phase settle", "await stable timeout=90s", "await drained timeout=90s"]
    assert text.startswith("name storm-shrunk\ndescribe a test scenario\ntopic orders partitions=8\n")
    parsed = parse_scenario(text)   # the scenario language takes it as written
    assert parsed.name == "storm-shrunk" and parsed.fault_count() == 4 and s.faults == 4


def test_a_fault_and_the_start_that_brings_its_member_back_go_together(tmp_path: Path) -> None:
    s = schedule_of(_run(tmp_path, LOG), SCENARIO)
    kill_unit = next(x.unit for x in s.steps if x.verb == "kill")
    assert [x.line() for x in s.steps if x.unit == kill_unit] == ["kill m2", "start m2"]
    # ddmin's complements: halves, then one unit at a time; never all of them, never none.
    candidates = list(fewer_faults(s))
    assert [c.faults for c in candidates] == [2, 2, 3, 3, 3, 3]
    assert not any("start m2" in c.render() and "kill m2" not in c.render()
                   and c.render().count("start m2") > 1 for c in candidates)


def test_dropping_a_member_renumbers_the_others_and_never_drops_a_kept_one(tmp_path: Path) -> None:
    s = schedule_of(_run(tmp_path, LOG), SCENARIO)
    fewer = list(fewer_members(s, keep={0, 2}))
    assert len(fewer) == 1
    (only,) = fewer
    assert only.specs == ("reference@0.1.0", "sarama@1.61.1") and only.origin == (0, 2)
    assert "pause" not in only.render() and "kill m1" in only.render()   # m2 is m1 now
    assert list(fewer_members(only, keep=set())) == []   # never below two members


def test_sleeps_halve_down_to_a_floor_and_partitions_halve_down_to_one(tmp_path: Path) -> None:
    s = schedule_of(_run(tmp_path, LOG), SCENARIO)
    (shorter,) = shorter_gaps(s)
    assert [x.gap_ms for x in shorter.steps if x.gap_ms] == [4700, 2500, 500, 3500, 3500]
    (halved,) = fewer_partitions(s, {"orders": 8})
    assert "topic orders partitions=4" in halved.render()
    assert list(fewer_partitions(s, {"orders": 1})) == []


@pytest.mark.parametrize("argv,says", [
    (["/nonexistent/cell"], "no manifest.json"),
    (["CELL", "--tries", "1"], "--tries 1: give at least 2"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys, argv, says) -> None:
    cell = _run(tmp_path, LOG)
    argv = [str(cell) if a == "CELL" else a for a in argv]
    assert main(["shrink", *argv, "--runs-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "r").exists()


def test_a_draft_quotes_the_wire_lines_and_the_error_lines_it_names(tmp_path: Path) -> None:
    # The finding names wire line 2; the culprit's history has one error event and its log one
    # error line among others: each is quoted with its file and line, nothing paraphrased.
    from conformance.report.bug_draft import draft
    from conformance.signatures import tally

    run = tmp_path / "cell"
    (run / "members").mkdir(parents=True)
    (run / "logs").mkdir()
    (run / "manifest.json").write_text(json.dumps({"broker_version": "4.4.0", "start_ts": 1000.0, "members": [
        {"name": "m0-sarama", "spec": "sarama@1.30.0", "library_version": "1.30.0"},
        {"name": "m1-java", "spec": "java@2.4.1", "library_version": "2.4.1"}]}))
    (run / "wire.jsonl").write_text('{"api":"JoinGroup"}\n{"api":"SyncGroup","generation":3}\n')
    (run / "members" / "m0-sarama.jsonl").write_text(
        '{"event":"started"}\n{"event": "error", "error": "kafka: insufficient data to decode packet"}\n')
    (run / "logs" / "m0-sarama.log").write_text("joining\npanic: runtime error\nok\n")
    finding = {"culprit": "m0-sarama", "harmed": ["m1-java"], "members": ["m0-sarama"],
               "message": "m0-sarama led generation 3 and sent no SyncGroup: ...",
               "evidence": {"join_wire_line": 2, "leader_errors": ["insufficient data"]}}
    verdict = {"member_specs": {"m0-sarama": "sarama@1.30.0", "m1-java": "java@2.4.1"}, "broker_version": "4.4.0",
               "invariants": {"L1": {"status": "fail", "violations": [finding]}}}
    target = tally([verdict])[0].signature
    page = draft(verdict, run, target, "conformance run --scenario x", "2 of 3")
    assert page.startswith("# sarama: culprit led generation N and sent no SyncGroup (draft)")
    assert "- m0-sarama: `sarama@1.30.0` (library 1.30.0)" in page and "Apache Kafka 4.4.0" in page
    assert 'wire.jsonl:2  {"api":"SyncGroup","generation":3}' in page
    assert "members/m0-sarama.jsonl:2" in page and "logs/m0-sarama.log:2  panic: runtime error" in page
    assert "logs/m0-sarama.log:1" not in page and "m1-java:\n\n```\n(none)\n```" in page


def test_a_shrink_keeps_the_culprit_and_those_its_first_finding_harmed() -> None:
    # One signature, two findings: the leader gave away partitions to m1 in one round and to m2 in
    # another. The failure kept is the first; m2 may go.
    from conformance.run.shrink import target_of

    def r1(to: str) -> dict:
        return {"culprit": "m0-reference", "harmed": [to], "members": ["m0-reference", to], "evidence": {},
                "message": f"leader m0-reference of cooperative generation 2 gave orders-1 to {to} although "
                           "m0-reference validly declared them owned (declared generation 1)"}

    verdict = {"run_dir": "cell", "member_specs": {"m0-reference": "reference@0.1.0", "m1-java": "java@4.4.0",
                                                   "m2-sarama": "sarama@1.61.1"},
               "invariants": {"R1": {"status": "fail", "violations": [r1("m1-java"), r1("m2-sarama")]}}}
    target, names = target_of(verdict, "R1")
    assert target.invariant == "R1" and names == {"m0-reference", "m1-java"}
    with pytest.raises(Exception, match="no failing finding of L1"):
        target_of(verdict, "L1")
