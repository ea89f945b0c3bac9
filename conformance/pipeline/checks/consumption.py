"""Consumption invariants C1 and C2: what members handed to their applications, not what they declared.

The other checks judge ownership as members declare it (callbacks in the history, claims on the
wire). These two judge the ``consumed`` events: every batch of records the client handed to the
application (:mod:`conformance.history`, rule 3: harnesses record every batch the application
received, never filtered by what they believe they own). KIP-429 exists so that no two members
process one partition at once; a member whose callbacks are right but which goes on handing
records of a partition it gave up, or lost, to its application breaks exactly that.

**C1, consumption within ownership.** Every batch a member hands to its application belongs to a
partition the member owned at that moment by its own history: after an ``assigned`` of the
partition and before the next ``revoked``/``lost`` of it, in the same incarnation. The order is
the history file's line order (one writer per member, flushed per line), so no clock is involved
and no slack is needed: a harness records ``consumed`` after the records were processed, and each
client calls its revoke/lost callback from the application's own poll (Java, librdkafka,
kafka-python, franz-go and the reference; Sarama's session ends only after every claim's handler
returned), so a batch handed over before a revoke is recorded before it. A finding names the
member (culprit), the partition, the records, and the history line that ended its ownership;
``harmed`` are the members whose own history owned the partition while the culprit consumed it.

**C2, a fenced member stops.** After the wire shows a member a fencing answer, the member hands no
record of a partition it held at the answer to its application until it has been given that
partition again. Fencing answers are UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID and
FENCED_MEMBER_EPOCH on a Heartbeat, OffsetCommit, JoinGroup, SyncGroup or ConsumerGroupHeartbeat
answer to the member's current member id (the one of its latest successful JoinGroup answer, or
any id for the consumer protocol, whose member ids are the member's own), and
ILLEGAL_GENERATION on such an answer when the request carried the generation of the member's
latest successful JoinGroup answer and the member had sent no JoinGroup since it (a member already
rejoining has a newer generation coming: Java ignores ILLEGAL_GENERATION while it rebalances, and
the broker keeps its claims). "Held" is the member's own history at the answer. "Given again" is
any of: a successful SyncGroup answer to the member whose assignment has the partition, a
successful ConsumerGroupHeartbeat answer that assigns it, or an ``assigned`` of it in the
history, after the answer. The bound is the member's own poll in flight at the answer, not a
constant: a batch whose poll began at or before the answer (``poll_ts``) was fetched before the
member could know; one whose poll began after it is a violation. A history written before harnesses
recorded ``poll_ts`` takes the run of ``consumed`` lines right after the answer (no other event of
the member between) as that poll's.
"""

from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from conformance.pipeline.checks.common import fmt_tps, violation
from conformance.pipeline.derived import Tables
from conformance.reference.codes import FENCED_INSTANCE_ID, FENCED_MEMBER_EPOCH, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID

#: Error codes that tell a member it is no longer in the group (or not in its generation), by their
#: protocol names (the names the findings and their evidence use).
FENCING_CODES: dict[int, str] = {UNKNOWN_MEMBER_ID: "UNKNOWN_MEMBER_ID", ILLEGAL_GENERATION: "ILLEGAL_GENERATION",
                                 FENCED_INSTANCE_ID: "FENCED_INSTANCE_ID", FENCED_MEMBER_EPOCH: "FENCED_MEMBER_EPOCH"}
#: The APIs whose answers can fence a member.
FENCING_APIS = ("Heartbeat", "OffsetCommit", "JoinGroup", "SyncGroup", "ConsumerGroupHeartbeat")


def _consumed(t: Tables):
    return (t.events_inc.where(F.col("event") == "consumed")
            .select("run", "member", "file", "incarnation", "line", "ts", "topic", F.col("partition").cast("int").alias("partition"),
                    "first_offset", "last_offset", "count", "poll_ts"))


def _tp_events(t: Tables):
    return (t.events_inc.where(F.col("event").isin("assigned", "revoked", "lost"))
            .select("run", "member", "file", "incarnation", "line", "ts", "event", F.explode("partitions").alias("tp"))
            .select("run", "member", "file", "incarnation", "line", "ts", "event", F.col("tp.topic").alias("topic"),
                    F.col("tp.partition").cast("int").alias("partition")))


