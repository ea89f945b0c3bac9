"""Reports a maintainer acts on, shards merged, and the published site.

Run directories are hand-made stories (tests/stories/): a clean cell and one whose
member m2 declares partitions it was never given (E5, with the wire line as evidence). They sit
as the shards of one plan would (``<stamp>-plan-<digest>-shard-I-of-N-<pid>/runs/<cell>``), and
as one run of the same plan would (``<stamp>-plan-<digest>-<pid>/runs/<cell>``).
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from html import escape, unescape

import pytest

from conformance.cli import main
from stories import write_cell

pytestmark = pytest.mark.slow

PLAN = "plan-0123456789ab"
CELLS = {"c-clean": dict(scenario="crash-restart"), "c-e5": dict(name="e5", scenario="rolling-restart")}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    base = tmp_path_factory.mktemp("shards")
    one = base / "one" / f"20261126T020000Z-{PLAN}-11" / "runs"
    for i, (cell, kw) in enumerate(CELLS.items(), start=1):
        shard = base / f"shard-{i}" / f"20261126T02000{i}Z-{PLAN}-shard-{i}-of-2-{20 + i}" / "runs"
        write_cell(shard, cell, **kw)
        shutil.copytree(shard / cell, one / cell)
    site, merged_out = base / "site", base / "one-report"
    assert main(["report", str(base / "shard-1"), str(base / "shard-2"), "--publish", str(site),
                 "--history", str(base / "history")]) == 0
    assert main(["report", str(base / "one"), "--out", str(merged_out)]) == 0
    return base, site, merged_out


def _hrefs(page: str) -> list[str]:
    return [unescape(h) for h in re.findall(r'href="([^"#][^"]*)"', page)]


def test_two_shards_merged_give_the_matrix_of_one_run_of_the_same_cells(reports):
    _, site, one = reports
    merged = json.loads((site / "matrix.json").read_text())
    single = json.loads((one / "matrix.json").read_text())
    assert [r["run"] for r in merged["runs"]] == [PLAN]
    assert merged == single
    assert {e["status"] for e in merged["entries"]} == {"pass", "fail"}


def test_published_site_is_complete_in_itself(reports):
    _, site, _ = reports
    page = (site / "index.html").read_text()
    hrefs = _hrefs(page)
    assert hrefs, "no links to run files"
    for href in hrefs:
        assert not re.match(r"[a-z]+:|/", href) and ".." not in href, href   # relative, inside the site
        assert (site / href).is_file(), href
    for cell in CELLS:
        for name in ("manifest.json", "wire.jsonl", "nemesis.jsonl", "members/m1.jsonl", "members/m2.jsonl"):
            assert f"runs/{cell}/{name}" in hrefs, (cell, name)
    # Only the report, its history page and the run files: not the judge's working tables.
    assert sorted(p.name for p in site.iterdir()) == ["allure-results", "history.html", "index.html", "junit.xml",
                                                       "matrix.json", "runs", "summary.md"]


def test_history_keeps_the_merged_shards_as_one_night(reports):
    base, site, _ = reports
    [night] = sorted(p.name for p in (base / "history").glob("*.json"))
    assert night.endswith(f"-{PLAN}.json")
    assert '<a class="history" href="history.html">' in (site / "index.html").read_text()
    page = (site / "history.html").read_text()
    assert "1 night(s)" in page and "rolling-restart" in page


def test_every_cell_shows_its_reproduce_command_in_every_format(reports):
    base, site, _ = reports
    commands = {c: json.loads(next(base.glob(f"shard-*/*/runs/{c}/manifest.json")).read_text())["command"]
                for c in CELLS}
    page = (site / "index.html").read_text()
    md = (site / "summary.md").read_text()
    props = {}
    for case in ET.parse(site / "junit.xml").getroot().iter("testcase"):
        for p in case.iter("property"):
            props.setdefault(case.get("classname").split(".", 1)[1], {})[p.get("name")] = p.get("value")
    allure = {}
    for path in (site / "allure-results").glob("*-result.json"):
        r = json.loads(path.read_text())
        allure[r["fullName"].rsplit(".", 1)[-1]] = r
    for cell, command in commands.items():
        section = page[page.index(f'id="cell-{cell.replace("-", "-")}"'):]
        section = section[:section.index("</section>")]
        assert f'<pre class="command">{escape(command)}</pre>' in section
        assert f"`{command}`" in md and f"(runs/{cell}/wire.jsonl)" in md
        assert props[cell]["reproduce"] == command and props[cell]["file.wire.jsonl"] == f"runs/{cell}/wire.jsonl"
        assert {"name": "reproduce", "value": command} in allure[cell]["parameters"]
        assert {"name": "wire.jsonl", "url": f"runs/{cell}/wire.jsonl", "type": "link"} in allure[cell]["links"]
        assert command in allure[cell]["description"]


def test_evidence_names_the_file_and_times_are_from_the_run_start(reports):
    _, site, _ = reports
    page = (site / "index.html").read_text()
    section = page[page.index('id="cell-c-e5"'):]
    section = section[:section.index("</section>")]
    assert re.search(r"&quot;wire_line&quot;: &quot;wire\.jsonl:\d+&quot;", section)
    assert '<a href="runs/c-e5/wire.jsonl">wire.jsonl line' in section
    junit = (site / "junit.xml").read_text()
    assert re.search(r'"wire_line": "wire\.jsonl:\d+"', junit)
    # Times relative to the run's start: tests/test_report_evidence.py (these stories record no start).


def test_out_report_links_to_the_run_directories_where_they_are(reports):
    _, _, one = reports
    hrefs = _hrefs((one / "index.html").read_text())
    assert hrefs and all((one / h).resolve().is_file() for h in hrefs)
    assert not (one / "runs").exists()


def test_publish_into_the_runs_is_refused_before_judging(tmp_path, capsys):
    runs = tmp_path / f"20261126T020000Z-{PLAN}-11" / "runs"
    write_cell(runs, "c-clean")
    for site in (tmp_path, runs / "c-clean" / "site"):
        assert main(["report", str(tmp_path), "--publish", str(site)]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and "overlaps the run directory" in err[0], err
    assert not (runs / "c-clean" / "site").exists() and not (tmp_path / "index.html").exists()
