"""ingest.read_histories: every line of every history file lands in the events or in the malformed
table with its file and exact line number, under any path (a space, '+', '%', non-ASCII), both when
lines meet their files by the names the scan listed and when (the fallback) each line's file name
is decoded."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.pipeline import ingest
from conformance.pipeline.derived import pin
from conformance.pipeline.session import get_session
from stories import malformed_story

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("decode_each_line", [False, True], ids=["listed-names", "decoded-names"])
def test_every_history_line_lands_once(tmp_path, monkeypatch, decode_each_line):
    spark = get_session()
    run_dir = malformed_story(tmp_path / "odd dir+100% é", "odd")
    if decode_each_line:   # no listed name decodes to a path asked for: the fallback must take over
        monkeypatch.setattr(ingest, "_path_of_uri", lambda uri: "/nowhere")
    files = ingest.stage([run_dir]).files
    events, malformed = ingest.read_histories(spark, files, tmp_path / "staging", pin)

    expected: dict[str, int] = {}
    for f in files:
        expected[f["file"]] = sum(1 for line in Path(f["file"]).read_text().splitlines() if line.strip())
    got: dict[str, int] = {}
    for r in events.groupBy("file").count().collect():
        got[r["file"]] = r["count"]
    bad = sorted((r["file"], r["line"], r["problem"]) for r in malformed.collect())
    for file, _line, _problem in bad:
        got[file] = got.get(file, 0) + 1
    assert got == expected
    m1 = str(run_dir / "members" / "m1.jsonl")
    n = len(Path(m1).read_text().splitlines())
    assert [(file, line) for file, line, _ in bad] == [(m1, n - 1), (m1, n)]
    assert bad[0][2] == "not a JSON object (or a truncated line)"
