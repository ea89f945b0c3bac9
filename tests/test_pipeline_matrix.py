"""The compatibility matrix from verdicts (pure Python: no Spark needed)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from conformance.pipeline.matrix import build_matrix, pairs
from conformance.report import html, markdown
from conformance.report import junit as jreport
from conformance.run.matrix import MatrixResult, summary_table


def _cell(run, members, verdict, start, matrix_run, scenario="rolling-restart", broker="4.4.0"):
    return {"run": run, "scenario": scenario, "broker_version": broker, "members": members, "seed": 1,
            "verdict": verdict, "invariants": {"R2": {"status": "pass" if verdict == "pass" else "fail",
                                                      "violations": [], "error": None}},
            "timing": {"start_ts": start}, "run_dir": f"/reports/{matrix_run}/runs/{run}"}


def test_pairs_of_a_cell():
    assert pairs(["java@4.4.0", "reference@0.1.0", "java@4.4.0"]) == [
        ("java@4.4.0", "java@4.4.0"), ("java@4.4.0", "reference@0.1.0")]
    assert pairs(["sarama@1.61.1"]) == [("sarama@1.61.1", "sarama@1.61.1")]


def test_pass_fail_flaky_and_trend_in_run_time_order():
    verdicts = [
        # night 2 (later) first in the input: the trend must still be in time order
        _cell("c3", ["java@4.4.0", "reference@0.1.0"], "fail", 2000, "night-2"),
        _cell("c1", ["java@4.4.0", "reference@0.1.0"], "pass", 1000, "night-1"),
        _cell("c2", ["java@4.4.0", "sarama@1.61.1"], "fail", 1000, "night-1"),
        _cell("c4", ["java@4.4.0", "sarama@1.61.1"], "unknown", 2000, "night-2"),
        _cell("c5", ["librdkafka@2.16.1", "java@4.4.0"], "pass", 2000, "night-2", broker="3.9.2"),
    ]
    m = build_matrix(verdicts)
    by = {(e["broker_version"], e["a"], e["b"]): e for e in m["entries"]}
    flaky = by[("4.4.0", "java@4.4.0", "reference@0.1.0")]
    assert flaky["status"] == "flaky" and (flaky["passes"], flaky["fails"]) == (1, 1)
    assert [t["run"] for t in flaky["trend"]] == ["night-1", "night-2"]
    assert [t["status"] for t in flaky["trend"]] == ["pass", "fail"]
    assert by[("4.4.0", "java@4.4.0", "sarama@1.61.1")]["status"] == "fail"      # unknown fails a cell
    assert by[("3.9.2", "java@4.4.0", "librdkafka@2.16.1")]["status"] == "pass"
    assert [r["run"] for r in m["runs"]] == ["night-1", "night-2"]
    assert m["summary"]["entries"] == {"pass": 1, "fail": 1, "flaky": 1, "known-issue": 0, "malformed": 0,
                                       "incomplete": 0}
    assert m["brokers"] == ["3.9.2", "4.4.0"]


def test_a_malformed_cell_blames_no_pair_yet_fails_the_run():
    # Lines of c1's input could not be used (here a history line; in a real chaos cell, a producer
    # that stopped acknowledging on a starved machine): c1 is no evidence about java or the
    # reference. Its pair is "malformed", not "fail"; the same pair passing in c3 makes the entry a
    # pass; the run still exits 1, and its summary row says why.
    malformed = _cell("c1", ["java@4.4.0", "reference@0.1.0"], "pass", 1000, "night-1")
    malformed["verdict"] = "malformed"
    malformed["malformed"] = [{"file": "members/m1.jsonl", "line": 7, "problem": "not a JSON object"}]
    clean = _cell("c2", ["java@4.4.0", "sarama@1.61.1"], "pass", 1000, "night-1")
    m = build_matrix([malformed, clean])
    [entry] = [e for e in m["entries"] if e["b"] == "reference@0.1.0"]
    assert entry["status"] == "malformed" and (entry["fails"], entry["malformeds"]) == (0, 1)
    assert [g["status"] for g in m["grid"] if g["b"] == "reference@0.1.0"] == ["malformed"]
    assert m["summary"]["malformed"] == 1 and m["summary"]["failed"] == 0
    assert "🟪 malformed" in markdown.render([malformed, clean], m)
    judged = _cell("c3", ["java@4.4.0", "reference@0.1.0"], "pass", 2000, "night-2")
    [entry] = [e for e in build_matrix([malformed, clean, judged])["entries"] if e["b"] == "reference@0.1.0"]
    assert entry["status"] == "pass" and [t["status"] for t in entry["trend"]] == ["malformed", "pass"]
    result = MatrixResult(Path("."), verdicts=[malformed, clean])
    assert result.exit_code == 1
    assert MatrixResult(Path("."), verdicts=[clean]).exit_code == 0
    assert MatrixResult(Path("."), verdicts=[clean], interrupted=True).exit_code == 130
    table = summary_table(result)
    row = next(line for line in table.splitlines() if "reference@0.1.0" in line)
    assert "MALFORMED" in row and row.endswith("malformed(1 lines)")
    assert "1 malformed (damaged input, no client blamed)" in table


def test_trend_in_the_markdown_summary_and_the_html():
    verdicts = [_cell("c1", ["java@4.4.0", "reference@0.1.0"], "pass", 1000, "night-1"),
                _cell("c2", ["java@4.4.0", "reference@0.1.0"], "fail", 2000, "night-2"),
                _cell("c3", ["java@4.4.0", "sarama@1.61.1"], "pass", 2000, "night-2")]
    m = build_matrix(verdicts)
    md = markdown.render(verdicts, m)
    assert "Trend: the last 2 matrix runs, oldest first (night-1 … night-2)." in md
    assert "| 4.4.0 | rolling-restart | java@4.4.0 | reference@0.1.0 | ⚠️ flaky | 1 of 2 passed | ✅❌ |" in md
    assert "| 4.4.0 | rolling-restart | java@4.4.0 | sarama@1.61.1 | ✅ pass | 1 cell | ·✅ |" in md
    page = html.render(verdicts, m, {})
    assert '<table class="trend-table">' in page and "<li>night-1</li><li>night-2</li>" in page
    # One matrix run: no trend column.
    single = markdown.render(verdicts[:1], build_matrix(verdicts[:1]))
    assert "trend" not in single.lower()


def test_a_cell_cut_short_neither_passes_nor_fails_its_pairs():
    # A suite error stopped c2 before its scenario ended, with nothing violated: it says nothing
    # about java x reference. It still keeps `conformance run` from exiting 0 (2: the suite's fault).
    cut = _cell("c2", ["java@4.4.0", "reference@0.1.0"], "pass", 2000, "night-2")
    cut["verdict"], cut["cut_short"] = "incomplete", "SuiteError: java@4.4.0 is not set up"
    passed = _cell("c1", ["java@4.4.0", "reference@0.1.0"], "pass", 1000, "night-1")
    lone = _cell("c3", ["java@4.4.0", "sarama@1.61.1"], "pass", 2000, "night-2")
    lone["verdict"], lone["cut_short"] = "incomplete", "interrupted (Ctrl-C)"
    m = build_matrix([passed, cut, lone])
    by = {e["b"]: e for e in m["entries"]}
    assert by["reference@0.1.0"]["status"] == "pass"
    assert (by["reference@0.1.0"]["passes"], by["reference@0.1.0"]["fails"], by["reference@0.1.0"]["incompletes"]) \
        == (1, 0, 1)
    assert [t["status"] for t in by["reference@0.1.0"]["trend"]] == ["pass", "incomplete"]
    assert by["sarama@1.61.1"]["status"] == "incomplete"
    assert m["summary"]["passed"] == 1 and m["summary"]["failed"] == 0 and m["summary"]["incomplete"] == 2
    assert m["summary"]["entries"] == {"pass": 1, "fail": 0, "flaky": 0, "known-issue": 0, "malformed": 0,
                                       "incomplete": 1}
    errors = ["c2: java@4.4.0 is not set up"]
    assert MatrixResult(Path("."), verdicts=[passed, cut], errors=errors).exit_code == 2
    failed = _cell("c4", ["java@4.4.0", "reference@0.1.0"], "fail", 3000, "night-2")
    assert MatrixResult(Path("."), verdicts=[failed, cut], errors=errors).exit_code == 1
    table = summary_table(MatrixResult(Path("."), verdicts=[passed, cut], errors=errors))
    assert "INCOMPLETE" in table and "1 passed, 0 failed, 1 cut short (incomplete)" in table
    md = markdown.render([passed, cut, lone], m)
    assert "**2 cut short**" in md and "cut short: SuiteError: java@4.4.0 is not set up" in md
    assert "| 4.4.0 | rolling-restart | java@4.4.0 | sarama@1.61.1 | ⏹️ incomplete |" in md
    page = html.render([passed, cut, lone], m, {})
    assert "cut short before its scenario ended: interrupted (Ctrl-C)" in page and "2 cut short" in page
    junit = ET.fromstring(jreport.render([cut]))
    [error] = [e for e in junit.iter("error") if e.get("type") == "cut-short"]
    assert error.get("message") == "cut short: SuiteError: java@4.4.0 is not set up"
