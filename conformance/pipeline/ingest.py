"""Ingestion: run directories -> typed input tables (DataFrames; :func:`write_tables` writes them
as Parquet under ``out_dir/tables``).

Input: run directories (:mod:`conformance.rundir`; histories per :mod:`conformance.history`).
The small inputs (manifest, nemesis log, wire capture) are read in Python; the
wire's embedded bytes are decoded there with :mod:`conformance.protocol`
(:mod:`conformance.pipeline.wire`) and staged as JSON lines. The histories,
which grow with the run, are read by Spark itself (text -> line numbers ->
``from_json`` -> validation), so they scale with the cluster.

Tables (every one carries ``run``, the cell's run id):

- ``cells``, ``members``, ``topics``: from manifest.json, read by
  :mod:`conformance.pipeline.manifest` (a wrong-typed field is a malformed
  line 0 of the manifest, never an abort).
- ``nemesis``: faults (:class:`conformance.nemesis.NemesisLog`).
- ``frames``: every wire frame's envelope; ``subscriptions`` (JoinGroup
  request protocols and the leader's view of members, decoded);
  ``assignments`` (leader SyncGroup requests and members' SyncGroup
  responses, decoded); ``commits`` (OffsetCommit partitions with the
  response's error code); ``heartbeats`` (ConsumerGroupHeartbeat frames,
  KIP-848: member epochs, owned and assigned partitions, topic ids named by
  the manifest's ``topic_ids``).
- ``events``: valid history lines with ``file`` and ``line``, an increasing
  position within the file that orders its lines (not the line number:
  computing that would shuffle every line; malformed lines get exact ones).
  ``incarnation`` is added on reading (:func:`with_incarnation`). Produced and
  consumed records are its ``produced`` / ``consumed`` rows (one per batch:
  topic, partition, first and last offset, count); they are not copied into
  tables of their own, which at 10 million events would write half the events
  again.
- ``malformed``: every line that could not be used, with file and line; every input a judged cell
  cannot do without that is missing (line 0); and a producer that stopped acknowledging
  (:mod:`conformance.pipeline.producer`, which reads the producer's history in Python: a few
  lines a second, not the members' millions).

Guarantees: a malformed line never aborts ingestion and is never dropped
silently; it lands in ``malformed``. A run directory whose manifest cannot be
read still gets a cell (scenario "unknown") so that its verdict says why.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote, urlsplit

from conformance.history import COMMON_FIELDS, EVENT_FIELDS
from conformance.members.kinds import member_fetch_max_wait_ms
from conformance.nemesis import FAULTS, PHASES
from conformance.pipeline import producer, schemas
from conformance.pipeline.manifest import TIMING_FIELDS, read_manifest
from conformance.pipeline.wire import decode_wire


def find_run_dirs(roots: list[Path]) -> list[Path]:
    """Every directory under ``roots`` (recursively) holding a manifest.json, sorted."""
    found: set[Path] = set()
    for root in roots:
        root = Path(root)
        if (root / "manifest.json").is_file():
            found.add(root.resolve())
        if root.is_dir():
            found.update(p.parent.resolve() for p in root.rglob("manifest.json"))
    return sorted(found)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass
class Staged:
    """Python-side rows for one batch of runs, ready to be written as JSON lines."""

    cells: list[dict]
    members: list[dict]
    topics: list[dict]
    nemesis: list[dict]
    frames: list[dict]
    subscriptions: list[dict]
    assignments: list[dict]
    commits: list[dict]
    heartbeats: list[dict]
    epoch_ends: list[dict]
    malformed: list[dict]
    files: list[dict]
    run_ids: dict[str, str]   # run dir path -> run id


def stage(run_dirs: list[Path]) -> Staged:
    """Read manifests, nemesis logs and wire captures; decode; never raise on bad input."""
    st = Staged([], [], [], [], [], [], [], [], [], [], [], [], {})
    for run_dir in run_dirs:
        run_dir = Path(run_dir)
        m, problems = read_manifest(run_dir)
        run = m["run_id"] or run_dir.name
        if run in st.run_ids.values():
            run = f"{run}@{run_dir}"
        st.run_ids[str(run_dir)] = run
        st.malformed += [{"run": run, "file": str(run_dir / "manifest.json"), "line": 0, "problem": problem}
                         for problem in problems]
        timing = m["timing"]
        starts = [s for s in (_num(p.get("start_ts")) for p in m["phases"]) if s is not None]
        st.cells.append({
            "run": run, "scenario": m["scenario"] or "unknown", "broker_version": m["broker_version"] or "unknown",
            "group_id": m["group_id"], "seed": m["seed"], "expected_protocol": m["expected_protocol"],
            **{k: _num(timing.get(k)) for k in TIMING_FIELDS},
            "start_ts": min(starts) if starts else None, "last_fault_ts": _num(m["last_fault_ts"]),
            "end_ts": _num(m["end_ts"]), "leader_rotation": bool(m["leader_rotation"]),
            "complete": m["complete"] is not False,
            "cut_short": (m["cut_short"] or "the manifest says the run did not finish")
            if m["complete"] is False else None,
            "await_timeouts": m["await_timeouts"], "exits": m["exits"], "migration_policy": m["migration_policy"],
        })
        for mem in m["members"]:
            st.members.append({"run": run, "member": mem["name"], "spec": mem["spec"], "kind": mem["kind"],
                               "version": mem["version"], "strategies": list(mem["strategies"] or []),
                               "group_instance_id": mem["group_instance_id"], "faults": list(mem["faults"] or []),
                               "fetch_max_wait_ms": member_fetch_max_wait_ms(mem),
                               "protocol_of_chosen": _protocol_of_chosen(mem["kind"], mem["version"])})
        st.topics += [{"run": run, "topic": topic, "partitions": n} for topic, n in m["topics"].items()]
        _stage_nemesis(run, run_dir / "nemesis.jsonl", st)
        st.malformed += _missing_inputs(run, run_dir, m)
        st.malformed += producer.stalls(run, run_dir, m, [r for r in st.nemesis if r["run"] == run])
        wire_path = run_dir / "wire.jsonl"
        if wire_path.is_file():
            with wire_path.open(encoding="utf-8", errors="replace") as fh:
                rows = decode_wire(run, str(wire_path), fh, m["topic_ids"])
            st.frames += rows.frames
            st.subscriptions += rows.subscriptions
            st.assignments += rows.assignments
            st.commits += rows.commits
            st.heartbeats += rows.heartbeats
            st.epoch_ends += rows.epoch_ends
            st.malformed += rows.malformed
            st.malformed += [{"run": run, "file": str(wire_path), "line": f["line"],
                              "problem": f"tap could not decode frame: {f['undecodable']}"}
                             for f in rows.frames if f.get("undecodable")]
        members_dir = run_dir / "members"
        if members_dir.is_dir():
            for hist in sorted(members_dir.glob("*.jsonl")):
                # Hadoop takes plain paths literally (a percent-encoded URI would not be found).
                st.files.append({"uri": str(hist.resolve()), "run": run, "file": str(hist)})
    return st


def _protocol_of_chosen(kind: str | None, version: str | None) -> bool:
    """Whether ``kind@version`` rebalances by the protocol of the assignor the group chose (the kind
    registry's feature); False for a kind or version the registry does not know."""
    from conformance.members.kinds import has_feature
    try:
        if not kind or not version:
            return False
        return has_feature(kind, version, "protocol-of-chosen-assignor")
    except Exception:   # an unknown kind or an unreadable version: the common (Java) rule applies
        return False


def _missing_inputs(run: str, run_dir: Path, m: dict) -> list[dict]:
    """A malformed row (line 0) for each input a judged cell cannot do without: the wire capture and
    the history of every member the manifest names, each present and not empty, and the nemesis log,
    present (a run without faults still logs each member's start). Judged without them, every wire
    invariant or every check of that member would pass on nothing, and every fault's exemption and
    window would be missing. (The producer's history: :mod:`conformance.pipeline.producer`.)"""
    out = []
    if not (run_dir / "nemesis.jsonl").is_file():
        out.append({"run": run, "file": str(run_dir / "nemesis.jsonl"), "line": 0,
                    "problem": "the nemesis log is missing: no fault, kill or start of the run is known"})
    needed = [(run_dir / "wire.jsonl", "the wire capture")]
    needed += [(run_dir / "members" / f"{mem['name']}.jsonl", f"the history of member {mem['name']}")
               for mem in m["members"]]
    for path, what in needed:
        try:
            empty = path.stat().st_size == 0
        except OSError:
            out.append({"run": run, "file": str(path), "line": 0, "problem": f"{what} is missing: nothing was judged from it"})
            continue
        if empty:
            out.append({"run": run, "file": str(path), "line": 0, "problem": f"{what} is empty: nothing was judged from it"})
    return out


def _stage_nemesis(run: str, path: Path, st: Staged) -> None:
    if not path.is_file():
        return
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                e = json.loads(line)
                if not isinstance(e, dict) or _num(e.get("ts")) is None:
                    raise ValueError("a nemesis entry needs an object with a numeric ts")
                if e.get("fault") not in FAULTS:
                    raise ValueError(f"unknown fault {e.get('fault')!r}; known: {', '.join(sorted(FAULTS))}")
                if e.get("phase") not in PHASES:
                    raise ValueError(f"phase must be {'|'.join(PHASES)}, got {e.get('phase')!r}")
                st.nemesis.append({"run": run, "line": number, "ts": float(e["ts"]), "fault": e["fault"],
                                   "target": str(e.get("target")), "phase": e["phase"],
                                   "details": json.dumps(e.get("details") or {}, sort_keys=True)})
            except ValueError as exc:
                st.malformed.append({"run": run, "file": str(path), "line": number, "problem": str(exc)})


def broadcast(df):
    """``F.broadcast(df)`` (a join hint), unless the session plans joins without broadcasts
    (``autoBroadcastJoinThreshold`` -1: small batches, where each broadcast is a Spark job of its
    own while a one-partition sort-merge join is only more stages of the same job)."""
    from pyspark.sql import functions as F

    if df.sparkSession.conf.get("spark.sql.autoBroadcastJoinThreshold", None) == "-1":
        return df
    return F.broadcast(df)


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, separators=(",", ":")) + "\n")


