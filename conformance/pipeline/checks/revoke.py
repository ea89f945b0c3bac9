"""Incremental-revoke invariants R1-R5 (KIP-429).

Scope and allowed findings (each rule named in :mod:`conformance.pipeline.checks.rules`):
- R1 and R3 do not apply to eager generations/runs: eager revokes everything
  by design.
- R1: a claim is valid only if its declared generation (subscription v2+) is
  the highest among the members claiming that partition (KIP-792); a v0/v1
  claim (generation -1) loses to any claim that carries a generation.
- R2: an overlap is an allowed finding (rule R2/fault-window) only when the
  member that kept the partition (the owner whose interval began first: the
  stale holder) is the one a fault made dead-looking, and the broker had
  removed it: the overlap begins and ends inside a fault window
  (:func:`common.fault_windows`: a dead-looking fault of that member, or of
  the broker, from its invocation to its heal plus a session timeout and a
  heartbeat), and the wire shows the broker's removal of the stale holder
  after the fault's invocation and at or before the overlap's start
  (:func:`removals`: a fencing answer to it, or a classic generation formed
  without it; in a KIP-848 group, which tells only the removed member, when it
  returns: a ConsumerGroupHeartbeat answer giving the partition to the other
  owner, or a SyncGroup answer giving it while the group was a consumer group
  (:func:`handovers`), with no answer without error to the stale holder since
  the fault, so it cannot have acknowledged a revoke). The group then legitimately moved the partition, and the
  cut-off member records ``lost`` only once it notices. An overlap whose
  stale holder is the other, healthy owner, one that begins before the
  broker removed the faulted member (a new owner that took the partition
  while the coordinator still counted the old one in), and one that outlives
  the window are violations. A killed member's ownership ends at the kill
  (see derived.incarnations).
- R3: a revoke and re-assign inside a fault window of the member or the
  broker is an allowed finding (rule R3/fault-window): the member's session
  was cut, not rebalanced. Sarama ends its whole session on a coordinator EOF
  and, having no "lost" signal, reports it as a revoke of everything it then
  gets back (broker-restart).
- R3: a partition revoked in one generation and assigned back to the same
  member in a later one is an allowed finding (rule R3/replanned) when the
  leader's inputs differ between the two generations and the revoking
  generation's assignment did not leave the member that partition: the revoke
  was due, and the next leader planned for another group. Inputs differ when
  the group's membership (the member ids of the leader's JoinGroup view) does
  (a member left or joined between the two rounds), or the topics the two
  assignments cover do (a leader assigns with the metadata it has, and a
  topic a member has just subscribed to may not be in it yet; seen with
  kafka-python leading subscription-change). A revoke of a partition the
  member's assignment kept is a violation regardless.
  Where a history does not name the generation (the Java harness cannot read
  it before 2.5), an event's generation is that of the member's last
  successful SyncGroup response on the wire at or before it (the tap
  forwards the response before the client can act on it).
- R3 judges the first half of the catalog's R3 (no revoke and re-assign of
  a retained partition). The second half, "keeps consuming during the
  rebalance", is measured as the metric ``pause_ms``
  (conformance.pipeline.metrics); a retained partition whose records wait
  longer than the convergence bound is P1's violation
  (:mod:`conformance.pipeline.checks.progress`), which counts only records
  actually waiting, so idle partitions raise no alarm.
- R4: a revocation within the revoke bound of the run's end is not judged
  (the run ended before the bound), and neither is one after which every
  member stopped. One made inside a fault window of the member or the broker
  that reaches no new owner in time is an allowed finding (rule
  R4/fault-window: the session was cut, not rebalanced; V1 judges that the
  group converges and owns every partition after the last fault).
- R5: a member rebalances eagerly, and must revoke everything before it
  rejoins, when its previous generation was eager or when it offers any
  eager assignor (a client runs the protocol all its assignors support).
- R5: the final generation is the last one formed by the scenario's end
  (manifest ``end_ts``), as for L2 and L3: in teardown members stop one by
  one, and the last one forms a generation alone with its own protocol.
  Its protocol is not judged in a run cut short (a suite error or Ctrl-C):
  an upgrade stopped halfway rightly ends eager.

Culprits: R1 names the leader that gave a validly claimed partition to
another member. R2 names that leader for an overlap its move made: the
partition was given, in a round before the overlap began, to one of its two
owners while the other validly declared it (an R1 violation); the overlap's
message and evidence name that SyncGroup. An overlap no such move explains
names no culprit (either owner may have held on too long, or a leader
handed it out too soon): the matrix marks only the pair of its two owners. R4 names the one member a SyncGroup response gave the revoked
partition to that never took it; when nobody was given it, the revoker, if it
sent no JoinGroup after the SyncGroup response that took the partition away
(KIP-429: a member that revokes rejoins at once, so the follow-up round can
hand the partition on); otherwise nobody (the leader of a follow-up round that
left the partition unassigned is L2's to judge).
"""

from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from conformance import config
from conformance.pipeline.checks.common import (
    fault_windows,
    fmt_tps,
    formed_by_end,
    split_by_fault_windows,
    timing,
    violation,
    window_text,
)
from conformance.pipeline.checks.consumption import FENCING_CODES, fencing_answers
from conformance.pipeline.checks.leadership import (
    assignment_rows,
    generation_leaders,
    generation_member_ids,
    generationless_claims,
    leaders_by_generation,
    taken_by,
    takers,
)
from conformance.pipeline.consumer_group import in_consumer_period
from conformance.pipeline.derived import Tables, is_cooperative


