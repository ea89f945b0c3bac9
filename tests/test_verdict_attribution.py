"""Attribution and known issues, from verdicts to the matrix (pure Python: no Spark).

Stories:
- The reference skips a revoke and overlaps java on t-2 (R2 names both); librdkafka did
  nothing wrong. The cell fails, java x reference fails, java x librdkafka and
  librdkafka x reference pass: a pair is failed only by a finding that implicates both.
- librdkafka alone re-reads records (D3 names it, the culprit): every pair with
  librdkafka fails, java x reference passes.
- A D1 violation whose evidence names no member implicates the whole group.
- sarama@1.38.1 commits out of order (D2, IBM/sarama PR 2947): a known issue. The cell's
  verdict is known-issue, not fail; the same D2 by sarama@1.61.1 is a new failure.
"""

from __future__ import annotations

from pathlib import Path

from conformance.members.known_issues import issues_of, match, version_key
from conformance.pipeline.matrix import build_matrix, pair_result
from conformance.pipeline.verdicts import assemble
from conformance.scenarios.matrix import MatrixResult

SPECS = {"m0-reference": "reference@0.1.0", "m1-java": "java@4.4.0", "m2-librdkafka": "librdkafka@2.16.1"}


def _finding(run, inv, message, members=(), culprit=None, ts=1000.0):
    return {"run": run, "invariant": inv, "message": message, "members": sorted(members), "culprit": culprit,
            "generation": None, "partitions": [], "ts": ts, "evidence": {"x": 1}, "allowed_by": None}


def _verdicts(results, specs):
    cells = {"c": {"scenario": "rolling-restart", "broker_version": "4.4.0", "seed": 1, "cut_short": None}}
    return assemble(cells, {"c": sorted(specs.values())}, results, {}, [], member_specs={"c": specs})


def test_a_pair_fails_only_by_a_finding_that_implicates_both():
    [v] = _verdicts({"R2": [_finding("c", "R2", "m0-reference and m1-java both owned t-2",
                                     members=["m0-reference", "m1-java"])]}, SPECS)
    assert v["verdict"] == "fail"
    assert pair_result(v, "java@4.4.0", "reference@0.1.0") == "fail"
    assert pair_result(v, "java@4.4.0", "librdkafka@2.16.1") == "pass"
    assert pair_result(v, "librdkafka@2.16.1", "reference@0.1.0") == "pass"
    kinds = build_matrix([v])["kinds"]
    assert kinds["reference@0.1.0"]["implicated"] == {"R2": 1} and kinds["librdkafka@2.16.1"]["implicated"] == {}


def test_a_culprit_fails_every_pair_it_is_in():
    [v] = _verdicts({"D3": [_finding("c", "D3", "m2-librdkafka consumed 10 record(s) of t-1 again",
                                     members=["m2-librdkafka"], culprit="m2-librdkafka")]}, SPECS)
    assert pair_result(v, "java@4.4.0", "librdkafka@2.16.1") == "fail"
    assert pair_result(v, "librdkafka@2.16.1", "reference@0.1.0") == "fail"
    assert pair_result(v, "java@4.4.0", "reference@0.1.0") == "pass"


def test_an_unattributed_finding_implicates_everyone():
    [v] = _verdicts({"D1": [_finding("c", "D1", "10 acknowledged record(s) of t-3 never consumed")]}, SPECS)
    assert {pair_result(v, a, b) for a, b in [("java@4.4.0", "librdkafka@2.16.1"),
                                               ("java@4.4.0", "reference@0.1.0")]} == {"fail"}


def test_the_culprit_is_read_first():
    [v] = _verdicts({"D1": [_finding("c", "D1", "records lost", ts=500.0)],
                     "E5": [_finding("c", "E5", "m0-reference declared t-2 owned: a stale claim",
                                     members=["m0-reference"], culprit="m0-reference", ts=900.0)]}, SPECS)
    assert v["root_cause"]["invariant"] == "E5" and v["root_cause"]["culprit"] == "m0-reference"
    assert build_matrix([v])["kinds"]["reference@0.1.0"]["culprit"] == {"E5": 1}


def test_a_known_issue_is_neither_a_pass_nor_a_new_failure():
    old = {"m0-sarama": "sarama@1.38.1", "m1-java": "java@4.4.0"}
    d2 = {"D2": [_finding("c", "D2", "committed offset of t-0 went back from 80 to 60", members=["m0-sarama"])]}
    [v] = _verdicts(d2, old)
    assert v["verdict"] == "known-issue" and v["invariants"]["D2"]["status"] == "known-issue"
    assert v["invariants"]["D2"]["violations"][0]["known_issue"]["reference"] == "IBM/sarama PR 2947"
    assert pair_result(v, "java@4.4.0", "sarama@1.38.1") == "known-issue"
    assert MatrixResult(Path("."), verdicts=[v]).exit_code == 0
    assert build_matrix([v])["entries"][0]["status"] == "known-issue"
    # The same finding on a fixed release is a new failure; so is any other finding beside a known one.
    [fixed] = _verdicts(d2, {"m0-sarama": "sarama@1.61.1", "m1-java": "java@4.4.0"})
    assert fixed["verdict"] == "fail"
    [both] = _verdicts({**d2, "R2": [_finding("c", "R2", "overlap", members=["m0-sarama", "m1-java"])]}, old)
    assert both["verdict"] == "fail" and MatrixResult(Path("."), verdicts=[both]).exit_code == 1


def test_known_issue_table_ranges():
    assert version_key("2.10.0") > version_key("2.9.9")
    assert [i.invariant for i in issues_of("librdkafka", "1.9.2")] == ["D1", "L1"]
    assert [i.invariant for i in issues_of("librdkafka", "2.1.0")] == ["L1"]
    assert issues_of("librdkafka", "2.16.1") == []
    assert match("L1", ["java@4.4.0", "librdkafka@2.0.2"]).reference == "confluentinc/librdkafka issue 4059"
    assert match("R2", ["librdkafka@1.9.2"]) is None
