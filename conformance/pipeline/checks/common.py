"""Helpers shared by the checks: violation rows, partition lists, timing bounds, fault windows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from conformance import config
from conformance.nemesis.faults import (
    BY_TOXIC_RULE,
    DEAD_LOOKING,
    DELAY_ATTRIBUTES,
    DELAYING_TOXIC,
    HEAL_OF,
    HEALED_BY_NEXT_LINE,
    LOG_LINES,
    MAX_POLL_TIMED,
    SILENCING_TOXICS,
    STOP_LINES,
    TIMED_DEAD_LOOKING,
)
from conformance.pipeline.checks import evidence as evidence_schema
from conformance.pipeline.checks.rules import RULES
from conformance.reference.codes import REBALANCE_IN_PROGRESS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from conformance.pipeline.derived import Tables

#: Faults during which a member may look dead to the group, what heals each, and the toxic rule, all
#: from the one table of faults (:mod:`conformance.nemesis.faults`): a ``toxic-add`` counts only as
#: :func:`_toxic_can_look_dead` says; broker faults are healed by the broker's next nemesis line.


def violation(invariant: str, run: str, message: str, *, members: list[str] | None = None,
              culprit: str | None = None, harmed: list[str] | None = None, generation: int | None = None,
              partitions: list | None = None, ts: float | None = None, evidence: dict[str, Any] | None = None,
              allowed_by: str | None = None) -> dict:
    """A finding of ``invariant`` in ``run``.

    ``culprit``: the member whose act broke the rule (the leader that planned a move, the member
    that declared, committed, crashed or stalled), where the evidence knows it; ``harmed``: the
    members that act harmed (empty with a culprit: it harmed the group as a whole, as a crash or a
    stall does). ``members``: every member the finding implicates; the culprit and the harmed are
    added to it. The matrix attributes a finding with a culprit to the pairs of the culprit with
    each harmed member (every pair of the culprit when none is named), and a finding without one,
    whose culprit the evidence cannot know, to the pairs its ``members`` implicate
    (:func:`conformance.pipeline.matrix.attributed_pairs`); a known client bug matches a finding
    only through its culprit (:func:`conformance.members.known_issues.match`).
    ``allowed_by``: the name of the rule of :data:`conformance.pipeline.checks.rules.RULES` that
    excuses it; the finding is then reported as allowed, never as a violation. An unknown rule name
    raises ``ValueError``: an exemption that is not in the one list of rules cannot be applied.
    ``evidence`` is held to the invariant's declared keys (:func:`conformance.pipeline.checks.evidence.check`):
    an undeclared key or a value of another type raises ``ValueError`` (a check bug)."""
    if allowed_by is not None and allowed_by not in RULES:
        raise ValueError(f"{invariant}: no exemption rule named {allowed_by!r}; rules: {', '.join(RULES)}")
    evidence_schema.check(invariant, evidence or {})
    hurt = sorted({m for m in (harmed or []) if m})
    named = {m for m in (members or []) if m} | ({culprit} if culprit else set()) | set(hurt)
    return {"run": run, "invariant": invariant, "message": message, "members": sorted(named), "culprit": culprit,
            "harmed": hurt, "generation": generation,
            "partitions": sorted([[str(p[0]), int(p[1])] for p in (partitions or [])]),
            "ts": ts, "evidence": evidence or {}, "allowed_by": allowed_by}


def tps(rows) -> list[list]:
    """[[topic, partition], ...] from structs/rows with topic and partition."""
    return sorted([[r["topic"], int(r["partition"])] for r in (rows or [])])


def fmt_tps(parts) -> str:
    items = sorted((p[0], int(p[1])) for p in parts)
    return ", ".join(f"{t}-{p}" for t, p in items) or "(none)"


def timing(cells):
    """Per-run bounds derived from the manifest timing (defaults from config only when absent), and
    whether the run reached its scenario's end (``complete``: false when it was cut short)."""
    return cells.select(
        "run",
        F.coalesce("session_timeout_ms", F.lit(float(config.SESSION_TIMEOUT_MS))).alias("session_ms"),
        F.coalesce("heartbeat_interval_ms", F.lit(float(config.HEARTBEAT_INTERVAL_MS))).alias("heartbeat_ms"),
        F.coalesce("max_poll_interval_ms", F.lit(float(config.MAX_POLL_INTERVAL_MS))).alias("max_poll_ms"),
        # Bounds the runner did not write: a rebalance needs at most a session timeout to notice a dead
        # member plus a rebalance timeout (= max poll interval) for the others to rejoin.
        F.coalesce("convergence_bound_ms", F.coalesce("session_timeout_ms", F.lit(float(config.SESSION_TIMEOUT_MS)))
                   + F.coalesce("max_poll_interval_ms", F.lit(float(config.MAX_POLL_INTERVAL_MS)))).alias("convergence_ms"),
        F.coalesce("revoke_bound_ms", F.coalesce("max_poll_interval_ms", F.lit(float(config.MAX_POLL_INTERVAL_MS))))
        .alias("revoke_ms"),
        "expected_protocol", "last_fault_ts", "end_ts", "leader_rotation", "scenario", "complete",
    )