def _r1_moves(t: Tables):
    """(run, generation, leader, to, claimant, tps, ts, to_gen, sub_gen, round_gen, claimant_id, claim_line,
    sync_line, assignment_hex): R1's violations, one row per leader, round, receiver and valid claimant (built once:
    R2 reads it to name the leader whose move made an overlap)."""
    return t.shared("r1-moves", lambda: _build_r1_moves(t))


def _build_r1_moves(t: Tables):
    coop = t.generations.where("cooperative").select("run", "generation", "leader")
    claims = (t.subscriptions.where((F.col("source") == "leader-view") & F.col("decode_error").isNull())
              .join(coop, ["run", "generation"])
              .join(t.member_ids.select("run", F.col("member_id").alias("subject_member_id"),
                                        F.col("member").alias("claimant")), ["run", "subject_member_id"], "left")
              .select("run", "generation", "leader", F.coalesce("claimant", "subject_member_id").alias("claimant"),
                      "subject_member_id", F.coalesce("sub_generation", F.lit(-1)).alias("sub_gen"),
                      F.col("line").alias("claim_line"), F.explode("owned").alias("tp"))
              .select("*", "tp.topic", "tp.partition").drop("tp").dropDuplicates(
                  ["run", "generation", "subject_member_id", "topic", "partition"]))
    w = Window.partitionBy("run", "generation", "topic", "partition")
    # The highest generation any member declared with owned partitions in the round: a claim below it is
    # one of a member that missed a round (KAFKA-14639: Java's sticky assignor before 3.4.1 drops it).
    claims = claims.withColumn("round_gen", F.max("sub_gen").over(Window.partitionBy("run", "generation")))
    valid = (claims.withColumn("best", F.max("sub_gen").over(w))
             .withColumn("n_best", F.sum(F.when(F.col("sub_gen") == F.col("best"), 1).otherwise(0)).over(w))
             .where((F.col("sub_gen") == F.col("best")) & (F.col("n_best") == 1)))
    given = (t.leader_assignments.where(F.col("decode_error").isNull())
             .select("run", "generation", F.col("subject_member_id").alias("to_id"),
                     F.coalesce("subject", "subject_member_id").alias("to"), "ts", "line", "assignment_hex",
                     F.explode("partitions").alias("tp"))
             .select("*", "tp.topic", "tp.partition").drop("tp"))
    # The receiver's own claim of the partition in that round, if it made one (a stale claim, below the valid one).
    received = claims.select("run", "generation", "topic", "partition", F.col("subject_member_id").alias("to_id"),
                             F.col("sub_gen").alias("to_gen"))
    return (given.join(valid, ["run", "generation", "topic", "partition"])
            .where(F.col("to_id") != F.col("subject_member_id"))
            .join(received, ["run", "generation", "topic", "partition", "to_id"], "left")
            .groupBy("run", "generation", "leader", "to", "claimant")
            .agg(F.collect_list(F.struct("topic", "partition")).alias("tps"), F.min("ts").alias("ts"),
                 # set only when the receiver declared every one of them itself
                 F.when(F.count("to_gen") == F.count("*"), F.max("to_gen")).alias("to_gen"),
                 F.first("sub_gen").alias("sub_gen"), F.max("round_gen").alias("round_gen"),
                 F.min("subject_member_id").alias("claimant_id"),
                 F.min("claim_line").alias("claim_line"), F.min("line").alias("sync_line"),
                 F.min("assignment_hex").alias("assignment_hex")))


def check_r1(t: Tables) -> list[dict]:
    bad = t.collect(_r1_moves(t))
    out = []
    for r in bad:
        parts = [[x["topic"], x["partition"]] for x in r["tps"]]
        out.append(violation("R1", r["run"], f"leader {r['leader']} of cooperative generation {r['generation']} gave "
                             f"{fmt_tps(parts)} to {r['to']} although {r['claimant']} validly declared them owned "
                             f"(declared generation {r['sub_gen']})", members=[r["leader"], r["to"], r["claimant"]],
                             culprit=r["leader"], harmed=[r["claimant"], r["to"]], generation=r["generation"],
                             partitions=parts, ts=r["ts"],
                             evidence={"claimant_member_id": r["claimant_id"], "declared_generation": r["sub_gen"],
                                       "declared_below_round": r["sub_gen"] < r["round_gen"],
                                       "receiver_declared_generation": r["to_gen"],
                                       "join_wire_line": r["claim_line"], "sync_wire_line": r["sync_line"],
                                       "assignment_hex": r["assignment_hex"]}))
    return out


