"""``judge``: run directories -> one CellVerdict per cell (its fields: docs/contracts.md).

All cells of a call are ingested into one set of tables and every check runs
once over all of them (the number of Spark jobs does not grow with cells).

Verdict per invariant: "pass" (no violation, or only warnings; allowed
findings, each excused by a named rule of :mod:`conformance.pipeline.checks.rules`,
are listed under ``allowed`` and counted per rule in the cell's ``allowed``),
"fail" (violations), "known-issue" (every violation matches a known client bug
of :mod:`conformance.members.known_issues`, which it then names), "unknown"
(the check raised: its error is kept; never a pass), "malformed" (the check read
an input of the cell with a damaged line, :func:`set_aside_damaged`: damaged data
is never a client's violation; what it found is kept under ``set_aside``).
Each cell also gets ``verdict``: "fail" if any invariant failed, else
"unknown" if any was unknown, else "incomplete" if the run was cut short (a
suite error or Ctrl-C stopped it before its scenario ended: ``cut_short``
says why; what a run promises only by its end, D1's delivery, L5's
coverage, R5's final protocol, V1's convergence, L2 and L3's final
generation, is not judged in it, while everything it did observe is), else
"malformed" if input lines could not be used (listed in ``malformed`` with
file and line), else "known-issue" if an invariant was, else "pass". Only
"pass" passes a cell; "known-issue" is neither a pass nor a new failure (it exits 0, as a
pass does: :mod:`conformance.cli`).
``root_cause`` is the failing finding to read first (:func:`root_cause`).

Outputs under ``out_dir``: ``tables/`` (Parquet: the input tables and the
derived ``ownership``, ``incarnations``, ``generations``) and
``verdicts.json``.

One path: ingest (:mod:`conformance.pipeline.ingest`) -> derive
(:mod:`conformance.pipeline.derived`) -> checks (:data:`conformance.pipeline.checks.CATALOG`)
-> verdicts (:func:`assemble`). Every table is pinned as it is defined
(:func:`conformance.pipeline.derived.pin`: computed once, when first used; one
partition when the batch's histories and wire captures total at most
``config.PIPELINE_ONE_PARTITION_BYTES``, judged with the plain Spark SQL
settings of ``config.PIPELINE_ONE_PARTITION_SQL_CONF``). The checks' collects are served by
one Spark action per round (:class:`conformance.pipeline.batch.CollectBatcher`;
one round unless a check's query depends on rows it collected); the tables are
written as Parquet in a background thread meanwhile.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, cast

from conformance import config
from conformance.members import known_issues
from conformance.pipeline import derived, ingest, metrics
from conformance.pipeline import inputs as run_inputs  # not `inputs`: judge() names its input tables so
from conformance.pipeline.batch import CollectBatcher
from conformance.pipeline.checks import CATALOG
from conformance.pipeline.checks.rules import RULES
from conformance.pipeline.session import get_session


class Phases:
    """Wall-clock seconds per named phase, written into ``into`` (a dict) when given."""

    def __init__(self, into: dict[str, float] | None) -> None:
        self.into = into
        self.t0 = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        if self.into is not None:
            self.into[name] = round(self.into.get(name, 0.0) + now - self.t0, 3)
        self.t0 = now


def _status(violations: list[dict]) -> str:
    """fail: a violation that is neither a warning nor a known issue; known-issue: only known
    issues (and warnings); else pass."""
    failing = [v for v in violations if v["evidence"].get("severity") != "warning"]
    if any(not v.get("known_issue") for v in failing):
        return "fail"
    return "known-issue" if failing else "pass"


def _mark_known_issues(invariant: str, violations: list[dict], specs: dict[str, str]) -> None:
    """Give each violation that matches :data:`conformance.members.known_issues.KNOWN_ISSUES` (through
    the member it names as culprit, on its own evidence; never through another implicated member)
    its ``known_issue``: kind, versions affected, fixed release, reference and summary."""
    for viol in violations:
        issue = known_issues.match(invariant, specs.get(viol.get("culprit") or ""), viol.get("evidence"))
        if issue is not None:
            viol["known_issue"] = {"kind": issue.kind, "versions": issue.versions, "fixed": issue.fixed,
                                   "reference": issue.reference, "summary": issue.summary}


#: How many of the damaged lines an invariant read its "malformed" entry lists (``damaged_lines`` counts all).
DAMAGED_SHOWN = 20


def set_aside_damaged(verdict: dict, reads: dict[str, frozenset[str]] | None) -> None:
    """Make every judged invariant of ``verdict`` that read a damaged input "malformed" (in place).

    A damaged input is one with a line in ``verdict["malformed"]`` (a missing or empty input is a
    line 0 there). What the check found on it is not evidence against a client: its violations
    move to ``set_aside`` (kept for whoever repairs the data; no culprit, no matrix pair is
    blamed) and ``damaged`` names the damaged lines (file, line, problem; the first
    :data:`DAMAGED_SHOWN`, ``damaged_lines`` counts them all). An "unknown" invariant (its check
    crashed) stays unknown; invariants that read no damaged input keep their status."""
    if not verdict["malformed"]:
        return
    for inv, i in verdict["invariants"].items():
        if i["status"] == "unknown":
            continue
        read = run_inputs.INPUTS if reads is None or inv not in reads else reads[inv]
        hit = [m for m in verdict["malformed"] if run_inputs.damaged_inputs([m["file"]]) & set(read)]
        if not hit:
            continue
        i["status"] = "malformed"
        i["set_aside"] = i["violations"]
        i["violations"] = []
        i["damaged"] = hit[:DAMAGED_SHOWN]
        i["damaged_lines"] = len(hit)


def root_cause(verdict: dict) -> dict | None:
    """The finding reported first: the earliest failing violation that names a culprit (the evidence
    blames that member; what follows it is mostly its consequences), else the earliest failing one.
    None when nothing failed."""
    failing = [dict(viol, invariant=inv) for inv, i in verdict["invariants"].items() if i["status"] == "fail"
               for viol in i["violations"] if viol["evidence"].get("severity") != "warning" and not viol.get("known_issue")]
    if not failing:
        return None
    blamed = [f for f in failing if f.get("culprit")]
    first = min(blamed or failing, key=_finding_order)
    return {"invariant": first["invariant"], "message": first["message"], "culprit": first.get("culprit"),
            "ts": first["ts"]}


def _finding_order(f: dict):
    return (f["ts"] is None, f["ts"] or 0, f["message"])


def allowed_counts(verdict: dict) -> dict[str, int]:
    """Allowed findings of a cell per exemption rule (rules with none left out), in the rules' order."""
    counts: dict[str, int] = {}
    for inv in verdict["invariants"].values():
        for f in inv.get("allowed") or []:
            counts[f["allowed_by"]] = counts.get(f["allowed_by"], 0) + 1
    return {name: counts[name] for name in RULES if name in counts}


