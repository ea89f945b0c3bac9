"""The judge on recorded KIP-848 groups (fixtures/client-behaviour/), and the bugs it must catch there.

``java-4.4.0-librdkafka-2.16.1-consumer-rolling-restart``: a rolling restart (broker 4.4.0) of
m0-java and m1-librdkafka speaking the consumer protocol beside classic m2-java and m3-sarama.
The group is a consumer group from m0's first admitted heartbeat to the end; the classic members
go through the broker's bridge (JoinGroup responses with no leader, SyncGroups without
assignments; their generations are member epochs) and m0's OffsetCommit v10 names the topic by
id. Before the judge knew consumer groups it failed this cell twice over: L1 (no leader synced)
and D2 (epoch 2 "after generation 5 had formed"), and findings named <topic-id-hex>-0. Now the
cell passes: the bridged generations are L1/consumer-group findings, the epoch-ordered commits
D2/member-epoch findings, and K1-K5 and R2 hold.

``...-rolling-restart-classic-first``: the same mix with the classic members first (java and
sarama lead classic generations 1-2), so the group starts classic and converts when m2-java
(consumer) joins. In its classic period the classic bug classes are still caught: a leader that
sends no SyncGroup assignments fails L1, a commit from the generation before the current one that
the broker accepts fails D2.

``reference-java-librdkafka-4.4.0-refused-migration``: the ``refused-migration`` scenario (broker
4.4.0, ``migration-policy=disabled``) with the issue's group: the classic group of six members
started, then m1-reference, m2-java and m3-librdkafka were bounced to the consumer protocol one
at a time. The broker refused each one's join with GROUP_ID_NOT_FOUND ("Cannot upgrade classic
group ... because online upgrade is disabled") and the group stayed classic; each of the three
stopped on it as a fatal error (librdkafka 2.16.1 raises it as ``_FATAL``), and the three classic
members took their partitions. K5 holds; each fatal stop is a V1/migration-refused finding.

``sarama-1.61.1-reference-4.4.0-custom-assignor-upgrade``: the ``custom-assignor-upgrade`` scenario
(broker 4.4.0, ``migration-policy=bidirectional``, every member on the sticky assignor) with
m0-sarama and m1-reference. Once m1 left for its bounce, Sarama led alone and its sticky
assignment carried userData; the broker refused m1's consumer-protocol join with GROUP_ID_NOT_FOUND
("an unsupported custom assignor is in use", KAFKA-18134) and m1 stopped on it. K5 holds: the
policy allows the upgrade, the userData forbids it.

``reference-librdkafka-java-4.4.0-refused-downgrade``: the ``refused-downgrade`` scenario (broker
4.4.0, ``migration-policy=disabled``, seed 38): m0-reference and m1-librdkafka on the consumer
protocol made the group a consumer group, then classic m2-java joined. The broker refused its
JoinGroup with INCONSISTENT_GROUP_PROTOCOL ("Cannot join the consumer group ... with the classic
protocol because the group migration is disabled", KAFKA-20640) and m2-java stopped on it (an
InconsistentGroupProtocolException from poll, exit 3). K5 holds; the stop is a
V1/migration-refused finding.

``reference-java-4.4.0-consumer-group-pause``: ``fixtures/client-behaviour/consumer-group-pause.scenario``
(broker 4.4.0, seed 1): m0-reference and m1-java on the consumer protocol, m2-java classic behind
the bridge; m1, then m2, is paused past its session. The broker tells a removed member only when it
comes back, so each paused member still records partitions owned that the broker has handed to the
others (by ConsumerGroupHeartbeat, and to m2 by the bridge's SyncGroup): four overlaps, each an
R2/fault-window finding whose removal is that handover. (Judged before the rule knew handovers: an
R2 failure on the mixed-steady cells where a paused member was in a consumer group.)

K4 judges the classic members' commits in the consumer group too (``D2/member-epoch`` leaves them to
it): in the mixed run none of the accepted classic commits is behind its member's epoch. Its neighbour
(:func:`conformance.mutate.bridged_held_commit`): m3-sarama's accepted commit at epoch 5 is sent from
generation 4, since which its SyncGroup answers held every partition of it; broker 4.4.0 accepts that
(KIP-1251: the bridge validates a classic member's commit as a consumer member's), so K4 holds, and the
same copy recorded as broker 4.2.2 (before KIP-1251) fails K4.

``reference-java-librdkafka-sarama-4.4.0-migrate-to-consumer``: the ``migrate-to-consumer`` scenario
(broker 4.4.0, seed 3) with the CI's group (m0-reference and m4-sarama classic, m1-reference, m2-java
and m3-librdkafka bounced onto the consumer protocol). Classic m0-reference sent seven commits that the
broker's bridge accepted from the generation before its epoch, 6-77 ms after the JoinGroup answer that
gave it the new one, of partitions it held since before: KIP-1251's commits, the false alarm that had
K4's first judgement of classic members reverted. The cell passes; recorded as broker 4.2.2 (before
KIP-1251) the same commits fail K4.

``...-migrate-to-consumer-seed-1``: the same scenario and group, seed 1. In teardown, after every
consumer member had left, the broker still answered m4-sarama's JoinGroup as the bridge (no leader,
no members; generation 13): the leaderless answer is the wire's own evidence of the bridge, after the
group's first consumer period, so L1/consumer-group allows it (the classic-leaderless mutant: not
before that period).

Mutants of the recorded runs (:data:`conformance.mutate.CONSUMER_PROTOCOL_MUTATIONS` on the mixed
run, :data:`conformance.mutate.MIGRATION_MUTATIONS` on the classic-first and the refused runs;
real frames and timing, one edit each) must each fail the invariant they name. All copies are
judged by the session's one real ``conformance report`` (tests/recorded.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.mutate import (
    CONSUMER_PROTOCOL_MUTATIONS,
    MIGRATION_MUTATIONS,
    Mutation,
    RunEdit,
    bridged_held_commit,
    mutate,
)
from recorded import TEST_TIMEOUT, copy_run, unpack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(TEST_TIMEOUT)]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "client-behaviour"
MIXED = FIXTURES / "java-4.4.0-librdkafka-2.16.1-consumer-rolling-restart.tar.xz"
CLASSIC_FIRST = FIXTURES / "java-4.4.0-librdkafka-2.16.1-consumer-rolling-restart-classic-first.tar.xz"
REFUSED = FIXTURES / "reference-java-librdkafka-4.4.0-refused-migration.tar.xz"
CUSTOM_ASSIGNOR = FIXTURES / "sarama-1.61.1-reference-4.4.0-custom-assignor-upgrade.tar.xz"
REFUSED_DOWNGRADE = FIXTURES / "reference-librdkafka-java-4.4.0-refused-downgrade.tar.xz"
PAUSED = FIXTURES / "reference-java-4.4.0-consumer-group-pause.tar.xz"
MIGRATED = FIXTURES / "reference-java-librdkafka-sarama-4.4.0-migrate-to-consumer.tar.xz"
MIGRATED_SEED_1 = FIXTURES / "reference-java-librdkafka-sarama-4.4.0-migrate-to-consumer-seed-1.tar.xz"
#: The recorded run a mutation edits (by copy name), where it is not the mixed run.
BASE = {"handed-over-after-heard": "paused", "upgrade-despite-policy": "classic-first",
        "upgrade-despite-userdata": "classic-first",
                  "refusal-despite-policy": "refused", "refusal-without-userdata": "custom-assignor",
                  "classic-refusal-despite-policy": "refused-downgrade"}


def _classic_leaders(run: RunEdit) -> list[tuple[int, dict, int]]:
    """(generation, leader's SyncGroup request, its index) of the classic generations before the group
    became a consumer group: a JoinGroup response naming a leader, before the first admitted heartbeat."""
    first_cgh = min(f["ts"] for f in run.wire if f.get("api") == "ConsumerGroupHeartbeat"
                    and f.get("direction") == "response" and (f.get("member_epoch") or 0) > 0
                    and (f.get("error_code") or 0) == 0)
    led = {f["generation"] for f in run.wire if f.get("api") == "JoinGroup" and f.get("direction") == "response"
           and f.get("leader") and (f.get("error_code") or 0) == 0 and f["ts"] < first_cgh}
    return [(f["generation"], f, i) for i, f in enumerate(run.wire) if f.get("api") == "SyncGroup"
            and f.get("direction") == "request" and f.get("assignments") and f.get("generation") in led]


def _classic_nosync(run: RunEdit) -> str:
    """The first classic generation's leader sends its SyncGroup without assignments."""
    gen, sync, i = _classic_leaders(run)[0]
    sync["assignments"] = []
    return f"{sync['member']} sends no assignments for generation {gen} (wire line {i + 1})"


def _classic_stale_commit(run: RunEdit) -> str:
    """A classic member's accepted commit, sent after the second classic generation formed, carries
    the first one's generation (request and response)."""
    (g1, _, _), (g2, sync, _) = _classic_leaders(run)[:2]
    for i, f in enumerate(run.wire):
        if f.get("api") == "OffsetCommit" and f.get("direction") == "request" and f.get("generation") == g2 \
                and f["ts"] > sync["ts"]:
            j = run.response_of(i)
            if j is not None and (run.wire[j].get("error_code") or 0) == 0:
                f["generation"] = run.wire[j]["generation"] = g1
                return f"{f['member']} commits with generation {g1} after {g2} formed (wire line {i + 1})"
    raise AssertionError("the recorded classic period has no accepted commit of its second generation")


def _classic_leaderless(run: RunEdit) -> str:
    """The first classic generation's JoinGroup responses name no leader, and its leader sends its
    SyncGroup without assignments: a leaderless answer before the group was ever a consumer group is
    no bridge's (L1/consumer-group must not excuse it)."""
    gen, sync, i = _classic_leaders(run)[0]
    sync["assignments"] = []
    for f in run.wire:
        if f.get("api") == "JoinGroup" and f.get("direction") == "response" and f.get("generation") == gen:
            f["leader"] = ""
    return f"generation {gen}'s JoinGroup responses name no leader and {sync['member']} syncs nothing (line {i + 1})"


CLASSIC_MUTANTS = {"classic-nosync": ("L1", _classic_nosync), "classic-stale-commit": ("D2", _classic_stale_commit),
                   "classic-leaderless": ("L1", _classic_leaderless)}


#: What each mutant's edit did: (invariant it must fail, culprit or None, the edit's detail), filled
#: by recorded_copies for the failure messages.
DETAILS: dict[str, tuple[str, str | None, str]] = {}


def recorded_copies(root: Path) -> dict[str, Path]:
    """The two recorded runs and their mutants (the module docstring tells each story)."""
    mixed = unpack(MIXED, root / "mixed")
    classic_first = unpack(CLASSIC_FIRST, root / "classic-first")
    refused = unpack(REFUSED, root / "refused")
    custom = unpack(CUSTOM_ASSIGNOR, root / "custom-assignor")
    refused_downgrade = unpack(REFUSED_DOWNGRADE, root / "refused-downgrade")
    paused = unpack(PAUSED, root / "paused")
    migrated = unpack(MIGRATED, root / "migrated")
    migrated_seed_1 = unpack(MIGRATED_SEED_1, root / "migrated-seed-1")
    runs = root / "runs"
    originals = {"mixed": mixed, "classic-first": classic_first, "refused": refused, "custom-assignor": custom,
                 "refused-downgrade": refused_downgrade, "paused": paused, "migrated": migrated,
                 "migrated-seed-1": migrated_seed_1}
    dirs = {name: copy_run(run, runs / name) for name, run in originals.items()}
    for m in CONSUMER_PROTOCOL_MUTATIONS + MIGRATION_MUTATIONS:
        made = mutate(originals[BASE.get(m.name, "mixed")], m, runs / m.name)
        dirs[m.name] = made.path
        DETAILS[m.name] = (m.invariant, made.culprit, made.detail)
    for name, (inv, edit) in CLASSIC_MUTANTS.items():
        run = RunEdit.load(copy_run(classic_first, runs / name))
        DETAILS[name] = (inv, None, edit(run))
        run.manifest["run_id"] += f"~{name}"
        run.save()
        dirs[name] = runs / name
    # K4's neighbour: a classic member's KIP-1251 commit, accepted on 4.4.0; the same copy as broker 4.2.2.
    held = mutate(mixed, Mutation("bridged-held-commit", "K4", bridged_held_commit), runs / "bridged-held-commit")
    dirs["bridged-held-commit"] = held.path
    DETAILS["bridged-held-commit"] = ("K4", held.culprit, held.detail)
    run = RunEdit.load(copy_run(held.path, runs / "bridged-held-commit-4.2.2"))
    run.manifest["broker_version"] = "4.2.2"
    run.manifest["run_id"] += "~4.2.2"
    run.save()
    dirs["bridged-held-commit-4.2.2"] = runs / "bridged-held-commit-4.2.2"
    run = RunEdit.load(copy_run(migrated, runs / "migrated-4.2.2"))
    run.manifest["broker_version"] = "4.2.2"
    run.manifest["run_id"] += "~4.2.2"
    run.save()
    dirs["migrated-4.2.2"] = runs / "migrated-4.2.2"
    # V1/migration-refused must not excuse a member that was admitted: m2-java's refused join is
    # answered with an epoch instead, and the member still stops on its fatal error.
    run = RunEdit.load(copy_run(refused, runs / "refused-then-admitted"))
    (answer,) = [f for f in run.wire if f.get("api") == "ConsumerGroupHeartbeat" and f.get("direction") == "response"
                 and f["member"] == "m2-java"]
    answer.update(error_code=0, error_message=None, member_epoch=3, generation=3)
    run.manifest["run_id"] += "~refused-then-admitted"
    run.save()
    dirs["refused-then-admitted"] = runs / "refused-then-admitted"
    return dirs


@pytest.fixture(scope="module")
def judged(recorded_verdicts) -> dict:
    """The verdicts by copy name, and what each mutant's edit did."""
    return {"verdicts": recorded_verdicts, "details": DETAILS}


def _failing(v: dict) -> dict:
    return {k: [x["message"] for x in i["violations"]] for k, i in v["invariants"].items()
            if i["status"] != "pass" or i["violations"]}


@pytest.mark.parametrize("name", ["mixed", "classic-first"])
def test_a_recorded_mixed_group_passes_with_its_consumer_group_periods_reported(judged, name):
    v = judged["verdicts"][name]
    assert v["verdict"] == "pass" and v["malformed"] == [], (_failing(v), v["malformed"][:3])
    # What the classic checks do not judge in the consumer group is shown, named, never dropped.
    assert v["allowed"].get("L1/consumer-group", 0) > 0, v["allowed"]
    assert set(v["allowed"]) <= {"L1/consumer-group", "D2/member-epoch", "L2/consumer-group", "L3/consumer-group"}, \
        v["allowed"]
    for inv in ("K1", "K2", "K3", "K4", "K5", "R2"):
        assert v["invariants"][inv]["status"] == "pass"
    # Topic ids are named: no finding names a partition by its id.
    for inv in v["invariants"].values():
        for f in inv["violations"] + inv["allowed"]:
            assert all(p[0] == "orders" for p in f["partitions"]), f


def test_a_paused_member_of_a_consumer_group_loses_its_partitions_by_handover(judged):
    # The rule's allowed neighbour of handed-over-after-heard, on the real run: each overlap is kept by
    # the paused member, and its removal is the broker handing the partition to the other owner.
    v = judged["verdicts"]["paused"]
    assert v["verdict"] == "pass" and v["malformed"] == [], (_failing(v), v["malformed"][:3])
    r2 = v["invariants"]["R2"]["allowed"]
    assert sorted(f["evidence"]["kept_by"] for f in r2) == ["m1-java", "m1-java", "m2-java", "m2-java"], r2
    how = sorted(f["evidence"]["removed_by"].split(" (")[0] for f in r2)
    assert how == ["the broker gave it to m0-reference on ConsumerGroupHeartbeat"] * 2 + [
        "the broker gave it to m1-java on ConsumerGroupHeartbeat", "the broker gave it to m2-java on SyncGroup"], how


def test_a_leaderless_join_after_the_last_consumer_member_left_is_the_bridge(judged):
    # migrate-to-consumer, seed 1: in teardown every consumer member has left, yet the broker answers
    # m4-sarama's JoinGroup of generation 13 with no leader and no members (the group is still a consumer
    # group), then REBALANCE_IN_PROGRESS to its SyncGroup as the runner stops it. Was an L1 failure
    # ("leader None of generation 13 sent no SyncGroup assignments"); the wire's leaderless answer is
    # the bridge's, after the group's first consumer period (classic-leaderless: not before it).
    v = judged["verdicts"]["migrated-seed-1"]
    assert v["verdict"] == "pass" and v["malformed"] == [], (_failing(v), v["malformed"][:3])
    bridged = {f["generation"]: f["evidence"]["consumer_members"] for f in v["invariants"]["L1"]["allowed"]}
    assert bridged[13] == [], bridged
    assert all(members for gen, members in bridged.items() if gen != 13), bridged


def test_a_refused_upgrade_keeps_the_group_classic_and_each_refused_member_stop_is_allowed(judged):
    v = judged["verdicts"]["refused"]
    assert v["verdict"] == "pass" and v["malformed"] == [], (_failing(v), v["malformed"][:3])
    assert v["invariants"]["K5"]["status"] == "pass"
    # The three members the broker refused stopped on GROUP_ID_NOT_FOUND: named, allowed, never dropped.
    assert v["allowed"] == {"V1/migration-refused": 3}, v["allowed"]
    stopped = {f["culprit"]: f["evidence"] for f in v["invariants"]["V1"]["allowed"]}
    assert set(stopped) == {"m1-reference", "m2-java", "m3-librdkafka"}, stopped
    assert all("online upgrade is disabled" in e["refusal"] for e in stopped.values()), stopped


def test_a_classic_join_refused_by_the_disabled_policy_is_due_and_its_stop_allowed(judged):
    # The other direction: the consumer group refuses classic m2-java under migration-policy=disabled;
    # the broker did what the policy says (K5 holds) and m2-java's stop is named, allowed, never dropped.
    v = judged["verdicts"]["refused-downgrade"]
    assert v["verdict"] == "pass" and v["malformed"] == [], (_failing(v), v["malformed"][:3])
    assert v["invariants"]["K5"]["status"] == "pass"
    assert v["allowed"] == {"V1/migration-refused": 1}, v["allowed"]
    [stop] = v["invariants"]["V1"]["allowed"]
    assert stop["culprit"] == "m2-java" and stop["evidence"]["refused_error"] == "INCONSISTENT_GROUP_PROTOCOL", stop


def test_an_upgrade_refused_for_userdata_is_due(judged):
    v = judged["verdicts"]["custom-assignor"]
    assert v["verdict"] == "pass" and v["malformed"] == [], (_failing(v), v["malformed"][:3])
    assert v["invariants"]["K5"]["status"] == "pass"
    [stop] = v["invariants"]["V1"]["allowed"]
    assert stop["culprit"] == "m1-reference" and "unsupported custom assignor" in stop["evidence"]["refusal"], stop


def test_a_member_admitted_before_its_fatal_stop_is_not_excused(judged):
    # The rule's neighbour on the real run: the same fatal stop after an admitted join is a V1 violation.
    v1 = judged["verdicts"]["refused-then-admitted"]["invariants"]["V1"]
    assert [f["culprit"] for f in v1["violations"]] == ["m2-java"], v1
    assert sorted(f["culprit"] for f in v1["allowed"]) == ["m1-reference", "m3-librdkafka"], v1["allowed"]


@pytest.mark.parametrize("name", [m.name for m in CONSUMER_PROTOCOL_MUTATIONS + MIGRATION_MUTATIONS]
                         + sorted(CLASSIC_MUTANTS))
def test_each_mutant_fails_the_invariant_it_plays(judged, name):
    inv, culprit, detail = judged["details"][name]
    v = judged["verdicts"][name]
    result = v["invariants"][inv]
    assert result["status"] == "fail", (detail, _failing(v))
    if culprit is not None and inv != "R2":
        assert any(culprit in f["members"] for f in result["violations"]), (detail, result["violations"])


def test_the_classic_mutants_fail_in_the_classic_period_not_by_a_rule(judged):
    for name, (inv, _edit) in CLASSIC_MUTANTS.items():
        result = judged["verdicts"][name]["invariants"][inv]
        assert [f for f in result["violations"] if f["allowed_by"] is None], (name, result)


def test_a_classic_members_commit_from_an_epoch_it_held_its_partitions_since_is_kip1251s(judged):
    # m3-sarama (classic) commits from generation 4 at epoch 5, every partition held since 4: broker
    # 4.4.0 accepts it (KIP-1251 covers the bridge's classic members), so K4 holds and the cell passes;
    # D2's generation order calls it stale and D2/member-epoch names K4 as its judge.
    _inv, culprit, detail = judged["details"]["bridged-held-commit"]
    v = judged["verdicts"]["bridged-held-commit"]
    assert v["verdict"] == "pass" and v["invariants"]["K4"]["status"] == "pass", (detail, _failing(v))
    excused = [f for f in v["invariants"]["D2"]["allowed"] if culprit in f["members"]]
    assert any("JoinGroup answer through the broker's bridge" in f["message"] for f in excused), excused
    # Before KIP-1251 (broker 4.2.2) the bridge must accept only the member's epoch: the same commit fails K4.
    k4 = judged["verdicts"]["bridged-held-commit-4.2.2"]["invariants"]["K4"]
    classic = [f for f in k4["violations"] if f["evidence"].get("classic")]
    assert k4["status"] == "fail" and [f["members"] for f in classic] == [[culprit]], (detail, k4["violations"])
    assert classic[0]["evidence"]["commit_epoch"] < classic[0]["evidence"]["member_epoch"], classic


def test_the_bridged_stale_commit_was_excused_by_d2_alone(judged):
    # The mutant's stale classic commit is one more D2/member-epoch finding than the original's (the old
    # judgement stopped there); K4 now fails it, naming the member and its JoinGroup answer.
    inv, culprit, detail = judged["details"]["bridged-stale-commit"]
    v, original = judged["verdicts"]["bridged-stale-commit"], judged["verdicts"]["mixed"]
    assert v["allowed"]["D2/member-epoch"] == original["allowed"]["D2/member-epoch"] + 1, (v["allowed"], detail)
    [f] = v["invariants"]["K4"]["violations"]
    assert f["members"] == [culprit] and f["evidence"]["classic"] and f["evidence"]["join_wire_line"], f


def test_a_real_classic_members_kip1251_commits_pass_and_fail_before_kip1251(judged):
    # The recorded migration: m0-reference (classic) committed from the generation before its bridged
    # epoch, just after the JoinGroup answer that moved it, partitions it held since before. Broker 4.4.0
    # accepted them and K4 holds (KIP-1251); the same run as broker 4.2.2 fails K4 on exactly those.
    v = judged["verdicts"]["migrated"]
    assert v["verdict"] == "pass" and v["malformed"] == [], (_failing(v), v["malformed"][:3])
    k4 = judged["verdicts"]["migrated-4.2.2"]["invariants"]["K4"]
    classic = [f for f in k4["violations"] if f["evidence"].get("classic")]
    assert len(classic) == 7 and {m for f in classic for m in f["members"]} == {"m0-reference"}, k4["violations"]
    assert all(f["evidence"]["commit_epoch"] == f["evidence"]["member_epoch"] - 1 for f in classic), classic
