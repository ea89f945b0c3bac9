"""Invariants of the KIP-848 consumer group protocol, K1-K5, judged from the wire.

Family K (for KIP-848): what a consumer group adds to the classic invariants.
Its members heartbeat with ConsumerGroupHeartbeat (``heartbeats`` table:
member epochs, owned partitions in requests, the broker's assignment in
responses), classic members in it go through the broker's classic bridge,
and its commits carry member epochs. What the classic families still judge
there: E1-E5 (classic members' bytes), R2 (no two live owners, from the
histories, across protocols), D1-D3, P1, V1; see
:mod:`conformance.pipeline.consumer_group` for when the group is a consumer
group and the L1/D2 rules that say so.

- K1: a member id's epochs only grow. The broker's epochs in successful
  responses never fall, and a request never carries an epoch below one the
  broker had already given that member id before the request was sent, unless
  the member left (epoch -1/-2) or was fenced (FENCED_MEMBER_EPOCH,
  UNKNOWN_MEMBER_ID) in between: a new stint starts from 0.
- K2: the classic bridge. Inside a consumer period no successful JoinGroup
  response names a leader or lists members (the broker's part), and a classic
  member never sends SyncGroup assignments for a generation whose JoinGroup
  response named no leader (the client's part: it must not run its assignor).
- K3: every consumer member converges to its assignment. A member is in step
  at a request when the owned set it reports (the last ``owned`` it sent in
  its stint; an omitted ``owned`` means unchanged) equals its current
  assignment (the last ``assigned`` a successful response gave it). After a
  response changes its assignment, the member must be in step again within
  the bound, whatever changed meanwhile (a change to the set it already
  reports needs nothing): the rebalance timeout (manifest
  ``max_poll_interval_ms``, the members' ``rebalance.timeout.ms`` default: how
  long KIP-848 gives a member to revoke before the broker fences it) plus a
  heartbeat interval (the acknowledgement rides the next heartbeat). A stint
  that ends (left, fenced, or its last frame) sooner than the bound after the
  change is not judged. One finding per spell out of step, at its first
  change.
- K4: no stale-epoch commit is accepted. An OffsetCommit from a consumer
  member id that the broker answers with success must not carry an epoch below
  the member's epoch at the time (the last epoch a response gave it before
  the commit was sent). On brokers from 4.3 (KIP-1251) a commit from an
  earlier epoch is valid for a partition the member was assigned at that epoch
  or before and still holds; only the other partitions are findings.
  Classic members in a consumer group are judged too (the commits D2 leaves
  to K4 under ``D2/member-epoch``): a member id that sends no
  ConsumerGroupHeartbeat, committing while the group is a consumer group (its
  request inside a consumer period). The broker's bridge answers its
  JoinGroup with its member epoch as the generation and validates its commits
  against that epoch as a consumer member's (``ConsumerGroup.
  validateOffsetCommit``, the error ILLEGAL_GENERATION instead of
  STALE_MEMBER_EPOCH; read in 4.4.0's bytecode), so its epoch at a commit is
  the generation of the last JoinGroup answer without error that its member id
  got before sending it. KIP-1251 covers it too (from 4.3; the same bytecode
  runs the assignment-epoch validator for both kinds of member), with the
  assignment epochs read from its SyncGroup answers (each carries the
  assignment of its request's generation; the answers of the member since its
  member id's first JoinGroup answer): a partition's epoch is the generation of
  the first answer of an unbroken run of answers that hold it, and every answer
  from before the consumer period counts at the generation of the last of them
  (converting a classic group, the broker gives every member's partitions the
  classic generation as their assignment epoch: ``ConsumerGroup.
  fromClassicGroup``). Measured on the five recorded KIP-848 runs of
  fixtures/client-behaviour that have classic commits in a consumer group
  (31,556 accepted partition commits) and a real migrate-to-consumer cell
  (2,304): none is behind its member's epoch.
- K5: online migration follows the broker's policy. A consumer-protocol join
  (a heartbeat at epoch 0) that meets a live classic group (outside every
  consumer period, with a classic member answered without error within a
  session timeout less a heartbeat before it, and no LeaveGroup from it since)
  asks the broker to convert the group (KIP-848 online upgrade). The policy is
  the manifest's ``migration_policy`` (the broker's
  ``group.consumer.migration.policy``; absent: the broker's default, disabled
  in 3.8-3.9 and bidirectional from 4.0); a broker before 3.8 has no online
  migration, as if disabled. When the policy does not allow the upgrade
  (disabled, downgrade) the broker must refuse the join with
  GROUP_ID_NOT_FOUND, so an admitted join is a finding. When it allows it
  (bidirectional, upgrade), a refusal is a finding unless the group's current
  assignments (the last leader's SyncGroup before the join) carry userData on
  a broker from 4.0 (KAFKA-18134: "an unsupported custom assignor is in use"),
  and such a group admitted is a finding too. Joins that get other errors
  (coordinator moved, loading) are not judged; what a refused member does
  next is V1's (rule ``V1/migration-refused``).
  The other direction: a classic JoinGroup (protocol type ``consumer``) that
  meets a live consumer group (its request inside a consumer period) joins it
  through the broker's classic bridge
  (``GroupMetadataManager.classicGroupJoin`` sends a join to a non-empty
  consumer group to ``classicGroupJoinToConsumerGroup``). From 4.3 that
  method first calls ``throwIfClassicMemberCannotJoinConsumerGroup``: with
  the policy ``disabled`` it refuses with INCONSISTENT_GROUP_PROTOCOL ("Cannot
  join the consumer group ... with the classic protocol because the group
  migration is disabled"; KAFKA-20640, apache/kafka#22457; read in 4.4.0's
  bytecode, measured on 4.3.1 and 4.4.0, absent from 3.9.2). Under
  ``upgrade``, ``downgrade`` and ``bidirectional`` (and every policy before
  4.3) the policy admits it; the broker then refuses only a member whose
  protocols share none with every classic member already in the group
  (``ConsumerGroup.supportsClassicProtocols``). So with ``disabled`` on a
  broker from 4.3 a join that passed (no error, or MEMBER_ID_REQUIRED, which
  the broker answers only after that check) is a finding; otherwise a
  refusal when no other classic member was live in the group (none to
  conflict with) is a finding. What the refused member does next is V1's
  (rule ``V1/migration-refused``). Downgrades themselves (the last consumer
  member leaving) are not judged here: a group that converts back shows in
  K2 and the classic checks.
"""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import Window
from pyspark.sql import functions as F

