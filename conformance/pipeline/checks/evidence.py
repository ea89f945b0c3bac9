"""The evidence schema: each invariant's evidence keys, declared once (name, type, meaning).

A finding's ``evidence`` (:func:`conformance.pipeline.checks.common.violation`) is what the
report shows beside its message and what a known client bug's row matches on
(:class:`conformance.members.known_issues.KnownIssue`). :data:`EVIDENCE` declares, per
invariant, every key a check may put there: the type its value has (``None`` too only where the
key says ``nullable``) and what it means. :func:`check` holds a finding to it when the finding is
built: an undeclared key or a value of another type is a check bug and raises ``ValueError``.
:func:`check_known_issue` refuses a known-issue row that matches on a key its invariant does not
declare (it could never match). ``docs/contracts.md`` lists the schema (a test keeps it in step).

Types are the top-level value's only (a list's items or a dict's values are not checked); a
``bool`` is not an ``int`` here unless the key says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Key:
    """One evidence key: its ``name``, the type (or types) of its value (``value_type``), whether the
    value may be ``None`` (``nullable``), and a one-line ``meaning``."""

    name: str
    value_type: type | tuple[type, ...]
    meaning: str
    nullable: bool = False

    @property
    def types(self) -> tuple[type, ...]:
        return self.value_type if isinstance(self.value_type, tuple) else (self.value_type,)

    def accepts(self, value: Any) -> bool:
        """True when ``value`` has this key's type (``None`` only when nullable; a bool only when declared)."""
        if value is None:
            return self.nullable
        if isinstance(value, bool) and bool not in self.types:
            return False
        return isinstance(value, self.types)

    @property
    def type_text(self) -> str:
        """The type for a reader: ``int``, ``dict | list``, ``str or null``."""
        text = " | ".join(t.__name__ for t in self.types)
        return f"{text} or null" if self.nullable else text


def _keys(*keys: Key) -> dict[str, Key]:
    names = [k.name for k in keys]
    if len(set(names)) != len(names):
        raise ValueError(f"evidence key declared twice: {sorted(n for n in names if names.count(n) > 1)}")
    return {k.name: k for k in keys}


# Keys shared by several invariants, declared once.
#: D2's and D3's: the broker told the member that resumed that the leader epoch of the commit it resumed
#: from ended below that commit (KIP-320), so the committer is the culprit (checks/delivery.py epoch_resets).
STALE_EPOCH_KEYS = (
    Key("stale_leader_epoch", bool, "the member resumed where the broker said the leader epoch of the commit it "
        "resumed from ended, below that commit: the committer named a stale epoch and is the culprit"),
    Key("stale_epoch", int, "that epoch", nullable=True),
    Key("stale_epoch_committed_by", str, "the member that committed the offset with that epoch", nullable=True),
    Key("epoch_end_wire_line", int, "wire line of the OffsetForLeaderEpoch answer that told where the epoch ended",
        nullable=True),
)
WIRE_LINE = Key("wire_line", int, "line of the capture's wire log (frames.jsonl) of the frame the finding is about")
WIRE_LINES = Key("wire_lines", list, "wire lines of every frame the finding is about (first is ``wire_line``)")
MEMBER_ID = Key("member_id", str, "the group member id the frame carries", nullable=True)
JOIN_WIRE_LINE = Key("join_wire_line", int, "wire line of the member's JoinGroup (request or answer) involved")
CONSUMER_MEMBERS = Key("consumer_members", list, "the KIP-848 consumer-protocol members in the group then")
BRIDGED_GENERATION = Key("bridged_generation", int,
                         "the final generation: the broker's classic bridge of a consumer group, planned by no leader")
LAST_CLASSIC_GENERATION = Key("last_classic_generation", int,
                              "the last generation the classic members formed (null: none before the bridge)",
                              nullable=True)
INCARNATION = Key("incarnation", int, "which start of the member's process (0: the first) the finding is about")
RECORDS = Key("records", int, "number of records involved")
BATCHES = Key("batches", int, "number of polled batches involved")
BOUND_MS = Key("bound_ms", float, "the time bound the check applied, in ms")
WINDOW = Key("window", dict, "the excusing fault window: fault, target, w_start, w_end, t0 (epoch ms)")
TAKEN_BY = Key("taken_by", str, "the kinds of the leaders that planned the moves ('+'-joined; what known issues match)")
DECLARED_WITHOUT_GENERATION = Key("declared_without_generation", bool,
                                  "the moves are explained by owned partitions declared without a generation")
