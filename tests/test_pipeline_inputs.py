"""Which inputs each invariant read, and how damaged inputs change verdicts (pure: no Spark).

The Spark side, on real runs: tests/test_damaged_real_runs.py.
"""

from __future__ import annotations

import dataclasses
import json
import threading

from pyspark.sql import DataFrame

from conformance.pipeline.checks import CATALOG
from conformance.pipeline.derived import Tables
from conformance.pipeline.inputs import INPUTS, TABLE_INPUTS, damaged_inputs, input_of, inputs_read, readings
from conformance.pipeline.verdicts import assemble
from conformance.pipeline.wire import decode_wire

CELL = {"scenario": "s", "broker_version": "4.4.0", "seed": 3, "start_ts": 1.0, "end_ts": 2.0, "last_fault_ts": None}


def test_every_table_of_the_checks_has_its_inputs_declared():
    tables = {f.name for f in dataclasses.fields(Tables) if f.type in ("DataFrame", DataFrame)}
    assert {"cells", "events", "ownership", "malformed"} <= tables
    assert tables == set(TABLE_INPUTS)
    assert all(set(v) <= set(INPUTS) for v in TABLE_INPUTS.values())


def test_input_of_a_malformed_file():
    assert input_of("/r/x/manifest.json") == "manifest"
    assert input_of("/r/x/wire.jsonl") == "wire"
    assert input_of("/r/x/nemesis.jsonl") == "nemesis"
    assert input_of("/r/x/members/m1-java.jsonl") == "history"
    assert input_of("/r/x/other.txt") is None
    assert damaged_inputs(["/r/x/other.txt"]) == frozenset(INPUTS)   # unknown: damages everything


class _FakeTables:
    """Just enough of a Tables: attributes and a shared() that builds each piece once."""

    def __init__(self):
        self.events, self.frames, self.cells = "events", "frames", "cells"
        self._pieces, self._lock = {}, threading.RLock()

    def shared(self, name, build, heavy=False):
        with self._lock:
            if name not in self._pieces:
                self._pieces[name] = build()
            return self._pieces[name]


def test_a_check_is_credited_with_what_a_shared_piece_read_even_when_another_built_it():
    r = readings(_FakeTables(), ["A", "B", "C"])
    a, b, c = r["A"], r["B"], r["C"]
    assert a.shared("piece", lambda: (a.events, a.shared("inner", lambda: a.frames))) == ("events", "frames")
    assert b.shared("piece", lambda: b.cells) == ("events", "frames")   # built already: B's build never runs
    _ = c.cells
    assert a.tables == b.tables == {"events", "frames"}
    assert inputs_read(b) == {"history", "wire"}
    assert inputs_read(c) == {"manifest"}
    assert inputs_read(None) == frozenset(INPUTS)


def test_a_piece_built_without_a_reading_counts_as_reading_everything():
    # When the metrics built a shared piece (e.g. "duplicates") on the bare Tables before a check
    # asked for it, the check was credited with none of the piece's reads: on a damaged input it
    # could pass instead of reading malformed, depending on which thread came first. The metrics
    # now read through a Reading too, and an unrecorded piece errs to the safe side.
    t = _FakeTables()
    t.shared("piece", lambda: t.events)
    [d] = readings(t, ["D"]).values()
    assert d.shared("piece", lambda: d.frames) == "events"
    assert inputs_read(d) == frozenset(INPUTS)


def _viol(run, inv, culprit=None):
    return {"run": run, "invariant": inv, "message": f"{inv} broke", "members": ["m1"], "culprit": culprit,
            "generation": None, "partitions": [], "ts": 5.0, "evidence": {}}


