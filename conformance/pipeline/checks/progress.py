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

The bound is the run's convergence bound (:func:`common.timing`'s
``convergence_ms``: manifest ``timing.convergence_bound_ms``, by default two
session timeouts plus a rebalance timeout; when the manifest lacks it, a
session timeout plus a max poll interval). Why it is right:

- It is at least ``max.poll.interval.ms``: a live member polls at least that
  often (one that does not is no longer a member: Java's consumer leaves the
  group, the coordinator evicts it after the rebalance timeout, KIP-62), and
  every poll fetches every owned, unpaused partition with records. A member
  that owns a partition, heartbeats and polls its other partitions yet never
  fetches this one is exactly what P1 is for.
- It covers the longest a rebalance may legitimately hold a member's fetching
  up while it keeps a partition: the group settles within the convergence
  bound after any disturbance (V1 judges that bound; a session timeout to
  notice a member gone, a rebalance timeout for the others to rejoin).
  Cooperative members fetch retained partitions during a rebalance (KIP-429);
  eager ones revoke everything first and own nothing meanwhile, so their
  pause is no stall at all.
- "Early enough": once acknowledged, a record is fetchable; a fetch long-poll
  waits at most ``fetch.max.wait.ms`` (500 ms by default, the reference's
  200 ms), far inside the bound.

A tighter bound (a few heartbeats) would fire on slow but legitimate
rebalances, whose pauses R3 measures as the metric ``pause_ms`` rather than
judges: in a real ``chaos`` cell librdkafka 2.16.1, kafka-python 3.0.12 and
Sarama 1.61.1 (cooperative) fetched none of their retained partitions for 6-8
s of rebalances that waited for a killed member's session; such a wait grows
with the session and rebalance timeouts, as this bound does. In real cells of
the other scenarios with faults (pause, partition, latency, broker-restart,
crash-restart, static-restart, the eager-to-cooperative upgrade,
rolling-restart) no wait with records waiting lasted more than 2.1 s outside a
fault window. A stall for good, the bug class P1 catches, exceeds any bound.

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
  far inside the bound. A stall longer than the bound only because of such
  time is reported as allowed (rule ``P1/fault-window``); one whose time
  outside the windows, summed over the whole stall, exceeds the bound is a
  violation, however the windows cut it up (back-to-back windows excuse
  nothing between them).
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

from conformance.pipeline.checks.common import session_expiring_windows, timing, violation, window_text
from conformance.pipeline.derived import Tables

_TP = ["run", "topic", "partition"]
#: One ownership interval, with its run's bound.
_OWN = ["run", "member", "incarnation", "topic", "partition", "start_ts", "end_ts", "end_reason", "bound_ms"]


def long_gaps(t: Tables):
    """Per ownership interval, every gap longer than the bound between two of its points (its start,
    each consumption of the partition by the owner, its end): ``g0``, ``g1``. Only these can hold a
    stall (a stall starts at or after its gap's start)."""
    bound = timing(t.cells).select("run", F.col("convergence_ms").alias("bound_ms"))
    own = t.ownership.select(*_OWN[:-1]).join(bound, "run")
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
    ``acked_by``), and ``windows``, the fault windows of the owner, the broker or everyone that
    overlap the stall, of faults long enough to expire a session
    (:func:`common.session_expiring_windows`; null when none)."""
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
    return waiting.join(hit, keys, "left")


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
        free_ms = _outside(r["stall_from"], r["g1"], windows)
        ended = "consumed again" if r["g1"] < r["end_ts"] else (r["end_reason"] or "end of observation")
        msg = (f"{r['member']} owned {tp} from {(r['start_ts'] - o) / 1000:.1f} s but consumed nothing from it for "
               f"{stall_ms / 1000:.1f} s from {(r['stall_from'] - o) / 1000:.1f} s (offsets {r['first_waiting']}-"
               f"{r['last_acked']} were acknowledged by {(r['acked_by'] - o) / 1000:.1f} s); "
               f"bound {r['bound_ms'] / 1000:.1f} s")
        evidence = {"owned_from_ts": r["start_ts"], "owned_to_ts": r["end_ts"], "incarnation": r["incarnation"],
                    "stall_from_ts": r["stall_from"], "stall_to_ts": r["g1"], "stall_ms": stall_ms,
                    "ended_by": ended, "bound_ms": r["bound_ms"], "first_waiting_offset": r["first_waiting"],
                    "last_acknowledged_offset": r["last_acked"], "first_acknowledged_ts": r["avail_ts"],
                    "acknowledged_by_ts": r["acked_by"], "outside_fault_windows_ms": free_ms,
                    "fault_windows": sorted([{"fault": w["fault"], "target": w["target"], "from_ts": w["w_start"],
                                              "to_ts": w["w_end"]} for w in (r["windows"] or [])],
                                            key=lambda w: w["from_ts"])}
        faults = "; ".join(window_text(w) for w in sorted(r["windows"] or [], key=lambda w: w["w_start"]))
        if free_ms > r["bound_ms"]:
            if windows:
                msg += f"; {free_ms / 1000:.1f} s of it outside the fault windows: {faults}"
            out.append(violation("P1", r["run"], msg, members=[r["member"]], culprit=r["member"],
                                 partitions=[[r["topic"], r["partition"]]], ts=r["stall_from"], evidence=evidence))
        else:
            msg += (f"; no more than the bound of it lies outside the fault windows ({free_ms / 1000:.1f} s "
                    f"in all): {faults}")
            out.append(violation("P1", r["run"], msg, members=[r["member"]], culprit=r["member"],
                                 partitions=[[r["topic"], r["partition"]]], ts=r["stall_from"], evidence=evidence,
                                 allowed_by="P1/fault-window"))
    return out
