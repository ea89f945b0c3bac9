"""Delivery and liveness invariants D1-D3 and V1.

Allowed anomalies, each with its reason:
- D3: a duplicate (an offset consumed again) is an allowed finding under
  rule D3/rebalance when the re-reader acquired the partition between the
  two reads or another member read the records first, and the re-read does
  not start below a commit the broker accepted before the re-reader acquired
  the partition; under D3/fault when a fault window
  (:func:`common.fault_windows`) of the re-reader, the first reader or the
  broker overlaps the two reads: at-least-once delivery after a kill, a
  pause or a revoke without a commit. Any other duplicate is a client bug (a
  re-fetch without cause, or a new owner ignoring the committed offset) and
  fails D3.
- D2, D3: a member that resumes a partition below the offset committed
  before it took it, because the broker told it (OffsetForLeaderEpoch,
  KIP-320) that the leader epoch that commit named ended below that offset,
  did what KIP-320 asks: it resumed where the log diverged. The commit named
  an epoch its offset is not in (a stale epoch), so the committer is the
  culprit of the re-read records (D3) and of the offset going back (D2), and
  the member that resumed is harmed (:func:`epoch_resets`). Only a reset the
  wire shows moves the blame: a member that resumes below a commit without
  such an answer is the culprit, as before.
- D2: commits with generation -1 (no group membership) are not judged for
  staleness. A commit from a consumer-protocol member, or sent while the
  group was a KIP-848 consumer group
  (:func:`conformance.pipeline.consumer_group.consumer_periods`), carries a
  member epoch: when generation order would call it stale, it is an allowed
  finding (rule D2/member-epoch), one per member and epoch, and K4 judges it
  against the member's own epoch: a consumer-protocol member's from its
  ConsumerGroupHeartbeat responses, a classic member's (behind the broker's
  bridge) from its JoinGroup answers, with KIP-1251's assignment epochs from
  its heartbeat responses or its SyncGroup answers
  (:func:`conformance.pipeline.checks.consumer.check_k4`). "Committed offsets
  never go backwards" holds for every commit, of either protocol.
- V1: the end of observation is the scenario's end (teardown follows it),
  and convergence is measured from the last fault before it; a member killed
  by the nemesis is not a crash; a member still running at the end of an
  interrupted run is not a hang. An ``await`` of the scenario that timed out
  (manifest notes) is a violation carrying the state the runner saw, in a
  run that reached its end. A member that stops on a fatal error after the
  broker refused its join across protocols (a consumer-protocol join meeting
  a classic group: GROUP_ID_NOT_FOUND; a classic JoinGroup meeting a consumer
  group: INCONSISTENT_GROUP_PROTOCOL) and never admitted that incarnation is
  an allowed finding (rule ``V1/migration-refused``); K5 judges whether the
  refusal was due.
- Runs cut short (a suite error or Ctrl-C ended them before their scenario
  did; manifest ``complete`` false): D1 is not judged, since it promises
  delivery by the end of the scenario, which such a run never reached; V1
  judges partitions without an owner only when the cut came a convergence
  bound or more after the last fault (before that the group may still be
  rebalancing).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from conformance.cluster.supervisor import describe_exit
from conformance.pipeline.checks.common import fault_windows, fmt_tps, timing, violation
from conformance.pipeline.consumer_group import (
    classic_join_answers,
    consumer_member_ids,
    in_consumer_period,
    join_answers,
)
from conformance.pipeline.derived import Tables
from conformance.pipeline.ingest import broadcast

_TP = ["run", "topic", "partition"]


def consumed_order(t: Tables):
    """Every consumed range with what was consumed before it in its (run, topic, partition), in order
    of first offset, then time: ``prev_max``, the highest offset of the ranges before it (null for
    the first), ``prev_ts``, when that offset was consumed, and ``prev_member``, by whom. One sort of the consumed ranges,
    built once and shared by D1's gaps and D3's duplicates (persisted in large batches)."""
    return t.shared("consumed_order", lambda: _build_consumed_order(t), heavy=True)


def _build_consumed_order(t: Tables):
    c = t.events.where(F.col("event") == "consumed").select("run", "member", "ts", "topic", "partition",
                                                            "first_offset", "last_offset")
    w = Window.partitionBy(*_TP).orderBy("first_offset", "ts")
    grow = w.rowsBetween(Window.unboundedPreceding, 0)   # incremental; lag() then gives "before this row"
    return (c.withColumn("_run_max", F.max("last_offset").over(grow))
            .withColumn("_run_ts", F.max_by("ts", "last_offset").over(grow))
            .withColumn("_run_member", F.max_by("member", "last_offset").over(grow))
            .withColumn("prev_max", F.lag("_run_max").over(w))
            .withColumn("prev_ts", F.lag("_run_ts").over(w))
            .withColumn("prev_member", F.lag("_run_member").over(w))
            .drop("_run_max", "_run_ts", "_run_member"))


def uncovered(ordered, within):
    """The offsets of each (run, topic, partition) that no range of ``ordered`` (ranges with
    ``prev_max``, see :func:`consumed_order`) covers: rows (run, topic, partition, g_first, g_last),
    a null g_first or g_last standing for no bound. A partition that has rows in ``within`` but none
    in ``ordered`` is uncovered from end to end.

    A gap opens before a range that starts past the highest offset covered so far (ranges with equal
    first offsets may come in any order: only the first of them can open a gap). Gaps are few where
    ranges are many (consumption is mostly contiguous), so what is judged against them (every
    produced range) needs no sort or shuffle of its own.
    """
    inner = (ordered.where(F.col("first_offset") > F.col("prev_max") + 1)
             .select(*_TP, (F.col("prev_max") + 1).alias("g_first"), (F.col("first_offset") - 1).alias("g_last")))
    ends = ordered.groupBy(*_TP).agg(F.min("first_offset").alias("lo"), F.max("last_offset").alias("hi"))
    none = F.lit(None).cast("long")
    head = ends.select(*_TP, none.alias("g_first"), (F.col("lo") - 1).alias("g_last"))
    tail = ends.select(*_TP, (F.col("hi") + 1).alias("g_first"), none.alias("g_last"))
    never = (within.select(*_TP).distinct().join(ends, _TP, "left_anti")
             .select(*_TP, none.alias("g_first"), none.alias("g_last")))
    return inner.unionByName(head).unionByName(tail).unionByName(never)


def check_d1(t: Tables) -> list[dict]:
    finished = t.cells.where(F.col("complete")).select("run")
    produced = (t.events.where(F.col("event") == "produced").join(finished, "run")
                .select(*_TP, "first_offset", "last_offset", "ts"))
    gaps = broadcast(uncovered(consumed_order(t), produced))
    # A produced range is consumed at least once exactly when it meets no gap.
    meets = ((F.col("g_first").isNull() | (F.col("last_offset") >= F.col("g_first")))
             & (F.col("g_last").isNull() | (F.col("first_offset") <= F.col("g_last"))))
    missing = (produced.join(gaps, _TP).where(meets)
               .select(*_TP, "first_offset", "last_offset", "ts",
                       F.greatest("first_offset", F.coalesce("g_first", "first_offset")).alias("m_first"),
                       F.least("last_offset", F.coalesce("g_last", "last_offset")).alias("m_last")))
    # Implicated: whoever owned the partition once the first missing record was acknowledged.
    first_missing = missing.groupBy(*_TP).agg(F.min("ts").alias("since"))
    # The culprit: the member that owned the partition when it was acknowledged (the first owner since),
    # whose consumer had to deliver it, or commit no offset past it.
    owners = (first_missing.join(t.ownership.select(*_TP, "member", F.col("start_ts").alias("o_start"),
                                                    F.col("end_ts").alias("o_end")), _TP)
              .where(F.col("o_end") >= F.col("since")).groupBy(*_TP)
              .agg(F.collect_set("member").alias("owners"), F.min_by("member", "o_start").alias("first_owner")))
    rows = t.collect(missing.groupBy(*_TP)
                     .agg(F.sort_array(F.collect_list(F.struct("first_offset", "last_offset", "ts", "m_first", "m_last")))
                          .alias("ranges"))
                     .join(owners, _TP, "left"))
    out = []
    for r in rows:
        missing_ranges = [[x["m_first"], x["m_last"]] for x in r["ranges"]]
        n = sum(b - a + 1 for a, b in missing_ranges)
        shown = ", ".join(f"{a}-{b}" for a, b in missing_ranges[:10]) + (" ..." if len(missing_ranges) > 10 else "")
        owners = sorted(r["owners"] or [])
        culprit = r["first_owner"]
        out.append(violation("D1", r["run"], f"{n} acknowledged record(s) of {r['topic']}-{r['partition']} never "
                             f"consumed: offsets {shown}" + (f" (owned since by {', '.join(owners)}; culprit "
                                                             f"{culprit}, the owner when they were acknowledged)"
                                                             if owners else "; culprit unknown: nobody owned it since"),
                             members=owners, culprit=culprit, partitions=[[r["topic"], r["partition"]]],
                             ts=r["ranges"][0]["ts"],
                             evidence={"missing": missing_ranges[:100], "records": n,
                                       "owner_changed": len(owners) > 1}))
    return out


def epoch_resets(t: Tables):
    """(run, member, topic, partition, r_ts, r_line, stale_epoch, end_offset, committed, committed_by, c_line):
    each time ``member`` was told (OffsetForLeaderEpoch answer at ``r_ts``, wire line ``r_line``) that leader
    epoch ``stale_epoch`` of a partition ended at ``end_offset``, below the offset ``committed`` of the last
    commit the broker accepted before that answer, which named that epoch: ``committed_by`` committed an
    offset its epoch does not contain, and a KIP-320 consumer resumes at ``end_offset`` (built once: D2 and
    D3 read it)."""
    return t.shared("epoch_resets", lambda: _build_epoch_resets(t))


def _build_epoch_resets(t: Tables):
    ends = (t.epoch_ends.where((F.col("error_code") == 0) & (F.col("leader_epoch") >= 0) & (F.col("end_offset") >= 0))
            .select("run", "member", "topic", "partition", F.col("ts").alias("r_ts"), F.col("line").alias("r_line"),
                    F.col("leader_epoch").alias("stale_epoch"), "end_offset"))
    commits = t.commits.where(F.col("error_code") == 0).select(
        "run", "topic", "partition", F.coalesce("response_ts", "ts").alias("c_ts"), F.col("offset").alias("c_offset"),
        F.col("leader_epoch").alias("c_epoch"), F.col("member").alias("c_member"), F.col("line").alias("c_line"))
    keys = ["run", "member", "topic", "partition", "r_ts", "r_line", "stale_epoch", "end_offset"]
    last = (ends.join(commits, ["run", "topic", "partition"]).where(F.col("c_ts") < F.col("r_ts"))
            .groupBy(*keys).agg(F.max_by(F.struct("c_offset", "c_epoch", "c_member", "c_line"), "c_ts").alias("c")))
    return (last.where((F.col("c.c_epoch") == F.col("stale_epoch")) & (F.col("c.c_offset") > F.col("end_offset")))
            .select(*keys, F.col("c.c_offset").alias("committed"), F.col("c.c_member").alias("committed_by"),
                    F.col("c.c_line").alias("c_line")))


def _reset_of(rows, member: str, topic: str, partition: int, ts: float, offset: int) -> dict | None:
    """The latest of ``rows`` (:func:`epoch_resets`, collected) that explains ``member`` reaching ``offset`` of
    the partition at ``ts``: told before ``ts`` that the epoch ended at or below ``offset``, which is below
    what was committed."""
    found = [r for r in rows if r["run_member"] == member and r["topic"] == topic and r["partition"] == partition
             and r["r_ts"] <= ts and r["end_offset"] <= offset < r["committed"]]
    return max(found, key=lambda r: r["r_ts"]) if found else None


def _reset_evidence(r: dict | None) -> dict:
    """D2's and D3's evidence of the epoch reset ``r`` (:func:`_reset_of`; None: none explains the finding)."""
    evidence = {"stale_leader_epoch": r is not None, "stale_epoch": None if r is None else r["stale_epoch"],
                "stale_epoch_committed_by": None if r is None else r["committed_by"],
                "epoch_end_wire_line": None if r is None else r["r_line"]}
    return evidence


def _reset_text(r: dict) -> str:
    return (f"; it resumed there because {r['committed_by']} committed offset {r['committed']} (wire.jsonl:{r['c_line']}) "
            f"with leader epoch {r['stale_epoch']}, which the broker told {r['run_member']} ended at offset "
            f"{r['end_offset']} (wire.jsonl:{r['r_line']}; KIP-320): a stale epoch, so {r['committed_by']} is the culprit")


def _collected_resets(t: Tables, *frames):
    """``frames`` collected together with :func:`epoch_resets` (its member as ``run_member``), per run."""
    *got, resets = t.collect_many(*frames, epoch_resets(t).withColumnRenamed("member", "run_member"))
    by_run: dict[str, list] = {}
    for r in resets:
        by_run.setdefault(r["run"], []).append(r)
    return (*got, by_run)


def check_d2(t: Tables) -> list[dict]:
    ok = t.commits.where(F.col("error_code") == 0)
    w = Window.partitionBy("run", "topic", "partition").orderBy(F.coalesce("response_ts", "ts"), "line")
    back = (ok.withColumn("prev_offset", F.lag("offset").over(w)).withColumn("prev_member", F.lag("member").over(w))
            .withColumn("prev_ts", F.lag("ts").over(w))
            .where(F.col("offset") < F.col("prev_offset")))
    stale = (ok.where(F.col("generation") >= 0).join(broadcast(_formed(t)), "run")
             .withColumn("current", _formed_before(F.col("ts"))).where(F.col("generation") < F.col("current"))
             .groupBy("run", "member", "member_id", "line", "ts", "generation", "current")
             .agg(F.collect_list(F.struct("topic", "partition")).alias("tps")))
    consumers = consumer_member_ids(t).select("run", "member_id", F.lit(True).alias("consumer"))
    stale = in_consumer_period(t, stale.join(consumers, ["run", "member_id"], "left"))
    epochs = (stale.where(F.col("consumer").isNotNull() | F.col("period").isNotNull())
              .groupBy("run", "member", "generation")
              .agg(F.count("*").alias("n"), F.min("ts").alias("ts"), F.max("current").alias("current"),
                   F.min("line").alias("line"), F.max(F.col("consumer").isNotNull()).alias("consumer"),
                   F.first("period", ignorenulls=True).alias("period"),
                   F.array_distinct(F.flatten(F.collect_list("tps"))).alias("tps")))
    stale = stale.where(F.col("consumer").isNull() & F.col("period").isNull())
    back, stale, epochs, resets = _collected_resets(t, back, stale, epochs)
    out = []
    for r in back:
        # The culprit is the member whose commit took the offset back; it harmed the member whose progress
        # it undid (itself, when its own commits went out of order). When the broker had told it that the
        # epoch of the commit it resumed from ended below it (KIP-320), the committer of that stale epoch is.
        reset = _reset_of(resets.get(r["run"], []), r["member"], r["topic"], r["partition"], r["ts"], r["offset"])
        culprit, harmed = (r["member"], [r["prev_member"]]) if reset is None else (reset["committed_by"], [r["member"]])
        out.append(violation("D2", r["run"], f"committed offset of {r['topic']}-{r['partition']} went back from "
                             f"{r['prev_offset']} ({r['prev_member']}) to {r['offset']} ({r['member']})"
                             + ("" if reset is None else _reset_text(reset)),
                             members=sorted({r["member"], r["prev_member"], culprit}), culprit=culprit, harmed=harmed,
                             generation=r["generation"], partitions=[[r["topic"], r["partition"]]], ts=r["ts"],
                             evidence={"previous_ts": r["prev_ts"], "previous": r["prev_offset"], "now": r["offset"],
                                       "same_member": r["member"] == r["prev_member"], **_reset_evidence(reset)}))
    for r in stale:
        parts = [[x["topic"], x["partition"]] for x in r["tps"]]
        out.append(violation("D2", r["run"], f"the broker accepted {r['member']}'s commit of {fmt_tps(parts)} from "
                             f"generation {r['generation']} after generation {r['current']} had formed",
                             members=[r["member"]], generation=r["generation"], partitions=parts, ts=r["ts"],
                             evidence={"wire_line": r["line"], "current_generation": r["current"]}))
    for r in epochs:
        parts = [[x["topic"], x["partition"]] for x in r["tps"]]
        why, judge = (("a consumer-protocol member", "K4 judges it against the epochs of its heartbeat responses")
                      if r["consumer"] else
                      (f"sent while {', '.join(r['period']['consumers'])} made the group a consumer group",
                       "K4 judges it against the generation of its last JoinGroup answer through the broker's bridge"))
        out.append(violation("D2", r["run"], f"{r['n']} accepted commit(s) of {r['member']} from epoch {r['generation']} "
                             f"after generation {r['current']} had formed: {why}, so {r['generation']} is the "
                             f"member's own epoch ({judge})", members=[r["member"]], generation=r["generation"],
                             partitions=parts, ts=r["ts"],
                             evidence={"first_wire_line": r["line"], "commits": r["n"],
                                       "last_classic_generation": r["current"], "consumer_member": r["consumer"]},
                             allowed_by="D2/member-epoch"))
    return out


def _formed(t: Tables):
    """Per run, every generation its first successful JoinGroup response formed (``t.generations``):
    ``formed``, (ts, generation) pairs. A handful per run, so each commit can look up what had formed
    before it (:func:`_formed_before`) without a join that repeats the commit once per generation."""
    return t.generations.groupBy("run").agg(F.collect_list(F.struct(F.col("join_ts").alias("ts"), "generation"))
                                            .alias("formed"))


def _formed_before(ts):
    """The highest generation of ``formed`` (see :func:`_formed`) whose response came strictly before ``ts``; null if none."""
    return F.array_max(F.transform(F.filter("formed", lambda j: j["ts"] < ts), lambda j: j["generation"]))


def duplicates(t: Tables):
    """Per re-consumed range (``first_offset``, ``dups`` records): who consumed it again (``member``), when
    (``ts``: of two reads of the same records, the later in time, whichever began at the lower offset),
    who first consumed it (``prev_member``, ``prev_ts``), and what explains it (built once: D3 and the
    metrics share it):

    - ``acquired_ts``: when the re-reader's ownership of the partition began (null: it did not own it);
    - ``committed_before``: the offset of the last commit the broker accepted before that (the
      latest, not the highest: an out-of-order commit may have moved it back, D2);
    - ``by_rebalance``: rule D3/rebalance applies: the re-reader owned the partition at the re-read
      (its history assigned it: ``acquired_ts``), it acquired it between the two reads or another
      member read the records first, and the re-read starts at or above ``committed_before`` (a
      new owner resumes from the last commit, never below it);
    - ``faults``: the dead-looking faults (:func:`common.fault_windows`) of the re-reader, the first
      reader or the broker whose window overlaps the two reads, else null;
    - ``committed_before_fault``: the offset of the last commit the broker accepted before the first
      of those windows opened;
    - ``by_fault``: rule D3/fault applies: ``faults`` and the re-read starts at or above
      ``committed_before_fault`` (a fault may make a member re-read what it had not committed, never
      what the group had: a member that resumes below an accepted commit after a broker restart is
      the bug D3 exists for).
    """
    return t.shared("duplicates", lambda: _build_duplicates(t))


def _build_duplicates(t: Tables):
    # consumed_order pairs each range with the ranges before it in offset order; of such a pair, the
    # read that came later in time is the re-read (seen: a Java member killed and started again re-read
    # 357-656 after its earlier instance had read 358 alone; offset order puts the later, wider read
    # first, and would have blamed the earlier one for reading again).
    later = F.col("prev_ts") > F.col("ts")
    dup = (consumed_order(t).where(F.col("prev_max") >= F.col("first_offset"))
           .select("run", "topic", "partition", "first_offset",
                   (F.least("last_offset", "prev_max") - F.col("first_offset") + 1).alias("dups"),
                   F.when(later, F.col("prev_member")).otherwise(F.col("member")).alias("member"),
                   F.when(later, F.col("prev_ts")).otherwise(F.col("ts")).alias("ts"),
                   F.when(later, F.col("member")).otherwise(F.col("prev_member")).alias("prev_member"),
                   F.when(later, F.col("ts")).otherwise(F.col("prev_ts")).alias("prev_ts")))
    keys = ["run", "member", "ts", "topic", "partition", "first_offset"]
    gens = t.generations.select("run", "generation", "join_ts")
    last_gen = (dup.join(gens, "run", "left").where(F.col("join_ts").isNull() | (F.col("join_ts") <= F.col("ts")))
                .groupBy(*keys).agg(F.max("generation").alias("after_generation")))
    own = t.ownership.select("run", "member", "topic", "partition", F.col("start_ts").alias("o_start"),
                             F.col("end_ts").alias("o_end"))
    acquired = (dup.join(own, ["run", "member", "topic", "partition"])
                .where((F.col("o_start") <= F.col("ts")) & (F.col("o_end") >= F.col("ts")))
                .groupBy(*keys).agg(F.max("o_start").alias("acquired_ts")))
    commits = t.commits.where(F.col("error_code") == 0).select(
        "run", "topic", "partition", F.coalesce("response_ts", "ts").alias("c_ts"), F.col("offset").alias("c_offset"))
    committed = (dup.select(*keys).join(acquired, keys).join(commits, ["run", "topic", "partition"])
                 .where(F.col("c_ts") < F.col("acquired_ts"))
                 .groupBy(*keys).agg(F.max_by("c_offset", "c_ts").alias("committed_before")))
    win = fault_windows(t).select("run", "fault", "target", "w_start", "w_end")
    involved = (F.col("target").isin("broker", "all") | (F.col("target") == F.col("member"))
                | (F.col("target") == F.col("prev_member")))
    cause_fault = (dup.join(win, "run")
                   .where(involved & (F.col("w_start") <= F.greatest("prev_ts", "ts"))
                          & (F.col("w_end") >= F.least("prev_ts", "ts")))
                   .groupBy(*keys).agg(F.collect_set("fault").alias("faults"), F.min("w_start").alias("fault_start")))
    fault_committed = (cause_fault.join(commits, ["run", "topic", "partition"])
                       .where(F.col("c_ts") < F.col("fault_start"))
                       .groupBy(*keys).agg(F.max_by("c_offset", "c_ts").alias("committed_before_fault")))
    handed_over = (F.col("prev_member") != F.col("member")) | F.coalesce(F.col("acquired_ts") > F.col("prev_ts"), F.lit(False))
    above_commit = F.col("committed_before").isNull() | (F.col("first_offset") >= F.col("committed_before"))
    above_fault_commit = (F.col("committed_before_fault").isNull()
                          | (F.col("first_offset") >= F.col("committed_before_fault")))
    return (dup.join(last_gen, keys, "left").join(acquired, keys, "left").join(committed, keys, "left")
            .join(cause_fault, keys, "left").join(fault_committed, keys, "left")
            .withColumn("by_rebalance", F.col("acquired_ts").isNotNull() & handed_over & above_commit)
            .withColumn("by_fault", F.col("faults").isNotNull() & above_fault_commit))


def check_d3(t: Tables) -> list[dict]:
    d = duplicates(t)
    bad = d.where(~F.col("by_rebalance") & ~F.col("by_fault"))
    rule = F.when(F.col("by_fault"), F.lit("D3/fault")).otherwise(F.lit("D3/rebalance"))
    allowed = (d.where(F.col("by_rebalance") | F.col("by_fault"))
               .groupBy("run", "member", "prev_member", "topic", "partition", rule.alias("rule"))
               .agg(F.count("*").alias("ranges"), F.sum("dups").alias("dups"), F.min("ts").alias("ts"),
                    F.min("first_offset").alias("from_offset"), F.array_sort(F.flatten(F.collect_set(
                        F.coalesce("faults", F.array())))).alias("faults")))
    bad, allowed, resets = _collected_resets(t, bad, allowed)
    out = []
    for r in bad:
        reset = (None if r["committed_before"] is None or r["first_offset"] >= r["committed_before"] else
                 _reset_of(resets.get(r["run"], []), r["member"], r["topic"], r["partition"], r["ts"], r["first_offset"]))
        below = r["committed_before"] is not None and r["first_offset"] < r["committed_before"]
        below_fault = r["committed_before_fault"] is not None and r["first_offset"] < r["committed_before_fault"]
        why = (f"below offset {r['committed_before']}, committed before it acquired the partition" if below else
               f"below offset {r['committed_before_fault']}, committed before {', '.join(r['faults'])} began"
               if below_fault else
               f"without owning it (first read by {r['prev_member']})" if r["acquired_ts"] is None else
               "with no rebalance or fault since the first consumption"
               + ("" if r["prev_member"] == r["member"] else f" (first read by {r['prev_member']})"))
        culprit = r["member"] if reset is None else reset["committed_by"]
        out.append(violation("D3", r["run"], f"{r['member']} consumed {r['dups']} record(s) of {r['topic']}-{r['partition']} "
                             f"from offset {r['first_offset']} again {why}" + ("" if reset is None else _reset_text(reset)),
                             members=sorted({r["member"], culprit}), culprit=culprit,
                             harmed=[] if reset is None else [r["member"]],
                             partitions=[[r["topic"], r["partition"]]], ts=r["ts"], generation=r["after_generation"],
                             evidence={"first_consumed_ts": r["prev_ts"], "first_consumed_by": r["prev_member"],
                                       "duplicates": r["dups"], "acquired_ts": r["acquired_ts"],
                                       "committed_before": r["committed_before"],
                                       "committed_before_fault": r["committed_before_fault"],
                                       "faults": list(r["faults"] or []), **_reset_evidence(reset)}))
    for r in allowed:
        how = (f"during {', '.join(r['faults'])}" if r["rule"] == "D3/fault" else
               f"after taking it over from {r['prev_member']}" if r["prev_member"] != r["member"] else
               "after acquiring it again")
        out.append(violation("D3", r["run"], f"{r['member']} consumed {r['dups']} record(s) of {r['topic']}-{r['partition']} "
                             f"again ({r['ranges']} range(s) from offset {r['from_offset']}) {how}",
                             members=[r["member"], r["prev_member"]], partitions=[[r["topic"], r["partition"]]],
                             ts=r["ts"], evidence={"duplicates": r["dups"], "ranges": r["ranges"], "faults": list(r["faults"])},
                             allowed_by=r["rule"]))
    return out


def observation(t: Tables):
    """Per run, V1's window: its timing bounds (:func:`common.timing`), ``run_end_ts``, ``since``
    (the last fault before the scenario's end, else the first event) and ``eval_ts``, the end of
    observation: the scenario's end (manifest ``end_ts``: every member still runs then, teardown
    follows), else, for a run whose manifest lacks it, the first ``stopped`` after ``since``.

    The last fault is read from the nemesis log (every line but ``start`` at or before the
    scenario's end), so teardown's stops, logged after the end, never count: a run directory
    whose manifest wrote its ``last_fault_ts`` after teardown is judged the same."""
    seen = t.events.groupBy("run").agg(F.min("ts").alias("first_ts"),
                                       F.collect_list(F.when(F.col("event") == "stopped", F.col("ts"))).alias("_stops"))
    faults = (t.nemesis.where(F.col("fault") != "start").join(t.run_end, "run")
              .where(F.col("ts") <= F.col("run_end_ts")).groupBy("run").agg(F.max("ts").alias("logged_fault_ts")))
    written = F.when(F.col("last_fault_ts") <= F.col("run_end_ts"), F.col("last_fault_ts"))
    return (timing(t.cells).join(t.run_end, "run").join(seen, "run", "left").join(faults, "run", "left")
            .withColumn("since", F.coalesce("logged_fault_ts", written, "first_ts"))
            .withColumn("first_stop", F.array_min(F.filter("_stops", lambda ts: ts > F.col("since")))).drop("_stops")
            .withColumn("eval_ts", F.coalesce("end_ts", F.least(F.coalesce("first_stop", "run_end_ts"), "run_end_ts"))))


def check_v1(t: Tables) -> list[dict]:
    """V1's story: over each run's window of observation (:func:`observation`), the partitions without an
    owner at its end, else how long the group took to converge after the last fault; every incarnation
    that crashed, hung or reported a fatal error (allowed under V1/migration-refused when the broker
    refused its join across protocols and never admitted it); and every ``await`` that timed out."""
    base = observation(t)
    per_run, crashed, timed_out = t.collect_many(_ownership_at_end(t, base), _crashes(t), _timed_out_awaits(t))
    return _await_findings(timed_out) + _ownership_findings(per_run) + _crash_findings(crashed)


def _ownership_at_end(t: Tables, base: DataFrame) -> DataFrame:
    """Per run, :func:`observation`'s columns with ``unowned``, the partitions no member owns at the end of
    observation (topic, partition, given_to: the first member, by name, whose last successful SyncGroup
    response by then assigned it; null if none), and ``converged_ts``, when the last owner at the end of
    observation took its partition."""
    held = (t.partitions.join(base.select("run", "eval_ts", "since"), "run")
            .join(t.ownership.select("run", "topic", "partition", "member", "start_ts", "end_ts"),
                  ["run", "topic", "partition"], "left")
            .where(F.col("member").isNull() | ((F.col("start_ts") <= F.col("eval_ts")) & (F.col("end_ts") >= F.col("eval_ts"))))
            .groupBy("run", "topic", "partition").agg(F.max("start_ts").alias("owned_since"), F.count("member").alias("owners")))
    every = t.partitions.join(held, ["run", "topic", "partition"], "left")
    # Who holds each partition in its last assignment on the wire by the end of observation (each member's
    # last successful SyncGroup response): a member assigned a partition it does not own at the end.
    received = (t.assignments.where((F.col("source") == "received") & (F.coalesce("error_code", F.lit(0)) == 0)
                                    & F.col("decode_error").isNull())
                .join(base.select("run", "eval_ts"), "run").where(F.col("ts") <= F.col("eval_ts"))
                .groupBy("run", "member").agg(F.max_by("partitions", "ts").alias("last")))
    last_given = (received.select("run", "member", F.explode("last").alias("tp")).select("run", "member", "tp.*")
                  .groupBy("run", "topic", "partition").agg(F.min("member").alias("given_to")))
    return (every.join(last_given, ["run", "topic", "partition"], "left").groupBy("run")
            .agg(F.collect_list(F.when(F.coalesce("owners", F.lit(0)) == 0, F.struct("topic", "partition", "given_to")))
                 .alias("unowned"),
                 F.max("owned_since").alias("converged_ts"))
            .join(base, "run"))


def _crashes(t: Tables) -> DataFrame:
    """Crashes and hangs: each incarnation (``t.incarnations``' columns, with the run's ``complete``) that
    ended without ``stopped`` and without a nemesis kill, or reported a fatal error, with ``last_error``
    (its history's last error event), ``exit_code`` (its process's, when the runner saw it exit on its
    own) and ``refusal``/``was_admitted`` (:func:`_join_refusals`)."""
    last_error = (t.events_inc.where(F.col("event") == "error")
                  .withColumn("k", F.row_number().over(Window.partitionBy("run", "file", "incarnation").orderBy(F.col("line").desc())))
                  .where(F.col("k") == 1).select("run", "file", "incarnation", F.col("error").alias("last_error")))
    crashed = (t.incarnations.join(t.members.select("run", "member"), ["run", "member"])
               .join(t.cells.select("run", "complete"), "run").join(last_error, ["run", "file", "incarnation"], "left")
               .where(F.col("end_kind").isin("restarted", "crashed") & F.col("next_start_ts").isNotNull()
                      | (F.col("end_kind").isin("run-end", "crashed") & F.col("complete"))
                      | (F.coalesce("had_fatal", F.lit(0)) == 1)))
    # How the process ended, when the runner saw it exit on its own: its first exit note after the
    # incarnation's last event (the runner notes an exit when it next acts on the member).
    exits = (t.cells.select("run", F.explode("exits").alias("x"))
             .select("run", F.col("x.member").alias("member"), F.col("x.ts").alias("x_ts"), F.col("x.code").alias("code")))
    crashed = (crashed.alias("c").join(exits.alias("x"), (F.col("c.run") == F.col("x.run"))
                                       & (F.col("c.member") == F.col("x.member"))
                                       & (F.col("x.x_ts") >= F.col("c.last_ts")), "left")
               .groupBy(*[F.col(f"c.{c}") for c in crashed.columns]).agg(F.min_by("x.code", "x.x_ts").alias("exit_code")))
    return crashed.join(_join_refusals(t, crashed), ["run", "file", "incarnation"], "left")


def _join_refusals(t: Tables, crashed: DataFrame) -> DataFrame:
    """(run, file, incarnation, refusal, was_admitted) of each incarnation of ``crashed``: ``refusal``, the
    first answer to its join refused across protocols (a consumer-protocol join meeting a classic group, or a
    classic JoinGroup meeting a consumer group: a_line, error_message, joined, error_name), and whether any
    answer admitted it (rule V1/migration-refused)."""
    answers = (join_answers(t).select("run", "member", F.col("ts").alias("a_ts"), F.col("line").alias("a_line"),
                                      "admitted", "refused", "error_message",
                                      F.lit("consumer-protocol join").alias("joined"),
                                      F.lit("GROUP_ID_NOT_FOUND").alias("error_name"))
               .unionByName(classic_join_answers(t).select(
                   "run", "member", F.col("ts").alias("a_ts"), F.col("line").alias("a_line"), "admitted", "refused",
                   F.lit(None).cast("string").alias("error_message"), F.lit("classic JoinGroup").alias("joined"),
                   F.lit("INCONSISTENT_GROUP_PROTOCOL").alias("error_name"))))
    # An answer belongs to the incarnation from its start to the next one's: the tap stamps a frame after the
    # member may have read it (seen: the reference's fatal error and stop 1 ms before the tap's response).
    return (crashed.select("run", "member", "file", "incarnation", "start_ts", "next_start_ts")
            .join(answers, ["run", "member"])
            .where((F.col("a_ts") >= F.col("start_ts"))
                   & (F.col("next_start_ts").isNull() | (F.col("a_ts") < F.col("next_start_ts"))))
            .groupBy("run", "file", "incarnation")
            .agg(F.min_by(F.when(F.col("refused"), F.struct("a_line", "error_message", "joined", "error_name")),
                          F.when(F.col("refused"), F.col("a_ts"))).alias("refusal"),
                 F.max(F.col("admitted").cast("int")).alias("was_admitted")))


def _timed_out_awaits(t: Tables) -> DataFrame:
    """The awaits of complete runs that timed out (the manifest's ``await_timeouts``: run, ts, await,
    timeout_ms, phase, state) with ``named``, the members the runner's observed state names (e.g.
    "owned twice: ... [m0, m1]")."""
    timed_out = (t.cells.where(F.col("complete")).select("run", F.explode("await_timeouts").alias("a"))
                 .select("run", "a.*"))
    named = (timed_out.join(t.members.select("run", "member"), "run")
             .where(F.instr(F.col("state"), F.col("member")) > 0)
             .groupBy("run", "ts", "await").agg(F.collect_set("member").alias("named")))
    return timed_out.join(named, ["run", "ts", "await"], "left")


def _await_findings(timed_out: list) -> list[dict]:
    """V1's finding of each ``await`` that timed out, with the state the runner saw."""
    return [violation("V1", r["run"], f"await {r['await']} timed out after {r['timeout_ms'] / 1000:.0f} s"
                      + (f" in phase {r['phase']}" if r["phase"] else "") + f": {r['state'] or 'no state seen'}",
                      members=list(r["named"] or []), ts=r["ts"],
                      evidence={"await": r["await"], "timeout_ms": r["timeout_ms"],
                                "phase": r["phase"], "state": r["state"]})
            for r in timed_out]


