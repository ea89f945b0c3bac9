"""When the group is a KIP-848 consumer group, from the recorded ConsumerGroupHeartbeat frames.

A group with a member of the ``consumer`` protocol in it is a consumer group on
the broker (KIP-848): the broker computes every assignment, member epochs
replace the classic generation, and classic members in it go through the
broker's classic bridge (a JoinGroup response with no leader and no member
list, a SyncGroup that carries no assignments, the broker's assignment back in
the SyncGroup response; their "generation" is their member epoch). The classic
checks judge classic generations of a classic group; this module says, from
the wire alone, when that is not the case. Pieces are built once per Tables
(:meth:`conformance.pipeline.derived.Tables.shared`).

- :func:`consumer_spans`: per consumer member id and *stint* (a stint begins
  with a request at epoch 0, a join), from the first successful heartbeat
  response with an epoch > 0 (the broker admitted it) to the first of: the
  response to its leave (epoch -1, or -2 for a static member), a fencing
  error (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID: the broker no longer has
  it), else its last frame plus a session timeout (a killed member stays in
  the group until its session expires).
- :func:`consumer_periods`: per run, the union of the spans: while a period
  lasts, the group is a consumer group (the broker converts it back to a
  classic group only once its last consumer member is gone).
- :func:`bridged_generations`: the classic generations (successful JoinGroup
  responses) answered inside a consumer period, with the period and the
  consumer members in the group then, and those answered with no leader (the
  bridge's own answer, a consumer group even when no consumer member is left).
- :func:`consumer_member_ids`: the member ids that spoke the consumer protocol.
- :func:`join_answers`: the broker's answers to consumer-protocol joins (a
  request at epoch 0): admitted (an epoch > 0) or refused (GROUP_ID_NOT_FOUND:
  the broker would not make the group a consumer group, KIP-848 migration).
- :func:`classic_join_answers`: the broker's answers to classic JoinGroups:
  admitted or refused (INCONSISTENT_GROUP_PROTOCOL).

Guarantees: everything here is derived from ``heartbeats`` and ``frames``
(the wire), the session timeout from the manifest's timing; a run without
ConsumerGroupHeartbeat frames has no span, no period and no bridged
generation, so the classic checks see it exactly as before.
"""

from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from conformance.pipeline.checks.common import timing
from conformance.pipeline.derived import Tables
from conformance.reference.codes import (
    FENCED_MEMBER_EPOCH,
    GROUP_ID_NOT_FOUND,
    INCONSISTENT_GROUP_PROTOCOL,
    MEMBER_ID_REQUIRED,
    UNKNOWN_MEMBER_ID,
)

#: Request epochs that leave the group (KIP-848: -1 leave, -2 a static member's temporary leave).
LEAVE_EPOCHS = (-1, -2)
#: Heartbeat errors after which the broker no longer has the member (it must rejoin at epoch 0).
FENCE_ERRORS = (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID)


def heartbeat_stints(t: Tables):
    """``t.heartbeats`` plus ``stint``: per (run, member_id), the number of join requests (epoch 0)
    at or before the frame's line, and ``reset``: the frame ends what the broker knew of the member
    (a leave request, or a response with a fencing error)."""
    def build():
        w = Window.partitionBy("run", "member_id").orderBy("line").rowsBetween(Window.unboundedPreceding, 0)
        join = (F.col("direction") == "request") & (F.col("member_epoch") == 0)
        reset = (((F.col("direction") == "request") & F.col("member_epoch").isin(*LEAVE_EPOCHS))
                 | ((F.col("direction") == "response") & F.col("error_code").isin(*FENCE_ERRORS)))
        return (t.heartbeats.withColumn("stint", F.sum(join.cast("int")).over(w))
                .withColumn("reset", reset))
    return t.shared("heartbeat_stints", build)


def consumer_member_ids(t: Tables):
    """(run, member_id, member) of every member id seen in a ConsumerGroupHeartbeat."""
    return t.shared("consumer_member_ids", lambda: t.heartbeats.where(F.col("member_id").isNotNull())
                    .groupBy("run", "member_id").agg(F.first("member").alias("member")))


