"""The compatibility matrix: pass/fail per pair of member specs, per broker version and scenario.

Input: CellVerdicts (from one or many ``judge`` calls). A cell (one scenario
execution with one member mix) contributes a result to every unordered pair
of the member specs it ran (a spec paired with itself when it ran twice or
alone): a failed cell fails a pair only through a violation that concerns it:
one whose culprit is in the pair, one that implicates both specs, or one that
implicates a single spec of the pair (:func:`pair_result`; an overlap between
the reference and java does not fail java x librdkafka); unknown and
malformed cells fail every pair. A matrix
entry is "pass" when every contributing cell passed it, "fail" when every one
failed it, "flaky" when some passed and some failed, "known-issue" when only
known client bugs (:mod:`conformance.members.known_issues`) kept it from
passing. ``kinds`` is the per-spec view: what each spec was implicated in and
blamed for.
A cell cut short with nothing violated (verdict "incomplete") neither
passes nor fails its pairs: it says nothing about them either way. An entry
only such cells contributed to is "incomplete".

Nightly runs: cells under ``<matrix-run>/runs/<cell>/`` belong to the matrix
run ``<matrix-run>``; the trend of an entry lists its result per matrix run,
ordered by run time (the earliest cell start of the run, else its id). The
shards of one plan are one matrix run: ``conformance run --plan`` names its
directory ``<stamp>-plan-<digest>[-shard-I-of-N]-<pid>``, and every such
directory belongs to the matrix run ``plan-<digest>`` (:data:`PLAN_RUN`), so
the shards' directories merged give the matrix one run of the same cells gives.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from pathlib import Path


def _spec_sort_key(spec: str):
    kind, _, rest = spec.partition("@")
    return (kind, rest)


def pairs(members: list[str]) -> list[tuple[str, str]]:
    """Unordered spec pairs of one cell (sorted, each once)."""
    counts: dict[str, int] = defaultdict(int)
    for m in members:
        counts[m] += 1
    specs = sorted(counts, key=_spec_sort_key)
    out = [tuple(sorted((a, b), key=_spec_sort_key)) for a, b in itertools.combinations(specs, 2)]
    out += [(s, s) for s in specs if counts[s] > 1 or len(specs) == 1]
    return sorted(set(out), key=lambda p: (_spec_sort_key(p[0]), _spec_sort_key(p[1])))


#: The directory of a plan's run or of one of its shards (conformance.rundir.new_run_id of the
#: label conformance.scenarios.command gives it); group 1 is the matrix run they all belong to.
PLAN_RUN: re.Pattern[str] = re.compile(r"\d{8}T\d{6}Z-(plan-[0-9a-f]{12})(?:-shard-\d+-of-\d+)?-\d+")


def matrix_run_of(verdict: dict) -> str:
    """The nightly/matrix run a cell belongs to (see the module docstring)."""
    d = verdict.get("run_dir")
    if d:
        p = Path(d)
        if p.parent.name == "runs":
            plan = PLAN_RUN.fullmatch(p.parent.parent.name)
            return plan.group(1) if plan else p.parent.parent.name
    return verdict["run"]


def _time(verdict: dict) -> float:
    t = (verdict.get("timing") or {}).get("start_ts")
    return float(t) if t is not None else float("inf")


def cell_passed(verdict: dict) -> bool:
    """The one rule for a passing cell, for the matrix, ``conformance run``'s exit status and the
    pytest suite: verdict "pass". A cell judged "malformed" fails even when every invariant held,
    since lines it could not use were not judged."""
    return verdict.get("verdict") == "pass"


def cell_result(verdict: dict) -> str:
    """What a cell says as a whole: "pass", "fail", "known-issue" (every failing finding is a known
    client bug: neither a pass nor a new failure), or "incomplete" (a cell cut short before its
    scenario ended, with nothing violated: no evidence either way)."""
    if cell_passed(verdict):
        return "pass"
    return verdict.get("verdict") if verdict.get("verdict") in ("incomplete", "known-issue") else "fail"


def implicated(verdict: dict, finding: dict) -> set[str]:
    """The member specs a finding implicates: those of the members it names; every member's when it
    names none (or the verdict does not map names to specs): a finding the evidence cannot attribute
    implicates the whole group."""
    specs = verdict.get("member_specs") or {}
    named = {specs[m] for m in finding.get("members") or [] if m in specs}
    return named or set(verdict.get("members") or [])


def failing_findings(verdict: dict) -> list[dict]:
    """The violations that fail the cell (not warnings, not known issues), each with its ``invariant``."""
    return [dict(viol, invariant=inv) for inv, i in (verdict.get("invariants") or {}).items()
            if i.get("status") == "fail" for viol in i.get("violations") or []
            if viol.get("evidence", {}).get("severity") != "warning" and not viol.get("known_issue")]


def _fails_pair(verdict: dict, finding: dict, a: str, b: str) -> bool:
    """A finding fails the pair of ``a`` and ``b`` when its culprit is one of them, when it
    implicates both, or when it implicates one member spec only and that is one of them (a
    member's own misbehaviour shows in every pair it is in)."""
    imp = implicated(verdict, finding)
    culprit = (verdict.get("member_specs") or {}).get(finding.get("culprit") or "")
    return culprit in (a, b) or {a, b} <= imp or (len(imp) == 1 and bool(imp & {a, b}))


def pair_result(verdict: dict, a: str, b: str) -> str:
    """What a cell contributes to the entry of specs ``a`` and ``b``: a failed cell fails the pair
    only through a violation that concerns it (:func:`_fails_pair`); a cell whose failure is not
    attributable to findings (a check that crashed, malformed input) fails every pair; a cell whose
    violations all implicate others is a pass for this pair, and a known issue of a member of the
    pair makes it "known-issue"."""
    result = cell_result(verdict)
    if verdict.get("verdict") != "fail" and result != "known-issue":
        return result
    if verdict.get("verdict") == "fail":
        statuses = {i.get("status") for i in (verdict.get("invariants") or {}).values()}
        findings = failing_findings(verdict)
        if "unknown" in statuses or not findings:
            return "fail"
        if any(_fails_pair(verdict, f, a, b) for f in findings):
            return "fail"
    known = [viol for i in (verdict.get("invariants") or {}).values() for viol in i.get("violations") or []
             if viol.get("known_issue")]
    return "known-issue" if any({a, b} & implicated(verdict, k) for k in known) else "pass"


def _merge(seen: str | None, result: str) -> str:
    """An entry's status once ``result`` joins the results ``seen`` sums up (None: none yet)."""
    if seen in (None, "incomplete"):
        return result
    if result == "incomplete" or result == seen:
        return seen
    if {seen, result} == {"pass", "known-issue"}:
        return "known-issue"
    return "flaky"


def failing_invariants(verdict: dict) -> list[str]:
    return sorted(k for k, i in verdict.get("invariants", {}).items() if i["status"] != "pass")


def build_matrix(verdicts: list[dict]) -> dict:
    """The matrix as JSON-ready data (written as matrix.json by the report)."""
    runs: dict[str, dict] = {}
    for v in verdicts:
        mr = matrix_run_of(v)
        r = runs.setdefault(mr, {"run": mr, "time": _time(v), "cells": []})
        r["time"] = min(r["time"], _time(v))
        r["cells"].append(v["run"])
    order = sorted(runs, key=lambda k: (runs[k]["time"], k))
    entries: dict[tuple, dict] = {}
    for v in sorted(verdicts, key=lambda v: (_time(v), v["run"])):
        for a, b in pairs(v.get("members") or []):
            result = pair_result(v, a, b)
            key = (v["broker_version"], v["scenario"], a, b)
            e = entries.setdefault(key, {"broker_version": key[0], "scenario": key[1], "a": a, "b": b, "passes": 0,
                                         "fails": 0, "incompletes": 0, "known_issues": 0, "cells": [], "by_run": {}})
            e[{"pass": "passes", "fail": "fails", "incomplete": "incompletes", "known-issue": "known_issues"}[result]] += 1
            e["cells"].append({"run": v["run"], "verdict": v.get("verdict"), "result": result,
                               "failing": failing_invariants(v)})
            mr = matrix_run_of(v)
            e["by_run"][mr] = _merge(e["by_run"].get(mr), result)
    out_entries = []
    for key in sorted(entries, key=lambda k: (k[0], k[1], _spec_sort_key(k[2]), _spec_sort_key(k[3]))):
        e = entries[key]
        e["status"] = ("flaky" if (e["passes"] or e["known_issues"]) and e["fails"] else "fail" if e["fails"]
                       else "known-issue" if e["known_issues"] else "pass" if e["passes"] else "incomplete")
        e["trend"] = [{"run": mr, "status": e["by_run"][mr]} for mr in order if mr in e["by_run"]]
        del e["by_run"]
        out_entries.append(e)
    specs = sorted({s for v in verdicts for s in (v.get("members") or [])}, key=_spec_sort_key)
    return {
        "specs": specs,
        "brokers": sorted({v["broker_version"] for v in verdicts}),
        "scenarios": sorted({v["scenario"] for v in verdicts}),
        "runs": [{"run": k, "time": runs[k]["time"] if runs[k]["time"] != float("inf") else None,
                  "cells": sorted(runs[k]["cells"])} for k in order],
        "entries": out_entries,
        "cells": [{"run": v["run"], "scenario": v["scenario"], "broker_version": v["broker_version"],
                   "members": v.get("members") or [], "verdict": v.get("verdict"), "failing": failing_invariants(v),
                   "matrix_run": matrix_run_of(v)} for v in sorted(verdicts, key=lambda v: v["run"])],
        "kinds": blame_by_spec(verdicts),
        "summary": {"cells": len(verdicts), "passed": sum(cell_result(v) == "pass" for v in verdicts),
                    "failed": sum(cell_result(v) == "fail" for v in verdicts),
                    "known_issue": sum(cell_result(v) == "known-issue" for v in verdicts),
                    "incomplete": sum(cell_result(v) == "incomplete" for v in verdicts),
                    "entries": {s: sum(e["status"] == s for e in out_entries)
                                for s in ("pass", "fail", "flaky", "known-issue", "incomplete")}},
    }


def blame_by_spec(verdicts: list[dict]) -> dict[str, dict]:
    """The per-kind view: for each member spec, the cells it ran in, the failed cells whose findings
    implicate it, and per invariant how often it was implicated and how often the culprit."""
    out: dict[str, dict] = {}
    for v in verdicts:
        specs = v.get("member_specs") or {}
        for spec in set(v.get("members") or []):
            out.setdefault(spec, {"cells": 0, "implicated_cells": 0, "implicated": {}, "culprit": {}})["cells"] += 1
        hit: set[str] = set()
        for f in failing_findings(v):
            for spec in implicated(v, f):
                row = out.setdefault(spec, {"cells": 0, "implicated_cells": 0, "implicated": {}, "culprit": {}})
                row["implicated"][f["invariant"]] = row["implicated"].get(f["invariant"], 0) + 1
                hit.add(spec)
            culprit = specs.get(f.get("culprit") or "")
            if culprit:
                row = out.setdefault(culprit, {"cells": 0, "implicated_cells": 0, "implicated": {}, "culprit": {}})
                row["culprit"][f["invariant"]] = row["culprit"].get(f["invariant"], 0) + 1
        for spec in hit:
            out[spec]["implicated_cells"] += 1
    return {spec: out[spec] for spec in sorted(out, key=_spec_sort_key)}
