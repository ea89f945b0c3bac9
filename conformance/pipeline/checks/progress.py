"""Progress invariant P1: an owned partition with records waiting is consumed.

Statement: a partition owned by a live, unpaused member while the producer has
acknowledged records of it that nobody has consumed yet is consumed by that
owner within the bound; a stall is a violation naming the partition, the owner
and its length. (Kafka's own system tests check that consumer positions
advance; D1 only sees records never consumed by the end, not an owner that sits
on them for minutes while another incarnation or the next owner picks them up.)

What is measured. For every ownership interval (``derived.ownership``: from an
``assigned`` to the ``revoked``/``lost``/``stopped``, the kill or the end of
observation) the owner's ``consumed`` events of that partition cut the interval
into gaps. In a gap from ``g0`` (the interval's start or a consumption) to
``g1`` (the next consumption or the interval's end), records are *waiting* from
``avail``, the acknowledgement (``produced``) of the first offset above the
highest offset anyone had consumed of that partition at ``g0``. Measuring above
what the whole group had read, not above the owner's own position, means that
records a previous owner read but did not commit (which the new owner may read
again, D3) are never taken as waiting: only new records are. The stall runs from
``max(g0, avail)`` to ``g1``; it fails when it is longer than the bound, i.e.
when a record was acknowledged more than a bound before the stall ended and the
owner still consumed nothing. A record acknowledged less than a bound before
the owner gave the partition up, stopped or the observation ended makes no
stall: a live consumer might not have fetched it yet.

The bound is the owner's own (:func:`_bounds`): its fetch long-poll wait (manifest member
``fetch_max_wait_ms``, written from its kind's module; the kind registry's for older manifests)
plus its max poll interval (``max.poll.interval.ms``, manifest ``timing``), and it holds the
stall's time outside the owner's own rebalances and the fault windows, summed. Why it is right:

- A live member polls at least every max poll interval (one that does not is no longer a member:
  Java's consumer leaves the group, the coordinator evicts it after the rebalance timeout, KIP-62),
  and every poll fetches every owned, unpaused partition with records; a fetch answers within the
  fetch wait once a record is there (the broker acknowledged it, so it is fetchable). A member that
  owns a partition, heartbeats and polls its other partitions yet never fetches this one is exactly
  what P1 is for. The session and rebalance timeouts (the group's convergence bound, V1's) are not
  part of it.
- A rebalance the owner is in may hold its fetching up while it keeps a partition: classic clients
  other than Java stop consuming from the REBALANCE_IN_PROGRESS answer or their JoinGroup until the
  SyncGroup answer (Sarama ends its session; in real ``chaos`` cells librdkafka 2.16.1, kafka-python
  3.0.12 and Sarama 1.61.1 (cooperative) fetched none of their retained partitions for 6-8 s of
  rebalances that waited for a killed member's session), and a KIP-848 member reconciles before it
  fetches what it was given. That time is the owner's own wire (:func:`common.rebalance_spans`); a
  stall over the bound only because of it is allowed (rule ``P1/rebalance``); V1 and R3 judge how
  long rebalances take. Eager members revoke everything first and own nothing meanwhile, so their
  pause is no stall at all.
- Measured on 54 recorded real cells (five default matrices, a wide set of fault scenarios, the
  corpus): outside rebalances and fault windows no owner left a partition with records waiting for
  more than 3.0 s; the bound is 30.2-35 s (reference 0.2 s fetch wait, franz-go 5 s, others 0.5 s,
  plus 30 s). A stall for good, the bug class P1 catches, exceeds any bound.

Scope and exemptions:

- Time in a fault window (:func:`common.session_expiring_windows`: a pause, a
  cut or a disconnect of the owner that lasted at least its session timeout,
  a toxic of the owner that passes the toxic rule, a broker restart or kill,
  from the fault's invocation to its heal plus a session timeout and a
  heartbeat) does not count: a paused member fetches nothing, a member cut off
  from the broker or a restarting broker serves no fetch, and after the heal
  the member needs up to a session timeout to learn whether it still owns the
  partition. A pause or cut shorter than the session opens no window: the
  group never noticed it, and its own length is all it can add to a stall,
  far inside the bound. A stall of the owner's application (``stall``: it
  stops polling, its client keeps heartbeating) opens a window only when it
  lasted the max poll interval, after which the client leaves or is dropped;
  a shorter one adds less than the max poll interval, the bound's own term
  for a member that polls as rarely as it may. A stall longer than the bound only because of such
  time is reported as allowed (rule ``P1/fault-window``); one whose time
  outside the windows and the owner's rebalances, summed over the whole
  stall, exceeds the bound is a violation, however they cut it up
  (back-to-back windows excuse nothing between them).
- Runs cut short (manifest ``complete`` false) are judged on what they
  observed: a stall counts only up to the end of observation, so a stall is
  reported only when it was observed for longer than the bound, never because
  the cut came before a consumption.
- A partition nobody owns is not P1's (V1, R4 judge ownership).

Messages give times in seconds from the scenario's start (its first phase; the
first event when the manifest names no phase).
"""