from conformance.pipeline.checks.common import fmt_tps, timing, violation
from conformance.pipeline.consumer_group import (
    classic_join_answers,
    consumer_member_ids,
    consumer_periods,
    consumer_spans,
    heartbeat_stints,
    in_consumer_period,
    join_answers,
)
from conformance.pipeline.derived import Tables

#: The first broker version that accepts a commit from an epoch between the partition's assignment
#: epoch and the member epoch (KIP-1251).
ASSIGNMENT_EPOCH_COMMITS_FROM = (4, 3)
#: The first broker version with online migration between the protocols (``group.consumer.migration.policy``).
ONLINE_MIGRATION_FROM = (3, 8)
#: The first broker version whose migration policy defaults to bidirectional (3.8-3.9: disabled).
BIDIRECTIONAL_DEFAULT_FROM = (4, 0)
#: The first broker version that will not upgrade a group whose assignments carry userData (KAFKA-18134).
USERDATA_REFUSED_FROM = (4, 0)
#: The first broker version that refuses a classic member's join into a consumer group under the policy
#: ``disabled`` (KAFKA-20640; measured on 4.3.1 and 4.4.0, 3.9.2 admits it).
CLASSIC_JOIN_REFUSED_FROM = (4, 3)
#: Migration policies that allow a classic group's online upgrade.
UPGRADE_POLICIES = ("bidirectional", "upgrade")
#: The classic group APIs whose answer without error shows a member in the classic group.
CLASSIC_APIS = ("JoinGroup", "SyncGroup", "Heartbeat")


def _version(text: str | None) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in str(text).split("-")[0].split(".")[:2])
    except ValueError:
        return ()


