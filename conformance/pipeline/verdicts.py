"""``judge``: run directories -> one CellVerdict per cell (contract section 7).

All cells of a call are ingested into one set of tables and every check runs
once over all of them (the number of Spark jobs does not grow with cells).

Verdict per invariant: "pass" (no violation, or only warnings), "fail"
(violations), "unknown" (the check raised: its error is kept; never a pass).
Each cell also gets ``verdict``: "fail" if any invariant failed, else
"unknown" if any was unknown, else "malformed" if input lines could not be
used (listed in ``malformed`` with file and line), else "pass". Only "pass"
passes a cell.

Outputs under ``out_dir``: ``tables/`` (Parquet: the input tables and the
derived ``ownership``, ``incarnations``, ``generations``) and
``verdicts.json``.
"""

from __future__ import annotations

import json
import os
import traceback
from pathlib import Path

from conformance.pipeline import derived, ingest, metrics
from conformance.pipeline.checks import CATALOG
from conformance.pipeline.parallel import run_all
from conformance.pipeline.session import get_session


def _status(violations: list[dict]) -> str:
    return "fail" if any(v["evidence"].get("severity") != "warning" for v in violations) else "pass"


def _materialize(spark, t: derived.Tables, tables_dir: Path) -> None:
    """Write the shared derived tables once and read them back (cuts recomputation).

    Two waves: the tables the others depend on, then the rest, each wave's
    writes running concurrently.
    """
    for wave in (("run_end", "incarnations", "member_ids", "partitions"),
                 ("ownership", "generations", "leader_assignments")):
        if wave[0] == "ownership":
            t2 = derived.load_second(t)
            for name in wave:
                setattr(t, name, getattr(t2, name))
        tasks = [lambda name=name: getattr(t, name).write.mode("overwrite").parquet(str(tables_dir / name)) for name in wave]
        for result in run_all(tasks):
            if isinstance(result, BaseException):
                raise result
        for name in wave:
            setattr(t, name, spark.read.parquet(str(tables_dir / name)))


def judge(run_dirs: list[Path], out_dir: Path, spark_master: str | None = None) -> list[dict]:
    """Judge every cell; see the module docstring. Never raises on bad input data."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    spark = get_session(spark_master)
    paths = ingest.ingest(spark, [Path(p) for p in run_dirs], out_dir)
    t = derived.load(spark, paths)
    _materialize(spark, t, out_dir / "tables")
    cells = {r["run"]: r.asDict() for r in t.cells.collect()}
    members = {}
    for r in t.members.collect():
        members.setdefault(r["run"], []).append(r["spec"] or r["member"])
    verdicts: dict[str, dict] = {}
    for run, c in cells.items():
        verdicts[run] = {"run": run, "scenario": c["scenario"], "broker_version": c["broker_version"],
                         "members": sorted(members.get(run, [])), "seed": c["seed"], "invariants": {},
                         "metrics": {}, "malformed": []}
    results = run_all([lambda check=check: check(t) for check, _statement in CATALOG.values()])
    for inv, found in zip(CATALOG, results):
        if isinstance(found, BaseException):  # a crashing check is "unknown", never "pass"
            err = f"{type(found).__name__}: {found}".strip()
            detail = "".join(traceback.format_exception(found, limit=4))
            for v in verdicts.values():
                v["invariants"][inv] = {"status": "unknown", "violations": [], "error": err[:2000],
                                        "traceback": detail[-4000:]}
            continue
        by_run: dict[str, list[dict]] = {run: [] for run in verdicts}
        for viol in found:
            run = viol.pop("run")
            by_run.setdefault(run, []).append(viol)
        for run, vs in by_run.items():
            if run in verdicts:
                vs.sort(key=lambda v: (v["ts"] is None, v["ts"] or 0, v["message"]))
                verdicts[run]["invariants"][inv] = {"status": _status(vs), "violations": vs, "error": None}
    try:
        for run, m in metrics.compute(t).items():
            if run in verdicts:
                verdicts[run]["metrics"] = m
    except Exception as exc:
        for v in verdicts.values():
            v["metrics"] = {"error": f"{type(exc).__name__}: {exc}"}
    for r in t.malformed.orderBy("file", "line").collect():
        if r["run"] in verdicts:
            verdicts[r["run"]]["malformed"].append({"file": r["file"], "line": int(r["line"]), "problem": r["problem"]})
    for v in verdicts.values():
        statuses = {i["status"] for i in v["invariants"].values()}
        v["verdict"] = ("fail" if "fail" in statuses else "unknown" if "unknown" in statuses
                        else "malformed" if v["malformed"] else "pass")
        c = cells[v["run"]]
        v["timing"] = {"start_ts": c["start_ts"], "end_ts": c["end_ts"], "last_fault_ts": c["last_fault_ts"]}
    result = sorted(verdicts.values(), key=lambda v: v["run"])
    run_dirs_by_id = {run: d for d, run in json.loads(paths["__runs__"]).items()}
    for v in result:
        v["run_dir"] = run_dirs_by_id.get(v["run"])
    tmp = out_dir / "verdicts.json.tmp"
    tmp.write_text(json.dumps(result, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, out_dir / "verdicts.json")
    return result