def removals(t: Tables):
    """(run, member, r_ts, how): each time the wire shows that the broker removed ``member`` from the
    group (built once): a fencing answer to it (:func:`consumption.fencing_answers`: UNKNOWN_MEMBER_ID,
    ILLEGAL_GENERATION, ... to its current member id), or a classic generation formed without it (a
    generation with a leader, after one ``member`` had joined, whose successful JoinGroup answers do not
    include it: the coordinator completed the round without it). ``how`` says which, for a message."""
    def build():
        fences = fencing_answers(t).select(
            "run", "member", F.col("f_ts").alias("r_ts"),
            F.concat(F.element_at(F.create_map(*[F.lit(x) for kv in FENCING_CODES.items() for x in kv]), F.col("code")),
                     F.lit(" on "), F.col("api"), F.lit(" (wire.jsonl:"), F.col("f_line").cast("string"),
                     F.lit(")")).alias("how"))
        gens = t.generations.where(F.col("leader_id").isNotNull()).select("run", "generation", "join_ts", "joined")
        first = (t.generations.where(F.col("leader_id").isNotNull())
                 .select("run", "generation", F.explode("joined").alias("member"))
                 .groupBy("run", "member").agg(F.min("generation").alias("first_gen")))
        without = (first.join(gens, "run")
                   .where((F.col("generation") > F.col("first_gen")) & ~F.array_contains("joined", F.col("member")))
                   .select("run", "member", F.col("join_ts").alias("r_ts"),
                           F.concat(F.lit("generation "), F.col("generation").cast("string"),
                                    F.lit(" formed without it")).alias("how")))
        return fences.unionByName(without)
    return t.shared("r2-removals", build)


def _answered(t: Tables, api: str | None = None):
    """(run, member, api, q_ts, q_line, line, ts, error_code): responses paired with their requests
    (same member, API and correlation id; the tap stamps a frame after forwarding it, so a request's
    stamp is when the exchange began, and a member may act on an answer before the answer's stamp)."""
    fr = t.frames if api is None else t.frames.where(F.col("api") == api)
    req = fr.where(F.col("direction") == "request").select(
        "run", "member", "api", "correlation_id", F.col("ts").alias("q_ts"), F.col("line").alias("q_line"))
    return (fr.where(F.col("direction") == "response").select("run", "member", "api", "correlation_id", "line", "ts",
                                                               "error_code")
            .join(req, ["run", "member", "api", "correlation_id"])
            .where(F.col("q_line") < F.col("line")).drop("correlation_id"))


def handovers(t: Tables):
    """(run, got, topic, partition, q_ts, how): each partition the broker's own assignor gave a member
    (KIP-848), with when the exchange that gave it began (``q_ts``, its request's stamp): a
    ConsumerGroupHeartbeat answer without error, or a SyncGroup answer without error while the group
    was a consumer group (the classic bridge: the broker assigns, not a leader). The coordinator gives
    a member only partitions no other member holds: their owner revoked them (its heartbeat or rejoin
    said so) or was removed. Built once."""
    def build():
        cgh = (t.heartbeats.where((F.col("direction") == "response") & (F.coalesce("error_code", F.lit(0)) == 0)
                                  & F.col("assigned").isNotNull() & F.col("request_ts").isNotNull())
               .select("run", "line", "member", F.col("request_ts").alias("q_ts"),
                       F.lit("ConsumerGroupHeartbeat").alias("api"), F.col("assigned").alias("tps")))
        syncs = _answered(t, "SyncGroup").where(F.coalesce("error_code", F.lit(0)) == 0).select("run", "line", "q_ts")
        given = (t.assignments.where((F.col("source") == "received") & (F.coalesce("error_code", F.lit(0)) == 0)
                                     & F.col("partitions").isNotNull())
                 .join(syncs, ["run", "line"])
                 .select("run", "line", "member", "q_ts", F.lit("SyncGroup").alias("api"),
                         F.col("partitions").alias("tps")))
        bridged = in_consumer_period(t, given, "q_ts").where(F.col("period").isNotNull()).drop("period")
        return (cgh.unionByName(bridged)
                .select("run", F.col("member").alias("got"), "q_ts",
                        F.concat(F.lit("the broker gave it to "), F.col("member"), F.lit(" on "), F.col("api"),
                                 F.lit(" (wire.jsonl:"), F.col("line").cast("string"), F.lit(")")).alias("how"),
                        F.explode("tps").alias("tp"))
                .select("run", "got", F.col("tp.topic").alias("topic"), F.col("tp.partition").alias("partition"),
                        "q_ts", "how"))
    return t.shared("r2-handovers", build)