FAULTS_NAMES = Key("faults", list, "the faults in force (their names)")
OFFERED = Key("offered", (dict, list),
              "assignors offered: per member (a dict, member -> its list in order) or one JoinGroup's list")

_CONSUMER_GROUP_ENDING = (BRIDGED_GENERATION, LAST_CLASSIC_GENERATION, CONSUMER_MEMBERS)

#: Every invariant's evidence keys (the one declaration; :func:`check` holds findings to it).
EVIDENCE: dict[str, dict[str, Key]] = {
    "E1": _keys(
        Key("metadata_hex", str, "the subscription (JoinGroup protocol metadata) bytes, hex"),
        MEMBER_ID,
        Key("frames", int, "number of frames carrying the same bytes"),
    ),
    "E2": _keys(
        Key("assignment_hex", str, "the assignment bytes (SyncGroup), hex"),
        MEMBER_ID,
    ),
    "E3": _keys(
        Key("severity", str, "always 'warning': unknown userData is reported, not failed"),
        Key("userdata_hex", str, "the userData bytes, hex"),
        Key("written_by", list, "the members whose assignments carried that userData"),
    ),
    "E4": _keys(
        Key("metadata_hex", str, "the subscription bytes, hex, whose owned partitions do not round-trip"),
    ),
    "E5": _keys(
        WIRE_LINE,
        Key("kind", str, "how the declaration is wrong: stale-claim, stale, missing, slack, slack-missing, not-yet-applied"),
        Key("assignment_wire_line", int, "wire line of the member's last assignment (SyncGroup answer); null: none",
            nullable=True),
        Key("assignment_generation", int, "generation of that assignment (present when its request was captured)"),
        Key("assignment_applied", bool, "whether the member's history has an event of that assignment's generation"),
        Key("history_ended", str, "how the member's history ended ownership before the join ('+'-joined; 'never')"),
        WIRE_LINES,
        Key("frames", int, "number of v0 subscriptions the member sent (v0 cannot declare owned partitions)"),
    ),
    "L1": _keys(
        Key("leader_ids", list, "the member ids the JoinGroup answers named leader of one generation"),
        Key("joined", list, "the member ids that joined that generation"),
        Key("leader_id", str, "the generation's leader's member id", nullable=True),
        Key("bridged_join_ts", float, "time (epoch ms) of the bridged JoinGroup answer"),
        Key("consumer_period", list, "[start, end] (epoch ms) of the period the group was a consumer group"),
        CONSUMER_MEMBERS,
        Key("sync_ts", float, "time (epoch ms) of the leader's SyncGroup (empty, or of another generation)"),
        Key("sync_generation", int, "generation of the SyncGroup the leader sent instead"),
        Key("sync_error_code", int, "error code of that SyncGroup's answer", nullable=True),
        Key("faults", list, "the faults that hit the leader: {fault, ts, rule}"),
        Key("leader_join_response_ts", float, "time (epoch ms) the leader got its JoinGroup answer", nullable=True),
        Key("sync_due_ts", float, "time (epoch ms) by which its SyncGroup was due"),
        Key("leader_errors", list, "the errors the leader's history reports meanwhile"),
        Key("members", list, "the members in the leader's view of the generation"),
        Key("assigned", list, "the members its assignment gave partitions to"),
    ),
    "L2": _keys(
        Key("leader", str, "the generation's leader", nullable=True),
        Key("owners", list, "the members the partition was assigned to"),
        WIRE_LINES,
        Key("subscribed", list, "the topics the members subscribed to"),
        WIRE_LINE,
        Key("needed", int, "partitions the subscribed topics have"),
        Key("assigned", int, "partitions the generation assigned"),
        *_CONSUMER_GROUP_ENDING,
    ),
    "L3": _keys(
        Key("counts", dict, "partitions assigned per member of the final generation"),
        *_CONSUMER_GROUP_ENDING,
    ),
    "L4": _keys(
        Key("moved", int, "partitions that moved between the two generations"),
        Key("needed", int, "the fewest moves the membership change needed"),
        Key("from_generation", int, "the generation the moves start from"),
        Key("taken_in", list, "the generations in which the partitions were taken"),
        TAKEN_BY,
        DECLARED_WITHOUT_GENERATION,
    ),
    "L5": _keys(
        Key("never_led", list, "client kinds in the run that never led a generation"),
        Key("led", list, "client kinds that did"),
    ),
    "R1": _keys(
        Key("claimant_member_id", str, "member id of the member that declared the partition", nullable=True),
        Key("declared_generation", int, "generation the declaration named"),
        Key("declared_below_round", bool, "another member declared owned partitions at a higher generation in "
            "that round (the claimant missed a round)"),
        Key("receiver_declared_generation", int, "generation the receiver named when it declared the same partitions "
            "owned in that round, a stale claim (-1: without a generation); null when it did not declare them all",
            nullable=True),
        JOIN_WIRE_LINE,
        Key("sync_wire_line", int, "wire line of the SyncGroup that assigned the partition", nullable=True),
        Key("assignment_hex", str, "that assignment's bytes, hex", nullable=True),
    ),
    "R2": _keys(
        Key("overlaps", list, "up to 20 overlaps: {partition, from, to, ended_by, kept_by}"),
        Key("moved_by_wire_line", int, "the SyncGroup (wire.jsonl line) in which the culprit leader gave the "
                                       "partition to one owner while the other validly declared it (R1)"),
        Key("from", float, "start (epoch ms) of the overlap"),
        Key("to", float, "end (epoch ms) of the overlap"),
        Key("kept_by", str, "the member that kept the partition", nullable=True),
        WINDOW,
        Key("removed_ts", float, "time (epoch ms) the keeper was removed from the group"),
        Key("removed_by", str, "how the broker removed it (a fencing answer, a generation formed without it)"),
    ),
    "R3": _keys(
        Key("cases", list, "up to 20 cases: {partition, revoked_ts, assigned_ts, revoked_generation, "
                           "assigned_generation}"),
        TAKEN_BY,
        DECLARED_WITHOUT_GENERATION,
        Key("revoked_ts", float, "time (epoch ms) the partition was revoked"),
        Key("assigned_ts", float, "time (epoch ms) it was assigned elsewhere"),
        WINDOW,
        Key("left", list, "member ids that left between the two generations"),
        Key("joined", list, "member ids that joined"),
        Key("topics_before", list, "subscribed topics before"),
        Key("topics_after", list, "subscribed topics after"),
    ),
    "R4": _keys(
        Key("revoke_bound_ms", float, "the bound for acknowledging a revoke, in ms"),
        Key("assigned_to", list, "members the partition was given to"),
        Key("rejoined", bool, "whether the revoking member sent a JoinGroup after revoking"),
        WINDOW,
    ),
    "R5": _keys(
        OFFERED,
        Key("expected", str, "the protocol the scenario expected", nullable=True),
        Key("protocol_name", str, "the protocol the group chose", nullable=True),
        JOIN_WIRE_LINE,
    ),
    "C1": _keys(
        INCARNATION,
        Key("ownership_ended_by", str, "the history event that ended ownership (null: unknown)", nullable=True),
        Key("ended_ts", float, "time (epoch ms) of that event", nullable=True),
        BATCHES,
        RECORDS,
        Key("from_offset", int, "first offset consumed after ownership ended"),
        Key("to_offset", int, "last such offset"),
        Key("harmed", list, "the members that owned the partition meanwhile"),
    ),
    "C2": _keys(
        Key("fence_line", int, "wire line of the fencing answer"),
        Key("fence_ts", float, "time (epoch ms) of it"),
        Key("fence_api", str, "its API (Heartbeat, OffsetCommit, ...)"),
        Key("fence_error", str, "its fencing error name"),
        BATCHES,
        RECORDS,
        Key("first_poll_ts", float, "time (epoch ms) of the first poll after the fence", nullable=True),
    ),
    "D1": _keys(
        Key("missing", list, "up to 100 [first, last] offset ranges never consumed"),
        RECORDS,
        Key("owner_changed", bool, "whether more than one member owned the partition then"),
    ),
    "D2": _keys(
        Key("previous_ts", float, "time (epoch ms) of the earlier, higher commit"),
        Key("previous", int, "its offset"),
        Key("now", int, "the lower offset committed after it"),
        Key("same_member", bool, "whether the same member committed both"),
        *STALE_EPOCH_KEYS,
        WIRE_LINE,
        Key("current_generation", int, "the generation formed before the stale commit"),
        Key("first_wire_line", int, "wire line of the first such commit"),
        Key("commits", int, "number of such commits"),
        LAST_CLASSIC_GENERATION,
        Key("consumer_member", bool, "whether the committer was a consumer-protocol member"),
    ),
    "D3": _keys(
        Key("first_consumed_ts", float, "time (epoch ms) the records were first consumed"),
        Key("first_consumed_by", str, "the member that first consumed them"),
        Key("duplicates", int, "records consumed again"),
        Key("acquired_ts", float, "time (epoch ms) the re-consumer acquired the partition", nullable=True),
        Key("committed_before", int, "offset of the last accepted commit before the re-reader acquired the partition", nullable=True),
        Key("committed_before_fault", int, "offset of the last accepted commit before the first fault", nullable=True),
        FAULTS_NAMES,
        *STALE_EPOCH_KEYS,
        Key("ranges", int, "number of duplicate offset ranges"),
    ),
    "K1": _keys(
        WIRE_LINE,
        MEMBER_ID,
        Key("sent_epoch", int, "the member epoch the member sent"),
        Key("given_epoch", int, "the epoch the broker gave it: the higher one before a stale send; the lower new one when it fell"),
        Key("earlier_epoch", int, "the higher epoch the broker had given it before"),
    ),
    "K2": _keys(
        WIRE_LINE,
        Key("leader", str, "the leader the bridged JoinGroup answer named", nullable=True),
        Key("members_listed", int, "members the bridged JoinGroup answer listed"),
        CONSUMER_MEMBERS,
        Key("join_response_line", int, "wire line of the JoinGroup answer"),
        Key("assignments", int, "assignments the SyncGroup carried"),
    ),
    "K3": _keys(
        WIRE_LINE,
        MEMBER_ID,
        Key("target", list, "the assignment the broker gave: [topic, partition] pairs"),
        Key("last_reported", list, "the partitions the member last reported owning"),
        Key("requests_since", int, "heartbeats since the target was given"),
        Key("out_of_step_ms", float, "how long the member was out of step, in ms"),
        BOUND_MS,
        Key("in_step_wire_line", int, "wire line where it came in step (null: never)", nullable=True),
    ),
    "K4": _keys(
        WIRE_LINE,
        MEMBER_ID,
        Key("commit_epoch", int, "the epoch (or classic generation) the commit carried"),
        Key("member_epoch", int, "the member's epoch then"),
        Key("classic", bool, "the committer was a classic member of a consumer group"),
        JOIN_WIRE_LINE,
    ),
    "K5": _keys(
        WIRE_LINE,
        Key("request_line", int, "wire line of the join request"),
        MEMBER_ID,
        Key("migration_policy", str, "the broker's group.consumer.migration.policy in effect"),
        Key("recorded_policy", str, "the policy the manifest recorded (null: the version's default)", nullable=True),
        Key("classic_members", list, "the classic members in the group then"),
        Key("error_code", int, "the answer's error code", nullable=True),
        Key("error_message", str, "the answer's error message", nullable=True),
        Key("last_sync_line", int, "wire line of the last leader's SyncGroup", nullable=True),
        Key("assignments_with_userdata", list, "the members whose assignments carried userData"),
        CONSUMER_MEMBERS,
    ),
    "P1": _keys(
        Key("owned_from_ts", float, "time (epoch ms) the member's ownership began"),
        Key("owned_to_ts", float, "time (epoch ms) it ended"),
        INCARNATION,
        Key("stall_from_ts", float, "time (epoch ms) the stall began"),
        Key("stall_to_ts", float, "time (epoch ms) it ended"),
        Key("stall_ms", float, "its length in ms"),
        Key("ended_by", str, "what ended it (consumed again, an end reason)"),
        BOUND_MS,
        Key("first_waiting_offset", int, "the first offset waiting"),
        Key("last_acknowledged_offset", int, "the last acknowledged offset"),
        Key("first_acknowledged_ts", float, "time (epoch ms) the first waiting record was acknowledged"),
        Key("acknowledged_by_ts", float, "time (epoch ms) the last was"),
        Key("outside_fault_windows_ms", float, "ms of the stall outside every fault window"),
        Key("outside_rebalances_ms", float, "ms outside the fault windows and the member's rebalances"),
        Key("fault_windows", list, "the fault windows: {fault, target, from_ts, to_ts}"),
        Key("rebalances", list, "the member's rebalances: {from_ts, to_ts}"),
    ),
    "V1": _keys(
        Key("await", str, "the runner's await that timed out"),
        Key("timeout_ms", float, "its timeout in ms"),
        Key("phase", str, "the scenario phase", nullable=True),
        Key("state", str, "the last state the runner saw", nullable=True),
        Key("last_fault_ts", float, "time (epoch ms) of the last fault", nullable=True),
        Key("last_assigned_to", dict, "unowned partition -> the member last assigned it"),
        Key("convergence_ms", float, "how long the group took to converge, in ms"),
        BOUND_MS,
        INCARNATION,
        Key("error", str, "the member's last error", nullable=True),
        Key("end", str, "how its process ended", nullable=True),
        Key("exit_code", int, "its exit code", nullable=True),
        Key("refused_wire_line", int, "wire line of the broker's refusal of its join"),
        Key("refusal", str, "the refusal's error message", nullable=True),
        Key("refused_error", str, "the refusal's error name", nullable=True),
    ),
    "V3": _keys(
        Key("member_id", str, "the member id told and dropped"),
        Key("told_wire_line", int, "wire line of the first answer that told it a rebalance was in progress (of the "
                                   "request, for an OffsetCommit)"),
        Key("told_by", str, "the API of that answer"),
        Key("dropped_wire_line", int, "wire line of the first UNKNOWN_MEMBER_ID answer after it (of the request, for "
                                      "an OffsetCommit)"),
        Key("dropped_by", str, "the API of that answer"),
        Key("waited_ms", float, "from the first to the second"),
        Key("requests_meanwhile", int, "the member id's requests in between"),
        Key("apis_meanwhile", list, "their APIs"),
        Key("kept_committing", bool, "it sent OffsetCommit requests in between (the evidence of KAFKA-14024)"),
        Key("excuses", list, "faults and ways out in between (fault, ts, rule)"),
    ),
    "V2": _keys(
        Key("generations", int, "generations formed"),
        Key("bound", int, "the bound: twice the membership changes"),
        Key("changes", int, "membership changes"),
        Key("starts", int, "member starts"),
        Key("opened", dict, "member -> rebalances it opened (most first)"),
    ),
}


