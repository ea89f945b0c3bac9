"""The reference consumer's faults in real cells, run with the ``conformance run`` command.

``stall-retained`` (after a rebalance in which it keeps a partition, the reference member never
fetches that partition again, while it keeps owning it, heartbeating and consuming the rest)
breaks P1 in ``rolling-restart``: every bounce of a peer is a rebalance in which the reference
keeps partitions, and the producer keeps writing to them. The same cell without the fault passes
P1 (the control: P1 raises no false alarm on a real rolling restart).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# One real cell per case and its judging: measured 97-98 s clean, 134-198 s with the fault (its `await
# drained` times out after 60 s on the stalled partitions), on two shared cores.
pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(1200)]

SEED = 20261126


def _run_cell(runs_dir: Path, clients: str) -> tuple[int, dict, str]:
    """``conformance run --scenario rolling-restart --clients CLIENTS``: (exit code, the cell's verdict,
    the reference member's name)."""
    proc = subprocess.run([sys.executable, "-m", "conformance", "run", "--scenario", "rolling-restart",
                           "--clients", clients, "--seed", str(SEED), "--runs-dir", str(runs_dir)],
                          capture_output=True, text=True, timeout=1100)
    [summary] = list(runs_dir.glob("*/summary.json"))
    cells = json.loads(summary.read_text())["cells"]
    assert len(cells) == 1, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    verdict = cells[0]
    manifest = json.loads((Path(verdict["run_dir"]) / "manifest.json").read_text())
    [reference] = [m["name"] for m in manifest["members"] if m["kind"] == "reference"]
    return proc.returncode, verdict, reference


@pytest.mark.parametrize("fault", [None, "stall-retained"])
def test_stall_retained_fails_p1_with_the_reference_as_culprit(tmp_path, fault) -> None:
    clients = "reference" + (f"/{fault}" if fault else "") + ",java,librdkafka"
    code, verdict, reference = _run_cell(tmp_path / "runs", clients)
    p1 = verdict["invariants"]["P1"]
    messages = [v["message"] for v in p1["violations"]]
    if fault:
        assert code == 1 and p1["status"] == "fail", (code, p1)
        assert {v["culprit"] for v in p1["violations"]} == {reference}, messages
        for v in p1["violations"]:
            assert v["partitions"] and v["members"] == [reference], v
            assert f"{reference} owned " in v["message"] and "but consumed nothing from it for" in v["message"], v
            assert v["evidence"]["stall_ms"] > v["evidence"]["bound_ms"], v
    else:
        assert p1["status"] == "pass" and messages == [], messages
        assert p1["allowed"] == [], p1["allowed"]


# Nightly tier: each a real rolling-restart cell whose awaits time out (4-6 min on two shared cores).
# stale-owned-partitions declares what it owned a generation earlier: E5's wire check names the
# reference first, the group never settles (V1 names the timed-out awaits), and the withheld
# partitions reach nobody (R4). skip-revoke keeps fetching what it was told to give up: two owners
# at once (R2, naming the reference), its JoinGroup leaves out what its history still holds (E5),
# and the group never settles (V1).
@pytest.mark.nightly
@pytest.mark.parametrize("fault, must_fail", [("stale-owned-partitions", ["E5", "R4", "V1"]),
                                              ("skip-revoke", ["E5", "R2", "V1"])])
def test_reference_fault_is_caught_with_the_reference_to_blame(tmp_path, fault, must_fail) -> None:
    code, verdict, reference = _run_cell(tmp_path / "runs", f"reference/{fault},java,librdkafka")
    failing = sorted(inv for inv, i in verdict["invariants"].items() if i["status"] == "fail")
    assert code == 1 and set(must_fail) <= set(failing), failing
    assert verdict["root_cause"]["culprit"] == reference, verdict["root_cause"]
    assert all(v["culprit"] == reference for v in verdict["invariants"]["E5"]["violations"])
    awaits = [v for v in verdict["invariants"]["V1"]["violations"] if v["evidence"].get("await")]
    assert awaits, verdict["invariants"]["V1"]
    if fault == "skip-revoke":   # the runner saw the reference owning partitions twice over
        assert all(reference in v["members"] for v in awaits), awaits
        assert all(reference in v["members"] for v in verdict["invariants"]["R2"]["violations"])
