"""C1, C2 and P1 fail on real runs of the reference member built to break them, and only them.

Three recorded cells (broker 4.4.0, fixtures/client-behaviour/), each m0-reference with one fault
beside m1-java and m2-librdkafka (classic, cooperative-sticky):

- ``consume-revoked`` (rolling restart): its callbacks are right (it commits, records ``revoked``
  and declares only its assignment) but it goes on handing the revoked partitions' records to its
  application while java or librdkafka owns them: C1, naming m0 and the owner it harmed, and D3,
  since it re-reads records their new owner read without owning them (rule D3/rebalance excuses
  only a re-reader that owns the partition).
- ``consume-fenced`` (m0 paused past its session): resumed, it is answered UNKNOWN_MEMBER_ID and
  goes on handing records of everything it held to its application for 3 s before it records
  ``lost``: its history owns them meanwhile, so C1 holds and C2 fails, citing the wire answer.
- ``stall-retained`` (rolling restart, ``conformance run --seed 20261126``; the cell
  tests/test_reference_faults_e2e.py runs live in the nightly tier): after a rebalance in which
  it keeps a partition, m0 never fetches it again while owning it and consuming the rest. P1 fails
  on each kept partition, and D1 on the records nobody consumed, both naming m0 alone; V1 reports
  the runner's drain that timed out, which names no member and so marks no pair.

All three are judged with the session's other recorded runs by one real ``conformance report``
(tests/recorded.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from recorded import unpack

pytestmark = [pytest.mark.slow]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "client-behaviour"
#: fault -> (archive, the check built for it, every invariant it fails).
FAULTS = {
    "consume-revoked": ("reference-consume-revoked-rolling-restart.tar.xz", "C1", {"C1", "D3"}),
    "consume-fenced": ("reference-consume-fenced-pause.tar.xz", "C2", {"C2"}),
    "stall-retained": ("reference-stall-retained-rolling-restart.tar.xz", "P1", {"P1", "D1", "V1"}),
}
MEMBER = "m0-reference"


def recorded_copies(root: Path) -> dict[str, Path]:
    """The two recorded cells, as recorded (each fault is the member's own)."""
    return {fault: unpack(FIXTURES / archive, root / fault) for fault, (archive, _inv, _all) in FAULTS.items()}


@pytest.fixture(scope="module")
def verdicts(recorded_verdicts) -> dict[str, dict]:
    return recorded_verdicts


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_fails_its_checks_blaming_the_reference_alone(verdicts, fault):
    _archive, inv, expected = FAULTS[fault]
    v = verdicts[fault]
    failing = {k for k, i in v["invariants"].items() if i["status"] != "pass"}
    assert inv in failing and failing == expected, {k: [x["message"] for x in v["invariants"][k]["violations"]][:3]
                                                    for k in failing}
    for k in failing:
        for f in v["invariants"][k]["violations"]:
            if k == "V1" and f["evidence"].get("await"):   # the runner's wait timed out: no member to blame
                assert f["culprit"] is None and f["members"] == [], f
            else:
                assert f["culprit"] == MEMBER, f


def test_c1_names_the_owner_the_zombie_harmed(verdicts):
    for f in verdicts["consume-revoked"]["invariants"]["C1"]["violations"]:
        assert f["evidence"]["ownership_ended_by"] == "revoked", f
        assert f["evidence"]["harmed"] and set(f["evidence"]["harmed"]) <= {"m1-java", "m2-librdkafka"}, f
        assert "owned it meanwhile" in f["message"], f["message"]


def test_c2_cites_the_fencing_answer_on_the_wire(verdicts):
    (f,) = verdicts["consume-fenced"]["invariants"]["C2"]["violations"]
    assert f["evidence"]["fence_error"] == "UNKNOWN_MEMBER_ID", f
    assert f["evidence"]["first_poll_ts"] > f["evidence"]["fence_ts"], f
    assert f"wire.jsonl:{f['evidence']['fence_line']}" in f["message"], f["message"]


def test_p1_names_each_kept_partition_the_stalled_member_never_read_again(verdicts):
    # m0 kept partitions through the first bounce and fetched none of them again: each P1 finding is
    # one of them, with a stall longer than m0's own bound (fetch wait plus max poll interval).
    findings = verdicts["stall-retained"]["invariants"]["P1"]["violations"]
    assert findings
    for f in findings:
        assert len(f["partitions"]) == 1 and f["members"] == [MEMBER], f
        assert f"{MEMBER} owned " in f["message"] and "but consumed nothing from it for" in f["message"], f["message"]
        assert f["evidence"]["stall_ms"] > f["evidence"]["bound_ms"], f
    stalled = {tuple(p) for f in findings for p in f["partitions"]}
    unread = {tuple(p) for f in verdicts["stall-retained"]["invariants"]["D1"]["violations"] for p in f["partitions"]}
    assert unread <= stalled, (unread, stalled)