def _path_of_uri(uri: str) -> str:
    """The local path a file URI names (``file:/a%20b`` -> ``/a b``; '+' stays '+')."""
    return unquote(urlsplit(uri).path)


def _history_problem(F):
    """A Spark column: why a parsed history line is unusable, or null when it is fine."""
    j = F.col("j")
    text = F.trim(F.col("value"))
    checks = [(text == "", F.lit(None).cast("string")),
              (j.isNull() | ~text.startswith("{") | ~text.endswith("}"), F.lit("not a JSON object (or a truncated line)"))]
    for key in COMMON_FIELDS:
        checks.append((j[key].isNull(), F.lit(f"missing or invalid field {key!r}")))
    checks.append((~j["event"].isin(*EVENT_FIELDS), F.concat(F.lit("unknown event "), j["event"])))
    for kind, fields in EVENT_FIELDS.items():
        for key in fields:
            if key in ("error",):  # committed.error is null on success: presence is not checkable after parsing
                continue
            checks.append(((j["event"] == kind) & j[key].isNull(), F.lit(f"{kind} event lacks valid {key!r}")))
    checks.append((j["protocol"].isNotNull() & ~j["protocol"].isin("eager", "cooperative", "consumer"),
                   F.concat(F.lit("protocol must be eager|cooperative|consumer, got "), j["protocol"])))
    checks.append((j["event"].isin("consumed", "produced")
                   & ((j["first_offset"] > j["last_offset"]) | (j["count"] < 1)),
                   F.lit("offsets must satisfy first <= last, count >= 1")))
    checks.append((j["event"].isin("assigned", "revoked", "lost")
                   & F.exists(j["partitions"], lambda tp: (F.size(tp) != 2) | tp[1].cast("int").isNull()),
                   F.lit("partitions must be [[topic, partition], ...]")))
    checks.append((j["event"].isin("committed")
                   & F.exists(j["offsets"], lambda o: (F.size(o) != 3) | o[2].cast("long").isNull()),
                   F.lit("offsets must be [[topic, partition, offset], ...]")))
    # One flat CASE WHEN (first matching problem wins): nested CASEs grow past the code
    # generator's method limit and fall back to slow interpretation.
    expr = F.when(*checks[0])
    for cond, msg in checks[1:]:
        expr = expr.when(cond, msg)
    return expr