def migration_policy(broker_version: str | None, recorded: str | None) -> str | None:
    """The broker's effective migration policy (K5): the recorded one, else the broker's default;
    ``disabled`` before online migration existed; None when the broker version is unknown."""
    version = _version(broker_version)
    if not version:
        return None
    if version < ONLINE_MIGRATION_FROM:
        return "disabled"
    return recorded or ("bidirectional" if version >= BIDIRECTIONAL_DEFAULT_FROM else "disabled")


def _epoch_segments(t: Tables):
    """Heartbeats with ``seg`` (per member id: resets before this row, a leave or a fence ends a
    segment) and ``given_before``: the highest epoch a successful response gave the member id
    earlier in the segment (null: none)."""
    hb = heartbeat_stints(t)
    w = Window.partitionBy("run", "member_id").orderBy("line")
    upto = w.rowsBetween(Window.unboundedPreceding, -1)
    hb = hb.withColumn("seg", F.coalesce(F.sum(F.col("reset").cast("int")).over(upto), F.lit(0)))
    given = F.when((F.col("direction") == "response") & (F.coalesce("error_code", F.lit(0)) == 0)
                   & (F.col("member_epoch") > 0), F.col("member_epoch"))
    ws = Window.partitionBy("run", "member_id", "seg").orderBy("line").rowsBetween(Window.unboundedPreceding, -1)
    return hb.withColumn("given", given).withColumn("given_before", F.max("given").over(ws))


def check_k1(t: Tables) -> list[dict]:
    seg = _epoch_segments(t)
    fell = seg.where(F.col("given").isNotNull() & (F.col("given") < F.col("given_before")))
    stale = seg.where((F.col("direction") == "request") & (F.col("member_epoch") > 0)
                      & (F.col("member_epoch") < F.col("given_before")))
    cols = ["run", "member", "member_id", "line", "ts", "member_epoch", "given_before", "error_code"]
    fell, stale = t.collect_many(fell.select(*cols), stale.select(*cols))
    out = []
    for r in stale:
        out.append(violation(
            "K1", r["run"], f"{r['member']} (member id {r['member_id']}) sent a heartbeat with epoch "
            f"{r['member_epoch']} after the broker had given it epoch {r['given_before']}, with no leave or fence "
            "in between", members=[r["member"]], culprit=r["member"], generation=r["member_epoch"], ts=r["ts"],
            evidence={"wire_line": r["line"], "member_id": r["member_id"], "sent_epoch": r["member_epoch"],
                      "given_epoch": r["given_before"]}))
    for r in fell:
        out.append(violation(
            "K1", r["run"], f"the broker gave {r['member']} (member id {r['member_id']}) epoch {r['member_epoch']} "
            f"after epoch {r['given_before']}, with no leave or fence in between", members=[r["member"]],
            generation=r["member_epoch"], ts=r["ts"],
            evidence={"wire_line": r["line"], "member_id": r["member_id"], "given_epoch": r["member_epoch"],
                      "earlier_epoch": r["given_before"]}))
    return out


def check_k2(t: Tables) -> list[dict]:
    jr = t.frames.where((F.col("api") == "JoinGroup") & (F.col("direction") == "response")
                        & (F.coalesce("error_code", F.lit(0)) == 0) & F.col("generation").isNotNull())
    periods = consumer_periods(t)
    led = (jr.join(periods, "run").where((F.col("ts") >= F.col("c_start")) & (F.col("ts") <= F.col("c_end"))
                                         & ((F.coalesce("leader", F.lit("")) != "")
                                            | (F.coalesce("n_members", F.lit(0)) > 0)))
           .select("run", "member", "line", "ts", "generation", "leader", "n_members", "consumers"))
    # The member's JoinGroup response of a generation that named no leader, and its SyncGroup of that
    # generation carrying assignments (the tap writes the SyncGroup request's assignments as leader rows).
    leaderless = (jr.where(F.coalesce("leader", F.lit("")) == "")
                  .select("run", "member", "generation", F.col("ts").alias("j_ts"), F.col("line").alias("j_line")))
    sent = (t.assignments.where(F.col("source") == "leader")
            .groupBy("run", "member", "line", "ts", "generation").agg(F.count("*").alias("n")))
    planned = (sent.join(leaderless, ["run", "member", "generation"])
               .where(F.col("j_ts") <= F.col("ts"))
               .groupBy("run", "member", "line", "ts", "generation", "n").agg(F.max("j_line").alias("j_line")))
    led, planned = t.collect_many(led, planned)
    out = []
    for r in led:
        out.append(violation(
            "K2", r["run"], f"{r['member']}'s JoinGroup response of generation {r['generation']} named leader "
            f"{r['leader'] or '(none)'} with {r['n_members'] or 0} member(s) while {', '.join(r['consumers'])} made "
            "the group a consumer group (the broker's bridge must name no leader and list no members)",
            members=[r["member"]], generation=r["generation"], ts=r["ts"],
            evidence={"wire_line": r["line"], "leader": r["leader"], "members_listed": r["n_members"],
                      "consumer_members": list(r["consumers"])}))
    for r in planned:
        out.append(violation(
            "K2", r["run"], f"{r['member']} sent {r['n']} SyncGroup assignment(s) for generation {r['generation']} "
            "although its JoinGroup response named no leader (a classic member in a consumer group must not run "
            "its assignor)", members=[r["member"]], culprit=r["member"], generation=r["generation"], ts=r["ts"],
            evidence={"wire_line": r["line"], "join_response_line": r["j_line"], "assignments": r["n"]}))
    return out


