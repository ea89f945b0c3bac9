"""Verdict assembly rules (pure: no Spark): unknown on a crashing check, warnings pass,
fail > unknown > malformed > pass."""

from __future__ import annotations

from conformance.pipeline.checks import CATALOG
from conformance.pipeline.verdicts import assemble

CELL = {"scenario": "s", "broker_version": "4.4.0", "seed": 3, "start_ts": 1.0, "end_ts": 2.0, "last_fault_ts": None}


def _viol(run, inv, severity=None):
    return {"run": run, "invariant": inv, "message": f"{inv} broke", "members": [], "generation": None,
            "partitions": [], "ts": 5.0, "evidence": {"severity": severity} if severity else {}}


def _assemble(results, malformed=()):
    cells = {"a": dict(CELL), "b": dict(CELL)}
    full = {inv: [] for inv in CATALOG}
    full.update(results)
    return {v["run"]: v for v in assemble(cells, {"a": ["java@4.4.0"], "b": []}, full, {}, list(malformed))}


def test_a_crashing_check_is_unknown_for_every_cell_never_pass():
    out = _assemble({"R2": RuntimeError("window spec broke on run a")})
    for v in out.values():
        assert v["invariants"]["R2"]["status"] == "unknown"
        assert "RuntimeError: window spec broke" in v["invariants"]["R2"]["error"]
        assert v["verdict"] == "unknown"


def test_fail_wins_and_warnings_pass():
    out = _assemble({"R2": RuntimeError("x"), "D1": [_viol("a", "D1")], "E3": [_viol("b", "E3", "warning")]})
    assert out["a"]["verdict"] == "fail" and out["a"]["invariants"]["D1"]["status"] == "fail"
    assert out["b"]["invariants"]["E3"]["status"] == "pass" and out["b"]["invariants"]["E3"]["violations"]
    assert out["b"]["verdict"] == "unknown"
    assert "run" not in out["a"]["invariants"]["D1"]["violations"][0]


def test_malformed_lines_make_an_otherwise_passing_cell_malformed():
    out = _assemble({}, [{"run": "b", "file": "/r/b/members/m1.jsonl", "line": 7, "problem": "not a JSON object"}])
    assert out["a"]["verdict"] == "pass"
    assert out["b"]["verdict"] == "malformed"
    assert out["b"]["malformed"] == [{"file": "/r/b/members/m1.jsonl", "line": 7, "problem": "not a JSON object"}]