def read_histories(spark, files: list[dict], tmp: Path, keep: Callable):
    """(events, malformed) DataFrames from every member history file, by Spark.

    The text is read and parsed once: the parsed lines are ``keep(lines)``
    (e.g. :func:`conformance.pipeline.derived.pin`), and nothing runs before
    this returns: the parse happens when a later job first needs the lines.
    None for events when there is no history.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    files_path = tmp / "files.jsonl"
    if not files:
        _write_jsonl(files_path, files)
        return None, spark.read.schema(schemas.MALFORMED).json(str(files_path)).limit(0)
    text = spark.read.text([f["uri"] for f in files])
    # input_file_name() names each line's file as the scan listed it: a URI (space -> %20, '+'
    # kept). The scan's own list (inputFiles(), no job) gives the same strings, decoded here once
    # per file, so lines meet their files on the string itself. Should a listed name not decode
    # to a path asked for, every line's name is decoded instead (protecting '+' from form decoding).
    listed = {_path_of_uri(u): u for u in text.inputFiles()}
    if all(f["uri"] in listed for f in files):
        files = [{**f, "uri": listed[f["uri"]]} for f in files]
        line_uri = F.input_file_name()
    else:
        line_uri = F.regexp_replace(F.url_decode(F.regexp_replace(F.input_file_name(), "\\+", "%2B")), "^file:(//)?", "")
    _write_jsonl(files_path, files)
    files_df = spark.read.schema(schemas.FILES).json(str(files_path))
    raw = (text.withColumn("uri", line_uri)
           .withColumn("_id", F.monotonically_increasing_id())
           .withColumn("_part", F.spark_partition_id()))
    # No shuffle of the text: ``_id`` increases with the line within a file (Spark reads each split in
    # order and gives splits of a file increasing partition indices), so it orders the events. Exact
    # line numbers are needed only for malformed lines: per (file, split) the first id and the line
    # count give each line's number as id - first id + lines in the file's earlier splits + 1.
    # explode(array(from_json)) parses each line once: referenced directly, the optimizer would
    # re-parse the line for every field the validation reads (measured: 3x slower).
    # The files (a row each) are broadcast even in a small batch, where :func:`broadcast` drops
    # hints: a sort-merge join would shuffle every history line (two more stages in the parse job).
    parsed = (raw.join(F.broadcast(files_df), "uri")
              .select("_id", "_part", "run", "file", "value",
                      F.explode(F.array(F.from_json("value", schemas.HISTORY_JSON, {"mode": "PERMISSIVE"}))).alias("j")))
    parsed = parsed.select("_id", "_part", "run", "file", (F.trim("value") == "").alias("_blank"), "j",
                           _history_problem(F).alias("problem"))
    parsed = parsed.withColumn("j", F.when(F.col("problem").isNull(), F.col("j")))
    tp = F.transform(F.col("j.partitions"), lambda a: F.struct(a[0].alias("topic"), a[1].cast("int").alias("partition")))
    offs = F.transform(F.col("j.offsets"), lambda a: F.struct(a[0].alias("topic"), a[1].cast("int").alias("partition"),
                                                             a[2].cast("long").alias("offset")))
    event_columns = [
        "run", "file", F.col("_id").alias("line"), "j.ts", "j.member", "j.client", "j.client_version",
        "j.event", "j.member_id", "j.generation", "j.protocol", "j.reason", tp.alias("partitions"), "j.topic",
        F.col("j.partition").cast("int").alias("partition"), "j.first_offset", "j.last_offset", "j.count",
        offs.alias("offsets"), "j.error", "j.fatal", "j.poll_ts"]
    kind = F.when(F.col("_blank"), "blank").when(F.col("problem").isNotNull(), "bad").otherwise("good")
    lines = parsed.select(*event_columns, "_part", "problem", kind.alias("kind"))
    events_schema = StructType(lines.schema.fields[:len(event_columns)])
    lines = keep(lines)
    splits = lines.groupBy("run", "file", "_part").agg(F.min("line").alias("_first"), F.count("*").alias("_n"))
    splits = splits.withColumn("_before", F.coalesce(F.sum("_n").over(
        Window.partitionBy("run", "file").orderBy("_first").rowsBetween(Window.unboundedPreceding, -1)), F.lit(0)))
    malformed = (lines.where(F.col("kind") == "bad")
                 .join(broadcast(splits), ["run", "file", "_part"])
                 .select("run", "file", (F.col("line") - F.col("_first") + F.col("_before") + 1).alias("line"), "problem"))
    return lines.where(F.col("kind") == "good").select(*events_schema.fieldNames()), malformed


def with_incarnation(events):
    """``events`` plus ``incarnation``: the number of ``started`` lines at or before each line of its file.

    Computed from the (small) table of ``started`` lines with a broadcast
    join, so the events are never shuffled; lines before the first
    ``started`` are incarnation 0.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    starts = events.where(F.col("event") == "started").select("run", "file", F.col("line").alias("_s"))
    w = Window.partitionBy("run", "file").orderBy("_s")
    bounds = (starts.withColumn("incarnation", F.row_number().over(w).cast("long"))
              .withColumn("_next", F.lead("_s").over(w)))
    first = bounds.where(F.col("incarnation") == 1).select("run", "file", F.lit(-1).cast("long").alias("_s"),
                                                           F.lit(0).cast("long").alias("incarnation"),
                                                           F.col("_s").alias("_next"))
    bounds = bounds.unionByName(first)
    joined = events.join(broadcast(bounds), ["run", "file"], "left").where(
        F.col("_s").isNull() | ((F.col("line") >= F.col("_s")) & (F.col("_next").isNull() | (F.col("line") < F.col("_next")))))
    return joined.withColumn("incarnation", F.coalesce("incarnation", F.lit(0).cast("long"))).drop("_s", "_next")