from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from conformance.pipeline.checks.common import rebalance_spans, session_expiring_windows, timing, violation, window_text
from conformance.pipeline.derived import Tables

_TP = ["run", "topic", "partition"]
#: One ownership interval, with its run's bound.
_OWN = ["run", "member", "incarnation", "topic", "partition", "start_ts", "end_ts", "end_reason", "bound_ms"]


def _bounds(t: Tables):
    """(run, member, bound_ms, fetch_wait_ms): P1's bound for each member, from its own settings: its
    fetch long-poll wait (``fetch_max_wait_ms``: manifest, else kind registry, else the longest of any
    kind: :func:`conformance.members.kinds.member_fetch_max_wait_ms`) plus its max poll interval
    (the cell's ``max.poll.interval.ms``, every member's)."""
    tm = timing(t.cells).select("run", "max_poll_ms")
    return (t.members.select("run", "member", F.col("fetch_max_wait_ms").alias("fetch_wait_ms")).join(tm, "run")
            .select("run", "member", (F.col("fetch_wait_ms") + F.col("max_poll_ms")).alias("bound_ms"),
                    "fetch_wait_ms"))


def long_gaps(t: Tables):
    """Per ownership interval, every gap longer than the owner's bound between two of its points (its
    start, each consumption of the partition by the owner, its end): ``g0``, ``g1``. Only these can
    hold a stall (a stall starts at or after its gap's start)."""
    own = t.ownership.select(*_OWN[:-1]).join(_bounds(t).drop("fetch_wait_ms"), ["run", "member"])
    cons = t.events.where(F.col("event") == "consumed").select("run", "member", "topic", "partition", "ts")
    inside = (own.join(cons, ["run", "member", "topic", "partition"])
              .where((F.col("ts") >= F.col("start_ts")) & (F.col("ts") <= F.col("end_ts")))
              .select(*_OWN, "ts"))
    points = (inside.unionByName(own.select(*_OWN, F.col("start_ts").alias("ts")))
              .unionByName(own.select(*_OWN, F.col("end_ts").alias("ts"))))
    w = Window.partitionBy(*_OWN).orderBy("ts")
    return (points.withColumn("g1", F.lead("ts").over(w)).withColumnRenamed("ts", "g0")
            .where(F.col("g1") - F.col("g0") > F.col("bound_ms")))


def stalls(t: Tables):
    """The gaps of :func:`long_gaps` in which records waited longer than the bound: ``stall_from``
    (when the first waiting record was acknowledged, or the gap's start), ``first_waiting`` and
    ``last_acked`` (the offsets acknowledged at least a bound before the gap ended, the last by
    ``acked_by``), ``windows``, the fault windows of the owner, the broker or everyone that overlap
    the stall, of faults long enough to expire a session (:func:`common.session_expiring_windows`;
    null when none), and ``rebalances``, the owner's own rebalances that overlap it
    (:func:`common.rebalance_spans`; null when none)."""
    gaps = long_gaps(t)
    cons = t.events.where(F.col("event") == "consumed").select(
        *_TP, F.col("ts").alias("c_ts"), F.col("last_offset").alias("c_last"))
    keys = _OWN + ["g0", "g1"]
    seen = (gaps.join(cons, _TP, "left").groupBy(*keys)
            .agg(F.coalesce(F.max(F.when(F.col("c_ts") <= F.col("g0"), F.col("c_last"))), F.lit(-1)).alias("seen_max")))
    prod = t.events.where(F.col("event") == "produced").select(
        *_TP, F.col("ts").alias("p_ts"), F.col("first_offset").alias("p_first"), F.col("last_offset").alias("p_last"))
    waiting = (seen.join(prod, _TP)
               .where((F.col("p_last") > F.col("seen_max")) & (F.col("p_ts") < F.col("g1") - F.col("bound_ms")))
               .groupBy(*keys, "seen_max")
               .agg(F.min("p_ts").alias("avail_ts"), F.max("p_ts").alias("acked_by"),
                    F.min(F.greatest("p_first", F.col("seen_max") + 1)).alias("first_waiting"),
                    F.max("p_last").alias("last_acked"))
               .withColumn("stall_from", F.greatest("g0", "avail_ts"))
               .where(F.col("g1") - F.col("stall_from") > F.col("bound_ms")))
    win = session_expiring_windows(t).select("run", "fault", "target", "w_start", "w_end", "t0")
    hit = (waiting.join(win, "run")
           .where(F.col("target").isin("all", "broker") | (F.col("target") == F.col("member")))
           .where((F.col("w_start") < F.col("g1")) & (F.col("w_end") > F.col("stall_from")))
           .groupBy(*keys).agg(F.collect_list(F.struct("fault", "target", "w_start", "w_end", "t0")).alias("windows")))
    spans = rebalance_spans(t)
    busy = (waiting.join(spans, ["run", "member"])
            .where((F.col("r_start") < F.col("g1")) & (F.col("r_end") > F.col("stall_from")))
            .groupBy(*keys).agg(F.collect_list(F.struct("r_start", "r_end")).alias("rebalances")))
    return waiting.join(hit, keys, "left").join(busy, keys, "left")


