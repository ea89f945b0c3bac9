"""Hunt and shrink on real cells, with the ``conformance`` commands (nightly tier: several real cells
and judges each).

The reference consumer's deliberate fault ``leader-reassigns-owned`` (as leader, it gives away
partitions their owners validly declared) breaks R1 whenever it leads a cooperative rebalance.
A hunt over it beside Java, librdkafka and Sarama must find that R1 signature with the reference as
culprit; a shrink of the first cell that showed it must replay the executed schedule, keep the
culprit, try smaller candidates (each replayed, each in its report) and end with a scenario that
still fails R1 in at least 2 of its replays, no bigger than the cell it started from.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.scenarios.parse import load_scenario

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.nightly, pytest.mark.timeout(3600)]

CLIENTS = "reference/leader-reassigns-owned,java,librdkafka,sarama"


def _conformance(*argv: str, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance", *argv], capture_output=True, text=True,
                          timeout=timeout)


def test_a_hunt_finds_the_r1_signature_and_shrink_keeps_it(tmp_path: Path) -> None:
    hunt = _conformance("hunt", "--clients", CLIENTS, "--scenario", "rolling-restart", "--cells", "2", "--batch", "2",
                        "--seed", "5", "--runs-dir", str(tmp_path / "hunt"), timeout=1500)
    assert hunt.returncode == 1, hunt.stderr[-3000:]
    [table] = list((tmp_path / "hunt").glob("*-hunt-*/hunt.json"))
    data = json.loads(table.read_text())
    r1 = [s for s in data["signatures"] if s["invariant"] == "R1"
          and s["culprit"] == "reference@0.1.0/leader-reassigns-owned" and s["known_issue"] is None]
    assert r1 and data["cells"] == 2, data["signatures"]
    first = Path(r1[0]["first_run_dir"])

    shrink = _conformance("shrink", str(first), "--check", "R1", "--candidates", "3",
                          "--runs-dir", str(tmp_path / "shrink"), timeout=2400)
    assert shrink.returncode == 0, (shrink.stdout[-3000:], shrink.stderr[-3000:])
    [report] = list((tmp_path / "shrink").glob("*-shrink-*/shrink.json"))
    result = json.loads(report.read_text())
    tried = result["tried"]
    assert tried[0]["how"] == "the executed schedule" and tried[0]["still_fails"], tried[0]
    assert all(t["tries"] == len(t["replays"]) >= 2 for t in tried), tried   # nothing unreplayed
    assert int(result["shrunk_failed"].split(" of ")[0]) >= 2
    shrunk = load_scenario(report.parent / "shrunk.scenario")
    original = load_scenario(report.parent / "candidates" / "00.scenario")
    assert shrunk.fault_count() <= original.fault_count()
    assert "reference@0.1.0/leader-reassigns-owned" in result["replay"]
    assert "R1" in (report.parent / "draft.md").read_text()