def check_r2(t: Tables) -> list[dict]:
    a = t.ownership.select("run", "topic", "partition", F.col("member").alias("m1"), F.col("start_ts").alias("s1"),
                           F.col("end_ts").alias("e1"), F.col("end_reason").alias("r1"))
    b = t.ownership.select("run", "topic", "partition", F.col("member").alias("m2"), F.col("start_ts").alias("s2"),
                           F.col("end_ts").alias("e2"), F.col("end_reason").alias("r2"))
    ov = (a.join(b, ["run", "topic", "partition"])
          .where((F.col("m1") < F.col("m2")) & (F.col("s1") < F.col("e2")) & (F.col("s2") < F.col("e1")))
          .withColumn("ov_start", F.greatest("s1", "s2")).withColumn("ov_end", F.least("e1", "e2"))
          # The member that kept the partition is the one whose interval began first.
          .withColumn("kept_by", F.when(F.col("s1") <= F.col("s2"), F.col("m1")).otherwise(F.col("m2"))))
    keys = ["run", "topic", "partition", "m1", "s1", "m2", "s2"]
    ov = t.shared("r2-overlaps", lambda: ov)
    # R2/fault-window: a window of the member that kept the partition (or of the broker) holds the whole
    # overlap, and the wire showed the broker removing that member after the fault and before the overlap.
    win = fault_windows(t)
    held = (ov.join(win, "run")
            .where(F.col("target").isin("all", "broker") | (F.col("target") == F.col("kept_by")))
            .where((F.col("ov_start") >= F.col("w_start")) & (F.col("ov_end") <= F.col("w_end")))
            .withColumn("window", F.struct("fault", "target", "w_start", "w_end", "t0")))
    gone = removals(t).withColumnRenamed("member", "kept_by")
    # A consumer group shows a removal only to the removed member (when it comes back), so the broker
    # handing the partition to the other owner, in an exchange begun after the fault and before the
    # overlap, while it had answered the stale holder nothing without error for a request sent since
    # the fault (it could not have acknowledged a revoke), is the evidence. Requests are timed by their
    # stamps: the tap stamps after forwarding, and sits before toxiproxy (a cut member's requests are
    # recorded, never answered).
    by_member = (held.join(gone, ["run", "kept_by"])
                 .where((F.col("r_ts") >= F.col("w_start")) & (F.col("r_ts") <= F.col("ov_start")))
                 .select(*keys, "window", "r_ts", "how"))
    handed = handovers(t)
    heard = (_answered(t).where(F.coalesce("error_code", F.lit(0)) == 0)
             .select("run", F.col("member").alias("kept_by"), F.col("q_ts").alias("h_ts")))
    other = F.when(F.col("kept_by") == F.col("m1"), F.col("m2")).otherwise(F.col("m1"))
    by_handover = (held.withColumn("other", other).join(handed, ["run", "topic", "partition"])
                   .where((F.col("got") == F.col("other")) & (F.col("q_ts") >= F.col("w_start"))
                          & (F.col("q_ts") <= F.col("ov_start"))))
    spoke = (by_handover.join(heard, ["run", "kept_by"])
             .where((F.col("h_ts") > F.col("w_start")) & (F.col("h_ts") < F.col("q_ts")))
             .select(*keys, "q_ts").distinct())
    by_handover = (by_handover.join(spoke, [*keys, "q_ts"], "left_anti")
                   .select(*keys, "window", F.col("q_ts").alias("r_ts"), "how"))
    covered = (by_member.unionByName(by_handover)
               .groupBy(*keys).agg(F.min_by(F.struct(F.col("window"), F.struct("r_ts", "how").alias("removal")),
                                            "r_ts").alias("why")))
    bad = ov.join(covered.select(*keys), keys, "left_anti")
    excused = ov.join(covered, keys)
    # The leader behind an overlap: an R1 move of that partition, in a round before the overlap began,
    # to one of its two owners while the other validly declared it (the first such move, by time).
    moves = (_r1_moves(t).select("run", F.col("leader").alias("mover"), "to", "claimant", F.col("ts").alias("m_ts"),
                                 F.col("sync_line").alias("m_line"), F.explode("tps").alias("tp"))
             .select("*", "tp.topic", "tp.partition").drop("tp"))
    pair = (((F.col("m1") == F.col("to")) & (F.col("m2") == F.col("claimant")))
            | ((F.col("m2") == F.col("to")) & (F.col("m1") == F.col("claimant"))))
    caused = (bad.join(moves, ["run", "topic", "partition"]).where(pair & (F.col("m_ts") <= F.col("ov_start")))
              .groupBy(*keys).agg(F.min_by(F.struct("mover", "m_line"), "m_ts").alias("cause")))
    bad = bad.join(caused, keys, "left")
    case = F.struct("topic", "partition", "ov_start", "ov_end", "r1", "r2", "kept_by")
    bad = (bad.groupBy("run", "m1", "m2", F.col("cause.mover").alias("mover"))
           .agg(F.collect_list(case).alias("cases"), F.min("cause.m_line").alias("m_line")))
    excused = excused.select("run", "m1", "m2", F.col("why.window").alias("window"), F.col("why.removal").alias("removal"),
                             case.alias("case"))
    bad, excused = t.collect_many(bad, excused)
    out = []
    for r in bad:
        cases = sorted(r["cases"], key=lambda c: (c["ov_start"], c["topic"], c["partition"]))
        parts = sorted({(c["topic"], c["partition"]) for c in cases})
        first = cases[0]
        head = (f"{r['m1']} and {r['m2']} both owned {fmt_tps(parts)}; first overlap "
                f"{first['topic']}-{first['partition']} for {first['ov_end'] - first['ov_start']:.0f} ms "
                f"(kept by {first['kept_by']})")
        overlaps = [{"partition": [c["topic"], c["partition"]], "from": c["ov_start"], "to": c["ov_end"],
                     "ended_by": [c["r1"], c["r2"]], "kept_by": c["kept_by"]} for c in cases[:20]]
        if r["mover"] is not None:
            out.append(violation("R2", r["run"], f"{head}: leader {r['mover']} gave it to one while the other "
                                 f"validly declared it (R1; its SyncGroup: wire.jsonl:{r['m_line']})",
                                 members=[r["m1"], r["m2"]], culprit=r["mover"], harmed=[r["m1"], r["m2"]],
                                 partitions=[list(p) for p in parts], ts=first["ov_start"],
                                 evidence={"overlaps": overlaps, "moved_by_wire_line": r["m_line"]}))
            continue
        out.append(violation("R2", r["run"], f"{head}; culprit unknown: either may have held on too long, "
                             "or a leader handed it out too soon",
                             members=[r["m1"], r["m2"]], partitions=[list(p) for p in parts],
                             ts=first["ov_start"], evidence={"overlaps": overlaps}))
    for r in excused:
        c, w, rm = r["case"], r["window"], r["removal"]
        out.append(violation("R2", r["run"], f"{r['m1']} and {r['m2']} both owned {c['topic']}-{c['partition']} for "
                             f"{c['ov_end'] - c['ov_start']:.0f} ms inside the window of {window_text(w)}; "
                             f"{c['kept_by']}, which kept it, was removed by the broker "
                             f"{(c['ov_start'] - rm['r_ts']):.0f} ms before the overlap ({rm['how']})",
                             members=[r["m1"], r["m2"]], partitions=[[c["topic"], c["partition"]]], ts=c["ov_start"],
                             evidence={"from": c["ov_start"], "to": c["ov_end"], "kept_by": c["kept_by"],
                                       "window": w.asDict(), "removed_ts": rm["r_ts"], "removed_by": rm["how"]},
                             allowed_by="R2/fault-window"))
    return out


