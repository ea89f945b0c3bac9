"""Every invariant of the catalog fails on a hand-made history that violates it
and passes on the clean one (real Spark, one judge call for all cells).

The stories are in tests/stories/ (their docstrings tell them, their decorators say what
each must fail): the healthy cooperative run (``clean``, stories.builder.healthy), one cell
per broken story of ``STORIES`` (``break-<name>``), the eager pair, damaged inputs and runs
cut short (stories.cells).
"""

from __future__ import annotations

import json

import pytest

from conformance.pipeline.checks import CATALOG
from stories import STORIES, judged_catalog

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def judged(tmp_path_factory):
    out, verdicts = judged_catalog(tmp_path_factory.mktemp("pipeline-catalog"))
    return out, {v["run"]: v for v in verdicts}


def _inv(judged, run, inv):
    return judged[1][run]["invariants"][inv]


def test_clean_story_passes_every_invariant(judged):
    cell = judged[1]["clean"]
    bad = {k: (i["status"], i["error"], [v["message"] for v in i["violations"]])
           for k, i in cell["invariants"].items() if i["status"] != "pass" or i["violations"]}
    assert bad == {}
    assert set(cell["invariants"]) == set(CATALOG)
    assert cell["verdict"] == "pass" and cell["malformed"] == []


def test_two_plans_under_one_generation_number_are_not_one_plan(judged):
    # l1-synced-minus-one-in-two-rounds: t-0 goes to m1 in one refused "-1" plan and to m2 in the
    # next; L2 judges each plan (a real librdkafka 2.1.0 cell was blamed for this before).
    assert _inv(judged, "break-l1-synced-minus-one-in-two-rounds", "L2")["status"] == "pass"
    assert _inv(judged, "break-l2-double", "L2")["status"] == "fail"


# story name -> (invariant that must fail, fragments each of which some violation's message holds),
# as each story's decorator says (tests/stories/).
EXPECTED = {name: s.fails for name, s in STORIES.items() if s.fails is not None}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_break_fails_its_invariant(judged, name):
    inv, fragments = EXPECTED[name]
    result = _inv(judged, f"break-{name}", inv)
    assert result["status"] == "fail", (STORIES[name].tale, result)
    messages = [v["message"] for v in result["violations"]]
    for fragment in fragments:
        assert any(fragment in m for m in messages), (fragment, messages)
    assert judged[1][f"break-{name}"]["verdict"] == "fail"
    for v in result["violations"]:
        assert set(v) == {"invariant", "message", "members", "culprit", "harmed", "generation", "partitions", "ts",
                          "evidence", "allowed_by"}
        assert v["allowed_by"] is None
        assert v["invariant"] == inv
        assert v["evidence"], f"{inv} violation without evidence: {v['message']}"


def test_v3_blames_the_member_that_did_not_rejoin_and_names_who_waited(judged):
    # v3: m1 was told at 10.5 s and dropped at 41 s; m2's JoinGroup waited in that round.
    (v,) = _inv(judged, "break-v3", "V3")["violations"]
    assert v["culprit"] == "m1" and v["harmed"] == ["m2"], v
    assert v["evidence"]["told_by"] == "Heartbeat" and v["evidence"]["dropped_by"] == "Heartbeat", v
    assert v["evidence"]["waited_ms"] == 41005 - 10505 and v["evidence"]["excuses"] == [], v


def test_a_stale_commit_epoch_makes_its_committer_the_culprit_of_the_re_read(judged):
    # d3-stale-epoch / d2-stale-epoch: m1 committed 50 naming epoch 0, the broker told m2 epoch 0 ended at 40;
    # m2 resumed there (KIP-320). m1 is the culprit, m2 harmed. d3-below-commit: the same re-read with no such
    # answer is m2's own.
    for story, inv in (("break-d3-stale-epoch", "D3"), ("break-d2-stale-epoch", "D2")):
        (v,) = _inv(judged, story, inv)["violations"]
        assert (v["culprit"], v["harmed"]) == ("m1", ["m2"]), v
        assert v["evidence"]["stale_leader_epoch"] is True and v["evidence"]["stale_epoch"] == 0, v
        assert v["evidence"]["stale_epoch_committed_by"] == "m1" and v["evidence"]["epoch_end_wire_line"], v
    (v,) = _inv(judged, "break-d3-below-commit", "D3")["violations"]
    assert (v["culprit"], v["harmed"], v["evidence"]["stale_leader_epoch"]) == ("m2", [], False), v


