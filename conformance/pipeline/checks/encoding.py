"""Encoding invariants E1-E5, judged from the wire capture.

The split for E4: the golden-vector suite (fixtures/golden/, the codec's own
tests) proves that our codec encodes content byte for byte like the real Java
library, every version. The pipeline proves the other half from the wire: a
reference member's JoinGroup metadata equals our canonical re-encoding of its
decoded content. Together: the reference writes what Java would write.

Allowed anomalies:
- E3 unknown userData is a warning (``evidence.severity = "warning"``), not a
  failure: assignors may legitimately carry private data. E3 fails only when
  the bytes around the userData do not decode (that is E1/E2's failure).
- E5 tolerates a heartbeat interval of skew between the wire tap's clock
  and the harness's record of an assignment (both epoch ms, different
  processes): a partition assigned or revoked within that slack of the
  JoinGroup is neither stale nor missing.
- E5 applies only to cooperative members (first strategy cooperative, and a
  cooperative cell): eager members declare what they owned before revoking.
"""

from __future__ import annotations

from pyspark.sql import functions as F

from conformance import config
from conformance.pipeline.checks.common import fmt_tps, timing, tps, violation
from conformance.pipeline.derived import Tables


def check_e1(t: Tables) -> list[dict]:
    bad = t.collect(t.subscriptions.where(F.col("decode_error").isNotNull())
           .groupBy("run", "metadata_hex", "decode_error")
           .agg(F.min("ts").alias("ts"), F.collect_set("member").alias("seen_by"),
                F.first("subject_member_id").alias("subject"), F.first("protocol_name").alias("protocol"),
                F.count("*").alias("frames")))
    return [violation("E1", r["run"], f"subscription ({r['protocol']}) does not decode: {r['decode_error']}",
                      members=r["seen_by"], ts=r["ts"],
                      evidence={"metadata_hex": r["metadata_hex"], "member_id": r["subject"], "frames": r["frames"]})
            for r in bad]


def check_e2(t: Tables) -> list[dict]:
    bad = t.collect(t.assignments.where(F.col("decode_error").isNotNull())
           .groupBy("run", "assignment_hex", "decode_error", "source")
           .agg(F.min("ts").alias("ts"), F.collect_set("member").alias("seen_by"),
                F.first("subject_member_id").alias("subject"), F.first("generation").alias("generation")))
    out = []
    for r in bad:
        where = "sent by the leader" if r["source"] == "leader" else "received"
        out.append(violation("E2", r["run"], f"assignment {where} does not decode: {r['decode_error']}",
                             members=r["seen_by"], generation=r["generation"], ts=r["ts"],
                             evidence={"assignment_hex": r["assignment_hex"], "member_id": r["subject"]}))
    return out


def check_e3(t: Tables) -> list[dict]:
    cols = ["run", "member", "ts", "protocol_name", "userdata_hex", "userdata_note"]
    unknown = t.collect(t.subscriptions.where(F.col("userdata_format") == "unknown").select(*cols, F.lit("subscription").alias("where"))
               .unionByName(t.assignments.where(F.col("userdata_format") == "unknown")
                            .select(*cols, F.lit("assignment").alias("where")))
               .groupBy("run", "userdata_hex", "protocol_name", "where")
               .agg(F.min("ts").alias("ts"), F.collect_set("member").alias("members"),
                    F.first("userdata_note").alias("note")))
    return [violation("E3", r["run"], f"unknown {r['protocol_name']} userData in {r['where']}: {r['userdata_hex']}"
                      + (f" ({r['note']})" if r["note"] else ""), members=r["members"], ts=r["ts"],
                      evidence={"severity": "warning", "userdata_hex": r["userdata_hex"]})
            for r in unknown]


def check_e4(t: Tables) -> list[dict]:
    ref = t.members.where(F.col("kind") == "reference").select("run", "member")
    bad = t.collect(t.subscriptions.where((F.col("source") == "request") & F.col("decode_error").isNull()
                                 & ~F.coalesce("canonical_equal", F.lit(False)))
           .join(ref, ["run", "member"])
           .groupBy("run", "member", "metadata_hex", "protocol_name")
           .agg(F.min("ts").alias("ts"), F.first("canonical_error").alias("err"), F.first("version").alias("version")))
    return [violation("E4", r["run"], f"{r['member']} sent {r['protocol_name']} subscription v{r['version']} bytes that "
                      f"differ from the canonical encoding of the same content"
                      + (f" ({r['err']})" if r["err"] else ""),
                      members=[r["member"]], ts=r["ts"], evidence={"metadata_hex": r["metadata_hex"]})
            for r in bad]


def check_e5(t: Tables) -> list[dict]:
    coop_members = (t.members.where(F.col("strategies")[0].isin(*config.COOPERATIVE_ASSIGNORS))
                    .join(t.cells.where(F.coalesce("expected_protocol", F.lit("cooperative")) == "cooperative")
                          .select("run"), "run").select("run", "member"))
    # Each read more than once below: built once.
    req = t.shared("e5-requests", lambda: t.subscriptions.where(
        (F.col("source") == "request") & F.col("decode_error").isNull() & (F.col("version") >= 1)
        & F.col("protocol_name").isin(*config.COOPERATIVE_ASSIGNORS))
        .join(coop_members, ["run", "member"])
        .join(timing(t.cells).select("run", "heartbeat_ms"), "run")
        .select("run", "member", "line", "ts", "owned", "heartbeat_ms"))
    own = t.ownership.select("run", "member", "topic", "partition", F.col("start_ts").alias("o_start"),
                             F.col("end_ts").alias("o_end"))
    declared = t.shared("e5-declared", lambda: req.select(
        "run", "member", "line", "ts", "heartbeat_ms", F.explode("owned").alias("tp")).select(
        "run", "member", "line", "ts", "heartbeat_ms", "tp.topic", "tp.partition"))
    possibly = (declared.join(own, ["run", "member", "topic", "partition"])
                .where((F.col("o_start") <= F.col("ts") + F.col("heartbeat_ms"))
                       & (F.col("o_end") >= F.col("ts") - F.col("heartbeat_ms")))
                .select("run", "member", "line", "topic", "partition").distinct())
    stale = declared.join(possibly, ["run", "member", "line", "topic", "partition"], "left_anti")
    surely = (req.join(own, ["run", "member"])
              .where((F.col("o_start") <= F.col("ts") - F.col("heartbeat_ms"))
                     & (F.col("o_end") >= F.col("ts") + F.col("heartbeat_ms")))
              .select("run", "member", "line", "ts", "topic", "partition"))
    missing = surely.join(declared.select("run", "member", "line", "topic", "partition"),
                          ["run", "member", "line", "topic", "partition"], "left_anti")
    rows = t.collect(stale.select("run", "member", "line", "ts", "topic", "partition", F.lit("stale").alias("kind"))
            .unionByName(missing.select("run", "member", "line", "ts", "topic", "partition", F.lit("missing").alias("kind")))
            .groupBy("run", "member", "line", "ts", "kind")
            .agg(F.collect_list(F.struct("topic", "partition")).alias("tps")))
    out = []
    for r in rows:
        parts = tps(r["tps"])
        if r["kind"] == "stale":
            msg = f"{r['member']} declared owned {fmt_tps(parts)} in JoinGroup, which its history says it does not own"
        else:
            msg = f"{r['member']} owns {fmt_tps(parts)} per its history but did not declare them in JoinGroup"
        out.append(violation("E5", r["run"], msg, members=[r["member"]], partitions=parts, ts=r["ts"],
                             evidence={"wire_line": r["line"], "kind": r["kind"]}))
    return out