def _tp_events(t: Tables):
    """One row per (assigned|revoked|lost event, partition) (built once: R3 and R4 share it)."""
    return t.shared("tp_events", lambda: _build_tp_events(t))


def _build_tp_events(t: Tables):
    return (t.events_inc.where(F.col("event").isin("assigned", "revoked", "lost"))
            .select("run", "member", "file", "incarnation", "line", "ts", "event", "protocol", "generation",
                    F.explode("partitions").alias("tp"))
            .select("*", "tp.topic", "tp.partition").drop("tp"))


def _coop_runs(t: Tables):
    return t.cells.where(F.coalesce("expected_protocol", F.lit("cooperative")) == "cooperative").select("run")


def _coop_tp_events(t: Tables):
    """:func:`_tp_events` of cooperative runs (built once: R3 and R4 share it)."""
    return t.shared("coop_tp_events", lambda: _tp_events(t).join(_coop_runs(t), "run"))


def _with_synced_generation(t: Tables, ev):
    """``ev`` (rows with run, member, file, line, ts, generation) with a null ``generation`` filled in
    from the wire, as the module docstring's R3 says; still null when no SyncGroup preceded the event."""
    syncs = (t.frames.where((F.col("api") == "SyncGroup") & (F.col("direction") == "response")
                            & (F.coalesce("error_code", F.lit(0)) == 0) & (F.col("generation") >= 0))
             .select("run", "member", F.col("ts").alias("s_ts"), F.col("generation").alias("s_gen")))
    event = ["run", "member", "file", "line"]
    synced = (ev.where(F.col("generation").isNull()).select(*event, "ts").distinct()
              .join(syncs, ["run", "member"]).where(F.col("s_ts") <= F.col("ts"))
              .groupBy(*event).agg(F.max_by("s_gen", "s_ts").alias("s_gen")))
    return (ev.join(synced, event, "left").withColumn("generation", F.coalesce("generation", "s_gen"))
            .drop("s_gen"))