def test_r1_says_whether_the_claim_was_below_the_round(judged):
    # break-r1: m1, the only member declaring partitions in generation 2, names generation 1, the round's
    # highest: it missed no round (a Java 3.4.0 leader dropping a late member's claims, KAFKA-14639, is
    # the case where it is True: the recorded corpus cell of kafka-14639).
    violations = _inv(judged, "break-r1", "R1")["violations"]
    assert violations and all(v["evidence"]["declared_below_round"] is False for v in violations)


def test_e5_says_a_repeated_declaration_once(judged):
    # One wrong declaration sent three times is one finding naming the three requests, not the
    # same message three times.
    [once] = _inv(judged, "break-e5-missing", "E5")["violations"]
    [retried] = _inv(judged, "break-e5-missing-retried", "E5")["violations"]
    assert len(retried["evidence"]["wire_lines"]) == 3 and retried["evidence"]["wire_line"] == retried["evidence"]["wire_lines"][0]
    assert "wire_lines" not in once["evidence"]
    assert retried["partitions"] == once["partitions"] == [["t", 0], ["t", 1]]
    assert retried["culprit"] == "m1"


def test_every_break_is_expected_to_fail_or_allowed():
    # A story that names no invariant to fail is an allowed one (its name says so), the leader
    # rotation in which every kind led, or E3's warning.
    allowed = {name for name in STORIES if "allowed" in name or name == "l5-every-kind-led"}
    assert set(STORIES) == set(EXPECTED) | allowed | {"e3"}
    assert not set(EXPECTED) & (allowed | {"e3"})


def test_every_invariant_has_a_violating_story():
    # P1's stories (a stall, one inside a pause window, one outliving it) are in tests/test_pipeline_progress.py.
    assert {inv for inv, _ in EXPECTED.values()} | {"E3", "P1"} == set(CATALOG)


def test_e3_unknown_userdata_is_a_warning_not_a_failure(judged):
    result = _inv(judged, "break-e3", "E3")
    assert result["status"] == "pass"
    [w] = result["violations"]
    assert w["evidence"]["severity"] == "warning" and "010203" in w["message"]
    assert _inv(judged, "clean", "E3")["violations"] == []


def test_an_overlap_names_the_leader_whose_move_made_it(judged):
    # r2_moved_by_leader: generation 2's leader m1 gave t-2 to m2 while m1 validly declared it (R1);
    # the overlap that follows is the leader's. In r2, m2 took t-2 with no SyncGroup giving it: the
    # evidence cannot tell who held on too long, so R2 names no culprit and implicates the two owners.
    moved = _inv(judged, "break-r2-moved-by-leader", "R2")["violations"]
    assert [(v["culprit"], v["harmed"], v["members"]) for v in moved] == [("m1", ["m1", "m2"], ["m1", "m2"])], moved
    assert isinstance(moved[0]["evidence"]["moved_by_wire_line"], int)
    unknown = _inv(judged, "break-r2", "R2")["violations"]
    assert [(v["culprit"], v["harmed"]) for v in unknown] == [(None, [])] and "culprit unknown" in unknown[0]["message"]


