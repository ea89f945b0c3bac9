"""The control file (conformance/members/control.py): the runner's writer, the harnesses' reader and
the Python harnesses' turn (``serve``). Real files, a real HistoryWriter; the clients' side is shown
on real members by tests/test_kinds_contract.py (``obeys_control``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conformance.history import HistoryWriter
from conformance.jsonl import read_records
from conformance.members.control import ControlReader, ControlWriter, serve


def _history(tmp_path: Path) -> tuple[HistoryWriter, Path]:
    path = tmp_path / "m0.jsonl"
    return HistoryWriter(str(path), "m0", "librdkafka", "2.16.1"), path


def test_a_harness_applies_only_the_commands_given_after_it_started(tmp_path: Path) -> None:
    # The first incarnation was told to stall; the member restarts and must not stall again: its
    # reader starts at the file's end, and the writer's numbering goes on across incarnations.
    path = tmp_path / "control" / "m0.jsonl"
    writer = ControlWriter(path)
    assert writer.send("stall", 1.0, ms=100) == 1
    reader = ControlReader(path)
    assert reader.poll() == []
    assert ControlWriter(path).send("subscribe", 2.0, topics=["a", "b"]) == 2
    assert reader.poll() == [{"seq": 2, "ts": 2.0, "op": "subscribe", "topics": ["a", "b"]}]
    assert reader.poll() == []


def test_a_line_being_written_waits_and_a_broken_line_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "m0.jsonl"
    reader = ControlReader(path)  # the file does not exist yet: nothing, and everything from offset 0
    assert reader.poll() == []
    path.write_text('{"seq": 1, "ts": 1, "op": "stall", "ms": 5}\n{"seq": 2, "op": "sta')
    assert [c["seq"] for c in reader.poll()] == [1]
    with open(path, "a") as f:
        f.write('ll"}\n')  # completed, but without its ms: not a command
    assert reader.poll() == [{"op": None, "line": '{"seq": 2, "op": "stall"}'}]


def test_the_writer_refuses_an_unknown_op_or_a_missing_argument(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ops: stall\\(ms\\), subscribe\\(topics\\)"):
        ControlWriter(tmp_path / "c.jsonl").send("pause", 1.0, ms=5)
    with pytest.raises(ValueError, match="'stall'"):
        ControlWriter(tmp_path / "c.jsonl").send("stall", 1.0)
    assert not (tmp_path / "c.jsonl").exists()


def test_serve_records_each_command_before_acting_and_a_stop_ends_a_stall(tmp_path: Path) -> None:
    # A stall of 60 s is cut short by a stop request; the subscribe that follows is applied after
    # the control event that announces it; a refused subscribe is a non-fatal error event.
    history, hist_path = _history(tmp_path)
    control = tmp_path / "c.jsonl"
    reader = ControlReader(control)
    writer = ControlWriter(control)
    writer.send("stall", 1.0, ms=60_000)
    writer.send("subscribe", 2.0, topics=["orders", "payments"])
    writer.send("subscribe", 3.0, topics=["nope"])
    began = time.monotonic()
    calls: list[tuple[str, int]] = []

    def subscribe(topics: list[str]) -> None:
        seen = [e for e in read_records(hist_path) if e["event"] == "control"]
        calls.append((",".join(topics), len(seen)))
        if topics == ["nope"]:
            raise RuntimeError("unknown topic")

    serve(reader, history, lambda: time.monotonic() - began > 0.3, subscribe)
    history.close()
    assert time.monotonic() - began < 5
    events = read_records(hist_path)
    controls = [(e["seq"], e["op"], e.get("ms"), e.get("topics")) for e in events if e["event"] == "control"]
    assert controls == [(1, "stall", 60_000, None), (2, "subscribe", None, ["orders", "payments"]),
                        (3, "subscribe", None, ["nope"])]
    assert calls == [("orders,payments", 2), ("nope", 3)]
    errors = [e for e in events if e["event"] == "error"]
    assert len(errors) == 1 and not errors[0]["fatal"] and "subscribe ['nope'] failed" in errors[0]["error"]


def test_serve_stalls_for_the_time_asked(tmp_path: Path) -> None:
    history, hist_path = _history(tmp_path)
    control = tmp_path / "c.jsonl"
    reader = ControlReader(control)
    ControlWriter(control).send("stall", 1.0, ms=300)
    began = time.monotonic()
    serve(reader, history, lambda: False, lambda topics: None)
    assert 0.29 <= time.monotonic() - began < 2
    history.close()
    assert json.loads(hist_path.read_text().splitlines()[0])["op"] == "stall"
