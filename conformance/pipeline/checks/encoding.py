"""Encoding invariants E1-E5, judged from the wire capture.

The split for E4: the golden-vector suite (fixtures/golden/, the codec's own
tests) proves that our codec encodes content byte for byte like the real Java
library, every version. The pipeline proves the other half from the wire: a
reference member's JoinGroup metadata equals our canonical re-encoding of its
decoded content. Together: the reference writes what Java would write.

Allowed anomalies:
- E3 unknown userData is a warning (``evidence.severity = "warning"``), not a
  failure: assignors may legitimately carry private data. E3 fails only when
  the bytes around the userData do not decode (that is E1/E2's failure).
- E5 judges a JoinGroup's declared owned partitions twice. Against the wire,
  exactly: a partition the member's last successful SyncGroup response before
  it (since the member last started) did not assign is a stale claim (frames
  are in the order the member saw them, no clocks compared); its evidence
  says whether the member ever applied that assignment
  (``assignment_applied``: its history has an event of the assignment's
  generation; absent when the answer's generation is unknown), which tells
  a client that dropped an assignment from one that kept stale owned state
  after applying it. Against the
  history, with rule E5/clock-slack: a partition assigned or revoked within a
  heartbeat interval of the JoinGroup by the two processes' clocks is an
  allowed finding, neither stale nor missing. With rule E5/not-yet-applied:
  a declared partition the history does not show owned is an allowed finding
  when the wire shows it is the last assignment received (the member's last
  SyncGroup response before the JoinGroup, under the same member id, assigned
  it), the history has no event of that assignment's generation (the client
  took it, its callback has not run yet) and no ``revoked``/``lost`` of the
  partition between that response and the JoinGroup.
- E5 flags a v0 subscription offered for a cooperative assignor: it cannot
  declare owned partitions.
- E5 applies only to cooperative members (first strategy cooperative, and a
  cooperative cell): eager members declare what they owned before revoking.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from conformance import config
from conformance.nemesis import faults
from conformance.pipeline.checks.common import fmt_tps, timing, tps, violation
from conformance.pipeline.derived import Tables


def check_e1(t: Tables) -> list[dict]:
    bad = t.collect(t.subscriptions.where(F.col("decode_error").isNotNull())
           .groupBy("run", "metadata_hex", "decode_error")
           .agg(F.min("ts").alias("ts"), F.collect_set("member").alias("seen_by"),
                F.first("subject_member_id").alias("subject"), F.first("protocol_name").alias("protocol"),
                F.count("*").alias("frames"),
                F.collect_set(F.when(F.col("source") == "request", F.col("member"))).alias("writers")))
    # The culprit is the member whose JoinGroup request carried the bytes (one writer); seen only in
    # the leader's view, the writer is not known and every member that saw them is implicated.
    return [violation("E1", r["run"], f"subscription ({r['protocol']}) does not decode: {r['decode_error']}"
                      + ("" if len(r["writers"] or []) == 1 else "; culprit unknown: no single member sent it"),
                      members=r["seen_by"], culprit=r["writers"][0] if len(r["writers"] or []) == 1 else None,
                      ts=r["ts"],
                      evidence={"metadata_hex": r["metadata_hex"], "member_id": r["subject"], "frames": r["frames"]})
            for r in bad]


def check_e2(t: Tables) -> list[dict]:
    bad = t.collect(t.assignments.where(F.col("decode_error").isNotNull())
           .groupBy("run", "assignment_hex", "decode_error", "source")
           .agg(F.min("ts").alias("ts"), F.collect_set("member").alias("seen_by"),
                F.first("subject_member_id").alias("subject"), F.first("generation").alias("generation")))
    out = []
    for r in bad:
        where = "sent by the leader" if r["source"] == "leader" else "received"
        out.append(violation("E2", r["run"], f"assignment {where} does not decode: {r['decode_error']}",
                             members=r["seen_by"], generation=r["generation"], ts=r["ts"],
                             evidence={"assignment_hex": r["assignment_hex"], "member_id": r["subject"]}))
    return out


def check_e3(t: Tables) -> list[dict]:
    """A warning per unknown userData blob, naming who wrote it: the member whose JoinGroup request
    carried it (a subscription) or the leader whose SyncGroup request did (an assignment)."""
    cols = ["run", "member", "ts", "protocol_name", "userdata_hex", "userdata_note"]
    subs = t.subscriptions.where(F.col("userdata_format") == "unknown").select(
        *cols, F.lit("subscription").alias("where"), F.when(F.col("source") == "request", F.col("member")).alias("writer"))
    assigns = t.assignments.where(F.col("userdata_format") == "unknown").select(
        *cols, F.lit("assignment").alias("where"), F.when(F.col("source") == "leader", F.col("member")).alias("writer"))
    unknown = t.collect(subs.unionByName(assigns)
               .groupBy("run", "userdata_hex", "protocol_name", "where")
               .agg(F.min("ts").alias("ts"), F.collect_set("member").alias("members"),
                    F.collect_set("writer").alias("writers"), F.first("userdata_note").alias("note")))
    out = []
    for r in unknown:
        writers = sorted(r["writers"] or [])
        out.append(violation("E3", r["run"], "unknown " + (f"{r['protocol_name']} " if r["protocol_name"] else "")
                             + f"userData in {r['where']}" + (f" written by {', '.join(writers)}" if writers else "")
                             + f": {r['userdata_hex']}" + (f" ({r['note']})" if r["note"] else ""),
                             members=sorted(set(r["members"]) | set(writers)),
                             culprit=writers[0] if len(writers) == 1 else None, ts=r["ts"],
                             evidence={"severity": "warning", "userdata_hex": r["userdata_hex"], "written_by": writers}))
    return out


def check_e4(t: Tables) -> list[dict]:
    ref = t.members.where(F.col("kind") == "reference").select("run", "member")
    bad = t.collect(t.subscriptions.where((F.col("source") == "request") & F.col("decode_error").isNull()
                                 & ~F.coalesce("canonical_equal", F.lit(False)))
           .join(ref, ["run", "member"])
           .groupBy("run", "member", "metadata_hex", "protocol_name")
           .agg(F.min("ts").alias("ts"), F.first("canonical_error").alias("err"), F.first("version").alias("version")))
    return [violation("E4", r["run"], f"{r['member']} sent {r['protocol_name']} subscription v{r['version']} bytes that "
                      f"differ from the canonical encoding of the same content"
                      + (f" ({r['err']})" if r["err"] else ""),
                      members=[r["member"]], culprit=r["member"], ts=r["ts"], evidence={"metadata_hex": r["metadata_hex"]})
            for r in bad]


def _coop_members(t: Tables):
    """(run, member) of cooperative members (first strategy cooperative) in cooperative cells."""
    return (t.members.where(F.col("strategies")[0].isin(*config.COOPERATIVE_ASSIGNORS))
            .join(t.cells.where(F.coalesce("expected_protocol", F.lit("cooperative")) == "cooperative")
                  .select("run"), "run").select("run", "member"))


def _last_assignments(t: Tables, req):
    """Per JoinGroup request (run, member, line): ``last``, the member's last successful SyncGroup
    response before it in wire order since its last start (sync_line, sync_ts, sync_generation,
    sync_member_id: the member id the SyncGroup was sent under, partitions), null when there is none.
    The tap records each frame as it forwards it, so a member's frames are in the order the member
    saw and sent them: no clock is compared."""
    starts = (t.nemesis.where(F.col("fault") == "start")
              .select("run", F.col("target").alias("member"), F.col("ts").alias("start_ts")))
    last_start = (req.select("run", "member", "line", "ts").distinct().join(starts, ["run", "member"], "left")
                  .where(F.col("start_ts").isNull() | (F.col("start_ts") <= F.col("ts")))
                  .groupBy("run", "member", "line").agg(F.max("start_ts").alias("since_ts")))
    sent_as = t.frames.select("run", F.col("line").alias("sync_line"), F.col("member_id").alias("sync_member_id"))
    received = (t.assignments.where((F.col("source") == "received") & (F.coalesce("error_code", F.lit(0)) == 0)
                                    & F.col("decode_error").isNull())
                .select("run", "member", F.col("line").alias("sync_line"), F.col("ts").alias("sync_ts"),
                        F.col("generation").alias("sync_generation"), "partitions")
                .join(sent_as, ["run", "sync_line"], "left"))
    return (last_start.join(req.select("run", "member", "line", "ts"), ["run", "member", "line"])
            .join(received, ["run", "member"], "left")
            .where(F.col("sync_line").isNull() | ((F.col("sync_line") < F.col("line"))
                                                  & (F.col("since_ts").isNull() | (F.col("sync_ts") >= F.col("since_ts")))))
            .groupBy("run", "member", "line")
            .agg(F.max_by(F.struct("sync_line", "sync_ts", "sync_generation", "sync_member_id", "partitions"),
                          "sync_line").alias("last")))


def _in_last():
    """Whether the row's (topic, partition) is in its ``last`` assignment (False when there is none)."""
    return F.coalesce(F.exists(F.coalesce(F.col("last.partitions"), F.array()),
                               lambda p: (p["topic"] == F.col("topic")) & (p["partition"] == F.col("partition"))),
                      F.lit(False))