def _ownership_findings(per_run: list) -> list[dict]:
    """V1's finding of each run with partitions without an owner at the end of observation (not judged in a
    run cut less than a convergence bound after the last fault), else of one that converged too slowly."""
    out = []
    for r in per_run:
        cut_early = not r["complete"] and (r["since"] is None or r["eval_ts"] - r["since"] < r["convergence_ms"])
        if r["unowned"] and not cut_early:
            parts = [[x["topic"], x["partition"]] for x in r["unowned"]]
            given = {f"{x['topic']}-{x['partition']}": x["given_to"] for x in r["unowned"] if x["given_to"]}
            holders = sorted(set(given.values()))
            out.append(violation("V1", r["run"], f"{fmt_tps(parts)} had no owner at the end of observation "
                                 f"({r['eval_ts']:.0f})" + (f"; last assigned on the wire to {', '.join(holders)}"
                                                           if holders else ""),
                                 members=holders, culprit=holders[0] if len(holders) == 1 else None,
                                 partitions=parts, ts=r["eval_ts"],
                                 evidence={"last_fault_ts": r["last_fault_ts"], "last_assigned_to": given}))
        elif r["converged_ts"] is not None and r["since"] is not None:
            took = max(0.0, r["converged_ts"] - r["since"])
            if took > r["convergence_ms"]:
                out.append(violation("V1", r["run"], f"the group took {took:.0f} ms to converge after the last fault; "
                                     f"the bound is {r['convergence_ms']:.0f} ms", ts=r["converged_ts"],
                                     evidence={"convergence_ms": took, "bound_ms": r["convergence_ms"]}))
    return out