def formed_by_end(t: Tables):
    """(run, generation) of the generations formed by the scenario's end (a JoinGroup response at or before
    the manifest's ``end_ts``; every generation when the run has none). Teardown, after ``end_ts``, stops
    members one by one: a generation the last of them forms alone says nothing of the group the scenario
    built, so judgements of "the final generation" (L2, L3, R5) take the last of these."""
    return (t.generations.select("run", "generation", "join_ts").join(t.cells.select("run", "end_ts"), "run", "left")
            .where(F.col("end_ts").isNull() | (F.col("join_ts") <= F.col("end_ts"))).select("run", "generation"))


def ways_out(t: Tables, ends: Column) -> DataFrame:
    """(run, member, f_ts, fault) of every way a member left or was taken out of its group: its LeaveGroup
    request on the wire (``LeaveGroup``), the runner's stop or kill of it (a :data:`STOP_LINES` fault, by
    its name), and the end of its process's life when ``ends`` (a condition on ``t.incarnations``) holds
    (``exit (END_KIND)``). L1 and V3 read it, each with its own ``ends``."""
    leaves = (t.frames.where((F.col("api") == "LeaveGroup") & (F.col("direction") == "request"))
              .select("run", "member", F.col("ts").alias("f_ts"), F.lit("LeaveGroup").alias("fault")))
    stops = (t.nemesis.where((F.col("phase") == "invoke") & F.col("fault").isin(*STOP_LINES))
             .select("run", F.col("target").alias("member"), F.col("ts").alias("f_ts"), "fault"))
    exits = (t.incarnations.where(ends)
             .select("run", "member", F.col("end_ts").alias("f_ts"),
                     F.concat(F.lit("exit ("), F.col("end_kind"), F.lit(")")).alias("fault")))
    return leaves.unionByName(stops).unionByName(exits)


def fault_windows(t: Tables):
    """(run, fault, target, w_start, w_end, healed_ts, t0, lasted_ms) during which ``target`` (a member,
    or ``broker``) may look dead to the group: a stall only when it lasted the max poll interval (a
    shorter one keeps its member in the group: it heartbeats, and its own client's clock has not run
    out); from a :data:`DEAD_LOOKING` fault's invocation to its heal
    (``healed_ts``; the run's end when nothing healed it) plus a session timeout and a heartbeat, the time
    the group and the member need to notice; ``t0`` is the run's start (messages give times from it),
    ``lasted_ms`` the fault's own length (invocation to heal). Built once per Tables (R2, R3, R4, D3, P1
    and L1 read it)."""
    return t.shared("fault_windows", lambda: _build_fault_windows(t))


def session_expiring_windows(t: Tables):
    """The windows of :func:`fault_windows` whose fault lasted long enough to expire its member's
    session: a fault of :data:`~conformance.nemesis.faults.TIMED_DEAD_LOOKING` (a pause, a cut, a disconnect,
    a stall) only when it lasted at least its bound (invocation to heal, or to the run's end): a session
    timeout, or for a stall (:data:`~conformance.nemesis.faults.MAX_POLL_TIMED`) the max poll interval;
    every other dead-looking fault (a broker restart or kill; a toxic that passes the toxic rule) always.
    The same rule as :func:`conformance.nemesis.faults.can_expire`."""
    tm = timing(t.cells).select("run", "session_ms", "max_poll_ms")
    bound = F.when(F.col("fault").isin(*MAX_POLL_TIMED), F.col("max_poll_ms")).otherwise(F.col("session_ms"))
    return (fault_windows(t).join(tm, "run")
            .where(~F.col("fault").isin(*TIMED_DEAD_LOOKING) | (F.col("lasted_ms") >= bound))
            .drop("session_ms", "max_poll_ms"))