def _stale_claims(declared, last):
    """Declared owned partitions that the member's last assignment (:func:`_last_assignments`) did
    not give it: (run, member, line, ts, topic, partition, sync_line, sync_ts, sync_generation)."""
    return (declared.join(last, ["run", "member", "line"], "left").where(~_in_last())
            .select("run", "member", "line", "ts", "topic", "partition", F.col("last.sync_line").alias("sync_line"),
                    F.col("last.sync_ts").alias("sync_ts"), F.col("last.sync_generation").alias("sync_generation")))


def _not_yet_applied(t: Tables, stale, last, applied):
    """The history-based stale declarations that rule E5/not-yet-applied allows: the partition is in
    the member's last assignment before the JoinGroup (the wire says the claim is right), that
    SyncGroup was sent under the JoinGroup's member id, the member's history has no event of the
    assignment's generation (a known generation, not applied yet), and no ``revoked``/``lost`` of the
    partition after that SyncGroup response up to the JoinGroup. Columns: the stale rows' plus
    sync_line, sync_ts, sync_generation."""
    dropped = (t.events.where(F.col("event").isin("revoked", "lost"))
               .select(F.col("run").alias("d_run"), F.col("member").alias("d_member"), F.col("ts").alias("d_ts"),
                       F.explode("partitions").alias("d_tp")))
    received = (stale.join(last, ["run", "member", "line"]).where(_in_last())
                .where(F.col("last.sync_generation").isNotNull()
                       & (F.col("last.sync_member_id") == F.col("join_member_id")))
                .select(*stale.columns, F.col("last.sync_line").alias("sync_line"),
                        F.col("last.sync_ts").alias("sync_ts"), F.col("last.sync_generation").alias("sync_generation"))
                .join(applied, ["run", "member", "sync_generation"], "left_anti"))
    return received.join(dropped, (F.col("d_run") == F.col("run")) & (F.col("d_member") == F.col("member"))
                         & (F.col("d_tp.topic") == F.col("topic")) & (F.col("d_tp.partition") == F.col("partition"))
                         & (F.col("d_ts") > F.col("sync_ts")) & (F.col("d_ts") <= F.col("ts")), "left_anti")


