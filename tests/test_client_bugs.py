"""Client bugs the suite found, on their recorded real runs (fixtures/client-bugs/).

kafka-python 3.0.x throws away a join whose SyncGroup answer arrives after poll()'s timeout
(docs/client-bugs/kafka-python-discarded-join.md). In the recorded default-matrix cell,
m4-kafka-python leads generation 7, gives orders-11 away, receives its own assignment (wire line
3286), and 8 ms later sends a JoinGroup still declaring orders-11 owned (line 3290); its history
has no event of generation 7. E5 must name it, and the known-issue row must excuse exactly that.

The row must not excuse the neighbouring bug class: a stale claim of an assignment the member did
apply. The mutant copy of the run adds the missing callback (an ``assigned`` event of generation 7
on m4's history, 1 ms after the SyncGroup answer, where a working client records it), so the same
JoinGroup is now a stale claim after applying the assignment: a new failure, not a known issue.

librdkafka's leader crashes on a version-0 cooperative subscription
(docs/client-bugs/librdkafka-v0-subscription-crash.md). In the recorded cell m0-librdkafka leads,
the reference joins with its subscription-v0 fault, and m0 dies by SIGSEGV right after its
JoinGroup answer; the runner notes the exit 13 s later, at the end of the run. V1 must name the
crash by its signal; and a dead process owns nothing: m0's ownership ends at its last sign of life,
so the partitions Java and the reference get 10 s later are no R2 overlap (an overlap implicated
them while the crashed member's ownership ran to the run's end). The bug class that ending could
hide is still caught: in the mutant copy m0 consumes orders-1 two seconds after Java was given it
(a member alive and consuming what another owns, then crashing), and R2 fails.

franz-go's cooperative-sticky leader does not read the owned partitions of a member whose
subscription has no generation (docs/client-bugs/franz-go-generationless-owned.md). In the recorded
default leader-rotation cell m5-franz-go leads generation 5 after m0-reference left holding orders-0
and orders-1; m4-kafka-python (subscription v1, no userData) declares orders-6 and orders-11. Five
members share 12 partitions (3, 3, 2, 2, 2), so no partition of a member that stayed need move; the
leader gives kafka-python orders-0, orders-1 and orders-6 and withholds orders-11, which Java gets in
generation 6. L4 must name that move, taken by franz-go of a claim without a generation, and the
known-issue row must excuse exactly that (it does so for generations 5, 17 and 27 of the run).
The same bug shows as R3 in a later default cell (same seed): franz-go leads generation 10, ignores
kafka-python's v1 claim of orders-2 and orders-4 (6 members, 2 each: nothing need move), withholds
orders-4, which kafka-python revokes and gets back in generation 11. R3 must name it, taken by
franz-go of a claim without a generation (a known issue); with m3-sarama leading generation 10
instead (the mutant), R3 fails.
The row must not excuse the same move by another leader: the mutant copy makes m1-java the leader
of generation 5 (the JoinGroup answers name it, its answer carries the member list, its SyncGroup
the assignments), and L4 fails.
The bug mixed with a needed move (a default rolling-restart cell, seed 1940160139): m2-librdkafka
joins generation 13 as the sixth member (12 partitions: 2 each); m0-reference holds 3 and
m4-kafka-python (v1) holds orders-1, orders-3, orders-4. Two moves do (one from each); franz-go,
not reading kafka-python's claims, takes orders-9 from m0 (the needed one) and orders-3, orders-4
from m4: 3 moves, the one beyond those needed of a claim without a generation, a known issue. With
m4's subscriptions of generations 13-14 carrying generation 12 (v3; the mutant), no claim is
without a generation and the same plan fails L4.

A Sarama 1.61.1 cooperative leader hands a partition to a stale claimant without the revoke round
(docs/client-bugs/sarama-stale-claim-handover.md). In the recorded cell (the smallest schedule a shrink
kept of a hunt's finding) m1-kafka-python is cut off, loses orders-0 to orders-2 and comes back
declaring them in a subscription without a generation; m0-sarama, which validly declared them at
generation 5, leads generation 6 and gives orders-0 straight to kafka-python. R1 must name Sarama,
with the receiver's claim (generation -1) in the evidence, and the row must excuse exactly that. The
bug class it could hide, a leader giving a validly owned partition to a member that never claimed it,
is still caught: in the mutant copy kafka-python's subscription in the member list of generation 6
declares nothing, and R1 fails.

Sarama commits every offset with the leader epoch of the offset it first fetched
(docs/client-bugs/sarama-stale-commit-leader-epoch.md). In the recorded cell m0-franz-go commits with
leader epoch 0 and leaves; m1-sarama resumes from those commits, the broker restarts (a new epoch) and
Sarama goes on committing, up to offset 677 of orders-1, still naming epoch 0; m2-java takes over,
asks where epoch 0 ended (OffsetForLeaderEpoch: at 208) and resumes there, as KIP-320 says, reading
again what Sarama had committed. D2 (the offset going back) and D3 (the re-read) must name Sarama,
with Java harmed, as the known issue. The bug class that could hide, a member that resumes below a
commit on its own, is still caught: in the mutant copy Java's OffsetForLeaderEpoch frames are gone,
and the same findings name Java and fail.

Java 4.4.0 hands the application records of partitions it has lost after a commit told it it was
fenced (docs/client-bugs/java-fenced-commit-poll.md). In the recorded cell m1-java is frozen for 13 s;
when it resumes its commit is answered UNKNOWN_MEMBER_ID (wire.jsonl:5500), and the poll after that
returns 500 records of orders-8 to orders-10 before onPartitionsLost. C2 must name Java, as the known
issue. The row must not excuse the neighbouring class, records handed after a heartbeat said the
member was fenced: in the mutant copy that answer is a Heartbeat's, and C2 fails.

All copies are judged by the session's one real ``conformance report`` (tests/recorded.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.members.known_issues import match
from recorded import TEST_TIMEOUT, copy_run, read_jsonl, rename, unpack, write_jsonl

pytestmark = [pytest.mark.slow, pytest.mark.timeout(TEST_TIMEOUT)]

BUGS = Path(__file__).resolve().parent.parent / "fixtures" / "client-bugs"
ARCHIVE = BUGS / "kafka-python-3.0.12-discarded-join.tar.xz"
CRASH_ARCHIVE = BUGS / "librdkafka-2.16.1-v0-subscription-crash.tar.xz"
FRANZ_ARCHIVE = BUGS / "franz-go-1.22.3-generationless-owned.tar.xz"
FRANZ_R3_ARCHIVE = BUGS / "franz-go-1.22.3-generationless-owned-r3.tar.xz"
FRANZ_NEEDED_ARCHIVE = BUGS / "franz-go-1.22.3-generationless-owned-needed-move.tar.xz"
SARAMA_ARCHIVE = BUGS / "sarama-1.61.1-stale-claim-handover.tar.xz"
EPOCH_ARCHIVE = BUGS / "sarama-1.61.1-stale-commit-leader-epoch.tar.xz"
FENCED_ARCHIVE = BUGS / "java-4.4.0-fenced-commit-poll.tar.xz"
FENCE_LINE = 5500   # the OffsetCommit answer UNKNOWN_MEMBER_ID to m1-java
MEMBER = "m4-kafka-python"
SYNC_TS = 1795693742505.1436   # the SyncGroup answer of generation 7 to m4 (wire line 3286)


def recorded_copies(root: Path) -> dict[str, Path]:
    """The recorded runs and their mutants (the module docstring tells each story)."""
    src = unpack(ARCHIVE, root / "original")
    runs = root / "runs"
    dirs = {"recorded": copy_run(src, runs / "recorded"), "applied": copy_run(src, runs / "applied", "-applied")}
    history = dirs["applied"] / "members" / f"{MEMBER}.jsonl"
    events = read_jsonl(history)
    assert not any(e.get("generation") == 7 for e in events), "the recorded bug: nothing of generation 7"
    template = next(e for e in events if e["event"] == "assigned")
    applied = {**template, "ts": SYNC_TS + 1, "generation": 7, "partitions": [["orders", 2], ["orders", 3]]}
    at = next(i for i, e in enumerate(events) if e["ts"] > applied["ts"])
    events.insert(at, applied)
    write_jsonl(history, events)
    crash = unpack(CRASH_ARCHIVE, root / "crash-original")
    dirs["crash"] = copy_run(crash, runs / "crash")
    late = dirs["crash-consumed-late"] = copy_run(crash, runs / "crash-consumed-late", "-consumed-late")
    java = read_jsonl(late / "members" / "m2-java.jsonl")
    given = next(e["ts"] for e in java if e["event"] == "assigned" and ["orders", 1] in e["partitions"])
    history = late / "members" / "m0-librdkafka.jsonl"
    events = read_jsonl(history)
    batch = next(e for e in events if e["event"] == "consumed")
    events.append({**batch, "ts": given + 2000, "partition": 1, "first_offset": 10_000, "last_offset": 10_000,
                   "count": 1})
    write_jsonl(history, events)
    franz = unpack(FRANZ_ARCHIVE, root / "franz-original")
    for name in ("generationless", "generationless-java-led"):
        dirs[name] = copy_run(franz, runs / name)
    _lead_by(dirs["generationless-java-led"], generation=5, leader="m1-java")
    franz_r3 = unpack(FRANZ_R3_ARCHIVE, root / "franz-r3-original")
    for name in ("revoke-undone", "revoke-undone-sarama-led"):
        # the same seed and mix as the L4 run: another run id
        dirs[name] = copy_run(franz_r3, runs / name, "-r3")
    _lead_by(dirs["revoke-undone-sarama-led"], generation=10, leader="m3-sarama")
    needed = unpack(FRANZ_NEEDED_ARCHIVE, root / "franz-needed-original")
    dirs["needed-move"] = copy_run(needed, runs / "needed-move")
    dirs["needed-move-with-generation"] = copy_run(needed, runs / "needed-move-with-generation", "-with-generation")
    _declare_generation(dirs["needed-move-with-generation"], "m4-kafka-python", generations=(13, 14), generation=12)
    sarama = unpack(SARAMA_ARCHIVE, root / "sarama-original")
    dirs["stale-claim-handover"] = copy_run(sarama, runs / "stale-claim-handover")
    dirs["stale-claim-unclaimed"] = copy_run(sarama, runs / "stale-claim-unclaimed", "-unclaimed")
    _declare_nothing(dirs["stale-claim-unclaimed"], "m1-kafka-python", generation=6)
    epoch = unpack(EPOCH_ARCHIVE, root / "epoch-original")
    dirs["stale-epoch"] = copy_run(epoch, runs / "stale-epoch")
    dirs["stale-epoch-untold"] = copy_run(epoch, runs / "stale-epoch-untold", "-untold")
    wire = dirs["stale-epoch-untold"] / "wire.jsonl"
    frames = read_jsonl(wire)
    kept = [f for f in frames if not (f["api"] == "OffsetForLeaderEpoch" and f["member"] == "m2-java")]
    assert len(kept) < len(frames), "the recorded bug: Java asked where the epoch ended"
    write_jsonl(wire, kept)
    fenced = unpack(FENCED_ARCHIVE, root / "fenced-original")
    dirs["fenced-commit"] = copy_run(fenced, runs / "fenced-commit")
    dirs["fenced-heartbeat"] = copy_run(fenced, runs / "fenced-heartbeat", "-heartbeat")
    _answer_as_heartbeat(dirs["fenced-heartbeat"], FENCE_LINE)
    return dirs


def _answer_as_heartbeat(run: Path, line: int) -> None:
    """In the copy ``run``, the OffsetCommit answer at wire line ``line`` and its request become a Heartbeat's
    (same member, connection, correlation id and error)."""
    wire = run / "wire.jsonl"
    frames = read_jsonl(wire)
    answer = frames[line - 1]
    assert answer["api"] == "OffsetCommit" and answer["direction"] == "response" and answer["error_code"] == 25, answer
    (request,) = [f for f in frames[:line - 1] if f["api"] == "OffsetCommit" and f["direction"] == "request"
                  and f["member"] == answer["member"] and f.get("connection") == answer.get("connection")
                  and f["correlation_id"] == answer["correlation_id"]]
    for f in (request, answer):
        f.update(api="Heartbeat", api_key=12, version=4)
        f.pop("offsets", None), f.pop("leader_epochs", None), f.pop("partition_errors", None)
    write_jsonl(wire, frames)


def _rewrite_subscriptions(run: Path, member: str, generations: tuple[int, ...], edit) -> int:
    """In the copy ``run``, ``member``'s subscription in the JoinGroup answers of ``generations`` (the member
    list the leader reads) becomes ``edit(subscription)``; how many were rewritten."""
    from conformance.protocol import decode_subscription, encode_subscription

    wire = run / "wire.jsonl"
    frames = read_jsonl(wire)
    edited = 0
    for f in frames:
        if f["api"] == "JoinGroup" and f["direction"] == "response" and f.get("generation") in generations:
            for m in f.get("members") or []:
                if m["member_id"].startswith(member):
                    m["metadata"] = encode_subscription(edit(decode_subscription(bytes.fromhex(m["metadata"])))).hex()
                    edited += 1
    write_jsonl(wire, frames)
    return edited


def _declare_nothing(run: Path, member: str, generation: int) -> None:
    """In the copy ``run``, ``member``'s subscription in the member list of ``generation`` (what the leader
    read) declares no owned partitions."""
    from dataclasses import replace

    def nothing(sub):
        assert sub.owned_partitions, "the recorded bug: the member declares partitions"
        return replace(sub, owned_partitions=())

    edited = _rewrite_subscriptions(run, member, (generation,), nothing)
    assert edited == 1, f"{member}'s subscriptions edited: {edited}"


def _declare_generation(run: Path, member: str, generations: tuple[int, ...], generation: int) -> None:
    """In the copy ``run``, ``member``'s subscription in the JoinGroup answers of ``generations`` (the
    member list the leader reads) becomes version 3 with ``generation``: the same claims, told with one."""
    from dataclasses import replace

    edited = _rewrite_subscriptions(run, member, generations,
                                    lambda sub: replace(sub, version=3, generation_id=generation))
    assert edited == len(generations), f"{member}'s subscriptions edited: {edited}"


def _lead_by(run: Path, generation: int, leader: str) -> None:
    """Make ``leader`` the leader of ``generation`` in the copy ``run``: every JoinGroup answer of that
    generation names its member id, its answer carries the member list and its SyncGroup request the
    assignments (taken from the recorded leader's frames, which are left without them)."""
    rename(run, "-" + leader)
    wire = run / "wire.jsonl"
    frames = read_jsonl(wire)
    joins = [f for f in frames if f["api"] == "JoinGroup" and f["direction"] == "response"
             and f.get("generation") == generation and f.get("error_code") == 0]
    syncs = [f for f in frames if f["api"] == "SyncGroup" and f["direction"] == "request"
             and f.get("generation") == generation]
    (old_join,) = [f for f in joins if f["members"]]
    (new_join,) = [f for f in joins if f["member"] == leader]
    (old_sync,) = [f for f in syncs if f["assignments"]]
    (new_sync,) = [f for f in syncs if f["member"] == leader]
    assert old_join["member"] != leader, "the recorded leader is another member"
    new_join["members"], old_join["members"] = old_join["members"], []
    new_sync["assignments"], old_sync["assignments"] = old_sync["assignments"], []
    for f in joins:
        f["leader"] = new_join["member_id"]
    write_jsonl(wire, frames)


def _stale_claims(verdict: dict) -> list[dict]:
    return [v for v in verdict["invariants"]["E5"]["violations"]
            if v["evidence"].get("kind") == "stale-claim" and v["members"] == [MEMBER]]


def test_the_recorded_discarded_join_is_a_known_issue(recorded_verdicts):
    v = recorded_verdicts["recorded"]
    (claim,) = _stale_claims(v)
    assert claim["partitions"] == [["orders", 11]] and claim["culprit"] == MEMBER
    assert claim["evidence"]["assignment_wire_line"] == 3286 and claim["evidence"]["wire_line"] == 3290
    assert claim["evidence"]["assignment_generation"] == 7 and claim["evidence"]["assignment_applied"] is False
    assert "never applied it" in claim["message"], claim["message"]
    assert claim["known_issue"]["reference"].startswith("docs/client-bugs/kafka-python-discarded-join.md")
    assert v["invariants"]["E5"]["status"] == "known-issue"


def test_a_stale_claim_after_applying_the_assignment_is_still_a_failure(recorded_verdicts):
    v = recorded_verdicts["applied"]
    (claim,) = _stale_claims(v)
    assert claim["evidence"]["assignment_applied"] is True and "known_issue" not in claim
    assert v["invariants"]["E5"]["status"] == "fail" and v["verdict"] == "fail"


def test_the_row_matches_only_its_versions_and_evidence():
    never = {"kind": "stale-claim", "assignment_applied": False}
    assert match("E5", "kafka-python@3.0.12", never) is not None
    assert match("E5", "kafka-python@3.0.12", {**never, "assignment_applied": True}) is None
    assert match("E5", "kafka-python@3.0.12", {"kind": "stale"}) is None      # history-based E5: not this bug
    assert match("E5", "kafka-python@2.3.3", never) is None                   # 2.x kept the pending join
    assert match("E5", "java@4.4.0", never) is None


def test_a_crashed_leader_is_named_and_owns_nothing_after_it_died(recorded_verdicts):
    v = recorded_verdicts["crash"]
    crashes = [x for x in v["invariants"]["V1"]["violations"] if x["members"] == ["m0-librdkafka"]]
    assert crashes and "killed by signal SIGSEGV" in crashes[0]["message"], v["invariants"]["V1"]
    assert crashes[0]["evidence"]["end"] == "crashed" and crashes[0]["evidence"]["exit_code"] == -11, crashes
    assert v["root_cause"]["invariant"] == "E5" and v["root_cause"]["culprit"] == "m1-reference", v["root_cause"]
    assert v["invariants"]["R2"]["violations"] == [], v["invariants"]["R2"]["violations"]


def test_a_member_consuming_what_another_owns_before_it_crashes_still_fails_r2(recorded_verdicts):
    r2 = recorded_verdicts["crash-consumed-late"]["invariants"]["R2"]
    assert r2["status"] == "fail", r2
    assert any(x["members"] == ["m0-librdkafka", "m2-java"] and "orders-1" in x["message"] for x in r2["violations"]), r2


def _l4(verdict: dict, from_generation: int) -> dict:
    (finding,) = [v for v in verdict["invariants"]["L4"]["violations"]
                  if v["evidence"]["from_generation"] == from_generation]
    return finding


def test_franz_go_moving_a_claim_without_a_generation_is_a_known_issue(recorded_verdicts):
    v = recorded_verdicts["generationless"]
    moved = _l4(v, 4)
    assert moved["partitions"] == [["orders", 11]] and moved["generation"] == 6, moved
    assert moved["evidence"] == {"moved": 1, "needed": 0, "from_generation": 4, "taken_in": [5],
                                 "taken_by": "franz-go", "declared_without_generation": True}, moved
    assert "m5-franz-go" in moved["members"] and MEMBER in moved["members"]
    assert "taken by m5-franz-go in generation(s) 5" in moved["message"], moved["message"]
    assert [(x["evidence"]["from_generation"], x["evidence"]["taken_in"]) for x in sorted(
        v["invariants"]["L4"]["violations"], key=lambda x: x["evidence"]["from_generation"])] == [
        (4, [5]), (16, [17]), (26, [27])]
    assert all(x["known_issue"]["reference"].startswith("docs/client-bugs/franz-go-generationless-owned.md")
               for x in v["invariants"]["L4"]["violations"])
    assert v["invariants"]["L4"]["status"] == "known-issue"


def test_the_same_move_by_another_leader_still_fails_l4(recorded_verdicts):
    v = recorded_verdicts["generationless-java-led"]
    moved = _l4(v, 4)
    assert moved["partitions"] == [["orders", 11]], moved
    assert moved["evidence"]["taken_by"] == "java" and moved["evidence"]["declared_without_generation"] is True
    assert "known_issue" not in moved
    assert v["invariants"]["L4"]["status"] == "fail" and v["verdict"] == "fail"


def test_franz_go_moving_a_claim_without_a_generation_beside_a_needed_move_is_a_known_issue(recorded_verdicts):
    [moved] = recorded_verdicts["needed-move"]["invariants"]["L4"]["violations"]
    assert moved["partitions"] == [["orders", 3], ["orders", 4], ["orders", 9]], moved
    assert moved["evidence"] == {"moved": 3, "needed": 2, "from_generation": 12, "taken_in": [13],
                                 "taken_by": "franz-go", "declared_without_generation": True}, moved
    assert moved["known_issue"]["reference"].startswith("docs/client-bugs/franz-go-generationless-owned.md")


def test_the_same_plan_over_claims_with_a_generation_still_fails_l4(recorded_verdicts):
    v = recorded_verdicts["needed-move-with-generation"]
    [moved] = v["invariants"]["L4"]["violations"]
    assert moved["evidence"]["moved"] == 3 and moved["evidence"]["declared_without_generation"] is False, moved
    assert "known_issue" not in moved
    assert v["invariants"]["L4"]["status"] == "fail" and v["verdict"] == "fail"


def test_the_franz_go_row_needs_its_leader_and_a_claim_without_a_generation():
    bare = {"taken_by": "franz-go", "declared_without_generation": True}
    assert match("L4", "franz-go@1.22.3", bare) is not None
    assert match("L4", "franz-go@1.7.0", bare) is not None                     # every release reads it so
    assert match("L4", "franz-go@1.22.3", {**bare, "declared_without_generation": False}) is None
    assert match("L4", "franz-go@1.22.3", {**bare, "taken_by": "franz-go,java"}) is None
    assert match("L4", "java@4.4.0", bare) is None
    assert match("R3", "franz-go@1.22.3", bare) is not None
    assert match("R3", "franz-go@1.22.3", {**bare, "taken_by": "sarama"}) is None


def test_franz_go_undoing_a_revoke_of_a_claim_without_a_generation_is_a_known_issue(recorded_verdicts):
    v = recorded_verdicts["revoke-undone"]
    (undone,) = v["invariants"]["R3"]["violations"]
    assert undone["partitions"] == [["orders", 4]] and sorted(undone["members"]) == [MEMBER, "m5-franz-go"], undone
    assert [(c["revoked_generation"], c["assigned_generation"]) for c in undone["evidence"]["cases"]] == [(10, 11)]
    assert undone["evidence"]["taken_by"] == "franz-go" and undone["evidence"]["declared_without_generation"] is True
    assert undone["known_issue"]["reference"].startswith("docs/client-bugs/franz-go-generationless-owned.md")
    assert v["invariants"]["R3"]["status"] == "known-issue"
    # The revoking leader is the culprit, the member that revoked a partition it kept the harmed.
    assert (undone["culprit"], undone["harmed"]) == ("m5-franz-go", [MEMBER]), undone


def test_the_same_revoke_by_another_leader_still_fails_r3(recorded_verdicts):
    v = recorded_verdicts["revoke-undone-sarama-led"]
    (undone,) = v["invariants"]["R3"]["violations"]
    assert sorted(undone["members"]) == ["m3-sarama", MEMBER] and undone["evidence"]["taken_by"] == "sarama", undone
    assert "known_issue" not in undone
    assert v["invariants"]["R3"]["status"] == "fail" and v["verdict"] == "fail"


def test_sarama_handing_a_partition_to_its_stale_claimant_is_a_known_issue(recorded_verdicts):
    v = recorded_verdicts["stale-claim-handover"]
    (moved,) = v["invariants"]["R1"]["violations"]
    assert (moved["culprit"], moved["generation"], moved["partitions"]) == ("m0-sarama", 6, [["orders", 0]]), moved
    assert moved["evidence"]["declared_generation"] == 5 and moved["evidence"]["receiver_declared_generation"] == -1
    assert moved["known_issue"]["reference"].startswith("docs/client-bugs/sarama-stale-claim-handover.md")
    assert v["invariants"]["R1"]["status"] == "known-issue"


def test_the_same_move_to_a_member_that_never_claimed_it_still_fails_r1(recorded_verdicts):
    v = recorded_verdicts["stale-claim-unclaimed"]
    (moved,) = v["invariants"]["R1"]["violations"]
    assert moved["culprit"] == "m0-sarama" and moved["evidence"]["receiver_declared_generation"] is None, moved
    assert "known_issue" not in moved
    assert v["invariants"]["R1"]["status"] == "fail" and v["verdict"] == "fail"


def test_the_sarama_row_needs_a_claim_without_a_generation_and_a_cooperative_release():
    stale = {"receiver_declared_generation": -1}
    assert match("R1", "sarama@1.61.1", stale) is not None
    assert match("R1", "sarama@1.61.1", {"receiver_declared_generation": 4}) is None
    assert match("R1", "sarama@1.61.1", {"receiver_declared_generation": None}) is None
    assert match("R1", "sarama@1.50.3", stale) is None              # before the cooperative strategy
    assert match("R1", "java@4.4.0", stale) is None


def _resumed_below(verdict: dict, inv: str) -> list[dict]:
    return [v for v in verdict["invariants"][inv]["violations"] if v["allowed_by"] is None]


def test_a_re_read_caused_by_saramas_stale_commit_epoch_is_saramas_known_issue(recorded_verdicts):
    v = recorded_verdicts["stale-epoch"]
    for inv in ("D2", "D3"):
        found = _resumed_below(v, inv)
        assert found and all((x["culprit"], x["harmed"]) == ("m1-sarama", ["m2-java"]) for x in found), found[:2]
        assert all(x["evidence"]["stale_epoch"] == 0 and x["evidence"]["stale_epoch_committed_by"] == "m1-sarama"
                   for x in found), found[:2]
        assert all(x["known_issue"]["reference"].startswith("docs/client-bugs/sarama-stale-commit-leader-epoch.md")
                   for x in found), found[:2]
        assert v["invariants"][inv]["status"] == "known-issue"
    (d2,) = [x for x in _resumed_below(v, "D2") if x["partitions"] == [["orders", 1]]]
    assert "which the broker told m2-java ended at offset 208 (wire.jsonl:3360" in d2["message"], d2["message"]


def test_resuming_below_a_commit_untold_is_still_the_resumers_failure(recorded_verdicts):
    v = recorded_verdicts["stale-epoch-untold"]
    for inv in ("D2", "D3"):
        found = _resumed_below(v, inv)
        assert found and all(x["culprit"] == "m2-java" and x["evidence"]["stale_leader_epoch"] is False
                             and "known_issue" not in x for x in found), found[:2]
        assert v["invariants"][inv]["status"] == "fail"


def test_java_handing_records_after_a_fenced_commit_is_a_known_issue(recorded_verdicts):
    v = recorded_verdicts["fenced-commit"]
    (handed,) = v["invariants"]["C2"]["violations"]
    assert handed["culprit"] == "m1-java" and handed["evidence"]["fence_line"] == FENCE_LINE, handed
    assert (handed["evidence"]["fence_api"], handed["evidence"]["fence_error"]) == ("OffsetCommit", "UNKNOWN_MEMBER_ID")
    assert handed["evidence"]["records"] == 500, handed
    assert handed["known_issue"]["reference"].startswith("docs/client-bugs/java-fenced-commit-poll.md")
    assert v["invariants"]["C2"]["status"] == "known-issue"


def test_records_handed_after_a_fencing_heartbeat_still_fail_c2(recorded_verdicts):
    v = recorded_verdicts["fenced-heartbeat"]
    (handed,) = v["invariants"]["C2"]["violations"]
    assert handed["culprit"] == "m1-java" and handed["evidence"]["fence_api"] == "Heartbeat", handed
    assert "known_issue" not in handed
    assert v["invariants"]["C2"]["status"] == "fail" and v["verdict"] == "fail"