def outside_ownership(t: Tables):
    """Consumed batches whose partition the member's own history did not own at that line: with
    ``state`` (the last ``assigned``/``revoked``/``lost`` of it before the batch, null: never
    assigned in this incarnation), ``state_line`` and ``state_ts``."""
    cons = _consumed(t).withColumn("event", F.lit("consumed"))
    tpe = _tp_events(t)
    cols = ["run", "member", "file", "incarnation", "line", "ts", "event", "topic", "partition"]
    both = (cons.select(*cols, "first_offset", "last_offset", "count", "poll_ts")
            .unionByName(tpe.select(*cols, F.lit(None).cast("long").alias("first_offset"),
                                    F.lit(None).cast("long").alias("last_offset"), F.lit(None).cast("long").alias("count"),
                                    F.lit(None).cast("double").alias("poll_ts"))))
    w = (Window.partitionBy("run", "file", "incarnation", "topic", "partition").orderBy("line")
         .rowsBetween(Window.unboundedPreceding, -1))
    state = F.struct(F.col("event").alias("event"), F.col("line").alias("line"), F.col("ts").alias("ts"))
    marked = both.withColumn("st", F.last(F.when(F.col("event") != "consumed", state), ignorenulls=True).over(w))
    return (marked.where((F.col("event") == "consumed")
                         & (F.col("st").isNull() | (F.col("st.event") != "assigned")))
            .select("run", "member", "incarnation", "line", "ts", "topic", "partition", "first_offset", "last_offset",
                    "count", "poll_ts", F.col("st.event").alias("state"), F.col("st.line").alias("state_line"),
                    F.col("st.ts").alias("state_ts")))


def _owners_meanwhile(t: Tables, bad):
    """Per (run, member, topic, partition, state_line): the other members whose history owned the
    partition while the culprit consumed it (between its first and last such batch)."""
    own = t.ownership.select("run", F.col("member").alias("owner"), "topic", "partition",
                             F.col("start_ts").alias("o_start"), F.col("end_ts").alias("o_end"))
    return (bad.join(own, ["run", "topic", "partition"])
            .where((F.col("owner") != F.col("member")) & (F.col("o_start") <= F.col("last_ts"))
                   & (F.coalesce("o_end", F.lit(float("inf"))) >= F.col("first_ts")))
            .groupBy("run", "member", "topic", "partition", "state_line")
            .agg(F.array_sort(F.collect_set("owner")).alias("owners")))


def check_c1(t: Tables) -> list[dict]:
    bad = (outside_ownership(t)
           .groupBy("run", "member", "incarnation", "topic", "partition", "state", "state_line", "state_ts")
           .agg(F.count("*").alias("batches"), F.sum("count").alias("records"), F.min("first_offset").alias("from_offset"),
                F.max("last_offset").alias("to_offset"), F.min("ts").alias("first_ts"), F.max("ts").alias("last_ts")))
    owners = _owners_meanwhile(t, bad)
    bad = bad.join(owners, ["run", "member", "topic", "partition", "state_line"], "left")
    t0 = t.cells.select("run", F.col("start_ts").alias("t0"))
    rows = t.collect(bad.join(t0, "run", "left"))
    out = []
    for r in rows:
        t0v = r["t0"] or 0.0
        when = (f"after its history {r['state']} it (+{(r['state_ts'] - t0v) / 1000:.1f} s)"
                if r["state"] else "without its history ever assigning it in this incarnation")
        owners = list(r["owners"] or [])
        meanwhile = f"; {', '.join(owners)} owned it meanwhile" if owners else ""
        out.append(violation(
            "C1", r["run"],
            f"{r['member']} handed {r['records']} record(s) of {fmt_tps([[r['topic'], r['partition']]])} "
            f"(offsets {r['from_offset']}..{r['to_offset']}, {r['batches']} batch(es), the first recorded "
            f"+{(r['first_ts'] - t0v) / 1000:.1f} s) to its application {when}{meanwhile}",
            members=[r["member"], *owners], culprit=r["member"], harmed=owners, partitions=[[r["topic"], r["partition"]]],
            ts=r["first_ts"],
            evidence={"incarnation": r["incarnation"], "ownership_ended_by": r["state"],
                      "ended_ts": r["state_ts"], "batches": r["batches"],
                      "records": r["records"], "from_offset": r["from_offset"], "to_offset": r["to_offset"],
                      "harmed": owners}))
    return out