def _same_declarations(rows) -> dict[tuple, list]:
    """Stale or missing declarations grouped by (run, member, kind, partitions), each group's rows in
    wire order: a member that sends one JoinGroup again (a retry after an error, a rejoin before the
    group formed) repeats one declaration, which is one finding, not one per request."""
    groups: dict[tuple, list] = {}
    for r in sorted(rows, key=lambda r: (r["run"], r["member"], r["line"])):
        key = (r["run"], r["member"], r["kind"], tuple(tuple(p) for p in tps(r["tps"])))
        groups.setdefault(key, []).append(r)
    return groups


#: A declaration's identity: one partition declared in one JoinGroup request (its wire line).
_KEY = ["run", "member", "line", "topic", "partition"]
#: The columns of a declaration (or an undeclared ownership) that E5's findings read.
_COLS = ["run", "member", "line", "ts", "topic", "partition"]


def check_e5(t: Tables) -> list[dict]:
    """E5's story: each cooperative member's JoinGroup declarations are judged against the wire (its last
    assignment received: stale claims) and, for what the wire did not already name, against its history
    (owned then or not: stale or missing declarations, with the rules E5/clock-slack, E5/not-yet-applied
    and E5/closing); a v0 subscription offered for a cooperative assignor is flagged as well."""
    coop_members = _coop_members(t)
    req = _e5_requests(t, coop_members)
    declared = _e5_declared(t, req)
    last = t.shared("e5-last-assignments", lambda: _last_assignments(t, req))
    claims = t.shared("e5-stale-claims", lambda: _stale_claims(declared, last))
    applied = _applied_generations(t)
    exactly, possibly = _history_owned(t, declared)
    unclaimed = declared.join(claims.select(*_KEY), _KEY, "left_anti")   # what the wire check did not already name
    history_stale = unclaimed.join(possibly, _KEY, "left_anti")
    # Rule E5/not-yet-applied: the claim is the last assignment received, which the history has not caught up with.
    pending = t.shared("e5-not-yet-applied", lambda: _not_yet_applied(t, history_stale, last, applied))
    stale = _why_stale(t, history_stale.join(pending.select(*_KEY), _KEY, "left_anti"))
    slack = unclaimed.join(possibly, _KEY).join(exactly, _KEY, "left_anti")
    missing, slack_missing = _undeclared(t, req, declared)
    rows, claim_rows, v0_rows, pending_rows, stop_rows = t.collect_many(
        _history_rows(stale, missing, slack, slack_missing), _claim_rows(claims, applied), _v0_offers(t, coop_members),
        _pending_rows(pending), _stop_requests(t))
    lifecycle = _lifecycles(stop_rows)
    return (_stale_claim_findings(claim_rows) + _slack_findings(rows) + _not_yet_applied_findings(pending_rows)
            + _history_findings(rows, lifecycle) + _v0_findings(v0_rows))