def check(invariant: str, evidence: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming ``invariant``, the key and the value's type when ``evidence`` has a key
    :data:`EVIDENCE` does not declare for ``invariant`` or a value of another type (or ``invariant`` has
    no declaration)."""
    declared = EVIDENCE.get(invariant)
    if declared is None:
        raise ValueError(f"{invariant}: no evidence keys declared (conformance.pipeline.checks.evidence.EVIDENCE)")
    for name, value in evidence.items():
        key = declared.get(name)
        if key is None:
            raise ValueError(f"{invariant}: undeclared evidence key {name!r} (value of type {type(value).__name__}); "
                             f"declared: {', '.join(declared)}")
        if not key.accepts(value):
            raise ValueError(f"{invariant}: evidence key {name!r} has a value of type {type(value).__name__}, "
                             f"declared {key.type_text}")


def check_known_issue(invariant: str, evidence: tuple[tuple[str, Any], ...]) -> None:
    """Raise ``ValueError`` when a known-issue row of ``invariant`` matches on an ``evidence`` key the
    invariant does not declare, or on a value of another type: such a row could never match."""
    declared = EVIDENCE.get(invariant)
    if declared is None:
        raise ValueError(f"known issue of {invariant}: no evidence keys declared for it")
    for name, value in evidence:
        key = declared.get(name)
        if key is None:
            raise ValueError(f"known issue of {invariant}: evidence key {name!r} is not declared for {invariant}; "
                             f"declared: {', '.join(declared)}")
        if not key.accepts(value):
            raise ValueError(f"known issue of {invariant}: evidence key {name!r} has a value of type "
                             f"{type(value).__name__}, declared {key.type_text}")
