"""Derived tables, computed once and named (shared by every check).

- ``run_end``: per run, the end of observation: manifest ``end_ts``, else the
  last event or frame seen.
- ``incarnations``: per member process life: ``start_ts``, ``last_ts`` and
  ``end_ts``/``end_kind``: ``stopped`` (its stopped event), ``killed`` (a
  nemesis kill of that member after its last event and before its next
  start: the process died then), ``crashed`` (the runner saw the process
  exit on its own after its last event and before its next start: an exit
  note of the manifest; it ended at its last sign of life, its last history
  event or wire frame, since it died between that and the note), ``restarted``
  (the next ``started`` of the same member with no kill or exit note: a
  crash), or ``run-end``.
- ``ownership``: one row per (member, partition) ownership interval: from an
  ``assigned`` to the next ``revoked``/``lost`` of that partition in the same
  incarnation, else the incarnation's end. ``end_reason`` says which.
  An ``assigned`` of a partition already owned extends nothing (it is dropped).
- ``member_ids``: which member (tap owner) used which member id.
- ``generations``: per (run, generation) from successful JoinGroup responses:
  leader id and name (and every non-empty leader id the responses named), protocol,
  member count, first/last response time, and whether the protocol is
  cooperative.
- ``leader_assignments`` / ``received``: decoded assignments per member name.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, cast

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from conformance import config
from conformance.pipeline.ingest import TABLE_NAMES, with_incarnation

#: The value of a derived table (and of the optional heartbeats input) before the waves build it;
#: checks only ever read built tables.
UNBUILT: DataFrame = cast("DataFrame", None)


@dataclass
class Tables:
    cells: DataFrame
    members: DataFrame
    topics: DataFrame
    nemesis: DataFrame
    frames: DataFrame
    subscriptions: DataFrame
    assignments: DataFrame
    commits: DataFrame
    events: DataFrame
    malformed: DataFrame
    heartbeats: DataFrame = UNBUILT  # ConsumerGroupHeartbeat frames (KIP-848); an input, last for positional callers
    epoch_ends: DataFrame = UNBUILT  # OffsetForLeaderEpoch answers (KIP-320); an input
    events_inc: DataFrame = UNBUILT  # events plus ``incarnation`` (a broadcast join; use only where needed)
    run_end: DataFrame = UNBUILT
    incarnations: DataFrame = UNBUILT
    ownership: DataFrame = UNBUILT
    member_ids: DataFrame = UNBUILT
    generations: DataFrame = UNBUILT
    leader_assignments: DataFrame = UNBUILT
    partitions: DataFrame = UNBUILT
    #: What serves the checks' collects (a :class:`conformance.pipeline.batch.CollectBatcher`); None: plain collect().
    collector: Any = None
    #: Pin the pieces several checks share (:meth:`shared`) in memory (:func:`pin`).
    pin_shared: bool = False
    #: :func:`pin` into one partition (small inputs: joins and aggregations then need no shuffle).
    one_partition: bool = True
    _shared: dict = field(default_factory=dict, repr=False)
    _shared_lock: Any = field(default_factory=threading.Lock, repr=False)  # guards _shared and _piece_locks
    _piece_locks: dict = field(default_factory=dict, repr=False)

    def shared(self, name: str, build: Callable[[], DataFrame], heavy: bool = False) -> DataFrame:
        """The DataFrame ``build()`` makes, built once per Tables and ``name`` and then reused by every
        check asking for it (pinned in memory when ``pin_shared``), so that pieces several checks
        need (the leader's view, complete generations, duplicates, ...) are defined once.

        Each name has its own lock: a check waits only for a piece it asks for while another check
        builds that piece, never for the building of other pieces (checks build their pieces side by
        side). Pieces may build on pieces (their dependencies have no cycle, so no two builds wait for
        each other); ``build`` is called at most once per name.

        Unpinned, each query reading a piece computes it again (each check prunes it differently,
        so Spark cannot reuse one computation); ``heavy`` pieces (those that grow with the events,
        e.g. a window over every consumed range) are then persisted instead: computed by the first
        query that reads them, read by the others, dropped by :meth:`release_shared`."""
        with self._shared_lock:
            df = self._shared.get(name)
            if df is not None:
                return df
            lock = self._piece_locks.setdefault(name, threading.Lock())
        with lock:
            with self._shared_lock:
                df = self._shared.get(name)
            if df is None:
                df = build()
                if self.pin_shared:
                    df = pin(df, self.one_partition)
                elif heavy:
                    df = df.persist()
                with self._shared_lock:
                    self._shared[name] = df
            return df

    def release_shared(self) -> None:
        """Forget the shared pieces (pinned ones are then freed by Spark, see :func:`pin`;
        persisted ones are dropped now)."""
        with self._shared_lock:
            pieces = list(self._shared.values())
            self._shared.clear()
            self._piece_locks.clear()
        for df in pieces:
            if df.is_cached:
                df.unpersist()

    def collect(self, df: DataFrame) -> list:
        """``df.collect()``, through the collector when there is one (checks call this, never ``collect()``)."""
        return self.collector.collect(df) if self.collector is not None else df.collect()

    def collect_many(self, *dfs: DataFrame) -> list[list]:
        """``[df.collect() for df in dfs]``, in one round of the collector."""
        return self.collector.collect_many(*dfs) if self.collector is not None else [df.collect() for df in dfs]


def pin(df: DataFrame, one_partition: bool = True) -> DataFrame:
    """``df`` computed once, when first used, and kept by the executors (a lazy local checkpoint:
    later queries over it see a leaf, so planning them neither re-plans ``df`` nor searches the
    cache). With ``one_partition`` (small inputs) it is kept as one partition, which satisfies
    every distribution a join or an aggregation asks for: queries over pinned tables then need no
    shuffle. Spark frees the blocks once the DataFrame is garbage (its ContextCleaner)."""
    return (df.coalesce(1) if one_partition else df).localCheckpoint(eager=False)


def is_pinned(df: DataFrame) -> bool:
    """True when ``df`` is a :func:`pin`-ned DataFrame."""
    try:
        return bool(df._jdf.logicalPlan().rdd().getStorageLevel().isValid())
    except Exception:  # not a checkpointed DataFrame
        return False


def is_cooperative(col):
    return col.isin(*config.COOPERATIVE_ASSIGNORS)


#: The derived tables of each wave (a wave builds on the inputs and the waves before; :data:`WAVES`).
FIRST_WAVE = ("events_inc", "run_end", "incarnations", "member_ids", "partitions")
SECOND_WAVE = ("ownership", "generations", "leader_assignments")


def in_memory(inputs: dict[str, DataFrame], keep: Callable[[DataFrame], DataFrame]) -> Tables:
    """Every table (inputs, both waves) from input DataFrames, each passed through ``keep``
    (e.g. :func:`pin`) as it is defined, so that each later table builds on kept ones."""
    kept: dict[str, Any] = {n: keep(inputs[n]) for n in TABLE_NAMES}
    t = Tables(**kept)
    for wave, build in WAVES:
        build(t)
        for name in wave:
            setattr(t, name, keep(getattr(t, name)))
    return t


def _with_exit_notes(t: Tables, inc: DataFrame) -> DataFrame:
    """``inc`` plus ``life_ts``: for an incarnation without ``stopped`` or kill whose process the
    runner saw exit on its own (an exit note after its last event and before its next start), its
    last sign of life: its last history event or its last wire frame before the note, whichever is
    later. Null otherwise. Only members with an exit note are looked up in the wire capture."""
    exits = (t.cells.select("run", F.explode("exits").alias("x"))
             .select("run", F.col("x.member").alias("member"), F.col("x.ts").alias("exit_ts")))
    noted = (inc.where(F.col("stopped_ts").isNull() & F.col("kill_ts").isNull())
             .join(exits, ["run", "member"])
             .where((F.col("exit_ts") >= F.col("last_ts"))
                    & (F.col("next_start_ts").isNull() | (F.col("exit_ts") <= F.col("next_start_ts"))))
             .groupBy("run", "member", "file", "incarnation", "start_ts", "last_ts")
             .agg(F.min("exit_ts").alias("exit_ts")))
    frames = (t.frames.join(F.broadcast(exits.select("run", "member").distinct()), ["run", "member"])
              .select("run", "member", F.col("ts").alias("f_ts")))
    life = (noted.join(frames, ["run", "member"], "left")
            .where(F.col("f_ts").isNull() | ((F.col("f_ts") >= F.col("start_ts")) & (F.col("f_ts") <= F.col("exit_ts"))))
            .groupBy("run", "file", "incarnation", "last_ts")
            .agg(F.max("f_ts").alias("f_ts"))
            .select("run", "file", "incarnation", F.greatest("last_ts", F.coalesce("f_ts", "last_ts")).alias("life_ts")))
    return inc.join(life, ["run", "file", "incarnation"], "left")


def load_first(t: Tables) -> Tables:
    """The first wave of derived tables (see :data:`FIRST_WAVE`) over ``t``'s inputs."""
    t.events_inc = with_incarnation(t.events)
    ev = t.events
    seen = (ev.groupBy("run").agg(F.max("ts").alias("seen_ts"))
            .unionByName(t.frames.groupBy("run").agg(F.max("ts").alias("seen_ts")))
            .groupBy("run").agg(F.max("seen_ts").alias("seen_ts")))
    t.run_end = (t.cells.select("run", "end_ts").join(seen, "run", "left")
                 .select("run", F.coalesce("end_ts", "seen_ts", F.lit(0.0)).alias("run_end_ts")))

    inc = (t.events_inc.groupBy("run", "member", "file", "incarnation")
           .agg(F.min("ts").alias("start_ts"), F.max("ts").alias("last_ts"),
                F.min(F.when(F.col("event") == "stopped", F.col("ts"))).alias("stopped_ts"),
                F.max(F.when(F.col("event") == "error", F.col("fatal").cast("int"))).alias("had_fatal")))
    w = Window.partitionBy("run", "file").orderBy("incarnation")
    inc = inc.withColumn("next_start_ts", F.lead("start_ts").over(w))
    kills = t.nemesis.where((F.col("fault") == "kill") & (F.col("phase") == "invoke")).select(
        "run", F.col("target").alias("member"), F.col("ts").alias("kill_ts"))
    inc = (inc.join(kills, ["run", "member"], "left")
           .withColumn("kill_ts", F.when((F.col("kill_ts") >= F.col("last_ts"))
                                         & (F.col("next_start_ts").isNull() | (F.col("kill_ts") <= F.col("next_start_ts"))),
                                         F.col("kill_ts")))
           .groupBy("run", "member", "file", "incarnation", "start_ts", "last_ts", "stopped_ts", "had_fatal",
                    "next_start_ts")
           .agg(F.min("kill_ts").alias("kill_ts"))
           .join(t.run_end, "run", "left"))
    inc = _with_exit_notes(t, inc)
    inc = inc.withColumn("end_ts", F.coalesce("stopped_ts", "kill_ts", "life_ts", "next_start_ts",
                                              F.greatest("run_end_ts", "last_ts")))
    inc = inc.withColumn("end_kind", F.when(F.col("stopped_ts").isNotNull(), "stopped")
                         .when(F.col("kill_ts").isNotNull(), "killed")
                         .when(F.col("life_ts").isNotNull(), "crashed")
                         .when(F.col("next_start_ts").isNotNull(), "restarted").otherwise("run-end")).drop("life_ts")
    t.incarnations = inc.drop("run_end_ts")

    t.member_ids = (t.frames.where(F.col("member_id").isNotNull() & (F.col("member_id") != ""))
                    .groupBy("run", "member_id").agg(F.first("member").alias("member")))
    t.partitions = (t.topics.where(F.col("partitions") > 0).select("run", "topic", F.explode(F.sequence(F.lit(0), F.col("partitions") - 1)).alias("partition"))
                    .where(F.col("partition").isNotNull()))
    return t


def load_second(t: Tables) -> Tables:
    """The tables built on the first wave (ownership, generations, leader assignments)."""
    ev = t.events_inc
    tp_ev = (ev.where(F.col("event").isin("assigned", "revoked", "lost"))
             .select("run", "member", "file", "incarnation", "line", "ts", "event", F.explode("partitions").alias("tp"))
             .select("*", "tp.topic", "tp.partition").drop("tp"))
    wtp = Window.partitionBy("run", "file", "incarnation", "topic", "partition").orderBy("line")
    is_close = F.col("event") != "assigned"
    # The next close after an open: the latest close seen walking backwards (a growing frame, computed
    # incrementally; a frame "1 .. unbounded following" would be recomputed per row).
    back = (Window.partitionBy("run", "file", "incarnation", "topic", "partition").orderBy(F.col("line").desc())
            .rowsBetween(Window.unboundedPreceding, 0))
    tp_ev = (tp_ev.withColumn("prev_event", F.lag("event").over(wtp))
             .withColumn("close_ts", F.last(F.when(is_close, F.col("ts")), ignorenulls=True).over(back))
             .withColumn("close_event", F.last(F.when(is_close, F.col("event")), ignorenulls=True).over(back)))
    opens = tp_ev.where((F.col("event") == "assigned") & (F.col("prev_event").isNull() | (F.col("prev_event") != "assigned")))
    own = opens.join(t.incarnations.select("run", "file", "incarnation", F.col("end_ts").alias("inc_end_ts"), "end_kind"),
                     ["run", "file", "incarnation"], "left")
    own = own.select(
        "run", "member", "incarnation", "topic", "partition", F.col("ts").alias("start_ts"),
        F.least("close_ts", "inc_end_ts").alias("end_ts"),
        F.when(F.col("close_ts").isNotNull() & (F.col("close_ts") <= F.col("inc_end_ts")), F.col("close_event"))
        .otherwise(F.col("end_kind")).alias("end_reason"))
    t.ownership = own

    jr = t.frames.where((F.col("api") == "JoinGroup") & (F.col("direction") == "response")
                        & (F.coalesce("error_code", F.lit(0)) == 0) & F.col("generation").isNotNull())
    # An empty leader is the KIP-848 classic bridge's answer (no member leads a consumer group), never a
    # classic leader: it is not counted, so a number the bridge reuses keeps its classic leader.
    leader = F.when(F.col("leader") != "", F.col("leader"))
    gens = jr.groupBy("run", "generation").agg(
        F.first(leader, ignorenulls=True).alias("leader_id"), F.countDistinct(leader).alias("n_leaders"),
        F.array_sort(F.collect_set(leader)).alias("leader_ids"),
        F.first("protocol_name", ignorenulls=True).alias("protocol_name"), F.min("ts").alias("join_ts"),
        F.max("n_members").alias("n_members"),
        F.collect_set("member").alias("joined"))
    gens = gens.join(t.member_ids.select("run", F.col("member_id").alias("leader_id"), F.col("member").alias("leader")),
                     ["run", "leader_id"], "left")
    gens = gens.join(t.members.select("run", F.col("member").alias("leader"), F.col("kind").alias("leader_kind")),
                     ["run", "leader"], "left")
    wg = Window.partitionBy("run").orderBy("generation")
    t.generations = (gens.withColumn("cooperative", is_cooperative(F.col("protocol_name")))
                     .withColumn("next_join_ts", F.lead("join_ts").over(wg)))

    la = t.assignments.where(F.col("source") == "leader")
    t.leader_assignments = la.join(
        t.member_ids.select("run", F.col("member_id").alias("subject_member_id"), F.col("member").alias("subject")),
        ["run", "subject_member_id"], "left")
    return t


#: How the derived tables are built, wave by wave: (the tables of the wave, what builds them on ``t``).
WAVES = ((FIRST_WAVE, load_first), (SECOND_WAVE, load_second))