def _e5_requests(t: Tables, coop_members: DataFrame) -> DataFrame:
    """(run, member, line, ts, owned, heartbeat_ms, join_member_id): the JoinGroup requests (v1 and later,
    decoded) of cooperative members offering a cooperative assignor, one per wire line. Built once."""
    return t.shared("e5-requests", lambda: t.subscriptions.where(
        (F.col("source") == "request") & F.col("decode_error").isNull() & (F.col("version") >= 1)
        & F.col("protocol_name").isin(*config.COOPERATIVE_ASSIGNORS))
        .join(coop_members, ["run", "member"])
        .join(timing(t.cells).select("run", "heartbeat_ms"), "run")
        .dropDuplicates(["run", "member", "line"])
        .select("run", "member", "line", "ts", "owned", "heartbeat_ms",
                F.col("subject_member_id").alias("join_member_id")))


def _e5_declared(t: Tables, req: DataFrame) -> DataFrame:
    """(run, member, line, ts, heartbeat_ms, join_member_id, topic, partition): one row per partition a
    request of :func:`_e5_requests` declared owned. Built once."""
    return t.shared("e5-declared", lambda: req.select(
        "run", "member", "line", "ts", "heartbeat_ms", "join_member_id", F.explode("owned").alias("tp")).select(
        "run", "member", "line", "ts", "heartbeat_ms", "join_member_id", "tp.topic", "tp.partition"))


def _ownership_spans(t: Tables) -> DataFrame:
    """(run, member, topic, partition, o_start, o_end): every ownership span of the histories."""
    return t.ownership.select("run", "member", "topic", "partition", F.col("start_ts").alias("o_start"),
                              F.col("end_ts").alias("o_end"))


def _applied_generations(t: Tables) -> DataFrame:
    """(run, member, sync_generation, applied=True): the generations a member's history has an event of."""
    return (t.events.where(F.col("generation").isNotNull()).select("run", "member", F.col("generation")
                                                                   .alias("sync_generation"))
            .distinct().withColumn("applied", F.lit(True)))


