"""The history format: the writer's lines validate; broken lines are reported, not dropped."""

import json
from pathlib import Path

import pytest

from conformance.history import HistoryFormatError, HistoryWriter, read_history, validate_event


def test_writer_lines_validate_and_carry_context(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    w = HistoryWriter(path, member="m1", client="java", client_version="3.9.1")
    w.record("started")
    w.context.update(member_id="m1-abc", generation=3, protocol="cooperative")
    w.record("assigned", partitions=[["t", 0], ["t", 1]])
    w.record("consumed", topic="t", partition=0, first_offset=0, last_offset=9, count=10)
    w.record("stopped", reason="SIGTERM")
    w.close()
    rows = list(read_history(path.read_text().splitlines()))
    assert [p for _, _, p in rows] == [None] * 4
    assigned = rows[1][1]
    assert assigned["generation"] == 3 and assigned["member_id"] == "m1-abc"


def test_bad_lines_are_reported_with_line_numbers() -> None:
    good = json.dumps({"ts": 1.0, "member": "m", "client": "java", "client_version": "1", "event": "started"})
    lines = [good, "{not json", json.dumps({"ts": 1.0, "member": "m", "client": "c", "client_version": "1",
                                            "event": "assigned", "partitions": [["t", "0"]]})]
    rows = list(read_history(lines))
    assert rows[0][2] is None
    assert rows[1][0] == 2 and rows[1][1] is None
    assert "partitions" in rows[2][2]


@pytest.mark.parametrize("event, message", [
    ({"ts": 1, "member": "m", "client": "c", "client_version": "1"}, "missing field 'event'"),
    ({"ts": 1, "member": "m", "client": "c", "client_version": "1", "event": "boom"}, "unknown event"),
    ({"ts": 1, "member": "m", "client": "c", "client_version": "1", "event": "consumed", "topic": "t",
      "partition": 0, "first_offset": 5, "last_offset": 4, "count": 1}, "first <= last"),
    ({"ts": 1, "member": "m", "client": "c", "client_version": "1", "event": "started", "protocol": "x"},
     "protocol must be"),
])
def test_validate_rejects(event: dict, message: str) -> None:
    with pytest.raises(HistoryFormatError, match=message):
        validate_event(event)