def _toxic_can_look_dead(details, session_ms, heartbeat_ms):
    """A Spark condition on a ``toxic-add`` line's ``details`` (JSON): the toxic can make its member
    look dead by the table of faults' toxic rule: a :data:`~conformance.nemesis.faults.SILENCING_TOXICS` type,
    or latency (the sum of :data:`~conformance.nemesis.faults.DELAY_ATTRIBUTES`: latency plus jitter) of at
    least a session timeout minus a heartbeat interval, which delays a heartbeat past the
    coordinator's session deadline. Latency below that slows a member, never makes it look dead."""
    kind = F.get_json_object(details, "$.type")
    delays = [F.coalesce(F.get_json_object(details, f"$.attributes.{a}").cast("double"), F.lit(0.0))
              for a in DELAY_ATTRIBUTES]
    latency = delays[0]
    for delay in delays[1:]:
        latency = latency + delay
    return kind.isin(*SILENCING_TOXICS) | ((kind == DELAYING_TOXIC) & (latency >= session_ms - heartbeat_ms))


#: Dead-looking lines that count only as the toxic rule says (``toxic-add``).
_BY_TOXIC_RULE = tuple(n for n in DEAD_LOOKING if LOG_LINES[n].looks_dead == BY_TOXIC_RULE)


def _build_fault_windows(t: Tables):
    tm = timing(t.cells).select("run", "session_ms", "heartbeat_ms", "max_poll_ms")
    inv = (t.nemesis.where((F.col("phase") == "invoke") & F.col("fault").isin(*DEAD_LOOKING)).join(tm, "run")
           .where(~F.col("fault").isin(*_BY_TOXIC_RULE)
                  | _toxic_can_look_dead(F.col("details"), F.col("session_ms"), F.col("heartbeat_ms")))
           .select("run", "line", "fault", "target", F.col("ts").alias("w_start")))
    heals = t.nemesis.select("run", F.col("target").alias("h_target"), F.col("fault").alias("h_fault"),
                             F.col("ts").alias("h_ts"))
    heal_of = F.create_map(*[F.lit(x) for kv in HEAL_OF.items() for x in kv])
    joined = (inv.join(heals, "run", "left")
              .where(F.col("h_ts").isNull() | ((F.col("h_target") == F.col("target")) & (F.col("h_ts") >= F.col("w_start"))
                                               & ((F.col("h_fault") == heal_of[F.col("fault")])
                                                  | (F.col("fault").isin(*HEALED_BY_NEXT_LINE)
                                                     & (F.col("h_ts") > F.col("w_start")))))))
    healed = joined.groupBy("run", "line", "fault", "target", "w_start").agg(F.min("h_ts").alias("heal_ts"))
    t0 = t.cells.select("run", "start_ts")
    lasted = F.greatest(F.coalesce("heal_ts", "run_end_ts"), F.col("w_start")) - F.col("w_start")
    return (inv.join(healed, ["run", "line", "fault", "target", "w_start"], "left").join(tm, "run")
            .join(t.run_end, "run").join(t0, "run", "left")
            # A stall (its member heartbeats on) makes it look dead only once it lasted max.poll.interval.ms.
            .where(~F.col("fault").isin(*MAX_POLL_TIMED) | (lasted >= F.col("max_poll_ms")))
            .select("run", "fault", "target", "w_start",
                    (F.greatest(F.coalesce("heal_ts", "run_end_ts"), F.col("w_start"))
                     + F.col("session_ms") + F.col("heartbeat_ms")).alias("w_end"),
                    F.greatest(F.coalesce("heal_ts", "run_end_ts"), F.col("w_start")).alias("healed_ts"),
                    F.coalesce("start_ts", F.lit(0.0)).alias("t0"),
                    (F.greatest(F.coalesce("heal_ts", "run_end_ts"), F.col("w_start")) - F.col("w_start"))
                    .alias("lasted_ms")))


def split_by_fault_windows(t: Tables, name: str, df, keys: list[str], start: str, end: str, members: list[str]):
    """(unexcused, excused): the rows of ``df`` whose span ``start``..``end`` lies wholly inside one
    fault window (:func:`fault_windows`) of one of the ``members`` columns' members, the broker or
    everyone are ``excused``, with that window as ``window`` (fault, target, w_start, w_end); the
    others are ``unexcused``. A span that begins in a window and outlives it is not excused: the
    window is the time the group needs to notice, and the anomaly lasted longer. ``keys`` identify a
    row; ``df`` is read twice, so it is built once per Tables, as ``name`` (:meth:`Tables.shared`)."""
    built = df
    df = t.shared(name, lambda: built)
    win = fault_windows(t)
    hit = F.col("target").isin("all", "broker")
    for m in members:
        hit = hit | (F.col("target") == F.col(m))
    covered = (df.join(win, "run").where(hit & (F.col(start) >= F.col("w_start")) & (F.col(end) <= F.col("w_end")))
               .groupBy(*keys).agg(F.min_by(F.struct("fault", "target", "w_start", "w_end", "t0"), "w_start")
                                   .alias("window")))
    return df.join(covered.select(*keys), keys, "left_anti"), df.join(covered, keys)


