"""Rejoin invariant V3: a classic member told that a rebalance is in progress rejoins before the group
drops it.

The classic protocol tells a member of a new round only through its answers: a Heartbeat, a SyncGroup
or an OffsetCommit answered REBALANCE_IN_PROGRESS (27). The member must then send a JoinGroup under its
member id; the coordinator waits for it up to the rebalance timeout (every harness sends the cell's
max.poll.interval.ms) and then completes the round without it, dropping its member id, which the
member learns from its next answer: UNKNOWN_MEMBER_ID (25). Its partitions were meanwhile nobody's,
and every member of the round waited the whole timeout (KAFKA-14024: Java 3.2.0's cooperative
onJoinPrepare re-sent an async auto-commit on every poll and never joined).

The finding. A member id told at ``demand`` (the first such answer since it last entered a
generation: its last successful JoinGroup answer before) and answered UNKNOWN_MEMBER_ID at
``removal`` (the first such answer after it), having sent no JoinGroup under that id in between (a
JoinGroup already on its way when it was told counts: it was sent after it entered the generation):
a violation naming the member as culprit, and as harmed the members whose JoinGroup was answered in
that time (they waited in the round it missed).

Allowed findings (each rule named in :mod:`conformance.pipeline.checks.rules`):

- V3/fault-window: a dead-looking fault window (:func:`conformance.pipeline.checks.common.fault_windows`)
  of the member, the broker or every member in force at ``demand`` or opened within a heartbeat
  interval after it: the member could not send its JoinGroup, or the coordinator receive it, when it
  was due.
- V3/leaving: the member was on its way out when told, or within a heartbeat interval after: after it
  entered its generation and by then (and before ``removal``) it sent a LeaveGroup, the runner stopped
  or killed it, or its history ended (not at the run's end). A member on its way out rightly does not
  rejoin.

A fault or a stop later than that explains nothing: a member that rejoins when told (the next turn of
its poll loop) had rejoined by then.

Scope: KIP-848 consumer members are never told REBALANCE_IN_PROGRESS (K3 judges how they follow their
assignments); a member id told and never answered UNKNOWN_MEMBER_ID (it rejoined, left unheard or the
run ended first) gives no finding here (V1 judges whether the group converged).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from conformance.pipeline.checks.common import fault_windows, timing, violation, ways_out
from conformance.pipeline.derived import Tables
from conformance.reference.codes import REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID

#: The classic APIs whose answer can tell a member that a round began (OffsetCommit's, per partition).
_TELLING_APIS = ("Heartbeat", "SyncGroup")
#: One finding's key: a member id, the generation it had entered (its JoinGroup answer's time, -1 when
#: none is on the wire) and the answer that dropped it.
_KEY = ["run", "member_id", "entered_ts", "r_ts"]


def _answers(t: Tables, code: int) -> DataFrame:
    """(run, member, member_id, ts, line, api) of every answer to a member id with error ``code``: a frame's
    error (its wire line), or an OffsetCommit partition's (at its response, named by its request's wire
    line: the commits table pairs them)."""
    frames = (t.frames.where((F.col("direction") == "response") & (F.col("error_code") == code)
                             & F.col("member_id").isNotNull() & (F.col("member_id") != "")
                             & (F.col("api") != "OffsetCommit"))
              .select("run", "member", "member_id", "ts", "line", "api"))
    commits = (t.commits.where((F.col("error_code") == code) & F.col("member_id").isNotNull() & (F.col("member_id") != ""))
               .groupBy("run", "member", "member_id", "line")
               .agg(F.min("response_ts").alias("ts"))
               .select("run", "member", "member_id", "ts", "line", F.lit("OffsetCommit").alias("api")))
    if code == REBALANCE_IN_PROGRESS:
        frames = frames.where(F.col("api").isin(*_TELLING_APIS))
    return frames.unionByName(commits)


def _missed(t: Tables) -> DataFrame:
    """Per member id dropped after it was told: (run, member, member_id, entered_ts, d_ts, d_line, d_api,
    r_ts, r_line, r_api), the first demand since it entered its generation and the first removal after
    it, when no JoinGroup of that id came after it entered and up to the removal."""
    joins = t.frames.where((F.col("api") == "JoinGroup") & F.col("member_id").isNotNull() & (F.col("member_id") != ""))
    entered = (joins.where((F.col("direction") == "response") & (F.coalesce("error_code", F.lit(0)) == 0))
               .select("run", "member_id", F.col("ts").alias("e_ts")))
    asked = joins.where(F.col("direction") == "request").select("run", "member_id", F.col("ts").alias("j_ts"))
    demands = _answers(t, REBALANCE_IN_PROGRESS).select(
        "run", "member", "member_id", F.col("ts").alias("d_ts"), F.col("line").alias("d_line"), F.col("api").alias("d_api"))
    removals = _answers(t, UNKNOWN_MEMBER_ID).select(
        "run", "member_id", F.col("ts").alias("r_ts"), F.col("line").alias("r_line"), F.col("api").alias("r_api"))
    key = ["run", "member", "member_id", "d_ts", "d_line", "d_api"]
    told = (demands.join(entered, ["run", "member_id"], "left")
            .where(F.col("e_ts").isNull() | (F.col("e_ts") < F.col("d_ts")))
            .groupBy(*key).agg(F.coalesce(F.max("e_ts"), F.lit(-1.0)).alias("entered_ts")))
    dropped = (told.join(removals, ["run", "member_id"]).where(F.col("r_ts") > F.col("d_ts"))
               .groupBy(*key, "entered_ts").agg(F.min(F.struct("r_ts", "r_line", "r_api")).alias("r"))
               .select(*key, "entered_ts", "r.*"))
    # One finding per removal: the first demand of the generation the member id was in.
    first = (dropped.groupBy("run", "member", "member_id", "entered_ts", "r_ts", "r_line", "r_api")
             .agg(F.min(F.struct("d_ts", "d_line", "d_api")).alias("d"))
             .select("run", "member", "member_id", "entered_ts", "d.*", "r_ts", "r_line", "r_api"))
    rejoined = (first.join(asked, ["run", "member_id"])
                .where((F.col("j_ts") > F.col("entered_ts")) & (F.col("j_ts") <= F.col("r_ts")))
                .select(*_KEY).distinct())
    return first.join(rejoined, _KEY, "left_anti")


def _excuses(t: Tables, missed: DataFrame) -> DataFrame:
    """(*_KEY, excuses): the faults and ways out under V3/fault-window and V3/leaving, as
    (f_ts, fault, rule) sorted by time. Each must have been in force when the member was told, or have
    begun within a heartbeat interval after (``due_ts``): a fault or a stop that came later does not explain
    why the member had not rejoined by then."""
    tm = timing(t.cells).select("run", "heartbeat_ms")
    span = (missed.select(*_KEY, "member", "d_ts").join(tm, "run")
            .withColumn("due_ts", F.least(F.col("d_ts") + F.col("heartbeat_ms"), F.col("r_ts"))))
    faults = (span.join(fault_windows(t).select("run", "fault", "target", "w_start", "w_end"), "run")
              .where(F.col("target").isin("broker", "all", F.col("member"))
                     & (F.col("w_start") <= F.col("due_ts")) & (F.col("w_end") >= F.col("d_ts")))
              .select(*_KEY, F.col("w_start").alias("f_ts"), "fault",
                      F.lit("V3/fault-window").alias("rule")))
    out = (span.join(ways_out(t, F.col("end_kind") != "run-end"), ["run", "member"])
           .where((F.col("f_ts") <= F.col("due_ts")) & (F.col("f_ts") > F.col("entered_ts")))
           .select(*_KEY, "f_ts", "fault", F.lit("V3/leaving").alias("rule")))
    return (faults.unionByName(out).groupBy(*_KEY)
            .agg(F.sort_array(F.collect_list(F.struct("f_ts", "fault", "rule"))).alias("excuses")))


def _meanwhile(t: Tables, missed: DataFrame) -> DataFrame:
    """(*_KEY, requests, apis, waiting): the member id's requests from the demand to the
    removal and their APIs, and the members whose JoinGroup was answered meanwhile (the round it missed)."""
    span = missed.select(*_KEY, "member", "d_ts")
    requests = (span.join(t.frames.where(F.col("direction") == "request")
                          .select("run", "member_id", F.col("ts").alias("q_ts"), F.col("api").alias("q_api")),
                          ["run", "member_id"])
                .where((F.col("q_ts") > F.col("d_ts")) & (F.col("q_ts") < F.col("r_ts")))
                .groupBy(*_KEY)
                .agg(F.count("*").alias("requests"), F.array_sort(F.collect_set("q_api")).alias("apis")))
    answered = (t.frames.where((F.col("api") == "JoinGroup") & (F.col("direction") == "response")
                               & (F.coalesce("error_code", F.lit(0)) == 0))
                .select("run", F.col("member").alias("other"), F.col("ts").alias("a_ts")))
    waiting = (span.join(answered, "run")
               .where((F.col("a_ts") > F.col("d_ts")) & (F.col("a_ts") <= F.col("r_ts")) & (F.col("other") != F.col("member")))
               .groupBy(*_KEY).agg(F.array_sort(F.collect_set("other")).alias("waiting")))
    return requests.join(waiting, _KEY, "full")


def check_v3(t: Tables) -> list[dict]:
    missed = _missed(t)
    rows = t.collect(missed.join(_excuses(t, missed), _KEY, "left").join(_meanwhile(t, missed), _KEY, "left"))
    out = []
    for r in rows:
        waited = (r["r_ts"] - r["d_ts"]) / 1000
        sent = (f"{r['requests']} request(s) meanwhile ({', '.join(r['apis'])})" if r["requests"] else "no request meanwhile")
        message = (f"{r['member']} was told a rebalance was in progress ({r['d_api']} answered REBALANCE_IN_PROGRESS, "
                   f"wire line {r['d_line']}) and sent no JoinGroup as {r['member_id']} before the group dropped it "
                   f"{waited:.1f} s later ({r['r_api']} answered UNKNOWN_MEMBER_ID, wire line {r['r_line']}); {sent}")
        excuses = list(r["excuses"] or [])
        evidence = {"member_id": r["member_id"], "told_wire_line": r["d_line"], "told_by": r["d_api"],
                    "dropped_wire_line": r["r_line"], "dropped_by": r["r_api"], "waited_ms": r["r_ts"] - r["d_ts"],
                    "requests_meanwhile": r["requests"] or 0, "apis_meanwhile": list(r["apis"] or []),
                    "kept_committing": "OffsetCommit" in (r["apis"] or []),
                    "excuses": [{"fault": e["fault"], "ts": e["f_ts"], "rule": e["rule"]} for e in excuses]}
        if excuses:
            first = excuses[0]
            out.append(violation("V3", r["run"], f"{message}; {first['fault']} at {first['f_ts']:.0f}",
                                 members=[r["member"]], ts=r["d_ts"], evidence=evidence, allowed_by=first["rule"]))
        else:
            out.append(violation("V3", r["run"], message, culprit=r["member"], harmed=list(r["waiting"] or []),
                                 ts=r["d_ts"], evidence=evidence))
    return out