def _tp_set(col):
    return F.array_sort(F.array_distinct(F.coalesce(col, F.array())))


def check_k3(t: Tables) -> list[dict]:
    hb = heartbeat_stints(t)
    key = ["run", "member_id", "stint"]
    w = Window.partitionBy(*key).orderBy("line").rowsBetween(Window.unboundedPreceding, 0)
    change = ((F.col("direction") == "response") & (F.coalesce("error_code", F.lit(0)) == 0)
              & F.col("assigned").isNotNull())
    rows = (hb.withColumn("target", F.last(F.when(change, _tp_set(F.col("assigned"))), ignorenulls=True).over(w))
            .withColumn("reported", F.last(F.when((F.col("direction") == "request") & F.col("owned").isNotNull(),
                                                  _tp_set(F.col("owned"))), ignorenulls=True).over(w)))
    # A request that shows the member in step: what it reports owning is its current assignment.
    synced = (rows.where((F.col("direction") == "request") & (F.col("reported") == F.col("target")))
              .select(*key, F.col("line").alias("s_line"), F.col("ts").alias("s_ts")))
    # A change the member is already in step with (it reported that set before) opens no spell.
    changes = (rows.where(change & ~F.coalesce(F.col("reported") == F.col("target"), F.lit(False)))
               .select(*key, "member", "line", "ts", "member_epoch", "target"))
    first_sync = (changes.join(synced, key).where(F.col("s_line") > F.col("line"))
                  .groupBy(*key, "line").agg(F.min_by(F.struct("s_line", "s_ts"), "s_line").alias("sync")))
    reported = (changes.join(rows.where(F.col("direction") == "request")
                             .select(*key, F.col("line").alias("r_line"), F.col("reported").alias("r_reported")), key)
                .where(F.col("r_line") > F.col("line"))
                .groupBy(*key, "line").agg(F.count("*").alias("requests"),
                                           F.max_by("r_reported", "r_line").alias("last_reported")))
    ends = consumer_spans(t).select(*key, "s_end", "s_end_kind")
    last = hb.groupBy(*key).agg(F.max("ts").alias("last_ts"))
    tm = timing(t.cells).select("run", (F.col("max_poll_ms") + F.col("heartbeat_ms")).alias("bound_ms"))
    # Out of step from the change to the first request in step after it (whatever changed meanwhile),
    # else to the end of the member's stint (its leave or fence, else its last frame).
    until = F.coalesce(F.col("sync.s_ts"),
                       F.least(F.when(F.col("s_end_kind") != "session", F.col("s_end")), F.col("last_ts")))
    late = (changes.join(first_sync, key + ["line"], "left").join(reported, key + ["line"], "left")
            .join(ends, key, "left").join(last, key, "left").join(tm, "run")
            .withColumn("out_ms", until - F.col("ts")).where(F.col("out_ms") > F.col("bound_ms")))
    # One finding per spell out of step: the earliest change of those the same in-step request ends.
    spells = (late.groupBy(*key, F.col("sync.s_line").alias("s_line"))
              .agg(F.min_by(F.struct(*[c for c in late.columns if c not in ("run", "member_id", "stint", "sync")]),
                            "line").alias("r"), F.count("*").alias("changes"))
              .select(*key, "s_line", "changes", "r.*"))
    out = []
    for r in t.collect(spells):
        target = [[x["topic"], x["partition"]] for x in r["target"]]
        reported = [[x["topic"], x["partition"]] for x in (r["last_reported"] or [])]
        ended = ("before reporting it" if r["s_line"] is None
                 else f"until its heartbeat at wire line {r['s_line']}")
        out.append(violation(
            "K3", r["run"], f"{r['member']} did not converge to its assignment of epoch {r['member_epoch']} "
            f"({fmt_tps(target)}) within {r['bound_ms'] / 1000:.1f} s: it stayed out of step "
            f"{r['out_ms'] / 1000:.1f} s ({r['changes']} assignment change(s)) {ended}; it last reported owning "
            f"{fmt_tps(reported) if r['last_reported'] is not None else 'nothing yet'}",
            members=[r["member"]], culprit=r["member"], generation=r["member_epoch"], partitions=target, ts=r["ts"],
            evidence={"wire_line": r["line"], "member_id": r["member_id"], "target": target,
                      "last_reported": reported, "requests_since": r["requests"] or 0, "out_of_step_ms": r["out_ms"],
                      "bound_ms": r["bound_ms"], "in_step_wire_line": r["s_line"]}))
    return out