def window_text(w) -> str:
    """One line for an excusing fault window (a ``window`` struct of :func:`split_by_fault_windows`)."""
    return (f"{w['fault']} of {w['target']} at {(w['w_start'] - w['t0']) / 1000:.1f} s, window to "
            f"{(w['w_end'] - w['t0']) / 1000:.1f} s (heal + session timeout + heartbeat; seconds from the run's start)")


#: Lines whose target member dies (a kill): it is gone, without leaving, until its next ``start`` line.
_DYING = tuple(n for n in STOP_LINES if LOG_LINES[n].dies)


def silencing_spans(t: Tables):
    """(run, fault, target, f_start, f_end): each fault that can silence ``target`` (a member, the broker,
    everyone) while it is in force: a fault window's fault (:func:`fault_windows`: dead-looking, a toxic
    only by the toxic rule) from its invocation to its heal, and a kill from its line to its member's next
    ``start`` line (the run's end when none). A fault that cannot silence its target (an ``add-partitions``,
    a latency below the toxic rule, a graceful stop, a start) is not one. Built once per Tables (L1 reads it)."""
    def build():
        dead = fault_windows(t).select("run", "fault", "target", F.col("w_start").alias("f_start"),
                                       F.col("healed_ts").alias("f_end"))
        kills = (t.nemesis.where((F.col("phase") == "invoke") & F.col("fault").isin(*_DYING))
                 .select("run", "fault", "target", F.col("ts").alias("f_start")))
        starts = t.nemesis.where(F.col("fault") == "start").select("run", F.col("target").alias("s_target"),
                                                                   F.col("ts").alias("s_ts"))
        killed = (kills.join(starts, (kills["run"] == starts["run"]) & (F.col("s_target") == F.col("target"))
                             & (F.col("s_ts") > F.col("f_start")), "left")
                  .groupBy(kills["run"], "fault", "target", "f_start").agg(F.min("s_ts").alias("s_ts"))
                  .join(t.run_end, "run")
                  .select("run", "fault", "target", "f_start",
                          F.greatest(F.coalesce("s_ts", "run_end_ts"), F.col("f_start")).alias("f_end")))
        return dead.unionByName(killed)
    return t.shared("silencing_spans", build)


def rebalance_spans(t: Tables):
    """(run, member, r_start, r_end): the times each member spent in a rebalance by its own wire, the
    time a client may legitimately stop fetching the partitions it keeps. Classic: from the first of
    a REBALANCE_IN_PROGRESS answer to it and its JoinGroup request, to its SyncGroup response (the
    run's end when none came). Consumer protocol (KIP-848): from a ConsumerGroupHeartbeat answer that
    gives it an assignment to its next heartbeat that reports what it owns (its reconciliation; the
    run's end when none did). Built once per Tables (P1 reads it)."""
    def build():
        mark = (t.frames.where(F.col("member").isNotNull())
                .select("run", "member", "ts",
                        ((F.col("api") == "JoinGroup") & (F.col("direction") == "request")
                         | ((F.col("direction") == "response") & (F.col("error_code") == REBALANCE_IN_PROGRESS)))
                        .alias("opens"),
                        ((F.col("api") == "SyncGroup") & (F.col("direction") == "response")).cast("int").alias("closes"))
                .where(F.col("opens") | (F.col("closes") == 1)))
        w = Window.partitionBy("run", "member").orderBy("ts").rowsBetween(Window.unboundedPreceding, -1)
        rounds = mark.withColumn("round", F.coalesce(F.sum("closes").over(w), F.lit(0)))
        classic = (rounds.groupBy("run", "member", "round")
                   .agg(F.min(F.when(F.col("opens"), F.col("ts"))).alias("r_start"),
                        F.max(F.when(F.col("closes") == 1, F.col("ts"))).alias("r_end"))
                   .where(F.col("r_start").isNotNull()).drop("round"))
        hb = t.heartbeats
        given = hb.where((F.col("direction") == "response") & F.col("assigned").isNotNull()).select(
            "run", "member", F.col("ts").alias("r_start"))
        told = hb.where((F.col("direction") == "request") & F.col("owned").isNotNull()).select(
            "run", "member", F.col("ts").alias("o_ts"))
        reconciling = (given.join(told, ["run", "member"], "left").groupBy("run", "member", "r_start")
                       .agg(F.min(F.when(F.col("o_ts") > F.col("r_start"), F.col("o_ts"))).alias("r_end")))
        return (classic.unionByName(reconciling).join(t.run_end, "run")
                .select("run", "member", "r_start", F.coalesce("r_end", "run_end_ts").alias("r_end")))
    return t.shared("rebalance_spans", build)
