"""Reports built from judged hand-made cells: matrix.json, HTML, Markdown, JUnit, allure, CLI."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from conformance.cli import main
from conformance.pipeline.timelines import timelines
from conformance.report.site import write_site
from stories import judged_catalog, write_cell

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    out, verdicts = judged_catalog(tmp_path_factory.mktemp("pipeline-catalog"))
    report = tmp_path_factory.mktemp("report")
    matrix = write_site(verdicts, report, timelines(out))
    return report, verdicts, matrix


def test_matrix_json(site):
    report, verdicts, matrix = site
    saved = json.loads((report / "matrix.json").read_text())
    assert saved["summary"]["cells"] == len(verdicts)
    clean = [e for e in saved["entries"] if e["scenario"] == "rolling-restart"]
    assert [(e["a"], e["b"], e["status"]) for e in clean] == [("java@4.4.0", "reference@0.1.0", "pass")]
    broken = [e for e in saved["entries"] if e["scenario"] == "break-r2"]
    # m2 also declares t-2 in its next JoinGroup although no SyncGroup gave it t-2: E5's stale claim.
    assert broken[0]["status"] == "fail" and broken[0]["cells"][0]["failing"] == ["E5", "R2"]


def test_html_is_self_contained_with_matrix_drilldown_and_timelines(site):
    report, verdicts, _ = site
    page = (report / "index.html").read_text()
    assert '<table class="matrix"' in page and '<svg class="timeline"' in page
    assert not re.search(r'(src|href)="(https?:)?//', page), "no external resources"
    # every cell has a section, and the matrix links to it
    for v in verdicts:
        anchor = "cell-" + v["run"]
        assert f'id="{anchor}"' in page and f'href="#{anchor}"' in page
    # faults of nemesis.jsonl are marked on the timeline of the cell that had them
    section = page[page.index('id="cell-break-r2-allowed"'):]
    section = section[:section.index("</section>")]
    assert 'class="fault"' in section and "pause m1" in section
    assert "m1 and m2 both owned t-2" in page      # violation text in the drill-down


def test_markdown_junit_allure(site):
    report, verdicts, _ = site
    md = (report / "summary.md").read_text()
    assert "| broker | scenario |" in md and "break-r2" in md and "culprit unknown: R2 (safety): m1 and m2 both owned t-2" in md
    root = ET.parse(report / "junit.xml").getroot()
    failures = sum(int(s.get("failures")) for s in root.iter("testsuite"))
    expected = sum(sum(i["status"] == "fail" for i in v["invariants"].values()) + bool(v["malformed"]) for v in verdicts)
    assert failures == expected > 0
    results = sorted((report / "allure-results").glob("*-result.json"))
    assert len(results) == len(verdicts)
    by_name = {}
    for path in results:
        r = json.loads(path.read_text())
        assert {"uuid", "historyId", "name", "fullName", "status", "stage", "steps", "labels", "attachments"} <= set(r)
        assert (report / "allure-results" / r["attachments"][0]["source"]).is_file()
        by_name[r["fullName"].rsplit(".", 1)[-1]] = r
    assert by_name["clean"]["status"] == "passed" and by_name["break-r2"]["status"] == "failed"
    assert {s["status"] for s in by_name["break-r2"]["steps"]} == {"passed", "failed"}


def test_cli_report_finds_manifests_recursively_and_checks(tmp_path):
    runs = tmp_path / "reports" / "night-1" / "runs"
    write_cell(runs, "c-clean", scenario="crash-restart")
    write_cell(runs, "c-r3", "r3", scenario="crash-restart")
    out = tmp_path / "site"
    # One judge: --check writes the same report and exits 1, a cell having failed (without --check a
    # failed cell's report exits 0: tests/test_report_publish.py).
    assert main(["report", str(tmp_path / "reports"), "--out", str(out), "--check"]) == 1
    matrix = json.loads((out / "matrix.json").read_text())
    assert matrix["runs"][0]["run"] == "night-1" and matrix["entries"][0]["status"] == "flaky"
    assert (out / "index.html").is_file() and (out / "junit.xml").is_file()


def test_cli_report_without_runs_is_a_usage_error(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "no manifest.json" in capsys.readouterr().err