def fencing_answers(t: Tables):
    """The fencing answers (see the module docstring) with the member's id and generation at them:
    (run, member, f_line, f_ts, api, code, member_id, generation)."""
    fr = t.frames
    answers = fr.where((F.col("direction") == "response") & F.col("api").isin(*FENCING_APIS)
                       & F.col("error_code").isin(*FENCING_CODES))
    joins = (fr.where((F.col("api") == "JoinGroup") & (F.col("direction") == "response")
                      & (F.coalesce("error_code", F.lit(0)) == 0) & F.col("generation").isNotNull())
             .select("run", "member", F.col("ts").alias("j_ts"), F.col("member_id").alias("j_member_id"),
                     F.col("generation").alias("j_generation")))
    join_reqs = (fr.where((F.col("api") == "JoinGroup") & (F.col("direction") == "request"))
                 .select("run", "member", F.col("ts").alias("jr_ts")))
    a = answers.select("run", "member", F.col("line").alias("f_line"), F.col("ts").alias("f_ts"), "api",
                       F.col("error_code").alias("code"), "member_id", "generation")
    latest = (a.join(joins, ["run", "member"], "left").where(F.col("j_ts").isNull() | (F.col("j_ts") < F.col("f_ts")))
              .groupBy("run", "member", "f_line", "f_ts", "api", "code", "member_id", "generation")
              .agg(F.max(F.struct("j_ts", "j_member_id", "j_generation")).alias("j")))
    rejoining = (latest.join(join_reqs, ["run", "member"])
                 .where((F.col("jr_ts") > F.col("j.j_ts")) & (F.col("jr_ts") < F.col("f_ts")))
                 .select("run", "member", "f_line").distinct().withColumn("rejoining", F.lit(True)))
    latest = latest.join(rejoining, ["run", "member", "f_line"], "left")
    consumer = F.col("api") == "ConsumerGroupHeartbeat"
    current = consumer | F.col("j").isNull() | (F.col("member_id") == F.col("j.j_member_id"))
    generation_fence = ((F.col("code") != ILLEGAL_GENERATION) | consumer
                        | ((F.col("generation") == F.col("j.j_generation")) & F.col("rejoining").isNull()))
    return latest.where(current & generation_fence).select("run", "member", "f_line", "f_ts", "api", "code",
                                                           "member_id", "generation")