def test_allowed_anomalies_pass(judged):
    # The overlap happens while m1 is paused: the group may move t-2.
    assert _inv(judged, "break-r2-allowed", "R2")["status"] == "pass"
    # Sarama-style: the broker restart cut the session; what it revoked comes back.
    assert _inv(judged, "break-r3-allowed", "R3")["status"] == "pass"
    # m1's application stalled for its whole max poll interval: its client could leave the group.
    r3 = _inv(judged, "break-r3-max-poll-stall-allowed", "R3")
    assert r3["status"] == "pass" and [f["allowed_by"] for f in r3["allowed"]] == ["R3/fault-window"], r3
    # The broker restart cut m1's session: R4 does not time that revoke (V1 judges the recovery).
    assert _inv(judged, "break-r4-broker-allowed", "R4")["status"] == "pass"
    # Eager members declared nothing: the leader had no ownership to keep.
    assert _inv(judged, "break-l4-eager-allowed", "L4")["status"] == "pass"
    # Members that named only some partitions (a stale sticky userData, as librdkafka rejoining before
    # taking its assignment): the partitions they did not name could not be kept.
    assert _inv(judged, "break-l4-stale-userdata-allowed", "L4")["status"] == "pass"
    # A cooperative generation's assignors read only the declared owned partitions, never userData.
    assert _inv(judged, "break-l4-cooperative-userdata-allowed", "L4")["status"] == "pass"
    # m1 lost t-0 between two rounds: the leader that moved it was never told about it.
    assert _inv(judged, "break-l4-lost-allowed", "L4")["status"] == "pass"
    # The leader abandons generation 2 while it is being terminated.
    assert _inv(judged, "break-l1-nosync-allowed", "L1")["status"] == "pass"
    # The leader is a killed instance's id, elected while its JoinGroup was pending.
    assert _inv(judged, "break-l1-killed-leader-allowed", "L1")["status"] == "pass"
    # ... and the member's new instance, a follower of that generation, syncs without assignments.
    l1 = _inv(judged, "break-l1-killed-leader-follower-sync-allowed", "L1")
    assert l1["status"] == "pass" and [f["allowed_by"] for f in l1["allowed"]] == ["L1/dead-leader-id"], l1
    # The poll that handed m1 records after its fencing answer began before it: in flight, no C2 finding.
    assert _inv(judged, "break-c2-poll-in-flight-allowed", "C2")["status"] == "pass"
    assert _inv(judged, "break-c2-poll-in-flight-allowed", "C1")["status"] == "pass"
    # The history records the revoke 50 ms after the JoinGroup that no longer declares it: it lags the wire.
    e5 = _inv(judged, "break-e5-missing-slack-allowed", "E5")
    assert e5["status"] == "pass" and [f["allowed_by"] for f in e5["allowed"]] == ["E5/clock-slack"], e5
    # A closing member's queued JoinGroup declares what its close just revoked, before its LeaveGroup.
    e5 = _inv(judged, "break-e5-closing-allowed", "E5")
    assert e5["status"] == "pass" and [f["allowed_by"] for f in e5["allowed"]] == ["E5/closing"], e5
    # One more round after the steady state: within two generations per member started.
    assert _inv(judged, "break-v2-one-more-round-allowed", "V2")["status"] == "pass"
    # The re-read follows a pause: counted, attributed, not a failure.
    assert _inv(judged, "break-d3-allowed", "D3")["status"] == "pass"
    # In a consumer group the broker tells only the removed member: its handing m2's partitions to m3
    # while it had not heard m2 since the pause is the removal.
    r2 = _inv(judged, "break-r2-handed-over-allowed", "R2")
    assert r2["status"] == "pass" and [f["allowed_by"] for f in r2["allowed"]] == ["R2/fault-window"] * 2, r2
    assert r2["allowed"][0]["evidence"]["removed_by"].startswith("the broker gave it to m3 on ConsumerGroupHeartbeat")
    assert judged[1]["break-r2-handed-over-allowed"]["verdict"] == "pass"
    # A pause never healed (an interrupted run) excuses an overlap until the run's end.
    assert _inv(judged, "break-r2-unhealed-allowed", "R2")["status"] == "pass"
    # The re-read is stamped just before the heal of a pause in force since before the first read.
    assert _inv(judged, "break-d3-resumed-allowed", "D3")["status"] == "pass"
    assert judged[1]["break-d3-resumed-allowed"]["metrics"]["duplicates_by_cause"] == {"fault:pause": 20}
    assert judged[1]["break-d3-allowed"]["metrics"]["duplicates"] == 10
    assert judged[1]["break-d3"]["metrics"]["duplicates"] == 10
    assert judged[1]["clean"]["metrics"]["duplicates"] == 0


def test_allowed_stories_pass_as_a_whole(judged):
    # A member killed by the nemesis is not a crash; the group converges without it.
    killed = judged[1]["break-v1-kill-allowed"]
    assert killed["verdict"] == "pass", {k: i["violations"] for k, i in killed["invariants"].items() if i["violations"]}
    # Leader rotation in which every kind led: L5 holds (and is judged: the cell is a rotation cell).
    rotated = judged[1]["break-l5-every-kind-led"]
    assert rotated["verdict"] == "pass", {k: i["violations"] for k, i in rotated["invariants"].items() if i["violations"]}
    assert rotated["metrics"]["leaders"] == {"java": 3, "reference": 1}
    # A revoke due in generation 2 and undone by generation 3, planned for a group that lost m2 in between.
    # A revoke due in generation 2 and undone by generation 3, planned knowing a topic generation 2 did not.
    for name in ("break-r3-regrouped-allowed", "break-r3-regrouped-unnamed-allowed", "break-r3-new-topic-allowed"):
        regrouped = judged[1][name]
        assert regrouped["verdict"] == "pass", (name, {k: i["violations"] for k, i in regrouped["invariants"].items()
                                                       if i["violations"]})