TABLE_NAMES = ("cells", "members", "topics", "nemesis", "frames", "subscriptions", "assignments", "commits",
               "events", "malformed", "heartbeats", "epoch_ends")


def build(spark, run_dirs: list[Path], out_dir: Path, keep: Callable) -> tuple[dict, dict[str, str]]:
    """The typed input tables as DataFrames (name -> DataFrame, in TABLE_NAMES order) and the run id
    of each run directory. Nothing is written under ``out_dir/tables`` yet (:func:`write_tables`
    does); ``out_dir/staging`` holds the small tables as JSON lines. ``keep``: see :func:`read_histories`.
    """
    out_dir = Path(out_dir)
    tables_dir = out_dir / "tables"
    tmp = out_dir / "staging"
    for d in (tables_dir, tmp):
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
    st = stage(run_dirs)
    staged = {
        "cells": (st.cells, schemas.CELLS), "members": (st.members, schemas.MEMBERS),
        "topics": (st.topics, schemas.TOPICS), "nemesis": (st.nemesis, schemas.NEMESIS),
        "frames": (st.frames, schemas.FRAMES), "subscriptions": (st.subscriptions, schemas.SUBSCRIPTIONS),
        "assignments": (st.assignments, schemas.ASSIGNMENTS), "commits": (st.commits, schemas.COMMITS),
        "heartbeats": (st.heartbeats, schemas.HEARTBEATS), "epoch_ends": (st.epoch_ends, schemas.EPOCH_ENDS),
    }
    tables: dict = {}
    for name, (rows, schema) in staged.items():
        src = tmp / f"{name}.jsonl"
        _write_jsonl(src, rows)
        tables[name] = spark.read.schema(schema).json(str(src))
    events, hist_malformed = read_histories(spark, st.files, tmp, keep)
    tables["events"] = spark.createDataFrame([], _events_schema()) if events is None else events
    py_malformed = tmp / "malformed.jsonl"
    _write_jsonl(py_malformed, st.malformed)
    tables["malformed"] = spark.read.schema(schemas.MALFORMED).json(str(py_malformed)).unionByName(hist_malformed)
    return tables, dict(st.run_ids)


