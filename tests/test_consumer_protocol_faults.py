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

All three are judged with the session's other recorded runs by one real ``conformance report``
(tests/recorded.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from recorded import unpack

pytestmark = [pytest.mark.slow]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "client-behaviour"
#: fault -> (archive, the invariant it must fail).
FAULTS = {
    "stale-epoch": ("reference-consumer-stale-epoch-rolling-restart.tar.xz", "K1"),
    "ack-unrevoked": ("reference-consumer-ack-unrevoked-rolling-restart.tar.xz", "R2"),
    "ignore-fenced": ("reference-consumer-ignore-fenced-pause.tar.xz", "R2"),
}
MEMBER = "m0-reference"


def recorded_copies(root: Path) -> dict[str, Path]:
    """The three recorded cells, as recorded (no mutant: each fault is the client's own)."""
    return {fault: unpack(FIXTURES / archive, root / fault) for fault, (archive, _inv) in FAULTS.items()}


@pytest.fixture(scope="module")
def verdicts(recorded_verdicts) -> dict[str, dict]:
    return recorded_verdicts


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


def test_ignore_fenced_also_fails_c2_citing_the_fence(verdicts):
    # The member keeps handing its old partitions' records to its application after the broker fenced
    # it: besides the overlap (R2), C2 names the fencing answer it ignored.
    result = verdicts["ignore-fenced"]["invariants"]["C2"]
    assert result["status"] == "fail", result
    assert all(f["culprit"] == MEMBER and f["evidence"]["fence_error"] in ("UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH")
               for f in result["violations"]), result["violations"]