def check_k4(t: Tables) -> list[dict]:
    ok = (t.commits.where((F.col("error_code") == 0) & (F.col("generation") >= 0))
          .join(consumer_member_ids(t).select("run", "member_id"), ["run", "member_id"]))
    given = (t.heartbeats.where((F.col("direction") == "response") & (F.coalesce("error_code", F.lit(0)) == 0)
                                & (F.col("member_epoch") > 0))
             .select("run", "member_id", F.col("ts").alias("g_ts"), F.col("line").alias("g_line"),
                     F.col("member_epoch").alias("g_epoch")))
    current = (ok.join(given, ["run", "member_id"]).where(F.col("g_ts") < F.col("ts"))
               .groupBy("run", "member", "member_id", "line", "ts", "generation", "topic", "partition")
               .agg(F.max_by("g_epoch", "g_line").alias("current")))
    stale = current.where(F.col("generation") < F.col("current"))
    # KIP-1251 (4.3+): the assignments each stale committer got, response by response (few rows).
    assigned = (t.heartbeats.where((F.col("direction") == "response") & F.col("assigned").isNotNull()
                                   & (F.coalesce("error_code", F.lit(0)) == 0))
                .join(stale.select("run", "member_id").distinct(), ["run", "member_id"])
                .select("run", "member_id", "line", "ts", "member_epoch", "assigned"))
    classic, answers = _stale_classic_commits(t)
    versions = t.cells.select("run", "broker_version")
    stale_rows, assigned, classic_rows, answers = t.collect_many(stale.join(versions, "run"), assigned,
                                                                 classic.join(versions, "run"), answers)
    if not stale_rows and not classic_rows:
        return []
    history: dict[tuple, list] = defaultdict(list)
    for a in sorted(assigned, key=lambda a: a["line"]):
        history[(a["run"], a["member_id"])].append(a)
    synced: dict[tuple, list] = defaultdict(list)
    for a in sorted(answers, key=lambda a: a["line"]):
        synced[(a["run"], a["member"])].append(a)
    groups: dict[tuple, list] = defaultdict(list)
    for r in stale_rows:
        tp = (r["topic"], r["partition"])
        if _version(r["broker_version"]) >= ASSIGNMENT_EPOCH_COMMITS_FROM:
            since = _held_since(history[(r["run"], r["member_id"])], tp, r["ts"])
            if since is not None and since <= r["generation"]:
                continue   # KIP-1251: assigned at or before the commit's epoch and still held
        groups[(r["run"], r["member"], r["member_id"], r["line"], r["ts"], r["generation"], r["current"], None)
               ].append(tp)
    for r in classic_rows:
        tp = (r["topic"], r["partition"])
        if _version(r["broker_version"]) >= ASSIGNMENT_EPOCH_COMMITS_FROM:
            mine = [a for a in synced[(r["run"], r["member"])] if a["ts"] >= r["first_join_ts"]]
            since = _held_since(_at_conversion(mine, r["c_start"]), tp, r["ts"])
            if since is not None and since <= r["generation"]:
                continue   # KIP-1251, as for a consumer member: its SyncGroup answers held it since
        groups[(r["run"], r["member"], r["member_id"], r["line"], r["ts"], r["generation"], r["current"],
                r["join_line"])].append(tp)
    out = []
    for (run, member, member_id, line, ts, epoch, cur, join_line), parts in sorted(groups.items(),
                                                                                key=lambda kv: kv[0][4]):
        evidence = {"wire_line": line, "member_id": member_id, "commit_epoch": epoch, "member_epoch": cur}
        if join_line is None:
            message = (f"the broker accepted {member}'s commit of {fmt_tps(parts)} from epoch {epoch} when the "
                       f"member's epoch was {cur} (a stale-epoch commit must be refused: STALE_MEMBER_EPOCH)")
        else:
            message = (f"the broker accepted classic member {member}'s commit of {fmt_tps(parts)} from generation "
                       f"{epoch} in a consumer group when its member epoch was {cur} (its JoinGroup answer at wire "
                       f"line {join_line}; a stale generation must be refused: ILLEGAL_GENERATION)")
            evidence.update(classic=True, join_wire_line=join_line)
        out.append(violation("K4", run, message, members=[member], generation=epoch,
                             partitions=[list(p) for p in parts], ts=ts, evidence=evidence))
    return out


