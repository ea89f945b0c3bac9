"""A cell with a missing or empty wire capture or member history is malformed, never a pass on nothing.

Story: the clean cooperative story, then the suite loses its inputs: the wire
capture is gone and m2's history is empty (a tap that never started, a harness
that died before its first line). Judged as they are, every wire invariant and
every check of m2 would hold on zero rows.
"""

from __future__ import annotations

from conformance.pipeline.ingest import stage
from stories import write_cell


def test_missing_wire_and_empty_history_are_malformed(tmp_path):
    run_dir = write_cell(tmp_path, "lost-inputs")
    (run_dir / "wire.jsonl").unlink()
    (run_dir / "members" / "m2.jsonl").write_text("")
    problems = {(r["file"].rsplit("/", 2)[-1], r["line"], r["problem"]) for r in stage([run_dir]).malformed}
    assert problems == {("wire.jsonl", 0, "the wire capture is missing: nothing was judged from it"),
                        ("m2.jsonl", 0, "the history of member m2 is empty: nothing was judged from it")}


def test_intact_cell_has_no_missing_inputs(tmp_path):
    assert stage([write_cell(tmp_path, "intact")]).malformed == []