def assemble(cells: dict[str, dict], members: dict[str, list[str]], results: dict[str, list[dict] | BaseException],
             cell_metrics: dict[str, dict] | BaseException, malformed: list[dict],
             run_dirs: dict[str, str] | None = None,
             member_specs: dict[str, dict[str, str]] | None = None,
             reads: dict[str, frozenset[str]] | None = None) -> list[dict]:
    """CellVerdicts from the checks' results (pure; see the module docstring for the rules).

    ``results``: invariant -> violations (each with its ``run``) or the
    exception the check raised; ``malformed``: rows with run, file, line, problem;
    ``member_specs``: per run, member name -> spec (what a finding's ``members`` are
    matched against the known issues with, and the matrix attributes by); ``reads``:
    invariant -> the inputs its check read (:mod:`conformance.pipeline.inputs`; an invariant
    missing there, or every one when None, counts as reading every input), for
    :func:`set_aside_damaged`.
    """
    verdicts: dict[str, dict] = {}
    for run, c in cells.items():
        verdicts[run] = {"run": run, "scenario": c["scenario"], "broker_version": c["broker_version"],
                         "members": sorted(members.get(run, [])), "seed": c.get("seed"), "invariants": {},
                         "metrics": {}, "malformed": [], "cut_short": c.get("cut_short"),
                         "member_specs": dict((member_specs or {}).get(run, {}))}
    for inv, found in results.items():
        if isinstance(found, BaseException):  # a crashing check is "unknown", never "pass"
            err = f"{type(found).__name__}: {found}".strip()
            detail = "".join(traceback.format_exception(found, limit=4))
            for v in verdicts.values():
                v["invariants"][inv] = {"status": "unknown", "violations": [], "allowed": [], "error": err[:2000],
                                        "traceback": detail[-4000:]}
            continue
        by_run: dict[str, list[dict]] = {run: [] for run in verdicts}
        allowed_by_run: dict[str, list[dict]] = {run: [] for run in verdicts}
        for viol in found:
            viol = dict(viol)
            into = allowed_by_run if viol.get("allowed_by") else by_run
            into.setdefault(viol.pop("run"), []).append(viol)
        for run, vs in by_run.items():
            if run in verdicts:
                allowed = allowed_by_run.get(run, [])
                for group in (vs, allowed):
                    group.sort(key=_finding_order)
                _mark_known_issues(inv, vs, verdicts[run]["member_specs"])
                verdicts[run]["invariants"][inv] = {"status": _status(vs), "violations": vs, "allowed": allowed,
                                                    "error": None}
    for run, v in verdicts.items():
        if isinstance(cell_metrics, BaseException):
            v["metrics"] = {"error": f"{type(cell_metrics).__name__}: {cell_metrics}"}
        else:
            v["metrics"] = cell_metrics.get(run, {})
    for r in sorted(malformed, key=lambda r: (r["file"], r["line"])):
        if r["run"] in verdicts:
            verdicts[r["run"]]["malformed"].append({"file": r["file"], "line": int(r["line"]), "problem": r["problem"]})
    for v in verdicts.values():
        set_aside_damaged(v, reads)
        v["allowed"] = allowed_counts(v)
        statuses = {i["status"] for i in v["invariants"].values()}
        v["verdict"] = ("fail" if "fail" in statuses else "unknown" if "unknown" in statuses
                        else "incomplete" if v["cut_short"] else "malformed" if v["malformed"]
                        else "known-issue" if "known-issue" in statuses else "pass")
        v["root_cause"] = root_cause(v)
        c = cells[v["run"]]
        v["timing"] = {"start_ts": c.get("start_ts"), "end_ts": c.get("end_ts"), "last_fault_ts": c.get("last_fault_ts")}
        v["run_dir"] = (run_dirs or {}).get(v["run"])
    return sorted(verdicts.values(), key=lambda v: v["run"])


