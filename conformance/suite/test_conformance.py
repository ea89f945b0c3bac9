"""The conformance tests: one per cell, judged by the pipeline, reported to allure.

Run with ``pytest --pyargs conformance.suite --clients reference,java --scenario crash-restart``.
A failing test's message starts with the finding to read first, lists every
violated invariant with its evidence and ends with the command that reproduces
the run. A cell whose only failures are known client bugs is an expected
failure (xfail) naming their references.
"""

from __future__ import annotations

import json
from pathlib import Path

import allure
import pytest

from conformance import config
from conformance.pipeline.matrix import cell_passed
from conformance.rundir import RunDir
from conformance.scenarios.runner import Cell, CellRun, reproduce_command


def _attach(path: Path, name: str) -> None:
    if path.exists() and path.stat().st_size:
        allure.attach.file(str(path), name=name, attachment_type=allure.attachment_type.TEXT)


@pytest.mark.e2e
def test_cell(conformance_cell: Cell, request: pytest.FixtureRequest) -> None:
    from conformance.pipeline import judge

    cell = conformance_cell
    runs = Path(request.config.getoption("runs_dir") or config.RUNS_DIR)
    rd = RunDir.create(runs, label=cell.scenario.name)
    allure.dynamic.title(f"{cell.scenario.name}: {', '.join(str(s) for s in cell.specs)}")
    for key, value in (("scenario", cell.scenario.name), ("members", ",".join(map(str, cell.specs))),
                       ("broker", cell.broker), ("seed", str(cell.seed))):
        allure.dynamic.parameter(key, value)
    try:
        CellRun(cell, rd, phase_hook=lambda name: allure.step(f"phase {name}")).execute()
    finally:
        for history in sorted(rd.members_dir.glob("*.jsonl")):
            _attach(history, f"history {history.stem}")
        _attach(rd.wire, "wire capture")
        _attach(rd.nemesis, "nemesis log")
    with allure.step("judge"):
        verdict = judge([rd.path], rd.tables, spark_master=request.config.getoption("spark_master"))[0]
        allure.attach(json.dumps(verdict, indent=2), name="verdict", attachment_type=allure.attachment_type.JSON)
    if verdict.get("verdict") == "known-issue":
        known = sorted({v["known_issue"]["reference"] for res in verdict["invariants"].values()
                        for v in res.get("violations", []) if v.get("known_issue")})
        pytest.xfail(f"known issue(s): {', '.join(known)}; run directory: {rd.path}")
    if not cell_passed(verdict):
        lines = [f"read first: {verdict['root_cause']['message']}"] if verdict.get("root_cause") else []
        lines += [f"{inv} {res['status']}: " + "; ".join(v["message"] for v in res.get("violations", [])[:3])
                 + (f" [error: {res['error']}]" if res.get("error") else "")
                 for inv, res in sorted(verdict["invariants"].items()) if res["status"] != "pass"]
        lines += [f"malformed {m['file']}:{m['line']}: {m['problem']}" for m in verdict.get("malformed", [])[:5]]
        pytest.fail("\n".join(lines + [f"run directory: {rd.path}", f"reproduce: {reproduce_command(cell)}"]),
                    pytrace=False)