def _stale_classic_commits(t: Tables):
    """K4's classic members (module docstring): the per-partition rows of accepted commits of member ids
    that send no ConsumerGroupHeartbeat, sent inside a consumer period (``c_start``: its start) from a
    generation below the member's epoch then (``current``: the generation of the member id's last
    JoinGroup answer without error before the commit, answered at ``join_line``; ``first_join_ts``:
    its first one); and the SyncGroup answers without error of the members that made them (run,
    member, line, ts, member_epoch: the request's generation, assigned: the decoded partitions)."""
    ok = (t.commits.where((F.col("error_code") == 0) & (F.col("generation") >= 0))
          .join(consumer_member_ids(t).select("run", "member_id"), ["run", "member_id"], "left_anti"))
    ok = in_consumer_period(t, ok).where(F.col("period").isNotNull())
    joined = (t.frames.where((F.col("api") == "JoinGroup") & (F.col("direction") == "response")
                             & (F.coalesce("error_code", F.lit(0)) == 0) & F.col("generation").isNotNull())
              .select("run", "member_id", F.col("ts").alias("j_ts"), F.col("line").alias("j_line"),
                      F.col("generation").alias("j_generation")))
    stale = (ok.join(joined, ["run", "member_id"]).where(F.col("j_ts") < F.col("ts"))
             .groupBy("run", "member", "member_id", "line", "ts", "generation", "topic", "partition")
             .agg(F.max_by(F.struct("j_generation", "j_line"), "j_line").alias("j"),
                  F.min("j_ts").alias("first_join_ts"), F.first("period.c_start").alias("c_start"))
             .where(F.col("generation") < F.col("j.j_generation"))
             .select("run", "member", "member_id", "line", "ts", "generation", "topic", "partition",
                     F.col("j.j_generation").alias("current"), F.col("j.j_line").alias("join_line"),
                     "first_join_ts", "c_start"))
    answers = (t.assignments.where((F.col("source") == "received") & (F.coalesce("error_code", F.lit(0)) == 0)
                                   & F.col("generation").isNotNull() & F.col("decode_error").isNull())
               .join(stale.select("run", "member").distinct(), ["run", "member"])
               .select("run", "member", "line", "ts", F.col("generation").alias("member_epoch"),
                       F.coalesce("partitions", F.array()).alias("assigned")))
    return stale, answers


