"""What a report shows to act on a cell (conformance.report.evidence): wire lines with their
file, times from the run's start, the reproduce command and file links (pure; no Spark)."""

from __future__ import annotations

import json
import re

from conformance.pipeline.matrix import build_matrix
from conformance.report import html, junit, markdown
from conformance.report.evidence import cell_links, located, message, relative_time, wire_lines

START = 1_764_120_000_000.0


def test_wire_lines_name_their_file_and_times_are_relative():
    finding = {"ts": START + 12_345, "evidence": {"wire_line": 5028, "sync_wire_line": 7, "wire_lines": [3, 4],
                                                  "acquired_ts": START - 500, "leader": "m1"}}
    shown = located(finding, START)
    assert shown == {"ts": "+12.345 s", "evidence": {"wire_line": "wire.jsonl:5028", "sync_wire_line": "wire.jsonl:7",
                                                     "wire_lines": ["wire.jsonl:3", "wire.jsonl:4"],
                                                     "acquired_ts": "-0.500 s", "leader": "m1"}}
    assert located(finding, None)["ts"] == START + 12_345          # no start known: left as it is
    assert wire_lines(finding) == [3, 4, 7, 5028]
    assert relative_time(START + 61_000, START) == "+61.000 s"
    assert message("(SyncGroup response, wire line 12)") == "(SyncGroup response, wire.jsonl line 12)"


def _cell(tmp_path):
    run_dir = tmp_path / "20261126T020000Z-matrix-1" / "runs" / "c1"
    (run_dir / "members").mkdir(parents=True)
    (run_dir / "logs").mkdir()
    command = "conformance run --scenario pause --clients reference,java@4.4.0 --broker 4.4.0 --seed 7"
    (run_dir / "manifest.json").write_text(json.dumps({"command": command}))
    for name in ("wire.jsonl", "nemesis.jsonl", "members/m0.jsonl", "logs/m0.err"):
        (run_dir / name).write_text("{}\n")
    (run_dir / "broker").mkdir()                 # the broker's data: never linked
    (run_dir / "broker" / "meta.properties").write_text("x")
    viol = {"invariant": "E5", "message": "m1 declares t-2 (wire line 41)", "members": ["m1"], "culprit": "m1",
            "generation": 3, "partitions": [["t", 2]], "ts": START + 2_000, "evidence": {"wire_line": 41},
            "allowed_by": None}
    verdict = {"run": "c1", "scenario": "pause", "broker_version": "4.4.0", "members": ["java@4.4.0", "reference@0.1.0"],
               "seed": 7, "invariants": {"E5": {"status": "fail", "violations": [viol], "allowed": [], "error": None}},
               "metrics": {"convergence": [{"fault": "pause", "target": "m1", "ms": 900.0, "ts": START + 1_000}]},
               "malformed": [], "cut_short": None, "member_specs": {}, "allowed": {}, "verdict": "fail",
               "root_cause": dict(viol), "timing": {"start_ts": START, "end_ts": START + 60_000, "last_fault_ts": None},
               "run_dir": str(run_dir)}
    return verdict, command


def test_every_format_shows_the_command_links_and_located_evidence(tmp_path):
    verdict, command = _cell(tmp_path)
    out = tmp_path / "report"
    out.mkdir()
    links = {"c1": cell_links(verdict, out)}
    assert [n for n, _ in links["c1"].files] == ["manifest.json", "wire.jsonl", "nemesis.jsonl", "members/m0.jsonl",
                                                 "logs/m0.err"]
    assert all((out / h).resolve().is_file() for _, h in links["c1"].files)
    page = html.render([verdict], build_matrix([verdict]), {}, links)
    assert command in page and "wire.jsonl line 41" in page
    assert "&quot;wire_line&quot;: &quot;wire.jsonl:41&quot;" in page and "&quot;ts&quot;: &quot;+2.000 s&quot;" in page
    assert not re.search(r"&quot;(\w+_)?ts&quot;: \d", page), "an epoch time left in the page"
    md = markdown.render([verdict], build_matrix([verdict]), links)
    assert f"reproduce: `{command}`" in md and "wire.jsonl line 41" in md
    xml = junit.render([verdict], links)
    assert f'name="reproduce" value="{command}"' in xml and '"ts": "+2.000 s"' in xml
    assert f"reproduce: {command}" in xml           # at the end of the failure's text
