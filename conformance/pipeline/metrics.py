"""Per-cell metrics (contract section 7 ``metrics`` plus a few named extras).

- ``rebalances``: generations formed (successful JoinGroup responses).
- ``rounds``: generations per rebalance; a generation that follows a
  cooperative generation after which some member revoked partitions is that
  rebalance's follow-up round (KIP-429), not a new rebalance.
- ``convergence_ms``: per fault (nemesis invoke), the time from the fault to
  the last generation of the first rebalance after it (and before the next fault).
- ``pause_ms``: per member, the longest gap between its consumed batches that
  overlaps a rebalance (0 when it never stopped consuming across one).
- ``duplicates`` and ``duplicates_by_generation``: re-consumed records, by the
  generation in force when they were consumed again (D3's attribution).
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
    gaps = (t.events_inc.where(F.col("event") == "consumed").select("run", "member", "file", "incarnation", "line", "ts")
            .withColumn("prev_ts", F.lag("ts").over(w)).join(timing(t.cells).select("run", "heartbeat_ms"), "run")
            .where(F.col("ts") - F.col("prev_ts") > F.col("heartbeat_ms")).select("run", "member", "prev_ts", "ts"))
    tm_rows, gen_rows, revoke_rows, fault_rows, gaps, dup_rows = t.collect_many(
        timing(t.cells), t.generations.select("run", "generation", "join_ts", "leader_kind", "protocol_name"),
        t.events.where(F.col("event") == "revoked").select("run", "ts"),
        t.nemesis.where(F.col("phase") == "invoke").select("run", "ts", "fault", "target"), gaps,
        duplicates(t).groupBy("run", "after_generation").agg(F.sum("dups").alias("n")))
    tm = {r["run"]: r for r in tm_rows}
    out: dict[str, dict] = {run: {"rebalances": 0, "rounds": [], "leaders": {}, "convergence_ms": [], "pause_ms": {},
                                  "duplicates": 0, "duplicates_by_generation": {},
                                  "protocol": tm[run]["expected_protocol"]} for run in tm}
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
        m["rebalances"] = len(gs)
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
            if after:
                out[run]["convergence_ms"].append(round(after[0][1] - f["ts"], 1))
    for run, m in out.items():
        m["pause_ms"] = {name: 0.0 for name in sorted({g["member"] for g in gaps if g["run"] == run})}
    for g in gaps:
        for a, b in bursts.get(g["run"], []):
            if g["prev_ts"] <= b and g["ts"] >= a:
                pm = out[g["run"]]["pause_ms"]
                pm[g["member"]] = max(pm.get(g["member"], 0.0), round(g["ts"] - g["prev_ts"], 1))
    for r in dup_rows:
        if r["run"] in out:
            out[r["run"]]["duplicates"] += int(r["n"])
            key = str(r["after_generation"]) if r["after_generation"] is not None else "none"
            out[r["run"]]["duplicates_by_generation"][key] = int(r["n"])
    return out
