"""The nemesis log and the pipeline's ingestion share one fault vocabulary (pure Python).

A partition-growth run once logged ``add-partitions``, which ingestion did not
know: the line became a malformed input and the cell's verdict "malformed".
"""

from __future__ import annotations

import json

import pytest

from conformance.nemesis import FAULTS, PHASES, NemesisLog
from conformance.pipeline.ingest import stage


def test_every_fault_the_log_writes_is_ingested(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"run_id": "r1", "scenario": "chaos", "topics": {"t": 4}}))
    log = NemesisLog(tmp_path / "nemesis.jsonl")
    for fault in FAULTS:
        for phase in PHASES:
            log.record(fault, "m1", phase, note=fault)
    log.close()
    st = stage([tmp_path])
    assert [r for r in st.malformed if r["file"].endswith("nemesis.jsonl")] == []
    assert sorted((r["fault"], r["phase"]) for r in st.nemesis) == sorted((f, p) for f in FAULTS for p in PHASES)


@pytest.mark.parametrize("fault, phase", [("meteor", "invoke"), ("kill", "later")])
def test_the_log_refuses_what_ingestion_would_not_know(tmp_path, fault, phase):
    log = NemesisLog(tmp_path / "nemesis.jsonl")
    with pytest.raises(ValueError, match="unknown fault"):
        log.record(fault, "m1", phase)
    log.close()
    assert (tmp_path / "nemesis.jsonl").read_text() == ""