@pytest.mark.parametrize("name", ["r3-regrouped", "r3-regrouped-unnamed"])
def test_r3_names_only_the_retained_partition_when_the_group_changed(judged, name):
    [v] = _inv(judged, f"break-{name}", "R3")["violations"]
    assert v["partitions"] == [["t", 0]]
    # Named by m1's history, or (unnamed) by its SyncGroup responses on the wire.
    assert v["evidence"]["cases"] == [{"partition": ["t", 0], "revoked_ts": 11300.0, "assigned_ts": 12700.0,
                                       "revoked_generation": 2, "assigned_generation": 3}]


def test_eager_story(judged):
    clean = judged[1]["eager-clean"]
    assert {k: i["status"] for k, i in clean["invariants"].items() if i["status"] != "pass"} == {}
    assert clean["metrics"]["protocol"] == "eager"
    broken = _inv(judged, "eager-r5", "R5")
    assert broken["status"] == "fail"
    assert any("rejoined from eager generation 1 (range) still owning t-0, t-1, t-2, t-3" in v["message"]
               for v in broken["violations"])


def test_malformed_lines_are_reported_with_file_and_line(judged):
    cell = judged[1]["malformed"]
    found = {(m["file"].rsplit("/", 1)[-1], m["line"]) for m in cell["malformed"]}
    m1_lines = sum(1 for _ in open(next(m["file"] for m in cell["malformed"] if m["file"].endswith("m1.jsonl"))))
    wire_lines = sum(1 for _ in open(next(m["file"] for m in cell["malformed"] if m["file"].endswith("wire.jsonl"))))
    assert ("m1.jsonl", m1_lines - 1) in found and ("m1.jsonl", m1_lines) in found
    assert ("wire.jsonl", wire_lines - 1) in found and ("wire.jsonl", wire_lines) in found
    assert ("nemesis.jsonl", 1) in found
    problems = " | ".join(m["problem"] for m in cell["malformed"])
    assert "not a JSON object" in problems and "lacks valid 'partitions'" in problems
    assert "short frame" in problems and "unknown fault 'meteor'" in problems
    # Every input has a damaged line, so every invariant read one: each is "malformed", names
    # the damaged lines it read, and blames no one (the rest of the data was still judged: the
    # clean story's checks found nothing to set aside).
    assert cell["verdict"] == "malformed"
    for inv, i in cell["invariants"].items():
        assert i["status"] == "malformed" and i["violations"] == [] and i["set_aside"] == [], inv
        assert {(d["file"], d["line"]) for d in i["damaged"]} <= {(m["file"], m["line"]) for m in cell["malformed"]}


def test_bad_manifest_fields_are_reported_and_the_rest_judged(judged):
    cell = judged[1]["bad-manifest"]
    problems = sorted(m["problem"] for m in cell["malformed"])
    assert [m["line"] for m in cell["malformed"]] == [0, 0, 0, 0]
    assert all(m["file"].endswith("manifest.json") for m in cell["malformed"])
    assert any(p.startswith("manifest field seed must be an integer") for p in problems), problems
    assert any(p.startswith('manifest field topics.u must be a partition count') for p in problems), problems
    assert any(p.startswith("manifest field timing.session_timeout_ms must be a number") for p in problems), problems
    assert any(p.startswith("manifest field members[2] must be an object with a name") for p in problems), problems
    assert cell["verdict"] == "malformed" and cell["seed"] is None
    # Every check that reads the manifest (members, topics, timing) is "malformed", naming the
    # manifest's line 0; E1-E3 (the wire's bytes) and K1 (the heartbeats' epochs) judge the wire
    # alone and still pass; the rest was judged (nothing found to set aside).
    for inv, i in cell["invariants"].items():
        if inv in ("E1", "E2", "E3", "K1"):
            assert i["status"] == "pass" and "damaged" not in i, inv
            continue
        assert i["status"] == "malformed" and i["violations"] == [] and i["set_aside"] == [], inv
        assert {d["file"].rsplit("/", 1)[-1] for d in i["damaged"]} == {"manifest.json"}, inv


