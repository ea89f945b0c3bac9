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


def test_timeline_has_a_time_axis_highlighted_overlaps_and_labels_that_do_not_collide():
    from conformance.report import svg

    own = [{"topic": "t", "partition": 0, "member": "m1", "start": 1000, "end": 5000, "ended_by": "revoke"},
           {"topic": "t", "partition": 0, "member": "m2", "start": 4000, "end": None, "ended_by": None},
           {"topic": "t", "partition": 1, "member": "m1", "start": 1000, "end": None, "ended_by": None}]
    # Three faults within 100 ms at the start (their labels used to pile up) and one at the right edge.
    faults = [{"ts": 1100, "fault": "pause", "target": "m1", "phase": "invoke"},
              {"ts": 1150, "fault": "kill", "target": "m2", "phase": "invoke"},
              {"ts": 1200, "fault": "cut", "target": "m3", "phase": "invoke"},
              {"ts": 59900, "fault": "broker-restart", "target": "broker", "phase": "heal"}]
    page = svg.gantt(own, faults, [], t0=0, t1=60000, width=900)
    assert re.findall(r'class="tick"[^>]*>([^<]*)', page) == [f"{s} s" for s in range(0, 70, 10)]
    assert page.count('class="own overlap"') == 2 and page.count('class="own"') == 1
    assert "m2 owns t-0 +4.000 s .. the end" in page
    spans = []
    for x, y, anchor, text in re.findall(r'<text class="fault-label" x="([\d.]+)" y="(\d+)"[^>]*?'
                                         r'(?: text-anchor="(end)")?>([^<]*)<', page):
        w = svg.CHAR_W * len(text)
        left = float(x) - w if anchor else float(x)
        assert 0 <= left and left + w <= 900, text           # nothing past the edges
        spans.append((int(y), left, left + w))
    assert len(spans) == 4
    for i, a in enumerate(spans):
        for b in spans[i + 1:]:
            assert a[0] != b[0] or a[2] <= b[1] or b[2] <= a[1], (a, b)   # same row: no overlap
