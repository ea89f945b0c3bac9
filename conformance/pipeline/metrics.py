"""Per-cell metrics: a verdict's ``metrics`` (:mod:`conformance.pipeline.verdicts`).

- ``generations``: generations formed (successful JoinGroup responses).
- ``rebalances``: rebalances, and ``rounds``: generations per rebalance; a
  generation that follows a cooperative generation after which some member
  revoked partitions is that rebalance's follow-up round (KIP-429), not a new
  rebalance. So ``rebalances == len(rounds)`` and ``generations == sum(rounds)``.
- ``convergence``: per fault (nemesis invoke), ``{fault, target, ts, ms}``:
  ``ms`` from the fault to the last generation of the first rebalance after it
  (and before the next fault); None when no rebalance followed it (a static
  member back in time, a pause shorter than the session).
- ``pause_ms``: per member with a gap longer than a heartbeat between two of
  its consumed batches, the longest such gap that overlaps a rebalance (0 when
  none does). Idle time counts too: compare members of one run, whose
  producer wrote throughout.
- ``duplicates``: re-consumed records; ``duplicates_by_generation``: by the
  generation in force when they were consumed again; ``duplicates_by_cause``:
  by what D3 attributes them to: ``fault:<name>[+<name>...]`` (a fault in the
  window, which takes precedence: a fault is what starts its rebalance),
  ``rebalance`` (a new generation in between), else ``unexplained`` (D3 fails).
- ``leaders``: generations led, per member kind; ``protocol``: of the final
  generation (else the manifest's expectation).
"""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import Window
from pyspark.sql import functions as F

from conformance import config
from conformance.pipeline.checks.common import timing
from conformance.pipeline.checks.delivery import duplicates
from conformance.pipeline.derived import Tables


def compute(t: Tables) -> dict[str, dict]:
    # Consumption gaps longer than a heartbeat, per member.
    w = Window.partitionBy("run", "file", "incarnation").orderBy("line")
    gap_rows = (t.events_inc.where(F.col("event") == "consumed").select("run", "member", "file", "incarnation", "line", "ts")
            .withColumn("prev_ts", F.lag("ts").over(w)).join(timing(t.cells).select("run", "heartbeat_ms"), "run")
            .where(F.col("ts") - F.col("prev_ts") > F.col("heartbeat_ms")).select("run", "member", "prev_ts", "ts"))
    tm_rows, gen_rows, revoke_rows, fault_rows, gaps, dup_rows = t.collect_many(
        timing(t.cells), t.generations.select("run", "generation", "join_ts", "leader_kind", "protocol_name"),
        t.events.where(F.col("event") == "revoked").select("run", "ts"),
        t.nemesis.where(F.col("phase") == "invoke").select("run", "ts", "fault", "target"), gap_rows,
        duplicates(t).groupBy("run", "after_generation", _cause().alias("cause")).agg(F.sum("dups").alias("n")))
    tm = {r["run"]: r for r in tm_rows}
    out: dict[str, dict] = {run: {"generations": 0, "rebalances": 0, "rounds": [], "leaders": {}, "convergence": [],
                                  "pause_ms": {}, "duplicates": 0, "duplicates_by_generation": {},
                                  "duplicates_by_cause": {}, "protocol": tm[run]["expected_protocol"]} for run in tm}
    gens = defaultdict(list)
    for r in gen_rows:
        gens[r["run"]].append(r)
    bursts: dict[str, list[tuple[float, float]]] = {}
    revokes: dict[str, list[float]] = defaultdict(list)
    for r in revoke_rows:
        revokes[r["run"]].append(r["ts"])
    for run, gs in gens.items():
        if run not in out:
            continue
        gs.sort(key=lambda r: r["generation"])
        m = out[run]
        m["generations"] = len(gs)
        leaders: dict[str, int] = defaultdict(int)
        for g in gs:
            leaders[g["leader_kind"] or "unknown"] += 1
        m["leaders"] = dict(leaders)
        final = gs[-1]["protocol_name"]
        m["protocol"] = "cooperative" if final in config.COOPERATIVE_ASSIGNORS else "eager"
        m["protocol_name"] = final
        spans: list[list[float]] = []
        rounds: list[int] = []
        prev = None
        for g in sorted(gs, key=lambda r: r["join_ts"]):
            follow_up = (prev is not None and prev["protocol_name"] in config.COOPERATIVE_ASSIGNORS
                         and any(prev["join_ts"] < ts < g["join_ts"] for ts in revokes.get(run, ())))
            prev = g
            if spans and follow_up:
                spans[-1][1] = g["join_ts"]
                rounds[-1] += 1
            else:
                spans.append([g["join_ts"], g["join_ts"]])
                rounds.append(1)
        m["rounds"] = rounds
        m["rebalances"] = len(rounds)
        bursts[run] = [(a, b) for a, b in spans]
    faults = defaultdict(list)
    for r in fault_rows:
        faults[r["run"]].append(r)
    for run, fs in faults.items():
        if run not in out:
            continue
        fs.sort(key=lambda r: r["ts"])
        for i, f in enumerate(fs):
            nxt = fs[i + 1]["ts"] if i + 1 < len(fs) else float("inf")
            after = [b for b in bursts.get(run, []) if f["ts"] <= b[0] < nxt]
            out[run]["convergence"].append({"fault": f["fault"], "target": f["target"], "ts": f["ts"],
                                            "ms": round(after[0][1] - f["ts"], 1) if after else None})
    for run, m in out.items():
        m["pause_ms"] = {name: 0.0 for name in sorted({g["member"] for g in gaps if g["run"] == run})}
    for g in gaps:
        for a, b in bursts.get(g["run"], []):
            if g["prev_ts"] <= b and g["ts"] >= a:
                pm = out[g["run"]]["pause_ms"]
                pm[g["member"]] = max(pm.get(g["member"], 0.0), round(g["ts"] - g["prev_ts"], 1))
    for r in dup_rows:
        if r["run"] not in out:
            continue
        m, n = out[r["run"]], int(r["n"])
        m["duplicates"] += n
        gen = str(r["after_generation"]) if r["after_generation"] is not None else "none"
        m["duplicates_by_generation"][gen] = m["duplicates_by_generation"].get(gen, 0) + n
        m["duplicates_by_cause"][r["cause"]] = m["duplicates_by_cause"].get(r["cause"], 0) + n
    return out


def _cause():
    """What a duplicate is attributed to (see the module docstring), over :func:`duplicates`' rows."""
    return (F.when(F.col("by_fault"), F.concat(F.lit("fault:"), F.array_join(F.array_sort("faults"), "+")))
            .when(F.col("by_rebalance"), F.lit("rebalance")).otherwise(F.lit("unexplained")))
