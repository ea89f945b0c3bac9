"""K1-K5 and the consumer-group rules on the hand-written stories of tests/stories/consumer.py.

The catalog test (tests/test_pipeline_invariants.py) holds each K story to failing its invariant
and each rule's story to an allowed finding beside a violating neighbour; these tests say what
the catalog does not: the stories fail nothing else, and what a consumer member adds to a
healthy group needs no exemption.
"""

from __future__ import annotations

import pytest

from stories import judged_catalog

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]


@pytest.fixture(scope="session")
def judged(tmp_path_factory):
    out, verdicts = judged_catalog(tmp_path_factory.mktemp("pipeline-catalog"))
    return {v["run"]: v for v in verdicts}


def _not_passing(cell: dict) -> dict:
    return {k: [v["message"] for v in i["violations"]] for k, i in cell["invariants"].items()
            if i["status"] != "pass" or i["violations"]}


def test_a_consumer_member_beside_classic_ones_needs_no_exemption(judged):
    # m3 joins the settled classic group by ConsumerGroupHeartbeat, gets epoch 2 and nothing, leaves.
    cell = judged["break-k-consumer-member-allowed"]
    assert cell["verdict"] == "pass" and cell["allowed"] == {}, (_not_passing(cell), cell["allowed"])


@pytest.mark.parametrize("name, inv", [("k1", "K1"), ("k2", "K2"), ("k3", "K3"), ("l1-consumer-group-gone", "L1")])
def test_each_story_fails_only_its_invariant(judged, name, inv):
    assert set(_not_passing(judged[f"break-{name}"])) == {inv}


def test_a_stale_commit_fails_k4_and_its_generation_order_is_d2s_allowed_finding(judged):
    # k4: m3's epoch-2 commit after epoch 3; D2 does not read it as a stale generation (K4 does).
    cell = judged["break-k4"]
    assert set(_not_passing(cell)) == {"K4"} and cell["allowed"] == {"D2/member-epoch": 1}
    (v,) = cell["invariants"]["K4"]["violations"]
    assert v["evidence"]["commit_epoch"] == 2 and v["evidence"]["member_epoch"] == 3 and v["partitions"] == [["t", 0]]


def test_k4_judges_a_classic_members_commit_against_its_bridged_epoch(judged):
    # k4-classic: classic m2's generation-3 commit of t-0 (never its) after its bridged epoch 6 fails K4;
    # k4-classic-held-allowed: the same commit of t-2, held since generation 3, is KIP-1251's (broker
    # 4.4.0): K4 holds; k4-classic-before-kip1251: that commit on broker 4.2.2 fails K4.
    for name, tp in (("k4-classic", ["t", 0]), ("k4-classic-before-kip1251", ["t", 2])):
        cell = judged[f"break-{name}"]
        assert set(_not_passing(cell)) == {"K4"} and cell["allowed"]["D2/member-epoch"] == 1, _not_passing(cell)
        (v,) = cell["invariants"]["K4"]["violations"]
        assert v["partitions"] == [tp] and v["evidence"]["classic"] and v["evidence"]["member_epoch"] == 6, v
    cell = judged["break-k4-classic-held-allowed"]
    assert cell["verdict"] == "pass" and cell["allowed"]["D2/member-epoch"] == 1, _not_passing(cell)


def test_a_fence_starts_a_new_stint(judged):
    # k1: after FENCED_MEMBER_EPOCH m3 rejoins at epoch 0 and gets epoch 4: one finding, the stale request.
    (v,) = judged["break-k1"]["invariants"]["K1"]["violations"]
    assert v["culprit"] == "m3" and v["evidence"]["sent_epoch"] == 2 and v["evidence"]["given_epoch"] == 3


def test_the_bridged_generation_is_allowed_and_nothing_else_is_needed(judged):
    # m2 rejoins through the bridge at 25 s; the run ends with m3 still in: a consumer group.
    cell = judged["break-l1-consumer-group-allowed"]
    assert cell["verdict"] == "pass" and cell["allowed"] == {"L1/consumer-group": 1, "L2/consumer-group": 1,
                                                              "L3/consumer-group": 1}, _not_passing(cell)
    (f,) = cell["invariants"]["L1"]["allowed"]
    assert f["generation"] == 6 and f["evidence"]["consumer_members"] == ["m3"]
    # The final state no leader planned is said, not skipped silently: one finding each for L2 and L3.
    for inv in ("L2", "L3"):
        (f,) = cell["invariants"][inv]["allowed"]
        assert f["evidence"] == {"bridged_generation": 6, "last_classic_generation": 3, "consumer_members": ["m3"]}, f


def test_k3_bound_is_the_rebalance_timeout_plus_a_heartbeat(judged):
    (v,) = judged["break-k3"]["invariants"]["K3"]["violations"]
    assert v["evidence"]["bound_ms"] == 30000 + 1000 and v["evidence"]["last_reported"] == []


@pytest.mark.parametrize("broker, recorded, policy", [
    ("4.4.0", "disabled", "disabled"), ("4.4.0", None, "bidirectional"), ("4.0.2", None, "bidirectional"),
    ("3.9.2", None, "disabled"), ("3.9.2", "upgrade", "upgrade"), ("3.8.1", "bidirectional", "bidirectional"),
    ("3.7.2", "bidirectional", "disabled"), ("unknown", "disabled", None),
])
def test_k5_judges_against_the_brokers_effective_policy(broker, recorded, policy):
    # 3.7 has no online migration whatever the setting; 3.8-3.9 default to disabled, 4.0+ to
    # bidirectional; an unknown broker version is not judged.
    from conformance.pipeline.checks.consumer import migration_policy
    assert migration_policy(broker, recorded) == policy