def _at_conversion(answers: list, c_start: float) -> list:
    """A classic member's SyncGroup answers (line order) as :func:`_held_since` reads them in the consumer
    period that starts at ``c_start``: each answer from before the period counts at the generation of
    the last of them, the assignment epoch the broker gives every partition when it converts the
    classic group (``ConsumerGroup.fromClassicGroup``)."""
    before = [a for a in answers if a["ts"] < c_start]
    if not before:
        return answers
    converted = before[-1]["member_epoch"]
    return [{**a.asDict(), "member_epoch": converted} if a["ts"] < c_start else a for a in answers]


def _classic_members_at(t: Tables, joins):
    """(run, line, classic): per join (``line`` of its response), the classic members live at its
    request (K5: an answer without error within a session timeout less a heartbeat, no LeaveGroup since)."""
    tm = timing(t.cells).select("run", (F.col("session_ms") - F.col("heartbeat_ms")).alias("live_ms"))
    ok = (t.frames.where(F.col("api").isin(*CLASSIC_APIS) & (F.col("direction") == "response")
                         & (F.coalesce("error_code", F.lit(0)) == 0))
          .select("run", F.col("member").alias("classic"), F.col("ts").alias("ok_ts")))
    leaves = (t.frames.where((F.col("api") == "LeaveGroup") & (F.col("direction") == "request"))
              .select("run", F.col("member").alias("classic"), F.col("ts").alias("leave_ts")))
    last_ok = (joins.select("run", "line", "request_ts").join(tm, "run").join(ok, "run")
               .where((F.col("ok_ts") <= F.col("request_ts")) & (F.col("ok_ts") >= F.col("request_ts") - F.col("live_ms")))
               .groupBy("run", "line", "request_ts", "classic").agg(F.max("ok_ts").alias("ok_ts")))
    gone = (last_ok.join(leaves, ["run", "classic"])
            .where((F.col("leave_ts") >= F.col("ok_ts")) & (F.col("leave_ts") <= F.col("request_ts")))
            .select("run", "line", "classic").distinct())
    return (last_ok.join(gone, ["run", "line", "classic"], "left_anti")
            .groupBy("run", "line").agg(F.array_sort(F.collect_set("classic")).alias("classic")))


def _userdata_at(t: Tables, joins):
    """(run, line, sync_line, generation, leader, with_userdata): per join, the last leader's SyncGroup
    before its request, and the member ids whose assignment there carries userData."""
    sent = t.assignments.where(F.col("source") == "leader").select(
        "run", F.col("line").alias("sync_line"), F.col("ts").alias("sync_ts"), F.col("member").alias("leader"),
        "generation", "subject_member_id", "userdata_hex")
    last = (joins.select("run", "line", "request_ts").join(sent, "run").where(F.col("sync_ts") < F.col("request_ts"))
            .groupBy("run", "line").agg(F.max("sync_line").alias("sync_line")))
    return (last.join(sent, ["run", "sync_line"])
            .groupBy("run", "line", "sync_line", "generation", "leader")
            .agg(F.array_sort(F.collect_list(F.when(F.length(F.coalesce("userdata_hex", F.lit(""))) > 0,
                                                    F.col("subject_member_id")))).alias("with_userdata")))