def after_fence(t: Tables):
    """Batches of a partition held at a fencing answer whose poll began after it, before the partition
    was given to the member again: (run, member, f_line, f_ts, api, code, topic, partition, line, ts,
    poll_ts, first_offset, last_offset, count)."""
    fences = fencing_answers(t)
    held = (fences.join(t.ownership.select("run", "member", "incarnation", "topic", "partition", "start_ts", "end_ts"),
                        ["run", "member"])
            .where((F.col("start_ts") <= F.col("f_ts")) & (F.coalesce("end_ts", F.lit(float("inf"))) > F.col("f_ts")))
            .select("run", "member", "incarnation", "f_line", "f_ts", "api", "code", "topic", "partition"))
    cons = _consumed(t)
    after = (held.join(cons, ["run", "member", "incarnation", "topic", "partition"])
             .where(F.col("ts") > F.col("f_ts")))
    # A poll begun after the answer; without poll_ts, a batch after the member's first other event
    # following the answer (the run of consumed lines right after it is the poll in flight).
    other = (t.events_inc.where(F.col("event") != "consumed")
             .select("run", "member", "incarnation", F.col("ts").alias("o_ts"), F.col("line").alias("o_line")))
    first_other = (fences.join(other, ["run", "member"]).where(F.col("o_ts") > F.col("f_ts"))
                   .groupBy("run", "member", "incarnation", "f_line").agg(F.min("o_line").alias("o_line")))
    after = after.join(first_other, ["run", "member", "incarnation", "f_line"], "left")
    late = (F.col("poll_ts") > F.col("f_ts")) | (F.col("poll_ts").isNull() & F.col("o_line").isNotNull()
                                                  & (F.col("line") > F.col("o_line")))
    after = after.where(late)
    # Given again: a SyncGroup answer, a ConsumerGroupHeartbeat answer or an ``assigned`` with it.
    synced = (t.assignments.where((F.col("source") == "received") & (F.coalesce("error_code", F.lit(0)) == 0))
              .select("run", "member", F.col("ts").alias("g_ts"), F.explode("partitions").alias("tp")))
    beat = (t.heartbeats.where((F.col("direction") == "response") & (F.coalesce("error_code", F.lit(0)) == 0)
                               & F.col("assigned").isNotNull())
            .select("run", "member", F.col("ts").alias("g_ts"), F.explode("assigned").alias("tp")))
    hist = (t.events.where(F.col("event") == "assigned")
            .select("run", "member", F.col("ts").alias("g_ts"), F.explode("partitions").alias("tp")))
    given = (synced.unionByName(beat).unionByName(hist)
             .select("run", "member", "g_ts", F.col("tp.topic").alias("topic"), F.col("tp.partition").cast("int").alias("partition")))
    regained = (after.join(given, ["run", "member", "topic", "partition"])
                .where((F.col("g_ts") > F.col("f_ts")) & (F.col("g_ts") <= F.col("ts")))
                .select("run", "member", "f_line", "topic", "partition", "line").distinct())
    return after.join(regained, ["run", "member", "f_line", "topic", "partition", "line"], "left_anti")


def check_c2(t: Tables) -> list[dict]:
    late = after_fence(t)
    # One finding per member and fence episode: the first answer of an episode names it.
    per = (late.groupBy("run", "member", "topic", "partition", "line", "ts", "poll_ts", "first_offset", "last_offset", "count")
           .agg(F.min(F.struct("f_ts", "f_line", "api", "code")).alias("f")))
    bad = (per.groupBy("run", "member", F.col("f.f_line").alias("f_line"), F.col("f.f_ts").alias("f_ts"),
                       F.col("f.api").alias("api"), F.col("f.code").alias("code"))
           .agg(F.array_sort(F.collect_set(F.struct("topic", "partition"))).alias("tps"), F.count("*").alias("batches"),
                F.sum("count").alias("records"), F.min("ts").alias("first_ts"), F.min("poll_ts").alias("first_poll_ts")))
    t0 = t.cells.select("run", F.col("start_ts").alias("t0"))
    rows = t.collect(bad.join(t0, "run", "left"))
    out = []
    for r in rows:
        t0v = r["t0"] or 0.0
        parts = [[x["topic"], x["partition"]] for x in r["tps"]]
        poll = (f"a poll begun +{(r['first_poll_ts'] - t0v) / 1000:.1f} s" if r["first_poll_ts"] is not None
                else "a later poll")
        out.append(violation(
            "C2", r["run"],
            f"{r['member']} was answered {FENCING_CODES.get(r['code'], r['code'])} on {r['api']} (wire.jsonl:{r['f_line']}, "
            f"+{(r['f_ts'] - t0v) / 1000:.1f} s) and still handed {r['records']} record(s) of {fmt_tps(parts)} "
            f"({r['batches']} batch(es); the first from {poll}, recorded +{(r['first_ts'] - t0v) / 1000:.1f} s) "
            f"to its application before being given them again",
            members=[r["member"]], culprit=r["member"], partitions=parts, ts=r["first_ts"],
            evidence={"fence_line": r["f_line"], "fence_ts": r["f_ts"], "fence_api": r["api"],
                      "fence_error": FENCING_CODES.get(r["code"], str(r["code"])), "batches": r["batches"],
                      "records": r["records"], "first_poll_ts": r["first_poll_ts"]}))
    return out