def _history_owned(t: Tables, declared: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(exactly, possibly), each of _KEY columns: the declarations the history owned at the JoinGroup, and
    those it owned then or assigned up to a heartbeat after it (rule E5/clock-slack). The rule is one-sided:
    the history may lag the wire (a harness records an assignment or a revoke in the callback, after the
    client acted), never lead it: a declaration is excused only by an assignment the history records up to
    a heartbeat after the JoinGroup, never by an ownership the history ended before it."""
    own = _ownership_spans(t)
    gave_up = (declared.join(own, ["run", "member", "topic", "partition"])
               .where((F.col("o_end") < F.col("ts")) & (F.col("o_end") >= F.col("ts") - F.col("heartbeat_ms")))
               .select(*_KEY).distinct())
    exactly = (declared.join(own, ["run", "member", "topic", "partition"])
               .where((F.col("o_start") <= F.col("ts")) & (F.col("o_end") >= F.col("ts"))).select(*_KEY).distinct())
    lagging = (declared.join(own, ["run", "member", "topic", "partition"])
               .where((F.col("o_start") > F.col("ts")) & (F.col("o_start") <= F.col("ts") + F.col("heartbeat_ms")))
               .select(*_KEY).distinct().join(gave_up, _KEY, "left_anti"))
    return exactly, exactly.unionByName(lagging).distinct()


def _why_stale(t: Tables, stale: DataFrame) -> DataFrame:
    """``stale``'s rows with ``ended``, how the history ended the member's last ownership of the partition
    before the JoinGroup (null: never), and ``rivals``, whom the declaration harms: the other members
    whose history owns the partition at the JoinGroup (null: none)."""
    ended = (stale.join(t.ownership.select("run", "member", "topic", "partition", F.col("end_ts").alias("o_end"),
                                           "end_reason"), ["run", "member", "topic", "partition"])
             .where(F.col("o_end") <= F.col("ts"))
             .groupBy(*_KEY).agg(F.max_by("end_reason", "o_end").alias("ended")))
    rivals = (stale.join(t.ownership.select("run", F.col("member").alias("rival"), "topic", "partition",
                                            F.col("start_ts").alias("r_start"), F.col("end_ts").alias("r_end")),
                         ["run", "topic", "partition"])
              .where((F.col("rival") != F.col("member")) & (F.col("r_start") <= F.col("ts"))
                     & (F.col("r_end") >= F.col("ts")))
              .groupBy(*_KEY).agg(F.collect_set("rival").alias("rivals")))
    return stale.join(ended, _KEY, "left").join(rivals, _KEY, "left")


def _undeclared(t: Tables, req: DataFrame, declared: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(missing, slack_missing), each of _COLS columns: the partitions the history owns at a JoinGroup that
    it did not declare; excused (visibly, E5/clock-slack: ``slack_missing``) only when the history ends that
    ownership up to a heartbeat after the JoinGroup (it lags the revoke)."""
    held = (req.join(_ownership_spans(t), ["run", "member"])
            .where((F.col("o_start") <= F.col("ts")) & (F.col("o_end") >= F.col("ts")))
            .select("run", "member", "line", "ts", "topic", "partition",
                    (F.col("o_end") <= F.col("ts") + F.col("heartbeat_ms")).alias("ending")))
    undeclared = held.join(declared.select(*_KEY), _KEY, "left_anti")
    return undeclared.where(~F.col("ending")).drop("ending"), undeclared.where(F.col("ending")).drop("ending")


def _v0_offers(t: Tables, coop_members: DataFrame) -> DataFrame:
    """(run, member, protocol_name, ts, line, frames): cooperative members' v0 subscriptions offered for a
    cooperative assignor, the first of each per member and protocol."""
    return (t.subscriptions.where((F.col("source") == "request") & F.col("decode_error").isNull()
                                  & (F.col("version") == 0) & F.col("protocol_name").isin(*config.COOPERATIVE_ASSIGNORS))
            .join(coop_members, ["run", "member"]).groupBy("run", "member", "protocol_name")
            .agg(F.min("ts").alias("ts"), F.min("line").alias("line"), F.count("*").alias("frames")))


def _stop_requests(t: Tables) -> DataFrame:
    """(run, member, fault, ts): when the runner asked each member to stop (rule E5/closing): its
    graceful-stop lines and its starts."""
    return t.nemesis.where((F.col("phase") == "invoke")
                           & F.col("fault").isin(*faults.GRACEFUL_STOP_LINES, "start")).select(
        "run", F.col("target").alias("member"), "fault", "ts")


def _history_rows(stale: DataFrame, missing: DataFrame, slack: DataFrame, slack_missing: DataFrame) -> DataFrame:
    """(run, member, line, ts, kind, tps, ended, rivals): the history-based findings per JoinGroup and
    ``kind`` (stale, missing, slack, slack-missing), their partitions, the sorted ways the history ended
    them and the sorted rivals."""
    no_rivals = F.array().cast("array<string>")
    return (stale.select(*_COLS, F.lit("stale").alias("kind"), F.coalesce("ended", F.lit("never")).alias("ended"),
                         F.coalesce("rivals", no_rivals).alias("rivals"))
            .unionByName(missing.select(*_COLS, F.lit("missing").alias("kind"),
                                        F.lit(None).cast("string").alias("ended"), no_rivals.alias("rivals")))
            .unionByName(slack.select(*_COLS, F.lit("slack").alias("kind"), F.lit(None).cast("string").alias("ended"),
                                      no_rivals.alias("rivals")))
            .unionByName(slack_missing.select(*_COLS, F.lit("slack-missing").alias("kind"),
                                              F.lit(None).cast("string").alias("ended"), no_rivals.alias("rivals")))
            .groupBy("run", "member", "line", "ts", "kind")
            .agg(F.collect_list(F.struct("topic", "partition")).alias("tps"),
                 F.array_sort(F.collect_set("ended")).alias("ended"),
                 F.array_sort(F.array_distinct(F.flatten(F.collect_list("rivals")))).alias("rivals")))


def _claim_rows(claims: DataFrame, applied: DataFrame) -> DataFrame:
    """(run, member, sync_generation, line, ts, sync_line, sync_ts, tps, applied): the stale claims per
    JoinGroup, with whether the member's history has an event of its last assignment's generation."""
    return (claims.groupBy("run", "member", "line", "ts", "sync_line", "sync_ts", "sync_generation")
            .agg(F.collect_list(F.struct("topic", "partition")).alias("tps"))
            .join(applied, ["run", "member", "sync_generation"], "left"))


def _pending_rows(pending: DataFrame) -> DataFrame:
    """(run, member, line, ts, sync_line, sync_ts, sync_generation, tps): the declarations rule
    E5/not-yet-applied allows, per JoinGroup."""
    return (pending.groupBy("run", "member", "line", "ts", "sync_line", "sync_ts", "sync_generation")
            .agg(F.collect_list(F.struct("topic", "partition")).alias("tps")))


def _lifecycles(stop_rows: list) -> dict[tuple, list]:
    """(run, member) -> the runner's stops and starts of the member, (ts, fault) in time order."""
    lifecycle: dict[tuple, list] = {}
    for r in sorted(stop_rows, key=lambda r: r["ts"]):
        lifecycle.setdefault((r["run"], r["member"]), []).append((r["ts"], r["fault"]))
    return lifecycle


def _closing(lifecycle: dict[tuple, list], run: str, member: str, ts: float) -> bool:
    """The runner had asked ``member`` to stop before ``ts`` (a graceful stop, no start since)."""
    before = [f for at, f in lifecycle.get((run, member), []) if at <= ts]
    return bool(before) and before[-1] in faults.GRACEFUL_STOP_LINES


def _stale_claim_findings(claim_rows: list) -> list[dict]:
    """E5's wire findings: a stale claim per JoinGroup, with whether the member ever applied its last assignment."""
    out = []
    for r in claim_rows:
        parts = tps(r["tps"])
        since = (f"its last assignment (SyncGroup response, wire line {r['sync_line']}) did not give it them"
                 if r["sync_line"] is not None else "it had received no assignment since it started")
        evidence = {"wire_line": r["line"], "kind": "stale-claim", "assignment_wire_line": r["sync_line"]}
        if r["sync_line"] is not None and r["sync_generation"] is not None:
            # Whether the member ever acted on that assignment: its history has an event of the
            # assignment's generation (a callback, a record consumed or committed under it). Unknown
            # (absent) when the capture has no SyncGroup request to give the answer its generation.
            evidence["assignment_generation"] = r["sync_generation"]
            evidence["assignment_applied"] = bool(r["applied"])
            if not r["applied"]:
                since += (f", and its history has no event of that assignment's generation "
                          f"{r['sync_generation']}: it never applied it")
        out.append(violation("E5", r["run"], f"{r['member']} declared {fmt_tps(parts)} owned in JoinGroup (wire line "
                             f"{r['line']}), but {since}: a stale claim", members=[r["member"]], culprit=r["member"],
                             partitions=parts, ts=r["ts"], evidence=evidence))
    return out


def _slack_findings(rows: list) -> list[dict]:
    """The allowed findings of rule E5/clock-slack: declarations or omissions within a heartbeat of the history."""
    out = []
    for r in (r for r in rows if r["kind"] in ("slack", "slack-missing")):
        parts = tps(r["tps"])
        what = ("declared owned {} in JoinGroup (wire line {}) up to a heartbeat before its history recorded "
                "them assigned" if r["kind"] == "slack" else
                "did not declare {} in JoinGroup (wire line {}), which its history recorded revoked or lost up to "
                "a heartbeat after it")
        out.append(violation("E5", r["run"], f"{r['member']} " + what.format(fmt_tps(parts), r["line"]),
                             members=[r["member"]], partitions=parts, ts=r["ts"],
                             evidence={"wire_line": r["line"], "kind": r["kind"]}, allowed_by="E5/clock-slack"))
    return out


def _not_yet_applied_findings(pending_rows: list) -> list[dict]:
    """The allowed findings of rule E5/not-yet-applied, one per JoinGroup."""
    out = []
    for r in pending_rows:
        parts = tps(r["tps"])
        out.append(violation(
            "E5", r["run"], f"{r['member']} declared owned {fmt_tps(parts)} in JoinGroup (wire line {r['line']}) as "
            f"assigned by its SyncGroup response of generation {r['sync_generation']} (wire line {r['sync_line']}) "
            f"{r['ts'] - r['sync_ts']:.0f} ms before; its history has no event of generation {r['sync_generation']}: "
            "received, not yet applied", members=[r["member"]], partitions=parts, generation=r["sync_generation"],
            ts=r["ts"], allowed_by="E5/not-yet-applied",
            evidence={"wire_line": r["line"], "kind": "not-yet-applied", "assignment_wire_line": r["sync_line"],
                      "assignment_generation": r["sync_generation"], "assignment_applied": False}))
    return out


def _history_findings(rows: list, lifecycle: dict[tuple, list]) -> list[dict]:
    """E5's history findings: one per repeated stale or missing declaration (:func:`_same_declarations`),
    allowed under rule E5/closing when every JoinGroup of a stale one came after the runner asked the
    member to stop and the history ended its ownership."""
    out = []
    for (run, member, kind, parts), joins in _same_declarations([r for r in rows if not r["kind"].startswith("slack")]).items():
        lines = [r["line"] for r in joins]
        where = "JoinGroup" if len(lines) == 1 else f"{len(lines)} JoinGroups (wire lines {', '.join(map(str, lines))})"
        what = (f"declared owned {fmt_tps(parts)} in {where}, which its history says it does not own"
                if kind == "stale" else f"owns {fmt_tps(parts)} per its history but did not declare them in {where}")
        ended = sorted({e for r in joins for e in (r["ended"] or [])})
        if ended:
            what += f" (its history {' or '.join(e if e != 'never' else 'never assigned them' for e in ended)}"
            what += " them before)" if ended != ["never"] else ")"
        rivals = sorted({x for r in joins for x in (r["rivals"] or [])})
        if rivals:
            what += f"; {', '.join(rivals)} owned them then"
        leaving = (kind == "stale" and ended and "never" not in ended
                   and all(_closing(lifecycle, run, member, r["ts"]) for r in joins))
        if leaving:
            what += ", after the runner asked it to stop: its close had released them"
        out.append(violation("E5", run, f"{member} {what}", members=[member], culprit=member, harmed=rivals,
                             allowed_by="E5/closing" if leaving else None, partitions=list(parts),
                             ts=joins[0]["ts"], evidence={"wire_line": lines[0], "kind": kind,
                                                          **({"history_ended": "+".join(ended)} if ended else {}),
                                                          **({"wire_lines": lines} if len(joins) > 1 else {})}))
    return out


def _v0_findings(v0_rows: list) -> list[dict]:
    """E5's finding of each v0 subscription offered for a cooperative assignor."""
    return [violation("E5", r["run"], f"{r['member']} offered {r['protocol_name']} with a v0 subscription, which "
                      "cannot declare owned partitions: a cooperative group cannot keep its partitions",
                      members=[r["member"]], culprit=r["member"], ts=r["ts"],
                      evidence={"wire_line": r["line"], "frames": r["frames"]})
            for r in v0_rows]