def judge(run_dirs: list[Path], out_dir: Path, spark_master: str | None = None,
          phases: dict[str, float] | None = None) -> list[dict]:
    """Judge every cell; see the module docstring. Never raises on bad input data.

    ``phases``, when given, receives the seconds spent per phase (Spark
    start, ingest, checks, writes) for benches.
    """
    clock = Phases(phases)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    run_dirs = [Path(p) for p in run_dirs]
    size = input_bytes(run_dirs)
    one_partition = size <= config.PIPELINE_ONE_PARTITION_BYTES
    spark = get_session(spark_master)
    clock.lap("spark_start")
    if phases is not None:
        phases["input_bytes"] = size
        phases["one_partition"] = one_partition

    def keep(df):
        return derived.pin(df, one_partition)

    with sql_conf(spark, config.PIPELINE_ONE_PARTITION_SQL_CONF if one_partition else {}):
        inputs, run_ids = ingest.build(spark, run_dirs, out_dir, keep)
        t = derived.in_memory(inputs, keep)
        t.pin_shared = True
        t.one_partition = one_partition
        clock.lap("ingest")
        tables = {name: getattr(t, name) for name in (*ingest.TABLE_NAMES, *_DERIVED_WRITTEN)}
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tables") as writer:
            writing = writer.submit(ingest.write_tables, tables, out_dir / "tables")
            try:
                result = _check(spark, t, run_ids, clock, phases,
                                config.PIPELINE_RESULT_TASKS if one_partition else None)
                writing.result()
                clock.lap("writes")
            finally:
                t.release_shared()
    _write_verdicts(result, out_dir)
    return result