def test_damage_makes_only_the_invariants_that_read_it_malformed_and_blames_no_one():
    cells = {"a": dict(CELL), "b": dict(CELL)}
    results = {inv: [] for inv in CATALOG}
    results["V1"] = [_viol("b", "V1", culprit="m1"), _viol("a", "V1", culprit="m1")]
    results["E1"] = [_viol("b", "E1")]
    results["R2"] = RuntimeError("crashed")
    reads = {inv: frozenset({"wire"}) for inv in CATALOG}
    reads["V1"] = frozenset({"history", "manifest"})
    malformed = [{"run": "b", "file": "/r/b/members/m1.jsonl", "line": 301, "problem": "not a JSON object"}]
    out = {v["run"]: v for v in assemble(cells, {}, results, {}, malformed, reads=reads)}
    v1 = out["b"]["invariants"]["V1"]
    assert v1["status"] == "malformed" and v1["violations"] == []
    assert [x["message"] for x in v1["set_aside"]] == ["V1 broke"]
    assert v1["damaged"] == [{"file": "/r/b/members/m1.jsonl", "line": 301, "problem": "not a JSON object"}]
    assert v1["damaged_lines"] == 1
    # E1 read only the wire: its finding stands, and fails the cell; a crashed check stays unknown.
    assert out["b"]["invariants"]["E1"]["status"] == "fail" and out["b"]["verdict"] == "fail"
    assert out["b"]["invariants"]["R2"]["status"] == "unknown"
    assert out["b"]["root_cause"]["invariant"] == "E1"
    # The intact cell beside it keeps its violation.
    assert out["a"]["invariants"]["V1"]["status"] == "fail" and out["a"]["root_cause"]["culprit"] == "m1"


def test_without_recorded_reads_every_invariant_counts_as_reading_every_input():
    results = {inv: [] for inv in CATALOG}
    results["L4"] = [_viol("a", "L4")]
    malformed = [{"run": "a", "file": "/r/a/manifest.json", "line": 0, "problem": "unreadable manifest: ..."}]
    (v,) = assemble({"a": dict(CELL)}, {}, results, {}, malformed)
    assert {i["status"] for i in v["invariants"].values()} == {"malformed"}
    assert v["verdict"] == "malformed" and v["root_cause"] is None


def _join_request(metadata: str) -> str:
    return json.dumps({"ts": 1.0, "member": "m1", "api": "JoinGroup", "direction": "request", "member_id": "",
                       "protocols": [{"name": "cooperative-sticky", "metadata": metadata}]}) + "\n"


def test_non_hex_bytes_in_the_capture_are_a_damaged_line_with_no_rows():
    rows = decode_wire("r", "/r/wire.jsonl", [_join_request("0001"), _join_request("zz0001")])
    assert [r["line"] for r in rows.frames] == [1] and [r["line"] for r in rows.subscriptions] == [1]
    assert [(m["line"], m["problem"].split(",")[0]) for m in rows.malformed] == [(2, "metadata is not hex")]
    # Bytes that are hex but do not decode are the client's: E1 judges them.
    assert rows.subscriptions[0]["decode_error"]


def test_offsetfetch_frames_are_evidence_for_readers_not_rows():
    # The tap records OffsetFetch (what a member resumes from), decoded or not; no check reads it yet,
    # so it makes no frame row and, undecodable (a v0 frame), no damaged line either.
    fetch = json.dumps({"ts": 2.0, "member": "m1", "api": "OffsetFetch", "direction": "response",
                        "fetched": [["orders", 7, 127, 0]]}) + "\n"
    old = json.dumps({"ts": 3.0, "member": "m1", "api": "OffsetFetch", "direction": "request",
                      "undecodable": "OffsetFetch v0 is beyond the decodable v1-v10"}) + "\n"
    old_epoch = json.dumps({"ts": 4.0, "member": "m1", "api": "OffsetForLeaderEpoch", "direction": "response",
                            "undecodable": "OffsetForLeaderEpoch v1 is beyond the decodable v2-v4"}) + "\n"
    rows = decode_wire("r", "/r/wire.jsonl", [_join_request("0001"), fetch, old, old_epoch])
    assert [r["line"] for r in rows.frames] == [1] and rows.malformed == [] and rows.epoch_ends == []