def check_r3(t: Tables) -> list[dict]:
    ev = _with_synced_generation(t, _coop_tp_events(t))
    w = Window.partitionBy("run", "file", "incarnation", "topic", "partition").orderBy("line")
    ev = (ev.withColumn("next_event", F.lead("event").over(w)).withColumn("next_ts", F.lead("ts").over(w))
          .withColumn("next_generation", F.lead("generation").over(w)))
    again = ev.where((F.col("event") == "revoked") & (F.col("next_event") == "assigned")
                     & (F.coalesce("protocol", F.lit("cooperative")) != "eager"))
    keys = ["run", "member", "line", "topic", "partition"]
    others = t.ownership.select("run", "topic", "partition", F.col("member").alias("other"), F.col("start_ts").alias("o_start"))
    moved = (again.join(others, ["run", "topic", "partition"])
             .where((F.col("other") != F.col("member")) & (F.col("o_start") >= F.col("ts"))
                    & (F.col("o_start") <= F.col("next_ts")))
             .select(*keys).distinct())
    # A partition another member owned in between really moved: no anomaly.
    unmoved, in_window = split_by_fault_windows(t, "r3-revoked-then-assigned", again.join(moved, keys, "left_anti"),
                                                keys, "ts", "ts", ["member"])
    unmoved = t.shared("r3-unexcused", lambda: unmoved)   # read twice below
    replanned = _replanned(t, unmoved)
    case = F.struct("topic", "partition", "ts", "next_ts", "generation", "next_generation")
    bad = (unmoved.join(replanned.select(*keys), keys, "left_anti").groupBy("run", "member")
           .agg(F.collect_list(case).alias("cases")))
    bad, in_window, replanned, bare, leaders = t.collect_many(
        bad, in_window.select("run", "member", "window", case.alias("c")),
        replanned.select("run", "member", "ids_before", "ids_after", "topics_before", "topics_after", case.alias("c")),
        generationless_claims(t).select("run", "generation", "subject", "topic", "partition"),
        generation_leaders(t))
    without_generation = {(r["run"], r["generation"], r["subject"], r["topic"], r["partition"]) for r in bare}
    leader_of = leaders_by_generation(leaders)
    out = []
    for r in bad:
        cases = sorted(r["cases"], key=lambda c: (c["ts"], c["topic"], c["partition"]))
        parts = sorted({(c["topic"], c["partition"]) for c in cases})
        # Who revoked it: the leader of the revoking generation, and whether the member had told it of the
        # partition only without a generation (what franz-go's balancer does not read).
        took = takers(leader_of, r["run"], [c["generation"] for c in cases])
        taker_names = sorted({n for n, _ in took if n and n != r["member"]})
        bare_only = all((r["run"], c["generation"], r["member"], c["topic"], c["partition"]) in without_generation
                        for c in cases)
        leaders = {n for n, _ in took}
        revoker = next(iter(leaders)) if len(leaders) == 1 and None not in leaders else None
        out.append(violation("R3", r["run"], f"{r['member']} had {fmt_tps(parts)} revoked and then assigned back with no "
                             "other owner in between (a retained partition must not be revoked; revoking generation(s) "
                             f"{', '.join(str(c['generation']) for c in cases[:5])} led by "
                             f"{', '.join(sorted({n or 'an unknown leader' for n, _ in took}))}"
                             + ("" if revoker else "; culprit unknown: no single known leader revoked it") + ")",
                             members=[r["member"], *taker_names],
                             # The culprit is the leader of the revoking generation(s) when one known leader
                             # led them all (the member itself, when it led); else it is not known.
                             culprit=revoker, harmed=[r["member"]] if revoker else None,
                             partitions=[list(p) for p in parts], ts=cases[0]["ts"],
                             evidence={"cases": [{"partition": [c["topic"], c["partition"]], "revoked_ts": c["ts"],
                                                  "assigned_ts": c["next_ts"], "revoked_generation": c["generation"],
                                                  "assigned_generation": c["next_generation"]}
                                                 for c in cases[:20]],
                                       "taken_by": taken_by(took),
                                       "declared_without_generation": bare_only}))
    for r in in_window:
        c = r["c"]
        out.append(violation("R3", r["run"], f"{r['member']} had {c['topic']}-{c['partition']} revoked and assigned back "
                             f"inside the window of {window_text(r['window'])}", members=[r["member"]],
                             partitions=[[c["topic"], c["partition"]]], ts=c["ts"],
                             evidence={"revoked_ts": c["ts"], "assigned_ts": c["next_ts"], "window": r["window"].asDict()},
                             allowed_by="R3/fault-window"))
    for r in replanned:
        c = r["c"]
        joined = sorted(set(r["ids_after"] or []) - set(r["ids_before"] or []))
        left = sorted(set(r["ids_before"] or []) - set(r["ids_after"] or []))
        why = (f"members left ({', '.join(left) or 'none'}) and joined ({', '.join(joined) or 'none'})"
               if joined or left else
               f"the assignments covered {', '.join(r['topics_before'] or [])} then {', '.join(r['topics_after'] or [])}")
        out.append(violation("R3", r["run"], f"{r['member']} had {c['topic']}-{c['partition']} revoked in generation "
                             f"{c['generation']} and assigned back in {c['next_generation']}, replanned: {why}",
                             members=[r["member"]], partitions=[[c["topic"], c["partition"]]], ts=c["ts"],
                             generation=c["generation"],
                             evidence={"left": left, "joined": joined, "topics_before": list(r["topics_before"] or []),
                                       "topics_after": list(r["topics_after"] or [])},
                             allowed_by="R3/replanned"))
    return out


def _replanned(t: Tables, again):
    """The rows of ``again`` (a revoke in ``generation``, assigned back in ``next_generation``) that
    rule R3/replanned covers: the leader's inputs (member ids, topics covered) differ between the two
    generations, and the revoking generation's assignment did not leave the member the partition;
    with ``ids_before``, ``ids_after``, ``topics_before`` and ``topics_after`` as evidence."""
    rows = assignment_rows(t).where(F.col("topic").isNotNull())
    kept = rows.select("run", "generation", F.col("subject").alias("member"), "topic", "partition")
    inputs = (generation_member_ids(t)
              .join(rows.groupBy("run", "generation").agg(F.array_sort(F.collect_set("topic")).alias("topics")),
                    ["run", "generation"], "left"))
    after = inputs.select("run", F.col("generation").alias("next_generation"), F.col("ids").alias("ids_after"),
                          F.col("topics").alias("topics_after"))
    return (again.join(inputs.withColumnRenamed("ids", "ids_before").withColumnRenamed("topics", "topics_before"),
                       ["run", "generation"])
            .join(after, ["run", "next_generation"])
            .where((F.col("ids_before") != F.col("ids_after"))
                   | ~F.col("topics_before").eqNullSafe(F.col("topics_after")))
            .join(kept, ["run", "generation", "member", "topic", "partition"], "left_anti")
            .dropDuplicates(["run", "member", "line", "topic", "partition"]))


