"""What the report draws, read back from the judged tables (``out_dir/tables``).

``timelines(out_dir)`` -> {run: {"ownership": [...], "faults": [...],
"generations": [...]}}: ownership intervals per partition (member, start,
end, how it ended), nemesis entries, and generations (join time, leader,
protocol). At most ``limit`` intervals per run are returned (the longest
first is not needed: the earliest are kept, and ``truncated`` says so).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from conformance.pipeline.session import get_session


def timelines(out_dir: Path, spark_master: str | None = None, limit: int = 4000) -> dict[str, dict]:
    spark = get_session(spark_master)
    tables = Path(out_dir) / "tables"
    out: dict[str, dict] = defaultdict(lambda: {"ownership": [], "faults": [], "generations": [], "truncated": False})
    own = spark.read.parquet(str(tables / "ownership"))
    for r in own.orderBy("run", "start_ts").select("run", "member", "topic", "partition", "start_ts", "end_ts",
                                                    "end_reason").collect():
        cell = out[r["run"]]
        if len(cell["ownership"]) >= limit:
            cell["truncated"] = True
            continue
        cell["ownership"].append({"member": r["member"], "topic": r["topic"], "partition": r["partition"],
                                  "start": r["start_ts"], "end": r["end_ts"], "ended_by": r["end_reason"]})
    for r in spark.read.parquet(str(tables / "nemesis")).orderBy("run", "ts").collect():
        out[r["run"]]["faults"].append({"ts": r["ts"], "fault": r["fault"], "target": r["target"], "phase": r["phase"]})
    for r in (spark.read.parquet(str(tables / "generations")).orderBy("run", "generation")
              .select("run", "generation", "join_ts", "leader", "leader_kind", "protocol_name").collect()):
        out[r["run"]]["generations"].append({"generation": r["generation"], "ts": r["join_ts"], "leader": r["leader"],
                                             "leader_kind": r["leader_kind"], "protocol": r["protocol_name"]})
    return dict(out)