def test_a_run_cut_short_is_judged_on_what_it_observed(judged):
    # A suite error stopped the run 50 ms after generation 2 formed: what only the scenario's end
    # would show (delivery, the leader's SyncGroup, leadership coverage, the final protocol,
    # convergence) is not judged, and the cell is "incomplete", never "pass", saying why.
    cut = judged[1]["cut-short"]
    assert {k: [v["message"] for v in i["violations"]] for k, i in cut["invariants"].items() if i["violations"]} == {}
    assert cut["verdict"] == "incomplete"
    assert cut["cut_short"] == "SuiteError: java@3.9.2 is not set up"
    # The control: the same history from a run that ended fails exactly those invariants.
    ended = judged[1]["cut-short-ended"]
    assert ended["cut_short"] is None and ended["verdict"] == "fail"
    assert {k for k, i in ended["invariants"].items() if i["status"] == "fail"} == {"D1", "L1", "L5", "R5", "V1"}
    assert any("sent no SyncGroup assignments" in v["message"] for v in ended["invariants"]["L1"]["violations"])
    assert any("had no owner at the end of observation" in v["message"]
               for v in ended["invariants"]["V1"]["violations"])
    # What the run did observe still fails it.
    overlap = judged[1]["cut-short-r2"]
    assert overlap["verdict"] == "fail"
    assert {k for k, i in overlap["invariants"].items() if i["status"] == "fail"} == {"R2"}
    assert judged[1]["clean"]["cut_short"] is None


def test_metrics_of_the_clean_story(judged):
    m = judged[1]["clean"]["metrics"]
    assert m["generations"] == 3
    assert m["rounds"] == [1, 2]            # generation 1; then 2 + its cooperative follow-up 3
    assert m["rebalances"] == 2
    assert m["leaders"] == {"java": 3}
    assert m["protocol"] == "cooperative"
    # m1 read at 3003 and next at 14000, across the rebalance of generations 2-3; m2 never paused.
    assert m["pause_ms"] == {"m1": 10997.0}
    assert m["convergence"] == []           # no fault
    assert m["duplicates_by_cause"] == {}


def test_convergence_after_each_fault(judged):
    # m2's start (9990) is followed by generation 2 (11005) and its follow-up 3 (12505).
    assert judged[1]["break-v1-slow"]["metrics"]["convergence"] == [
        {"fault": "start", "target": "m2", "ts": 9990.0, "ms": 2515.0}]
    # m2 killed at 30000; m1 alone forms generation 4 at 41005, a new rebalance.
    killed = judged[1]["break-v1-kill-allowed"]["metrics"]
    assert killed["convergence"] == [{"fault": "kill", "target": "m2", "ts": 30000.0, "ms": 11005.0}]
    assert (killed["rebalances"], killed["rounds"]) == (3, [1, 2, 1])
    # A pause and its resume with no rebalance after: recorded, with no time.
    assert judged[1]["break-d3-allowed"]["metrics"]["convergence"] == [
        {"fault": "pause", "target": "m1", "ts": 14500.0, "ms": None}]


def test_duplicates_by_cause(judged):
    assert judged[1]["break-d3-allowed"]["metrics"]["duplicates_by_cause"] == {"fault:pause": 10}
    assert judged[1]["break-d3"]["metrics"]["duplicates_by_cause"] == {"unexplained": 10}
    assert judged[1]["break-d3"]["metrics"]["duplicates_by_generation"] == {"3": 10}


def test_outputs_written(judged):
    out = judged[0]
    for table in ("events", "ownership", "generations", "commits", "subscriptions", "assignments", "malformed"):
        assert (out / "tables" / table).is_dir(), table
    saved = json.loads((out / "verdicts.json").read_text())
    assert {v["run"] for v in saved} == set(judged[1])