def check_r4(t: Tables) -> list[dict]:
    tm = timing(t.cells).select("run", "revoke_ms")
    ev = _coop_tp_events(t)
    revokes = (ev.where(F.col("event") == "revoked").join(tm, "run").join(t.run_end, "run")
               .where(F.col("ts") + F.col("revoke_ms") <= F.col("run_end_ts")))
    alive_after = (t.incarnations.select("run", F.col("end_ts").alias("i_end"), F.col("start_ts").alias("i_start")))
    keys = ["run", "member", "line", "topic", "partition"]
    revokes = (revokes.join(alive_after, "run")
               .where((F.col("i_start") <= F.col("ts") + F.col("revoke_ms")) & (F.col("i_end") > F.col("ts") + F.col("revoke_ms")))
               .select(*keys, "ts", "revoke_ms").distinct())
    owners = t.ownership.select("run", "topic", "partition", F.col("member").alias("new_owner"),
                                F.col("start_ts").alias("o_start"), F.col("end_ts").alias("o_end"))
    # Reached: some member (the revoker itself after a real move counts too) owns it within the bound.
    reached = (revokes.join(owners, ["run", "topic", "partition"])
               .where((F.col("o_start") <= F.col("ts") + F.col("revoke_ms")) & (F.col("o_end") > F.col("ts"))
                      & ((F.col("new_owner") != F.col("member")) | (F.col("o_start") >= F.col("ts"))))
               .select(*keys).distinct())
    bad, in_window = split_by_fault_windows(t, "r4-unreached", revokes.join(reached, keys, "left_anti"), keys,
                                            "ts", "ts", ["member"])
    # Who the wire shows was given the partition within the bound (a SyncGroup response assigning it)
    # and never took it: implicated, and the culprit when there is exactly one.
    received = (t.assignments.where((F.col("source") == "received") & (F.coalesce("error_code", F.lit(0)) == 0)
                                    & F.col("decode_error").isNull())
                .select("run", F.col("member").alias("given_to"), F.col("ts").alias("g_ts"),
                        F.explode("partitions").alias("tp"))
                .select("run", "given_to", "g_ts", "tp.topic", "tp.partition"))
    given = (bad.join(received, ["run", "topic", "partition"])
             .where((F.col("g_ts") > F.col("ts")) & (F.col("g_ts") <= F.col("ts") + F.col("revoke_ms"))
                    & (F.col("given_to") != F.col("member")))
             .groupBy("run", "member", "ts").agg(F.collect_set("given_to").alias("given_to")))
    # Did the revoker rejoin? KIP-429: a member that revoked sends a JoinGroup at once, so the
    # follow-up round can hand the partitions on. In wire order, no clocks compared: a JoinGroup
    # request after the revoker's last successful SyncGroup response at or before the revoke (the
    # response that took the partitions away; the tap forwards it before the client acts on it),
    # sent within the bound.
    syncs = (t.frames.where((F.col("api") == "SyncGroup") & (F.col("direction") == "response")
                            & (F.coalesce("error_code", F.lit(0)) == 0))
             .select("run", "member", F.col("line").alias("s_line"), F.col("ts").alias("s_ts")))
    joins = (t.frames.where((F.col("api") == "JoinGroup") & (F.col("direction") == "request"))
             .select("run", "member", F.col("line").alias("j_line"), F.col("ts").alias("j_ts")))
    revoking = bad.select("run", "member", "ts", "revoke_ms").distinct()
    took_away = (revoking.join(syncs, ["run", "member"]).where(F.col("s_ts") <= F.col("ts"))
                 .groupBy("run", "member", "ts").agg(F.max("s_line").alias("s_line")))
    rejoined = (revoking.join(took_away, ["run", "member", "ts"]).join(joins, ["run", "member"])
                .where((F.col("j_line") > F.col("s_line")) & (F.col("j_ts") <= F.col("ts") + F.col("revoke_ms")))
                .select("run", "member", "ts", F.lit(True).alias("rejoined")).distinct())
    bad, in_window = t.collect_many(
        bad.groupBy("run", "member", "ts", "revoke_ms").agg(F.collect_list(F.struct("topic", "partition")).alias("tps"))
        .join(given, ["run", "member", "ts"], "left").join(rejoined, ["run", "member", "ts"], "left"),
        in_window.select("run", "member", "ts", "topic", "partition", "window"))
    out = []
    for r in bad:
        given_to = sorted(r["given_to"] or [])
        stayed_out = not given_to and not r["rejoined"]
        out.append(violation("R4", r["run"], f"{fmt_tps([[x['topic'], x['partition']] for x in r['tps']])} revoked by "
                             f"{r['member']} reached no new owner within {r['revoke_ms']:.0f} ms"
                             + (f" (assigned to {', '.join(given_to)}, which never took them)" if given_to else "")
                             + (f"; {r['member']} sent no JoinGroup after revoking them (a cooperative member "
                                "rejoins at once, so the next round can hand them on)" if stayed_out else ""),
                             members=[r["member"], *given_to],
                             culprit=given_to[0] if len(given_to) == 1 else r["member"] if stayed_out else None,
                             partitions=[[x["topic"], x["partition"]] for x in r["tps"]], ts=r["ts"],
                             evidence={"revoke_bound_ms": r["revoke_ms"], "assigned_to": given_to,
                                       "rejoined": bool(r["rejoined"])}))
    out += [violation("R4", r["run"], f"{r['topic']}-{r['partition']} revoked by {r['member']} reached no new owner "
                      f"within the bound, inside the window of {window_text(r['window'])}", members=[r["member"]],
                      partitions=[[r["topic"], r["partition"]]], ts=r["ts"], evidence={"window": r["window"].asDict()},
                      allowed_by="R4/fault-window") for r in in_window]
    return out


