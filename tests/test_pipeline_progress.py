"""P1 (progress) on its stories (tests/stories/progress.py: hand-made histories with real timing, one
cell per variant), judged by real Spark with the rest of the story catalog (stories.catalog_judge).
"""

from __future__ import annotations

import pytest

from stories import catalog_judge
from stories.progress import VARIANTS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """The catalog's verdicts of P1's stories, by variant."""
    verdicts = catalog_judge(tmp_path_factory.mktemp("pipeline-catalog")).verdicts
    return {v: next(x for x in verdicts if x["run"] == f"p1-{v}") for v in VARIANTS}


def test_clean_story_passes_p1_and_every_invariant(judged) -> None:
    cell = judged["clean"]
    assert cell["invariants"]["P1"] == {"status": "pass", "violations": [], "allowed": [], "error": None}
    bad = {k: [v["message"] for v in i["violations"]] for k, i in cell["invariants"].items() if i["status"] != "pass"}
    assert bad == {} and cell["verdict"] == "pass"


def test_a_stalled_partition_fails_p1_naming_partition_owner_and_length(judged) -> None:
    p1 = judged["stalled"]["invariants"]["P1"]
    assert p1["status"] == "fail" and p1["allowed"] == []
    [v] = p1["violations"]
    assert v["partitions"] == [["t", 3]] and v["culprit"] == "m2" and v["members"] == ["m2"]
    # m2 read t-3 last at 14.91 s (offsets up to 674); the next batch was acknowledged at 15.003 s; m2 revoked
    # t-3 at 95.04 s, so every batch acknowledged until 64.84 s waited longer than the bound.
    assert v["message"] == ("m2 owned t-3 from 11.2 s but consumed nothing from it for 80.0 s from 15.0 s "
                            "(offsets 675-3169 were acknowledged by 64.8 s); bound 30.2 s (its fetch wait plus "
                            "its max poll interval)"), v["message"]
    assert v["evidence"]["bound_ms"] == 30200
    assert v["evidence"]["stall_ms"] == pytest.approx(95040 - 15003)
    assert v["evidence"]["ended_by"] == "revoked" and v["evidence"]["fault_windows"] == []


def test_a_stall_inside_a_pause_window_is_allowed(judged) -> None:
    p1 = judged["paused-long"]["invariants"]["P1"]
    assert p1["status"] == "pass" and p1["violations"] == []
    found = {(tuple(a["partitions"][0]), a["culprit"]): a for a in p1["allowed"]}
    assert set(found) == {(("t", 2), "m2"), (("t", 3), "m2")}
    for a in found.values():
        assert a["allowed_by"] == "P1/fault-window"
        assert a["evidence"]["ended_by"] == "lost" and a["evidence"]["outside_fault_windows_ms"] == 0
        assert [w["fault"] for w in a["evidence"]["fault_windows"]] == ["pause"]
        assert "consumed nothing from it for 50.0 s" in a["message"], a["message"]
        assert a["message"].endswith("; no more than the bound of it lies outside the fault windows (0.0 s in "
                                     "all): pause of m2 at 20.0 s, window to 81.0 s (heal + session "
                                     "timeout + heartbeat; seconds from the run's start)"), a["message"]


@pytest.mark.parametrize("variant", ["paused-outlived", "paused-short"])
def test_a_pause_shorter_than_the_session_opens_no_window(judged, variant) -> None:
    # Neither 5 s pause expired m2's session: the whole stall counts against the bound.
    p1 = judged[variant]["invariants"]["P1"]
    assert p1["status"] == "fail" and p1["allowed"] == []
    [v] = p1["violations"]
    assert v["partitions"] == [["t", 3]] and v["culprit"] == "m2"
    assert v["evidence"]["fault_windows"] == []
    assert v["evidence"]["outside_fault_windows_ms"] == pytest.approx(v["evidence"]["stall_ms"])
    assert "fault windows" not in v["message"], v["message"]


def test_back_to_back_windows_bound_the_total_stall(judged) -> None:
    p1 = judged["broker-twice"]["invariants"]["P1"]
    assert p1["status"] == "fail" and p1["allowed"] == []
    [v] = p1["violations"]
    assert v["partitions"] == [["t", 3]] and v["culprit"] == "m2"
    assert [w["fault"] for w in v["evidence"]["fault_windows"]] == ["broker-restart", "broker-restart"]
    # 15.003-20, 36-55 and 71-95.04 s lie outside the windows: 48 s in all, no piece above the 30.2 s bound.
    assert v["evidence"]["outside_fault_windows_ms"] == pytest.approx((20000 - 15003) + 19000 + (95040 - 71000))
    assert "; 48.0 s of it outside the fault windows (broker-restart of broker at 20.0 s" in v["message"], v["message"]


def test_a_stall_through_the_owners_own_rebalance_is_allowed(judged) -> None:
    p1 = judged["rebalancing"]["invariants"]["P1"]
    assert p1["status"] == "pass" and p1["violations"] == []
    [a] = p1["allowed"]
    assert a["allowed_by"] == "P1/rebalance" and a["partitions"] == [["t", 3]] and a["culprit"] == "m2"
    # The stall runs from 15.003 s to m2's read at 52.007 s; m2's rebalance from 20 s to 35.005 s.
    assert a["evidence"]["rebalances"] == [{"from_ts": 20000, "to_ts": 35005}]
    assert a["evidence"]["outside_rebalances_ms"] == pytest.approx(a["evidence"]["stall_ms"] - 15005)
    assert "no more than the bound of it lies outside its own rebalances (20.0-35.0 s)" in a["message"], a["message"]


def test_the_time_outside_fault_windows_is_summed_over_the_stall() -> None:
    from conformance.pipeline.checks.progress import _outside

    assert _outside(0, 100, []) == 100
    assert _outside(0, 100, [(10, 30)]) == 80                                # before and after the window
    assert _outside(0, 100, [(-5, 30), (20, 40), (60, 70), (90, 200)]) == 40  # overlapping windows merge
    assert _outside(0, 100, [(150, 200)]) == 100 == _outside(0, 100, [(-50, -10)])
    assert _outside(20003, 70020, [(20000, 81000)]) == 0


def test_an_owners_fetch_wait_comes_from_its_manifest_else_its_kind_else_the_longest() -> None:
    # P1's bound is the owner's fetch wait plus its max poll interval: a manifest written before the
    # runner recorded the wait takes its kind's, and a kind the registry does not know the longest
    # any kind has (franz-go's 5 s), so no owner is left without a bound.
    from conformance.members.kinds import member_fetch_max_wait_ms as wait

    assert wait({"kind": "java", "fetch_max_wait_ms": 250}) == 250
    assert wait({"kind": "reference"}) == 200
    assert wait({"kind": "zed-client"}) == wait({"kind": "franz-go"}) == 5000
