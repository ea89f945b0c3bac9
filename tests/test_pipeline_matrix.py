"""The compatibility matrix from verdicts (pure Python: no Spark needed)."""

from __future__ import annotations

from pathlib import Path

from conformance.pipeline.matrix import build_matrix, pairs
from conformance.report import html, markdown
from conformance.scenarios.matrix import MatrixResult, summary_table


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
    assert m["summary"]["entries"] == {"pass": 1, "fail": 1, "flaky": 1}
    assert m["brokers"] == ["3.9.2", "4.4.0"]


def test_a_malformed_cell_fails_the_matrix_and_the_run_alike():
    # Every invariant held, but lines of the input could not be used: the cell was not fully judged.
    malformed = _cell("c1", ["java@4.4.0", "reference@0.1.0"], "pass", 1000, "night-1")
    malformed["verdict"] = "malformed"
    malformed["malformed"] = [{"file": "members/m1.jsonl", "line": 7, "problem": "not a JSON object"}]
    clean = _cell("c2", ["java@4.4.0", "sarama@1.61.1"], "pass", 1000, "night-1")
    [entry] = [e for e in build_matrix([malformed, clean])["entries"] if e["b"] == "reference@0.1.0"]
    assert entry["status"] == "fail"
    result = MatrixResult(Path("."), verdicts=[malformed, clean])
    assert result.exit_code == 1
    assert MatrixResult(Path("."), verdicts=[clean]).exit_code == 0
    assert MatrixResult(Path("."), verdicts=[clean], interrupted=True).exit_code == 130
    row = next(line for line in summary_table(result).splitlines() if "reference@0.1.0" in line)
    assert "FAIL" in row and row.endswith("malformed(1 lines)")


def test_trend_in_the_markdown_summary_and_the_html():
    verdicts = [_cell("c1", ["java@4.4.0", "reference@0.1.0"], "pass", 1000, "night-1"),
                _cell("c2", ["java@4.4.0", "reference@0.1.0"], "fail", 2000, "night-2"),
                _cell("c3", ["java@4.4.0", "sarama@1.61.1"], "pass", 2000, "night-2")]
    m = build_matrix(verdicts)
    md = markdown.render(verdicts, m)
    assert "Trend: the last 2 matrix runs, oldest first (night-1 … night-2)." in md
    assert "| 4.4.0 | rolling-restart | java@4.4.0 | reference@0.1.0 | ⚠️ flaky | 1/2 | ✅❌ |" in md
    assert "| 4.4.0 | rolling-restart | java@4.4.0 | sarama@1.61.1 | ✅ pass | 1/1 | ·✅ |" in md
    page = html.render(verdicts, m, {})
    assert '<table class="trend-table">' in page and "<li>night-1</li><li>night-2</li>" in page
    # One matrix run: no trend column.
    single = markdown.render(verdicts[:1], build_matrix(verdicts[:1]))
    assert "trend" not in single.lower()
