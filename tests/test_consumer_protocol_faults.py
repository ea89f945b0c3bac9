"""The faulty reference KIP-848 member fails, on recorded real runs, the invariant each fault exists for.

Each cell (broker 4.4.0, fixtures/client-behaviour/) puts m0-reference, speaking the consumer
protocol with one deliberate fault (:class:`conformance.reference.faults.ConsumerFaults`), beside
m1-java (consumer protocol) and m2-java (classic):

- ``stale-epoch`` (rolling restart): once its epoch has grown, its next heartbeat and its next
  commit carry its previous epoch. The broker fences the heartbeat (FENCED_MEMBER_EPOCH) and
  refuses the commit (STALE_MEMBER_EPOCH), so K4 (a stale commit *accepted*) holds and K1 (epochs
  only grow) names the member, once per incarnation; nothing else fails.
- ``ack-unrevoked`` (rolling restart): it acknowledges a revoke in its heartbeat but keeps
  fetching the partitions it gave up: the broker hands them on and two live members own them (R2).
- ``ignore-fenced`` (pause of m0 past its session): fenced when it resumes, it rejoins at epoch 0
  but keeps fetching what it owned and records no ``lost``: R2.

All three are judged by one real ``conformance report`` (one Spark start).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "client-behaviour"
#: fault -> (archive, the invariant it must fail).
FAULTS = {
    "stale-epoch": ("reference-consumer-stale-epoch-rolling-restart.tar.xz", "K1"),
    "ack-unrevoked": ("reference-consumer-ack-unrevoked-rolling-restart.tar.xz", "R2"),
    "ignore-fenced": ("reference-consumer-ignore-fenced-pause.tar.xz", "R2"),
}
MEMBER = "m0-reference"


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict[str, dict]:
    root = tmp_path_factory.mktemp("consumer-protocol-faults")
    dirs = {}
    for fault, (archive, _inv) in FAULTS.items():
        with tarfile.open(FIXTURES / archive) as tar:
            tar.extractall(root / fault, filter="data")
        (dirs[fault],) = (root / fault).iterdir()
    out = root / "out"
    done = subprocess.run([sys.executable, "-m", "conformance", "report", "--out", str(out), *map(str, dirs.values())],
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    by_dir = {Path(v["run_dir"]).name: v for v in json.loads((out / "pipeline" / "verdicts.json").read_text())}
    return {fault: by_dir[d.name] for fault, d in dirs.items()}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_fails_its_invariant_naming_the_reference(verdicts, fault):
    inv = FAULTS[fault][1]
    v = verdicts[fault]
    result = v["invariants"][inv]
    assert v["verdict"] == "fail" and result["status"] == "fail", (fault, result)
    assert all(MEMBER in f["members"] for f in result["violations"]), result["violations"]


def test_a_stale_epoch_fails_k1_alone_and_its_refused_commit_is_no_k4_finding(verdicts):
    v = verdicts["stale-epoch"]
    failing = {k for k, i in v["invariants"].items() if i["status"] != "pass"}
    assert failing == {"K1"}, {k: [x["message"] for x in v["invariants"][k]["violations"]] for k in failing}
    for f in v["invariants"]["K1"]["violations"]:
        assert f["culprit"] == MEMBER and f["evidence"]["sent_epoch"] == f["evidence"]["given_epoch"] - 1, f