#: Tables written as one Parquet file each (small; the events keep their partitions).
_ONE_FILE = ("cells", "members", "topics", "nemesis", "frames", "subscriptions", "assignments", "commits", "malformed",
             "heartbeats", "epoch_ends")


def write_tables(tables: dict, tables_dir: Path) -> dict[str, str]:
    """Write DataFrames as Parquet under ``tables_dir/<name>``, one after the other; return name -> path."""
    paths = {name: str(Path(tables_dir) / name) for name in tables}
    for name, df in tables.items():
        (df.coalesce(1) if name in _ONE_FILE else df).write.mode("overwrite").parquet(paths[name])
    return paths


def _events_schema():
    from pyspark.sql.types import (
        ArrayType,
        BooleanType,
        DoubleType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    offs = ArrayType(StructType([StructField("topic", StringType()), StructField("partition", IntegerType()),
                                 StructField("offset", LongType())]))
    return StructType([
        StructField("run", StringType()), StructField("file", StringType()), StructField("line", LongType()),
        StructField("ts", DoubleType()), StructField("member", StringType()), StructField("client", StringType()),
        StructField("client_version", StringType()), StructField("event", StringType()),
        StructField("member_id", StringType()), StructField("generation", LongType()),
        StructField("protocol", StringType()), StructField("reason", StringType()),
        StructField("partitions", schemas.TPS), StructField("topic", StringType()),
        StructField("partition", IntegerType()), StructField("first_offset", LongType()),
        StructField("last_offset", LongType()), StructField("count", LongType()), StructField("offsets", offs),
        StructField("error", StringType()), StructField("fatal", BooleanType()),
        StructField("poll_ts", DoubleType()),
    ])