def check_k5(t: Tables) -> list[dict]:
    joins = in_consumer_period(t, join_answers(t).where(F.col("request_ts").isNotNull()), "request_ts")
    joins = joins.where(F.col("period").isNull() & (F.col("admitted") | F.col("refused")))
    rows = (joins.join(_classic_members_at(t, joins), ["run", "line"])
            .join(_userdata_at(t, joins), ["run", "line"], "left")
            .join(t.cells.select("run", "broker_version", F.col("migration_policy").alias("recorded")), "run"))
    out = []
    for r in t.collect(rows):
        policy = migration_policy(r["broker_version"], r["recorded"])
        if policy is None:
            continue
        classic = ", ".join(r["classic"])
        userdata = list(r["with_userdata"] or []) if _version(r["broker_version"]) >= USERDATA_REFUSED_FROM else []
        evidence = {"wire_line": r["line"], "request_line": r["request_line"], "member_id": r["member_id"],
                    "migration_policy": policy, "recorded_policy": r["recorded"], "classic_members": list(r["classic"]),
                    "error_code": r["error_code"], "error_message": r["error_message"],
                    "last_sync_line": r["sync_line"], "assignments_with_userdata": userdata}
        joined = f"{r['member']}'s consumer-protocol join (wire line {r['request_line']})"
        if policy not in UPGRADE_POLICIES and r["admitted"]:
            message = (f"the broker admitted {joined} at epoch {r['member_epoch']}, converting the live classic group "
                       f"({classic}) to a consumer group, though migration-policy={policy} allows no online upgrade "
                       "(it must refuse with GROUP_ID_NOT_FOUND)")
        elif policy in UPGRADE_POLICIES and r["refused"] and not userdata:
            message = (f"the broker refused {joined} to the live classic group ({classic}) with GROUP_ID_NOT_FOUND "
                       f"({r['error_message'] or 'no message'}), though migration-policy={policy} allows the upgrade "
                       + (f"and no assignment of generation {r['generation']} (leader {r['leader']}) carries userData"
                          if r["sync_line"] is not None else "and no leader's assignment was seen"))
        elif policy in UPGRADE_POLICIES and r["admitted"] and userdata:
            message = (f"the broker admitted {joined}, converting the classic group ({classic}) to a consumer group, "
                       f"though {len(userdata)} assignment(s) of generation {r['generation']} (leader {r['leader']}) "
                       "carry userData (it must refuse: an unsupported custom assignor is in use, KAFKA-18134)")
        else:
            continue
        out.append(violation("K5", r["run"], message, members=[r["member"]], ts=r["ts"], evidence=evidence))
    return out + _check_k5_classic(t)


def _check_k5_classic(t: Tables) -> list[dict]:
    """K5's other direction: classic JoinGroups that meet a live consumer group (module docstring)."""
    joins = classic_join_answers(t).where(F.col("request_ts").isNotNull() & (F.col("protocol_type") == "consumer")
                                          & (F.col("passed") | F.col("refused")))
    joins = in_consumer_period(t, joins, "request_ts").where(F.col("period").isNotNull())
    rows = (joins.join(_classic_members_at(t, joins), ["run", "line"], "left")
            .join(t.cells.select("run", "broker_version", F.col("migration_policy").alias("recorded")), "run"))
    out = []
    for r in t.collect(rows):
        policy = migration_policy(r["broker_version"], r["recorded"])
        if policy is None or _version(r["broker_version"]) < ONLINE_MIGRATION_FROM:
            continue
        must_refuse = policy == "disabled" and _version(r["broker_version"]) >= CLASSIC_JOIN_REFUSED_FROM
        others = [m for m in (r["classic"] or []) if m != r["member"]]
        consumers = ", ".join(r["period"]["consumers"] or [])
        joined = f"{r['member']}'s classic JoinGroup (wire line {r['request_line']})"
        evidence = {"wire_line": r["line"], "request_line": r["request_line"], "member_id": r["member_id"],
                    "migration_policy": policy, "recorded_policy": r["recorded"], "error_code": r["error_code"],
                    "consumer_members": list(r["period"]["consumers"] or []), "classic_members": others}
        if must_refuse and r["passed"]:
            message = (f"the broker let {joined} into the live consumer group ({consumers}) "
                       f"(error code {r['error_code'] or 0}), though migration-policy={policy} on broker "
                       f"{r['broker_version']} must refuse it with INCONSISTENT_GROUP_PROTOCOL (KAFKA-20640)")
        elif not must_refuse and r["refused"] and not others:
            message = (f"the broker refused {joined} to the live consumer group ({consumers}) with "
                       f"INCONSISTENT_GROUP_PROTOCOL, though migration-policy={policy} on broker {r['broker_version']} "
                       "admits classic members and no other classic member was in the group to conflict with")
        else:
            continue
        out.append(violation("K5", r["run"], message, members=[r["member"]], ts=r["ts"], evidence=evidence))
    return out


def _held_since(responses: list, tp: tuple, ts: float) -> int | None:
    """The epoch from which the member held ``tp`` without a break, as of ``ts`` (its assignment
    epoch), from its responses' assignments in line order; None when it did not hold it then."""
    since = None
    for a in responses:
        if a["ts"] >= ts:
            break
        held = any((x["topic"], x["partition"]) == tp for x in a["assigned"])
        since = (since if since is not None else a["member_epoch"]) if held else None
    return since
