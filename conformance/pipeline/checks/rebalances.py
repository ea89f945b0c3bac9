"""Rebalance invariant V2: no rebalance storm after the last fault.

V1 judges that the group converges (ownership settles, nobody crashes). A group can converge on
ownership and still rebalance without end: every member rejoining again and again, keeping its
partitions each round. That costs every member a pause per round and is a bug of whoever keeps
starting rounds (a client that rejoins on every metadata refresh, a leader whose assignment makes
a member rejoin at once). V2 counts the generations the group forms after the last fault.

The bound. After the last fault (the manifest's ``last_fault_ts``; the run's start when it had
none) and up to the scenario's end (``end_ts``; teardown, after it, stops members one by one and
is not judged), the group's membership changes ``K`` times:

- once for the last fault itself, when it targets one member (its kill, stop, pause or cut ends in
  the member leaving or rejoining), ``N`` times when it targets the broker or every member (each
  of the ``N`` members may have to rejoin on its own);
- once per member process started after it (an incarnation's ``started`` event: a restart, a new
  member; the producer is not a member).

Each change needs at most two generations in a cooperative group: the round the change starts and,
when that round revoked partitions, the follow-up round that hands them on (KIP-429); an eager or
consumer-protocol group needs fewer (one round per change; a consumer group's bridge generations
follow its epochs, one per target change). So the group forms at most ``2K`` generations; more
is a violation. Generations are the distinct generation ids of successful JoinGroup answers.

Attribution: a round is opened by the first JoinGroup request after the previous generation
formed (of requests in one millisecond, the first name); the member that opened the most rounds
past the bound is named the culprit (ties: none) and every member that opened one is implicated.
"""

from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from conformance.pipeline.checks.common import violation
from conformance.pipeline.derived import Tables

#: What a fault targeting more than one member is written as in the nemesis log.
GROUP_TARGETS = ("broker", "all")


def window(t: Tables):
    """Per run: ``since`` (the last fault, else the start), ``until`` (the scenario's end, else the end
    of observation), ``changes`` (K of the module docstring) and ``bound`` (2K)."""
    cells = t.cells.select("run", "start_ts", "last_fault_ts", "end_ts").join(t.run_end, "run", "left")
    cells = cells.select("run", F.coalesce("last_fault_ts", "start_ts", F.lit(0.0)).alias("since"),
                         F.coalesce("end_ts", "run_end_ts").alias("until"), "last_fault_ts")
    n_members = t.members.groupBy("run").agg(F.count("*").alias("n_members"))
    last_target = (t.nemesis.join(cells.select("run", "last_fault_ts"), "run")
                   .where(F.col("ts") == F.col("last_fault_ts")).groupBy("run")
                   .agg(F.max(F.col("target").isin(*GROUP_TARGETS).cast("int")).alias("group_fault")))
    starts = (t.incarnations.join(t.members.select("run", "member"), ["run", "member"])
              .join(cells, "run").where((F.col("start_ts") > F.col("since")) & (F.col("start_ts") <= F.col("until")))
              .groupBy("run").agg(F.count("*").alias("starts")))
    fault_changes = (F.when(F.col("last_fault_ts").isNull(), 0)
                     .when(F.coalesce("group_fault", F.lit(0)) == 1, F.coalesce("n_members", F.lit(1))).otherwise(1))
    return (cells.join(n_members, "run", "left").join(last_target, "run", "left").join(starts, "run", "left")
            .withColumn("changes", fault_changes + F.coalesce("starts", F.lit(0)))
            .withColumn("bound", 2 * F.col("changes")))


def check_v2(t: Tables) -> list[dict]:
    w = window(t)
    gens = (t.generations.join(w.select("run", "since", "until"), "run")
            .where((F.col("join_ts") > F.col("since")) & (F.col("join_ts") <= F.col("until")))
            .select("run", "generation", "join_ts"))
    # Who opened each round: the first JoinGroup request after the previous generation formed.
    prev = Window.partitionBy("run").orderBy("generation")
    rounds = t.generations.select("run", "generation", "join_ts",
                                  F.lag("join_ts").over(prev).alias("prev_join_ts"))
    reqs = (t.frames.where((F.col("api") == "JoinGroup") & (F.col("direction") == "request"))
            .select("run", F.col("member").alias("opener"), F.col("ts").alias("r_ts")))
    opened = (gens.join(rounds.select("run", "generation", "prev_join_ts"), ["run", "generation"])
              .join(reqs, "run")
              .where((F.col("r_ts") > F.coalesce("prev_join_ts", F.lit(0.0))) & (F.col("r_ts") <= F.col("join_ts")))
              # Ties (two requests in one millisecond) go to the first name: the same on any partitioning.
              .groupBy("run", "generation").agg(F.min(F.struct("r_ts", "opener"))["opener"].alias("opener")))
    per_run = (gens.join(opened, ["run", "generation"], "left").groupBy("run")
               .agg(F.count("*").alias("n"), F.array_sort(F.collect_list("generation")).alias("generations"),
                    F.collect_list("opener").alias("openers"), F.min("join_ts").alias("first_ts"))
               .join(w, "run").where(F.col("n") > F.col("bound")))
    t0 = t.cells.select("run", F.col("start_ts").alias("t0"))
    out = []
    for r in t.collect(per_run.join(t0, "run", "left")):
        counts: dict[str, int] = {}
        for m in r["openers"]:
            counts[m] = counts.get(m, 0) + 1
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        culprit = ranked[0][0] if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]) else None
        gens_s = ", ".join(str(g) for g in r["generations"][:12]) + (" ..." if len(r["generations"]) > 12 else "")
        opened_s = ", ".join(f"{m} {n}" for m, n in ranked) or "nobody on the wire"
        t0v = r["t0"] or 0.0
        since = (f"after the last fault (+{(r['since'] - t0v) / 1000:.1f} s)" if r["last_fault_ts"] is not None
                 else "in a run without faults")
        out.append(violation(
            "V2", r["run"],
            f"the group formed {r['n']} generations {since} where its {r['changes']} membership change(s) need at "
            f"most {r['bound']}: generations {gens_s}; rounds opened by {opened_s}",
            members=[m for m, _ in ranked], culprit=culprit, ts=r["first_ts"],
            evidence={"generations": r["n"], "bound": r["bound"], "changes": r["changes"], "starts": r["starts"] or 0,
                      "opened": dict(ranked)}))
    return out