def check_r5(t: Tables) -> list[dict]:
    out = []
    req = (t.subscriptions.where(F.col("source") == "request")
           .groupBy("run", "member", "line", "ts")
           .agg(F.sort_array(F.collect_list(F.struct("protocol_index", "protocol_name"))).alias("protos")))
    resp = t.frames.where((F.col("api") == "JoinGroup") & (F.col("direction") == "response")
                          & (F.coalesce("error_code", F.lit(0)) == 0) & F.col("generation").isNotNull()).select(
        "run", "member", F.col("ts").alias("r_ts"), "generation", "protocol_name")
    # The request that put each member into a generation: its last request before its response.
    w = Window.partitionBy("run", "member", "generation").orderBy(F.col("ts").desc())
    in_gen = (req.join(resp, ["run", "member"]).where(F.col("ts") <= F.col("r_ts"))
              .withColumn("k", F.row_number().over(w)).where(F.col("k") == 1))
    per_gen = (in_gen.groupBy("run", "generation", "protocol_name")
               .agg(F.collect_list(F.struct("member", F.col("protos")[0]["protocol_name"].alias("first"),
                                            F.transform("protos", lambda p: p["protocol_name"]).alias("all"))).alias("ms")))
    # The final generation: the last one formed by the scenario's end, not one the last member left
    # forms alone during teardown (its protocol is that member's, whatever the mix).
    final = (t.generations.join(formed_by_end(t).groupBy("run").agg(F.max("generation").alias("generation")),
                                ["run", "generation"])
             .join(t.cells.where(F.col("complete")).select("run", "expected_protocol"), "run")
             .where(F.col("expected_protocol").isNotNull()))
    # Eager members revoke everything before rejoining.
    # A member rebalances eagerly when its previous generation was eager, or when it offers an eager
    # assignor at all: a client runs the rebalance protocol every assignor of its list supports (Java's
    # ConsumerCoordinator, Sarama), so [cooperative-sticky, range] is eager even in a cooperative-sticky
    # generation (the first bounce of an upgrade). A kind with the feature protocol-of-chosen-assignor
    # (franz-go from 1.13.0) runs the protocol of the assignor the group chose: only its previous
    # generation's protocol counts.
    offers_eager = F.exists("protos", lambda p: ~p["protocol_name"].isin(*config.COOPERATIVE_ASSIGNORS))
    by_choice = t.members.select("run", "member", F.coalesce("protocol_of_chosen", F.lit(False)).alias("by_choice"))
    prev = (req.join(resp, ["run", "member"]).where(F.col("r_ts") < F.col("ts"))
            .withColumn("k", F.row_number().over(Window.partitionBy("run", "member", "line").orderBy(F.col("r_ts").desc())))
            .join(by_choice, ["run", "member"], "left")
            .where((F.col("k") == 1) & (~is_cooperative(F.col("protocol_name"))
                                        | (offers_eager & ~F.coalesce("by_choice", F.lit(False))))))
    held = (prev.join(t.ownership.select("run", "member", "topic", "partition", "start_ts", "end_ts"), ["run", "member"])
            .where((F.col("start_ts") < F.col("ts")) & (F.col("end_ts") > F.col("ts")))
            .groupBy("run", "member", "line", "ts", "generation", "protocol_name")
            .agg(F.collect_list(F.struct("topic", "partition")).alias("tps"),
                 F.first(F.transform("protos", lambda p: p["protocol_name"])).alias("offered")))
    per_gen, final, held = t.collect_many(per_gen, final, held)
    for r in per_gen:
        coop = r["protocol_name"] in config.COOPERATIVE_ASSIGNORS
        all_first_coop = all(m["first"] in config.COOPERATIVE_ASSIGNORS for m in r["ms"])
        all_support = all(any(p in config.COOPERATIVE_ASSIGNORS for p in m["all"]) for m in r["ms"])
        offered = {m["member"]: list(m["all"]) for m in r["ms"]}   # the assignors each offered, in its order
        if coop and not all_support:
            bad = [m["member"] for m in r["ms"] if not any(p in config.COOPERATIVE_ASSIGNORS for p in m["all"])]
            out.append(violation("R5", r["run"], f"generation {r['generation']} is cooperative ({r['protocol_name']}) "
                                 f"although {', '.join(bad)} did not offer a cooperative assignor", members=bad,
                                 generation=r["generation"], evidence={"offered": offered}))
        elif not coop and all_first_coop and r["ms"]:
            out.append(violation("R5", r["run"], f"generation {r['generation']} is eager ({r['protocol_name']}) although "
                                 "every member preferred a cooperative assignor", members=[m["member"] for m in r["ms"]],
                                 generation=r["generation"], evidence={"offered": offered}))
    for r in final:
        got = "cooperative" if r["protocol_name"] in config.COOPERATIVE_ASSIGNORS else "eager"
        if got != r["expected_protocol"]:
            out.append(violation("R5", r["run"], f"final generation {r['generation']} is {got} ({r['protocol_name']}); "
                                 f"the member mix makes it {r['expected_protocol']}", generation=r["generation"],
                                 evidence={"expected": r["expected_protocol"], "protocol_name": r["protocol_name"]}))
    for r in held:
        parts = [[x["topic"], x["partition"]] for x in r["tps"]]
        why = (f"eager generation {r['generation']} ({r['protocol_name']})"
               if r["protocol_name"] not in config.COOPERATIVE_ASSIGNORS else
               f"generation {r['generation']} as an eager member (it offers {', '.join(r['offered'] or [])})")
        out.append(violation("R5", r["run"], f"{r['member']} rejoined from {why} still owning {fmt_tps(parts)}",
                             members=[r["member"]], culprit=r["member"], generation=r["generation"], partitions=parts,
                             ts=r["ts"], evidence={"join_wire_line": r["line"], "offered": list(r["offered"] or [])}))
    return out