def join_answers(t: Tables):
    """(run, member, member_id, line, ts, request_line, request_ts, member_epoch, error_code, error_message,
    admitted, refused): every response to a ConsumerGroupHeartbeat sent at epoch 0 (a join). ``admitted``:
    no error and an epoch > 0; ``refused``: GROUP_ID_NOT_FOUND, the broker's answer when it will not
    convert a classic group to a consumer group (KIP-848 online upgrade: the migration policy, an
    assignment with userData, ...); other errors (coordinator moved, loading) are neither."""
    def build():
        return (t.heartbeats.where((F.col("direction") == "response") & (F.col("request_epoch") == 0))
                .select("run", "member", "member_id", "line", "ts", "request_line", "request_ts", "member_epoch",
                        "error_code", "error_message",
                        ((F.coalesce("error_code", F.lit(0)) == 0) & (F.col("member_epoch") > 0)).alias("admitted"),
                        (F.col("error_code") == GROUP_ID_NOT_FOUND).alias("refused")))
    return t.shared("join_answers", build)


def classic_join_answers(t: Tables):
    """(run, member, member_id, line, ts, request_line, request_ts, protocol_type, error_code, admitted, passed,
    refused): every response to a classic JoinGroup, paired with its request (same member and correlation id;
    request columns null when the capture lacks it). ``admitted``: no error; ``passed``: no error or
    MEMBER_ID_REQUIRED (the broker asks for a member id only after its group checks passed);
    ``refused``: INCONSISTENT_GROUP_PROTOCOL, the broker's
    answer when a classic member may not join a consumer group (KAFKA-20640: migration policy ``disabled``;
    ``ConsumerGroup.supportsClassicProtocols``: no protocol shared with the classic members)."""
    def build():
        jg = t.frames.where(F.col("api") == "JoinGroup")
        req = jg.where(F.col("direction") == "request").select(
            "run", "member", "correlation_id", F.col("line").alias("request_line"), F.col("ts").alias("request_ts"),
            "protocol_type")
        code = F.coalesce("error_code", F.lit(0))
        return (jg.where(F.col("direction") == "response")
                .select("run", "member", "member_id", "line", "ts", "correlation_id", "error_code")
                .join(req, ["run", "member", "correlation_id"], "left")
                .select("run", "member", "member_id", "line", "ts", "request_line", "request_ts", "protocol_type",
                        "error_code", (code == 0).alias("admitted"), code.isin(0, MEMBER_ID_REQUIRED).alias("passed"),
                        (code == INCONSISTENT_GROUP_PROTOCOL).alias("refused")))
    return t.shared("classic_join_answers", build)


def consumer_spans(t: Tables):
    """(run, member, member_id, stint, s_start, s_end, s_end_kind): see the module docstring."""
    def build():
        hb = heartbeat_stints(t)
        admitted = ((F.col("direction") == "response") & (F.coalesce("error_code", F.lit(0)) == 0)
                    & (F.col("member_epoch") > 0))
        left = (F.col("direction") == "response") & F.col("request_epoch").isin(*LEAVE_EPOCHS)
        fenced = (F.col("direction") == "response") & F.col("error_code").isin(*FENCE_ERRORS)
        spans = (hb.groupBy("run", "member", "member_id", "stint")
                 .agg(F.min(F.when(admitted, F.col("ts"))).alias("s_start"),
                      F.min(F.when(left, F.col("ts"))).alias("left_ts"),
                      F.min(F.when(fenced, F.col("ts"))).alias("fenced_ts"),
                      F.max("ts").alias("last_ts"))
                 .where(F.col("s_start").isNotNull())
                 .join(timing(t.cells).select("run", "session_ms"), "run", "left"))
        gone = F.least(F.when(F.col("left_ts") >= F.col("s_start"), F.col("left_ts")),
                       F.when(F.col("fenced_ts") >= F.col("s_start"), F.col("fenced_ts")))
        return spans.select(
            "run", "member", "member_id", "stint", "s_start",
            F.coalesce(gone, F.col("last_ts") + F.col("session_ms")).alias("s_end"),
            F.when(gone.isNull(), "session").when(gone == F.col("left_ts"), "left").otherwise("fenced")
            .alias("s_end_kind"))
    return t.shared("consumer_spans", build)


