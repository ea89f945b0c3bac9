"""Every exemption a check may apply, named, with its protocol reason.

A check that finds an anomaly and excuses it does not drop it: it reports an
*allowed* finding (:func:`conformance.pipeline.checks.common.violation` with
``allowed_by`` naming a rule below), with the evidence that made the rule
apply. Allowed findings never fail a cell, and every report shows them per
cell, counted per rule (summary.json ``allowed``, the HTML cell page, JUnit
properties, allure parameters), so an exemption that starts excusing too much
is seen, not silently absorbed.

A rule is as narrow as the evidence that justifies it. Widening one to silence
a false alarm needs a test that the bug class it could hide is still caught
(tests/test_pipeline_invariants.py, ``RULE_STORIES``: per rule, a story inside
the rule is an allowed finding and the same anomaly just outside it is a
violation).

What a check does not judge at all (R1 in eager generations, D1 in a run cut
short, ...) is scope, said in the check module's docstring; it produces no
finding of either kind.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """An exemption: ``excuses`` says which anomaly it allows and exactly when, ``reason`` why the
    protocol makes that anomaly legitimate (with a reference: a KIP, a client's documented
    behaviour, a measured case)."""

    name: str
    invariant: str
    excuses: str
    reason: str


_RULES: tuple[Rule, ...] = (
    Rule("E5/clock-slack", "E5",
         "the history lagging the wire, one way only: a declared partition the member's history records assigned "
         "up to a heartbeat interval after the JoinGroup, or an undeclared one it records revoked or lost up to a "
         "heartbeat interval after it (never a declaration of what the history gave up before the JoinGroup; "
         "the wire's exact check, against the last SyncGroup response, still applies)",
         "The wire tap and the harness are different processes stamping epoch ms, and a harness records an "
         "assignment in its callback, after the client took it: the history can lag the wire by up to a poll."),
    Rule("E5/closing", "E5",
         "a declaration of partitions the member's history revoked or lost before the JoinGroup, when the runner "
         "had already asked that member to stop (its nemesis terminate line, with no start since)",
         "A closing client revokes what it owns in its close and then leaves; a rejoin it had queued may still go "
         "out just before its LeaveGroup, declaring what it owned (seen: librdkafka 2.16.1 in a container, JoinGroup "
         "and LeaveGroup in the same millisecond, 23 ms after its close revoked them). No leader plans with a member "
         "that leaves."),
    Rule("E5/not-yet-applied", "E5",
         "a declared partition that the member's history does not show owned, when the member's last SyncGroup "
         "response before the JoinGroup (since it last started, under the JoinGroup's member id) assigned it, its "
         "history has no event of that assignment's generation, and no revoked or lost of the partition between "
         "that response and the JoinGroup (the wire's exact check, against the last SyncGroup response, still "
         "applies)",
         "KIP-429: a member declares as owned the partitions of the last assignment it received. A harness records "
         "an assignment only when the client's callback runs, and a new rebalance can begin before it does (seen: "
         "Sarama 1.61.1 rejoined 93 ms after a SyncGroup response, before ConsumerGroupHandler.Setup ran for it)."),
    Rule("L1/fault-hit-leader", "L1",
         "a generation whose leader sent no SyncGroup when a fault that can silence that leader or the coordinator "
         "(dead-looking, a toxic only by the toxic rule, or a kill of the leader until its next start) was in "
         "force between the leader's JoinGroup response and the end of that round: when its SyncGroup was due "
         "(that response plus the rebalance timeout, the cell's max.poll.interval.ms) or when the next "
         "generation formed, whichever came first",
         "A leader killed, paused or cut off before it could sync cannot send SyncGroup; the coordinator "
         "times the round out after the rebalance timeout and rebalances (KIP-62). A fault that silences nobody "
         "(a 100 ms latency, add-partitions) or comes after the sync was due explains nothing."),
    Rule("L1/leader-stopping", "L1",
         "a generation whose leader sent no SyncGroup when, between the JoinGroup request it was elected by and "
         "the end of that round (when its SyncGroup was due, or when the next generation formed, whichever came "
         "first), it sent its LeaveGroup, the runner stopped or killed it, or its history ended by a stop or a "
         "kill (not a crash, nor a stop after a fatal error of its own)",
         "A closing client elected leader on its way out rightly abandons the round: its LeaveGroup or exit is "
         "the evidence; a stop asked for earlier, with the leader still there when the sync was due, is none, "
         "and so is a stop after the group moved on to its next generation without it."),
    Rule("L1/dead-leader-id", "L1",
         "a generation whose leader id belongs to an instance killed while its JoinGroup was pending, unseen "
         "on the wire since the member started again",
         "The coordinator keeps a dead member id until its session expires and may elect it (seen: broker "
         "3.9.2, reference killed mid-join)."),
    Rule("L1/consumer-group", "L1",
         "a generation with no leader's SyncGroup assignments whose JoinGroup was answered while the group was a "
         "KIP-848 consumer group (a consumer-protocol member admitted by a ConsumerGroupHeartbeat response and not "
         "yet gone: left, fenced, or silent for a session timeout)",
         "KIP-848: a classic member inside a consumer group goes through the broker's classic bridge; its JoinGroup "
         "response names no leader and lists no members, and the broker computes the assignment (returned in the "
         "SyncGroup response). No client runs an assignor, so no SyncGroup carries assignments. K2 judges the bridge."),
    Rule("L2/consumer-group", "L2",
         "the final-generation completeness of a run whose last generation formed by the scenario's end is one of "
         "the broker's classic bridge (the group ended as a KIP-848 consumer group)",
         "KIP-848: no leader planned that state, the broker did; its generation number is a member epoch and "
         "no SyncGroup carries the assignments L2 would count. K3 judges that each consumer member reaches its "
         "assignment, R2 that no partition has two owners, V1 that the group converges after the last fault."),
    Rule("L3/consumer-group", "L3",
         "the final-generation balance of a run whose last generation formed by the scenario's end is one of the "
         "broker's classic bridge (the group ended as a KIP-848 consumer group)",
         "KIP-848: the broker's server-side assignor balanced that state, not a client's; no SyncGroup carries "
         "the counts L3 would compare. K3 and V1 judge the final state."),
    Rule("D2/member-epoch", "D2",
         "an accepted commit whose generation is below the last classic generation formed before it, when the "
         "commit was sent by a consumer-protocol member or while the group was a KIP-848 consumer group",
         "KIP-848: there the commit's generation is the committing member's own epoch, not a group-wide "
         "generation; members' epochs differ, so the order of generations says nothing of staleness. K4 judges "
         "those commits against the member's own epoch, as the broker must: a consumer-protocol member's from "
         "its heartbeat responses, a classic member's from its JoinGroup answers through the broker's bridge "
         "(KIP-1251's assignment epochs from its heartbeat responses or SyncGroup answers, from broker 4.3)."),
    Rule("R2/fault-window", "R2",
         "an overlap that begins and ends inside a fault window of the owner that kept the partition (the one "
         "whose ownership began first) or of the broker (the fault's invocation to its heal plus a session timeout "
         "and a heartbeat), and begins at or after the wire shows the broker removing that owner after the fault "
         "(a fencing answer to it, a classic generation formed without it, or, in a KIP-848 group, a "
         "ConsumerGroupHeartbeat answer, or a SyncGroup answer of the classic bridge, giving the partition to the "
         "other owner while the broker had answered the stale holder nothing without error since the fault)",
         "A member that looks dead to the group (paused, cut off) loses its partitions at the coordinator "
         "before it can know; it records `lost` only once it notices (KIP-429: lost partitions)."),
    Rule("R3/fault-window", "R3",
         "a revoke and re-assign of a retained partition inside a fault window of the member or the broker",
         "The member's session was cut, not rebalanced; Sarama ends its whole session on a coordinator EOF "
         "and, having no `lost` signal, reports a revoke of everything it then gets back."),
    Rule("R3/replanned", "R3",
         "a revoke and re-assign when the group's membership really changed between the two generations "
         "(a member left or joined: the leader's member ids differ) or the topics the two assignments "
         "cover differ, and the revoking generation's assignment did not keep the partition",
         "The revoke was due in the first round; the next leader planned for another group (KIP-429 "
         "follow-up rebalance). Seen with kafka-python leading subscription-change."),
    Rule("R4/fault-window", "R4",
         "a revoked partition that reaches no new owner within the bound while a fault window of the "
         "revoker or the broker is open at the revoke",
         "The session was cut, not rebalanced (as R3/fault-window); V1 judges that the group converges and "
         "owns every partition after the last fault."),
    Rule("D3/rebalance", "D3",
         "a re-read by a member that owned the partition then (its history assigned it) and acquired it "
         "between the two reads, or of records another member read first, starting at or above the last "
         "commit accepted before the re-reader acquired it",
         "A new owner resumes from the last committed offset; records consumed but not yet committed by "
         "the previous owner are delivered again (at-least-once delivery)."),
    Rule("D3/fault", "D3",
         "a re-read while a fault window of the re-reader, the first reader or the broker is open, "
         "starting at or above the last commit the broker accepted before that window opened",
         "A member cut off or paused keeps fetching until it learns it was fenced; its last fetches overlap "
         "the new owner's reads (at-least-once delivery under faults)."),
    Rule("V1/migration-refused", "V1",
         "a member incarnation that stops on a fatal error (or exits) after the broker answered its "
         "consumer-protocol join (a ConsumerGroupHeartbeat at epoch 0) with GROUP_ID_NOT_FOUND, or its classic "
         "JoinGroup with INCONSISTENT_GROUP_PROTOCOL, when no join of that incarnation was ever admitted (an epoch "
         "> 0, a JoinGroup without error)",
         "KIP-848: the broker refuses to convert a live classic group to a consumer group (migration policy, "
         "assignments with userData: KAFKA-18134) with GROUP_ID_NOT_FOUND, and Java 4.x, librdkafka 2.12+ and the "
         "reference treat that error as fatal (seen: all three on broker 4.4.0 with migration-policy=disabled); "
         "from 4.3 it refuses a classic member's join into a consumer group under migration-policy=disabled with "
         "INCONSISTENT_GROUP_PROTOCOL (KAFKA-20640), a fatal error for classic clients too. "
         "K5 judges whether the refusal was due; a member that crashes after it was admitted is still a V1 violation."),
    Rule("V3/fault-window", "V3",
         "a classic member dropped (UNKNOWN_MEMBER_ID) without the JoinGroup it owed after being told a rebalance "
         "was in progress, when a dead-looking fault window of that member, the broker or every member (a pause, a "
         "cut, a stall of max.poll.interval.ms, a broker restart, a toxic by the toxic rule, with the session "
         "timeout and a heartbeat after its heal) was in force when it was told or opened within a heartbeat "
         "interval after",
         "A paused or cut-off member cannot send its JoinGroup, and a coordinator that restarted or could not hear "
         "it cannot receive one; the coordinator completes the round without it after the rebalance timeout "
         "(KIP-62). A fault that began later explains nothing: a live member rejoins on the next turn of its poll "
         "loop, and one that kept talking without joining is the bug (KAFKA-14024)."),
    Rule("V3/leaving", "V3",
         "a classic member dropped without the JoinGroup it owed when, after it entered its generation and no "
         "later than a heartbeat interval after it was told a rebalance was in progress (and before the drop), "
         "it sent a LeaveGroup, the runner stopped or killed it, or its history ended (not at the run's end)",
         "A member on its way out rightly does not join the new round; its LeaveGroup or exit is the evidence "
         "(a crash is V1's finding). A stop that came later does not explain why it had not rejoined by then."),
    Rule("P1/fault-window", "P1",
         "a stall longer than the bound whose time outside the fault windows of the owner or the broker, summed "
         "over the whole stall, is no longer than the bound (a window: the fault's invocation to its heal plus a "
         "session timeout and a heartbeat, opened only by a fault that can expire a session: a pause, cut or "
         "disconnect lasting at least the session timeout, a toxic by the toxic rule, a broker restart or kill)",
         "A paused member fetches nothing; a member cut off from the broker, or a broker being restarted, serves "
         "no fetch; after the heal the member needs up to a session timeout to learn whether it still owns the "
         "partition (KIP-429: lost partitions) before it fetches again or gives it up."),
    Rule("P1/rebalance", "P1",
         "a stall longer than the owner's bound whose time outside the owner's own rebalances (by its wire: from a "
         "REBALANCE_IN_PROGRESS answer or its JoinGroup request to its SyncGroup response; as a consumer-protocol "
         "member, from a heartbeat answer giving it an assignment to its next heartbeat reporting what it owns) "
         "and outside the fault windows of P1/fault-window, summed over the whole stall, is no longer than the "
         "bound",
         "A client may stop fetching the partitions it keeps while it is in a rebalance: Sarama ends its session "
         "and kafka-python and librdkafka pause consumption until the SyncGroup answer (seen: 6-8 s in real chaos "
         "cells waiting for a killed member's session), and a KIP-848 member reconciles before it fetches what it "
         "was given. How long the rebalance itself took is V1's and R3's to judge, not P1's."),
)

#: name -> Rule, in report order.
RULES: dict[str, Rule] = {r.name: r for r in _RULES}