@contextmanager
def sql_conf(spark, settings: dict[str, str]):
    """Runtime SQL settings for the duration of the block; the previous values come back after."""
    saved = {k: spark.conf.get(k, None) for k in settings}
    try:
        for k, v in settings.items():
            spark.conf.set(k, v)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def input_bytes(run_dirs: list[Path]) -> int:
    """Bytes of the histories and wire captures of ``run_dirs`` (what the pipeline's work grows with)."""
    total = 0
    for d in run_dirs:
        d = Path(d)
        for f in [d / "wire.jsonl", *sorted((d / "members").glob("*.jsonl"))]:
            try:
                total += f.stat().st_size
            except OSError:
                pass
    return total


#: Derived tables written under ``tables/`` (the others are steps towards these).
_DERIVED_WRITTEN = ("run_end", "incarnations", "member_ids", "partitions", "ownership", "generations",
                    "leader_assignments")


def _write_verdicts(result: list[dict], out_dir: Path) -> None:
    tmp = out_dir / "verdicts.json.tmp"
    tmp.write_text(json.dumps(result, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, out_dir / "verdicts.json")


def _check(spark, t: derived.Tables, run_ids: dict[str, str], clock: "Phases", phases: dict | None,
           result_tasks: int | None = None) -> list[dict]:
    batcher = CollectBatcher(spark, result_tasks)
    t.collector = batcher
    # Which tables (so inputs) each invariant's check reads. The metrics read through a Reading of
    # their own: a shared piece they build first is then recorded for the checks that reuse it.
    reading = run_inputs.readings(t, [*CATALOG, "metrics"])
    # A Reading stands in for the Tables it views (it records what is read), hence the casts.
    tasks: list[Callable[[], Any]] = (
        [lambda: t.collect_many(t.cells, t.members, t.malformed)]
        + [lambda check=check, inv=inv: check(cast(derived.Tables, reading[inv]))
           for inv, (check, _statement) in CATALOG.items()]
        + [lambda: metrics.compute(cast(derived.Tables, reading["metrics"]))])
    results = batcher.run(tasks)
    clock.lap("checks")
    if phases is not None:
        phases["collect_rounds"] = batcher.rounds
        phases["collect_singles"] = batcher.singles
        phases["collect_log"] = batcher.log
    if isinstance(results[0], BaseException):
        raise results[0]
    cells_rows, member_rows, malformed_rows = results[0]
    found, cell_metrics = results[1:-1], results[-1]
    cells = {r["run"]: r.asDict() for r in cells_rows}
    members: dict[str, list[str]] = {}
    specs: dict[str, dict[str, str]] = {}
    for r in member_rows:
        members.setdefault(r["run"], []).append(r["spec"] or r["member"])
        specs.setdefault(r["run"], {})[r["member"]] = r["spec"] or r["member"]
    malformed = [r.asDict() for r in malformed_rows]
    run_dirs_by_id = {run: d for d, run in run_ids.items()}
    reads = {inv: run_inputs.inputs_read(reading[inv]) for inv in CATALOG}
    return assemble(cells, members, dict(zip(CATALOG, found)), cell_metrics, malformed, run_dirs_by_id, specs, reads)