def consumer_periods(t: Tables):
    """(run, c_start, c_end, consumers): the union of :func:`consumer_spans` per run, with the
    names of the consumer members whose spans make it up."""
    def build():
        s = consumer_spans(t)
        w = Window.partitionBy("run").orderBy("s_start", "s_end")
        before = w.rowsBetween(Window.unboundedPreceding, -1)
        islands = (s.withColumn("reach", F.max("s_end").over(before))
                   .withColumn("opens", F.when(F.col("reach").isNull() | (F.col("s_start") > F.col("reach")), 1)
                               .otherwise(0))
                   .withColumn("island", F.sum("opens").over(w.rowsBetween(Window.unboundedPreceding, 0))))
        return (islands.groupBy("run", "island")
                .agg(F.min("s_start").alias("c_start"), F.max("s_end").alias("c_end"),
                     F.array_sort(F.collect_set("member")).alias("consumers"))
                .drop("island"))
    return t.shared("consumer_periods", build)


def bridged_generations(t: Tables):
    """(run, generation, b_ts, c_start, c_end, consumers): classic generations of the broker's classic
    bridge, whose number is a member epoch and which no classic leader plans: those whose first
    successful JoinGroup response (``b_ts``) came inside a consumer period, and those whose successful
    JoinGroup responses all name no leader (a classic group always names one; a consumer group answers
    a classic member with no leader and no members, Kafka's ``classicGroupJoinToConsumerGroup``) after
    the group's first consumer period began, which the wire shows even when no consumer member is on it
    any more (c_start, c_end null, consumers
    empty: seen when the broker kept the group a consumer group after the last consumer member left).
    A generation that formed in a classic group keeps being judged as one, even when the bridge later
    answers a member with the same number (seen: the group converted while classic generation 2
    stood, and the bridge gave a classic member epoch 2)."""
    def build():
        jr = t.frames.where((F.col("api") == "JoinGroup") & (F.col("direction") == "response")
                            & (F.coalesce("error_code", F.lit(0)) == 0) & F.col("generation").isNotNull())
        first = jr.groupBy("run", "generation").agg(
            F.min("ts").alias("b_ts"), F.max(F.length(F.coalesce("leader", F.lit("")))).alias("named"))
        p = consumer_periods(t)
        in_period = (first.join(p, "run").where((F.col("b_ts") >= F.col("c_start")) & (F.col("b_ts") <= F.col("c_end")))
                     .select("run", "generation", "b_ts", "c_start", "c_end", "consumers"))
        # Only once the group has been a consumer group: before that, a leaderless answer is no bridge's.
        since = p.groupBy("run").agg(F.min("c_start").alias("first_c_start"))
        leaderless = (first.where(F.col("named") == 0).join(since, "run")
                      .where(F.col("b_ts") > F.col("first_c_start"))
                      .join(in_period.select("run", "generation"), ["run", "generation"], "left_anti")
                      .select("run", "generation", "b_ts", F.lit(None).cast("double").alias("c_start"),
                              F.lit(None).cast("double").alias("c_end"),
                              F.array().cast("array<string>").alias("consumers")))
        return in_period.unionByName(leaderless)
    return t.shared("bridged_generations", build)


def in_consumer_period(t: Tables, df, ts: str = "ts"):
    """``df`` plus ``period``: the consumer period (struct c_start, c_end, consumers) its ``ts`` column
    falls in, null outside every period. ``df`` must have ``run`` and a unique ``line`` per run."""
    p = consumer_periods(t).select("run", "c_start", "c_end", "consumers")
    hit = (df.select("run", "line", ts).join(p, "run")
           .where((F.col(ts) >= F.col("c_start")) & (F.col(ts) <= F.col("c_end")))
           .groupBy("run", "line").agg(F.first(F.struct("c_start", "c_end", "consumers")).alias("period")))
    return df.join(hit, ["run", "line"], "left")
