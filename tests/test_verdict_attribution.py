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
- franz-go, as leader, moves partitions kafka-python declared without a generation (L4: culprit
  franz-go, harmed kafka-python): only franz-go x kafka-python is marked, every other pair passes,
  and the per-member table says the same.
- java takes a committed offset back beside sarama@1.38.1: java is the culprit, so sarama's known
  issue does not excuse it.
"""

from __future__ import annotations

from pathlib import Path

from conformance.members.known_issues import issues_of, match, version_key
from conformance.pipeline.matrix import build_matrix, pair_result
from conformance.pipeline.verdicts import assemble
from conformance.run.matrix import MatrixResult

SPECS = {"m0-reference": "reference@0.1.0", "m1-java": "java@4.4.0", "m2-librdkafka": "librdkafka@2.16.1"}


def _finding(run, inv, message, members=(), culprit=None, ts=1000.0, harmed=(), evidence=None):
    return {"run": run, "invariant": inv, "message": message,
            "members": sorted({*members, *harmed, *([culprit] if culprit else [])}), "culprit": culprit,
            "harmed": sorted(harmed), "generation": None, "partitions": [], "ts": ts,
            "evidence": evidence or {"x": 1}, "allowed_by": None}


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
    d2 = {"D2": [_finding("c", "D2", "committed offset of t-0 went back from 80 to 60", culprit="m0-sarama",
                          harmed=["m0-sarama"], evidence={"same_member": True})]}
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
    stray_sync = {"sync_generation": -1, "leader_id": "m1"}
    assert match("L1", "librdkafka@2.0.2", stray_sync).reference == "confluentinc/librdkafka issue 4059"
    # Only through the culprit, only on the bug's own evidence.
    assert match("L1", "java@4.4.0", stray_sync) is None
    assert match("L1", "librdkafka@2.0.2", {"leader_id": "m1"}) is None
    assert match("L1", None, stray_sync) is None
    assert match("R2", "librdkafka@1.9.2", {}) is None


def test_every_known_issue_row_has_evidence():
    # A row with empty evidence would excuse any finding of its invariant by an affected version.
    from conformance.members.known_issues import table

    assert [(i.kind, i.invariant, i.fixed) for i in table() if not i.evidence] == []


def test_a_known_issue_matches_through_its_culprit_only():
    # java takes t-0's committed offset back after sarama@1.38.1 committed it: sarama's out-of-order
    # commits (PR 2947) do not explain java's act, so the cell fails, on java x sarama.
    old = {"m0-sarama": "sarama@1.38.1", "m1-java": "java@4.4.0"}
    [v] = _verdicts({"D2": [_finding("c", "D2", "committed offset of t-0 went back from 80 (m0-sarama) to 60 "
                                     "(m1-java)", culprit="m1-java", harmed=["m0-sarama"],
                                     evidence={"same_member": False})]}, old)
    assert v["verdict"] == "fail" and not v["invariants"]["D2"]["violations"][0].get("known_issue")
    assert pair_result(v, "java@4.4.0", "sarama@1.38.1") == "fail"


FRANZ = {"m0-reference": "reference@0.1.0", "m1-java": "java@4.4.0", "m2-kafka-python": "kafka-python@3.0.12",
         "m3-franz-go": "franz-go@1.22.3"}


def test_a_culprit_fails_only_its_pairs_with_the_harmed():
    # franz-go led generation 7 and moved t-1 and t-4 away from kafka-python, which had declared them
    # owned without a generation (the known issue); the reference and java lost nothing.
    l4 = _finding("c", "L4", "generation 6 -> 8 moved 2 partitions away from members that stayed, 0 would do",
                  culprit="m3-franz-go", harmed=["m2-kafka-python"],
                  evidence={"taken_by": "franz-go", "declared_without_generation": True})
    [v] = _verdicts({"L4": [l4]}, FRANZ)
    assert v["verdict"] == "known-issue"
    m = build_matrix([v])
    marked = {(e["a"], e["b"]): (e["status"], e["severity"]) for e in m["entries"] if e["status"] != "pass"}
    assert marked == {("franz-go@1.22.3", "kafka-python@3.0.12"): ("known-issue", "efficiency")}
    assert [(g["a"], g["b"]) for g in m["grid"] if g["status"] != "pass"] == [("franz-go@1.22.3", "kafka-python@3.0.12")]
    [issue] = m["known_issues"]
    assert issue["specs"] == ["franz-go@1.22.3"] and issue["severity"] == "efficiency" and issue["cells"] == ["c"]
    assert_grid_agrees_with_kinds(m)
    # The same plan over claims with a generation is no known issue: a failure of the same single
    # pair; the per-member table agrees.
    [bad] = _verdicts({"L4": [dict(l4, evidence={"taken_by": "franz-go", "declared_without_generation": False})]},
                      FRANZ)
    assert bad["verdict"] == "fail"
    m = build_matrix([bad])
    assert [(e["a"], e["b"]) for e in m["entries"] if e["status"] == "fail"] == [("franz-go@1.22.3", "kafka-python@3.0.12")]
    kinds = m["kinds"]
    assert kinds["franz-go@1.22.3"]["culprit"] == {"L4": 1} and kinds["kafka-python@3.0.12"]["harmed"] == {"L4": 1}
    assert {s for s, k in kinds.items() if k["failed_cells"]} == {"franz-go@1.22.3", "kafka-python@3.0.12"}
    assert_grid_agrees_with_kinds(m)


def assert_grid_agrees_with_kinds(m: dict) -> None:
    """The per-member table and the first grid say the same of every spec: a failing (or flaky)
    entry exactly for the specs with failed cells, a known-issue one for those with known-issue cells."""
    for spec, k in m["kinds"].items():
        mine = {g["status"] for g in m["grid"] if spec in (g["a"], g["b"])}
        assert bool(k["failed_cells"]) == bool(mine & {"fail", "flaky"}), (spec, k, mine)
        if not k["failed_cells"]:
            assert bool(k["known_issue_cells"]) == ("known-issue" in mine), (spec, k, mine)


def test_every_invariant_has_one_severity_class():
    # Declared once beside the catalog; a new invariant without a class is refused here.
    from conformance.pipeline.checks import CATALOG, SEVERITIES, SEVERITY, worst_severity

    assert set(SEVERITY) == set(CATALOG) and set(SEVERITY.values()) <= set(SEVERITIES)
    assert (SEVERITY["R2"], SEVERITY["V1"], SEVERITY["E5"], SEVERITY["L4"]) == ("safety", "liveness", "protocol",
                                                                                "efficiency")
    assert worst_severity(["L4", "E5", "P1"]) == "liveness" and worst_severity([]) is None


def test_the_cli_says_a_known_issue_cell_exits_0():
    import conformance.cli

    zero = conformance.cli.__doc__.split("- 0:")[1].split("- 1:")[0]
    assert "known-issue" in zero and "exits 0" in zero


def test_every_client_bug_page_says_whether_it_is_filed():
    # The report shows it beside each known issue: a page ready to file says "Filed: no ..." until it is.
    from conformance import config
    from conformance.report.issues import filed, page_of, upstream_url

    pages = sorted((config.REPO_ROOT / "docs" / "client-bugs").glob("*.md"))
    assert pages
    for page in pages:
        assert filed(f"docs/client-bugs/{page.name} (source)").startswith(("no", "yes")), page
    assert page_of("docs/client-bugs/a-b.md (x)") == "docs/client-bugs/a-b.md" and page_of("IBM/sarama PR 2947") is None
    assert upstream_url("IBM/sarama PR 2947") == "https://github.com/IBM/sarama/pull/2947"
    assert upstream_url("confluentinc/librdkafka issue 4059") == "https://github.com/confluentinc/librdkafka/issues/4059"
    assert filed("IBM/sarama PR 2947").startswith("yes")