def _crash_findings(crashed: list) -> list[dict]:
    """V1's finding of each crashed, hung or fatally failed incarnation, allowed under rule
    V1/migration-refused when the broker refused its join across protocols and never admitted it."""
    out = []
    for r in crashed:
        what = "reported a fatal error" if r["had_fatal"] else (
            "crashed (restarted without stopping)" if r["next_start_ts"] is not None else "never stopped (crashed or hung)")
        refused = r["refusal"] is not None and not r["was_admitted"]
        evidence = {"incarnation": r["incarnation"], "error": r["last_error"], "end": r["end_kind"],
                    "exit_code": r["exit_code"]}
        if refused:
            evidence.update(refused_wire_line=r["refusal"]["a_line"], refusal=r["refusal"]["error_message"],
                            refused_error=r["refusal"]["error_name"])
        out.append(violation("V1", r["run"], f"{r['member']} {what}"
                             + (f"; its process {describe_exit(r['exit_code'])}" if r["exit_code"] is not None else "")
                             + (f": {r['last_error']}" if r["last_error"] else "")
                             + (f" (the broker refused its {r['refusal']['joined']} at wire line "
                                f"{r['refusal']['a_line']} with {r['refusal']['error_name']} and never admitted it)"
                                if refused else ""),
                             members=[r["member"]], culprit=r["member"], ts=r["last_ts"], evidence=evidence,
                             allowed_by="V1/migration-refused" if refused else None))
    return out