def _outside(start: float, end: float, windows) -> float:
    """The total time of [start, end] outside every window ((w_start, w_end) pairs; overlapping
    windows count once)."""
    outside, cursor = 0.0, start
    for w0, w1 in sorted((min(max(w0, start), end), max(min(w1, end), start)) for w0, w1 in windows):
        if w1 <= cursor:
            continue
        outside += max(0.0, w0 - cursor)
        cursor = max(cursor, w1)
    return outside + max(0.0, end - cursor)


def check_p1(t: Tables) -> list[dict]:
    origin = (t.cells.select("run", "start_ts")
              .join(t.events.groupBy("run").agg(F.min("ts").alias("first_ts")), "run", "left")
              .select("run", F.coalesce("start_ts", "first_ts", F.lit(0.0)).alias("origin")))
    rows = t.collect(stalls(t).join(origin, "run", "left"))
    out = []
    for r in rows:
        o = r["origin"] or 0.0
        tp = f"{r['topic']}-{r['partition']}"
        stall_ms = r["g1"] - r["stall_from"]
        windows = [(w["w_start"], w["w_end"]) for w in (r["windows"] or [])]
        rebalances = sorted((b["r_start"], b["r_end"]) for b in (r["rebalances"] or []))
        free_ms = _outside(r["stall_from"], r["g1"], windows)
        settled_ms = _outside(r["stall_from"], r["g1"], windows + rebalances)
        ended = "consumed again" if r["g1"] < r["end_ts"] else (r["end_reason"] or "end of observation")
        msg = (f"{r['member']} owned {tp} from {(r['start_ts'] - o) / 1000:.1f} s but consumed nothing from it for "
               f"{stall_ms / 1000:.1f} s from {(r['stall_from'] - o) / 1000:.1f} s (offsets {r['first_waiting']}-"
               f"{r['last_acked']} were acknowledged by {(r['acked_by'] - o) / 1000:.1f} s); "
               f"bound {r['bound_ms'] / 1000:.1f} s (its fetch wait plus its max poll interval)")
        evidence = {"owned_from_ts": r["start_ts"], "owned_to_ts": r["end_ts"], "incarnation": r["incarnation"],
                    "stall_from_ts": r["stall_from"], "stall_to_ts": r["g1"], "stall_ms": stall_ms,
                    "ended_by": ended, "bound_ms": r["bound_ms"], "first_waiting_offset": r["first_waiting"],
                    "last_acknowledged_offset": r["last_acked"], "first_acknowledged_ts": r["avail_ts"],
                    "acknowledged_by_ts": r["acked_by"], "outside_fault_windows_ms": free_ms,
                    "outside_rebalances_ms": settled_ms,
                    "fault_windows": sorted([{"fault": w["fault"], "target": w["target"], "from_ts": w["w_start"],
                                              "to_ts": w["w_end"]} for w in (r["windows"] or [])],
                                            key=lambda w: w["from_ts"]),
                    "rebalances": [{"from_ts": b0, "to_ts": b1} for b0, b1 in rebalances]}
        faults = "; ".join(window_text(w) for w in sorted(r["windows"] or [], key=lambda w: w["w_start"]))
        spans = "; ".join(f"{(b0 - o) / 1000:.1f}-{(b1 - o) / 1000:.1f} s" for b0, b1 in rebalances)
        common = dict(members=[r["member"]], culprit=r["member"], partitions=[[r["topic"], r["partition"]]],
                      ts=r["stall_from"], evidence=evidence)
        if settled_ms > r["bound_ms"]:
            if windows or rebalances:
                msg += (f"; {settled_ms / 1000:.1f} s of it outside the fault windows ({faults or 'none'}) and "
                        f"its own rebalances ({spans or 'none'})")
            out.append(violation("P1", r["run"], msg, **common))
        elif free_ms > r["bound_ms"]:
            msg += (f"; no more than the bound of it lies outside its own rebalances ({spans}) and the fault "
                    f"windows ({faults or 'none'}): {settled_ms / 1000:.1f} s in all")
            out.append(violation("P1", r["run"], msg, allowed_by="P1/rebalance", **common))
        else:
            msg += (f"; no more than the bound of it lies outside the fault windows ({free_ms / 1000:.1f} s "
                    f"in all): {faults}")
            out.append(violation("P1", r["run"], msg, allowed_by="P1/fault-window", **common))
    return out