# Every exemption rule (conformance.pipeline.checks.rules) next to the story it allows, and the
# story just outside it that must still fail. P1/fault-window and P1/rebalance: tests/test_pipeline_progress.py
# (stories paused-long and rebalancing beside stalled and paused-short).
RULE_STORIES = {
    "E5/clock-slack": ("e5-slack-allowed", "E5", "e5"),
    "E5/closing": ("e5-closing-allowed", "E5", "e5-declared-after-lost"),
    "E5/not-yet-applied": ("e5-not-yet-applied-allowed", "E5", "e5-not-yet-applied-lost"),
    "L1/fault-hit-leader": ("l1-pause-allowed", "L1", "l1-latency-not-silencing"),
    "L1/leader-stopping": ("l1-nosync-allowed", "L1", "l1-stopping-never-left"),
    "L1/dead-leader-id": ("l1-killed-leader-allowed", "L1", "l1-killed-leader"),
    "L1/consumer-group": ("l1-consumer-group-allowed", "L1", "l1-consumer-group-gone"),
    "L2/consumer-group": ("l1-consumer-group-allowed", "L2", "l2-consumer-group-gone"),
    "L3/consumer-group": ("l1-consumer-group-allowed", "L3", "l3-consumer-group-gone"),
    "D2/member-epoch": ("d2-member-epoch-allowed", "D2", "d2-stale"),
    "R2/fault-window": ("r2-allowed", "R2", "r2-outlives-window"),
    "R3/fault-window": ("r3-allowed", "R3", "r3"),
    "R3/replanned": ("r3-regrouped-allowed", "R3", "r3-regrouped"),
    "R4/fault-window": ("r4-broker-allowed", "R4", "r4"),
    "D3/rebalance": ("d3-rebalance-allowed", "D3", "d3-below-commit"),
    "D3/fault": ("d3-allowed", "D3", "d3"),
    "V1/migration-refused": ("v1-migration-refused-allowed", "V1", "v1-fatal-after-admitted"),
    "V3/fault-window": ("v3-paused-allowed", "V3", "v3-paused-late"),
    "V3/leaving": ("v3-leaving-allowed", "V3", "v3-leaving-late"),
}


def test_every_rule_has_an_allowed_story_and_a_violating_neighbour():
    from conformance.pipeline.checks.rules import RULES

    assert set(RULE_STORIES) | {"P1/fault-window", "P1/rebalance"} == set(RULES)
    for rule, (_allowed, inv, violating) in RULE_STORIES.items():
        assert RULES[rule].invariant == inv
        assert EXPECTED[violating][0] == inv, (rule, violating)


@pytest.mark.parametrize("rule", sorted(RULE_STORIES))
def test_rule_allows_its_story_visibly(judged, rule):
    allowed, inv, _violating = RULE_STORIES[rule]
    cell = judged[1][f"break-{allowed}"]
    result = cell["invariants"][inv]
    assert result["status"] == "pass" and result["violations"] == [], result["violations"]
    assert result["allowed"] and {f["allowed_by"] for f in result["allowed"]} == {rule}, result["allowed"]
    assert cell["allowed"][rule] == len(result["allowed"])
    for f in result["allowed"]:
        assert f["evidence"] and f["message"]


def test_clean_story_needs_no_exemption(judged):
    assert judged[1]["clean"]["allowed"] == {}


def test_a_timed_out_await_implicates_the_members_its_state_names(judged):
    [v] = _inv(judged, "break-v1-await", "V1")["violations"]
    assert v["members"] == ["m1", "m2"] and v["evidence"]["state"] == "t-1 owned by m1, m2"


def test_d3_measures_from_the_last_commit_not_the_highest(judged):
    # Sarama before 1.43.3 sends commits out of order (a known D2 issue): the broker's committed
    # offset is the last one it accepted, and a new owner rightly resumes from it.
    d3 = _inv(judged, "break-d3-commit-back-allowed", "D3")
    assert d3["status"] == "pass" and [f["allowed_by"] for f in d3["allowed"]] == ["D3/rebalance"], d3
    assert _inv(judged, "break-d3-commit-back-allowed", "D2")["status"] == "fail"


def test_an_unowned_partition_names_the_member_last_assigned_it(judged):
    # m2 records t-3 lost with no rebalance: its last SyncGroup response still assigns it t-3.
    [v] = _inv(judged, "break-v1-unowned", "V1")["violations"]
    assert v["culprit"] == "m2" and v["evidence"]["last_assigned_to"] == {"t-3": "m2"}, v
    # m1 revokes t-2, t-3 and rejoins at once, but the follow-up round's leader assigns them to
    # nobody: R4 names only the revoker, and no culprit (the revoker did its part). A revoker
    # that never rejoins is the culprit: the real no-follow-up-rejoin cell
    # (tests/test_reference_faults_e2e.py).
    [r4] = _inv(judged, "break-r4", "R4")["violations"]
    assert r4["members"] == ["m1"] and r4["culprit"] is None and r4["evidence"]["assigned_to"] == [], r4
    assert r4["evidence"]["rejoined"] is True and "sent no JoinGroup" not in r4["message"], r4
