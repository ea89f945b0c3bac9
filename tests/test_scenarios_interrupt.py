"""Ctrl-C on ``conformance run``: the run directory stays, verdicts are partial, nothing outlives it.

Story: a run is interrupted in the middle of a cell. The suite must stop
every process it started (broker, toxiproxy, harnesses, producer), leave
the cell's manifest marked incomplete (and why), write ``summary.json`` for
the matrix, with the cell judged "incomplete", print the closing table of
what it judged, and exit 130.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _descendants(pid: int) -> set[int]:
    """Every process whose ancestry reaches ``pid`` (from /proc), alive now."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    out: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {c for c, p in parents.items() if p in frontier} - out
        out |= frontier
    return out


def _sessions_of(pids: set[int]) -> set[int]:
    return {os.getsid(p) for p in pids if Path(f"/proc/{p}").exists()}


def _alive_in_sessions(sessions: set[int]) -> list[int]:
    alive = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getsid(int(entry.name)) in sessions:
                    state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                    if state != "Z":
                        alive.append(int(entry.name))
            except (OSError, ProcessLookupError):
                continue
    return alive


def test_sigint_leaves_run_directory_and_no_processes(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance", "run", "--scenario", "crash-restart", "--clients",
         "reference,reference", "--seed", "5", "--runs-dir", str(runs)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    sessions: set[int] = set()
    deadline = time.monotonic() + 180
    manifest = None
    while time.monotonic() < deadline:
        found = list(runs.glob("*/runs/*/members/m1-reference.jsonl"))
        if found and '"assigned"' in found[0].read_text():
            manifest = found[0].parent.parent / "manifest.json"
            break
        sessions |= _sessions_of(_descendants(proc.pid))
        assert proc.poll() is None, proc.stdout.read().decode()
        time.sleep(0.3)
    assert manifest is not None, "the run never got a member assigned"
    sessions |= _sessions_of(_descendants(proc.pid))
    os.kill(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=180)
    text = out.decode()
    assert proc.returncode == 130, text
    assert "run directory:" in text and "interrupted" in text, text
    sessions.discard(os.getsid(0))
    assert _alive_in_sessions(sessions) == [], f"processes outlived the run:\n{text}"
    data = json.loads(manifest.read_text())
    assert data["complete"] is False and data["cut_short"] == "interrupted (Ctrl-C)"
    summary = json.loads((manifest.parent.parent.parent / "summary.json").read_text())
    assert summary["interrupted"] is True
    # The cell it cut short is judged on what it observed: incomplete, not failed for what only
    # its scenario's end would have shown (records still unread, the final generation).
    [cell] = summary["cells"]
    assert cell["cut_short"] == "interrupted (Ctrl-C)"
    assert cell["verdict"] == "incomplete", {k: i["violations"] for k, i in cell["invariants"].items() if i["violations"]}
