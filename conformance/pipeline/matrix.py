"""The compatibility matrix: pass/fail per pair of member specs, per broker version and scenario.

Input: CellVerdicts (from one or many ``judge`` calls). A cell (one scenario
execution with one member mix) contributes a result to every unordered pair
of the member specs it ran (a spec paired with itself when it ran twice or
alone): a failed cell fails a pair only through a violation attributed to it
(:func:`_fails_pair`): a finding that names its culprit concerns the pairs of
the culprit with each member it harmed (every pair of the culprit when it
harmed the group as a whole: a crash, a stall); a finding whose culprit is not
known concerns the pairs it implicates (both specs, or its one spec with any
other). Other pairs of that cell pass. An unknown cell (a check crashed) fails
every pair. A malformed cell (input the judge could not trust: damaged run data,
a producer that stopped) says nothing about any pair and blames none: its pairs
are "malformed", an entry only such cells contributed to is "malformed", and the
run still exits non-zero. A matrix entry is "pass" when every contributing cell passed it, "fail"
when every one failed it, "flaky" when some passed and some failed,
"known-issue" when only known client bugs (:mod:`conformance.members.known_issues`)
concerning the pair kept it from passing; ``severity`` is the worst class
(:data:`conformance.pipeline.checks.SEVERITY`) of the findings behind it (the
cell verdict and exit status do not depend on it). ``grid`` is the pair view
across every broker and scenario (the worst outcome), ``by_broker`` the spec x
broker view, ``kinds`` the per-spec view, attributed the same way.
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

from conformance.members.spec_grammar import sort_key as _spec_sort_key
from conformance.pipeline.checks import SEVERITIES, worst_severity


def pairs(members: list[str]) -> list[tuple[str, str]]:
    """Unordered spec pairs of one cell (sorted, each once)."""
    counts: dict[str, int] = defaultdict(int)
    for m in members:
        counts[m] += 1
    specs = sorted(counts, key=_spec_sort_key)
    out = [(lo, hi) for lo, hi in (sorted((a, b), key=_spec_sort_key) for a, b in itertools.combinations(specs, 2))]
    out += [(s, s) for s in specs if counts[s] > 1 or len(specs) == 1]
    return sorted(set(out), key=lambda p: (_spec_sort_key(p[0]), _spec_sort_key(p[1])))


#: The directory of a plan's run or of one of its shards (conformance.rundir.new_run_id of the
#: label conformance.run.command gives it); group 1 is the matrix run they all belong to.
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
    """The one rule for a passing cell, for the matrix and the pytest suite: verdict "pass" (the
    exit status of ``conformance run`` also lets a "known-issue" cell through: :func:`cell_result`). A cell judged "malformed" fails even when every invariant held,
    since lines it could not use were not judged."""
    return verdict.get("verdict") == "pass"


def cell_result(verdict: dict) -> str:
    """What a cell says as a whole: "pass", "fail", "known-issue" (every failing finding is a known
    client bug: neither a pass nor a new failure), "incomplete" (a cell cut short before its
    scenario ended, with nothing violated: no evidence either way) or "malformed" (its input was
    damaged: not evidence about any client, yet not a pass)."""
    if cell_passed(verdict):
        return "pass"
    return (str(verdict["verdict"]) if verdict.get("verdict") in ("incomplete", "known-issue", "malformed")
            else "fail")


def implicated(verdict: dict, finding: dict) -> set[str]:
    """The member specs a finding implicates: those of the members it names; every member's when it
    names none (or the verdict does not map names to specs): a finding the evidence cannot attribute
    implicates the whole group."""
    specs = verdict.get("member_specs") or {}
    named = {specs[m] for m in finding.get("members") or [] if m in specs}
    return named or set(verdict.get("members") or [])


def culprit_spec(verdict: dict, finding: dict) -> str | None:
    """The spec of the member a finding names as its culprit (None: the culprit is not known)."""
    return (verdict.get("member_specs") or {}).get(finding.get("culprit") or "")


def harmed_specs(verdict: dict, finding: dict) -> set[str]:
    """The specs of the members a finding harmed, the culprit itself left out (a member that only
    harmed itself, or the group as a whole, names none)."""
    specs = verdict.get("member_specs") or {}
    return {specs[m] for m in finding.get("harmed") or [] if m in specs and m != finding.get("culprit")}


def failing_findings(verdict: dict) -> list[dict]:
    """The violations that fail the cell (not warnings, not known issues), each with its ``invariant``."""
    return [dict(viol, invariant=inv) for inv, i in (verdict.get("invariants") or {}).items()
            if i.get("status") == "fail" for viol in i.get("violations") or []
            if viol.get("evidence", {}).get("severity") != "warning" and not viol.get("known_issue")]


def known_findings(verdict: dict) -> list[dict]:
    """The violations matched to a known client bug, each with its ``invariant``."""
    return [dict(viol, invariant=inv) for inv, i in (verdict.get("invariants") or {}).items()
            for viol in i.get("violations") or [] if viol.get("known_issue")]


def _fails_pair(verdict: dict, finding: dict, a: str, b: str) -> bool:
    """A finding concerns the pair of ``a`` and ``b``: with a culprit, when the pair is the culprit
    and a member it harmed (any pair of the culprit when it harmed no one member but the group: a
    crash, a stall); without one (the evidence cannot know it), when it implicates both, or one
    spec only and that is one of them (the broad marking, kept for such findings alone)."""
    culprit = culprit_spec(verdict, finding)
    if culprit:
        harmed = harmed_specs(verdict, finding)
        if not harmed:
            return culprit in (a, b)
        return any(sorted((culprit, h), key=_spec_sort_key) == sorted((a, b), key=_spec_sort_key) for h in harmed)
    imp = implicated(verdict, finding)
    return {a, b} <= imp or (len(imp) == 1 and bool(imp & {a, b}))


def pair_findings(verdict: dict, a: str, b: str) -> list[dict]:
    """The failing and known-issue findings of a cell that concern the pair (:func:`_fails_pair`)."""
    return [f for f in failing_findings(verdict) + known_findings(verdict) if _fails_pair(verdict, f, a, b)]


def pair_result(verdict: dict, a: str, b: str) -> str:
    """What a cell contributes to the entry of specs ``a`` and ``b``: a failed cell fails the pair
    only through a violation that concerns it (:func:`_fails_pair`); a cell whose failure is not
    attributable to findings (a check that crashed) fails every pair; a malformed cell is "malformed"
    for every pair (damaged input blames no client); a cell whose violations all concern other pairs
    is a pass for this pair, and a known issue that concerns the pair makes it "known-issue"."""
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
    return "known-issue" if any(_fails_pair(verdict, k, a, b) for k in known_findings(verdict)) else "pass"


def pair_severity(verdict: dict, a: str, b: str) -> str | None:
    """The worst severity class (:data:`conformance.pipeline.checks.SEVERITY`) of the findings that
    make the pair's result: the failing ones when it fails, the known issues when it is one; None
    for a pass, or a failure no finding explains (a crashed check, malformed input)."""
    result = pair_result(verdict, a, b)
    if result == "fail":
        found = [f for f in failing_findings(verdict) if _fails_pair(verdict, f, a, b)]
    elif result == "known-issue":
        found = [f for f in known_findings(verdict) if _fails_pair(verdict, f, a, b)]
    else:
        return None
    return worst_severity({f["invariant"] for f in found})


def _merge(seen: str | None, result: str) -> str:
    """An entry's status once ``result`` joins the results ``seen`` sums up (None: none yet). A result
    that is no evidence (:data:`NO_EVIDENCE`) never changes a judged one; of two, malformed shows."""
    if seen is None or (seen in NO_EVIDENCE and result not in NO_EVIDENCE):
        return result
    if result in NO_EVIDENCE or result == seen:
        return min(seen, result, key=WORST_FIRST.index)
    if {seen, result} == {"pass", "known-issue"}:
        return "known-issue"
    return "flaky"


def failing_invariants(verdict: dict) -> list[str]:
    return sorted(k for k, i in verdict.get("invariants", {}).items() if i["status"] != "pass")


#: Entry statuses, worst first: the order the whole-run grids take the worst outcome by.
#: A malformed or incomplete cell is no evidence: it never hides a pass or a failure beside it.
WORST_FIRST: tuple[str, ...] = ("fail", "flaky", "known-issue", "pass", "malformed", "incomplete")
NO_EVIDENCE: tuple[str, ...] = ("malformed", "incomplete")


def _worst(statuses) -> str:
    return min(statuses, key=WORST_FIRST.index)


def _worse_severity(a: str | None, b: str | None) -> str | None:
    return worst_severity_of([x for x in (a, b) if x])


def worst_severity_of(classes) -> str | None:
    """The worst of severity class names (None for none)."""
    ranks = [SEVERITIES.index(c) for c in classes if c in SEVERITIES]
    return SEVERITIES[min(ranks)] if ranks else None


def _entry_status(e: dict) -> str:
    return ("flaky" if (e["passes"] or e["known_issues"]) and e["fails"] else "fail" if e["fails"]
            else "known-issue" if e["known_issues"] else "pass" if e["passes"]
            else "malformed" if e["malformeds"] else "incomplete")


def _rollup(entries: list[dict], key) -> dict[tuple, dict]:
    """Entries summed by ``key(entry)`` (a tuple, or None to leave the entry out): per group, the
    worst status of its entries, the worst severity, the cell counts and the cells behind it."""
    out: dict[tuple, dict] = {}
    for e in entries:
        k = key(e)
        if k is None:
            continue
        g = out.setdefault(k, {"statuses": [], "severity": None, "cells": [], "passes": 0, "fails": 0,
                               "known_issues": 0, "incompletes": 0, "malformeds": 0, "issues": []})
        g["statuses"].append(e["status"])
        g["severity"] = _worse_severity(g["severity"], e["severity"])
        for n in ("passes", "fails", "known_issues", "incompletes", "malformeds"):
            g[n] += e[n]
        for c in e["cells"]:     # a cell once per group, with its worst result among the group's pairs
            seen = next((x for x in g["cells"] if x["run"] == c["run"]), None)
            if seen is None:
                g["cells"].append(dict(c))
            elif WORST_FIRST.index(c["result"]) < WORST_FIRST.index(seen["result"]):
                seen.update(result=c["result"], severity=c["severity"])
        g["issues"] += [i for i in e["known_issue_refs"] if i not in g["issues"]]
    for g in out.values():
        g["status"] = _worst(g.pop("statuses"))
    return out


def build_matrix(verdicts: list[dict]) -> dict:
    """The matrix as JSON-ready data (written as matrix.json by the report).

    ``entries``: one per (broker, scenario, spec pair), with its status (pass, fail, flaky,
    known-issue, malformed, incomplete), the worst severity class of the findings behind it, the known issues
    behind it, counts of cells and the cells. ``grid``: one per spec pair across every broker and
    scenario, the worst outcome of its entries (a pair that fails in one scenario is "fail" there,
    not "flaky"); ``by_broker``: one per (spec, broker), the worst outcome of the entries of the spec
    at that broker. ``known_issues``: every known issue a finding matched, with its versions, the
    release that fixed it and its cells. ``kinds``: the per-spec view (:func:`blame_by_spec`)."""
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
            severity = pair_severity(v, a, b)
            refs = sorted({k["known_issue"]["reference"] for k in known_findings(v) if _fails_pair(v, k, a, b)}) \
                if result == "known-issue" else []
            key = (v["broker_version"], v["scenario"], a, b)
            e = entries.setdefault(key, {"broker_version": key[0], "scenario": key[1], "a": a, "b": b, "passes": 0,
                                         "fails": 0, "incompletes": 0, "malformeds": 0, "known_issues": 0, "cells": [],
                                         "by_run": {},
                                         "severity": None, "known_issue_refs": []})
            e[{"pass": "passes", "fail": "fails", "incomplete": "incompletes", "known-issue": "known_issues",
               "malformed": "malformeds"}[result]] += 1
            e["cells"].append({"run": v["run"], "verdict": v.get("verdict"), "result": result, "severity": severity,
                               "failing": failing_invariants(v)})
            e["severity"] = _worse_severity(e["severity"], severity)
            e["known_issue_refs"] += [r for r in refs if r not in e["known_issue_refs"]]
            mr = matrix_run_of(v)
            e["by_run"][mr] = _merge(e["by_run"].get(mr), result)
    out_entries = []
    for key in sorted(entries, key=lambda k: (k[0], k[1], _spec_sort_key(k[2]), _spec_sort_key(k[3]))):
        e = entries[key]
        e["status"] = _entry_status(e)
        e["trend"] = [{"run": mr, "status": e["by_run"][mr]} for mr in order if mr in e["by_run"]]
        del e["by_run"]
        out_entries.append(e)
    specs = sorted({s for v in verdicts for s in (v.get("members") or [])}, key=_spec_sort_key)
    grid = _rollup(out_entries, lambda e: (e["a"], e["b"]))
    by_broker: dict[tuple, dict] = {}
    for spec in specs:
        for k, g in _rollup(out_entries, lambda e, spec=spec: (spec, e["broker_version"])
                            if spec in (e["a"], e["b"]) else None).items():
            by_broker[k] = g
    return {
        "specs": specs,
        "brokers": sorted({v["broker_version"] for v in verdicts}),
        "scenarios": sorted({v["scenario"] for v in verdicts}),
        "runs": [{"run": k, "time": runs[k]["time"] if runs[k]["time"] != float("inf") else None,
                  "cells": sorted(runs[k]["cells"])} for k in order],
        "entries": out_entries,
        "grid": [{"a": a, "b": b, **g} for (a, b), g in sorted(grid.items(), key=lambda kv: (
            _spec_sort_key(kv[0][0]), _spec_sort_key(kv[0][1])))],
        "by_broker": [{"spec": spec, "broker_version": broker, **g} for (spec, broker), g in sorted(
            by_broker.items(), key=lambda kv: (_spec_sort_key(kv[0][0]), kv[0][1]))],
        "known_issues": known_issue_list(verdicts),
        "cells": [{"run": v["run"], "scenario": v["scenario"], "broker_version": v["broker_version"],
                   "members": v.get("members") or [], "verdict": v.get("verdict"), "failing": failing_invariants(v),
                   "matrix_run": matrix_run_of(v)} for v in sorted(verdicts, key=lambda v: v["run"])],
        "kinds": blame_by_spec(verdicts),
        "summary": {"cells": len(verdicts), "passed": sum(cell_result(v) == "pass" for v in verdicts),
                    "failed": sum(cell_result(v) == "fail" for v in verdicts),
                    "known_issue": sum(cell_result(v) == "known-issue" for v in verdicts),
                    "incomplete": sum(cell_result(v) == "incomplete" for v in verdicts),
                    "malformed": sum(cell_result(v) == "malformed" for v in verdicts),
                    "entries": {s: sum(e["status"] == s for e in out_entries)
                                for s in ("pass", "fail", "flaky", "known-issue", "malformed", "incomplete")}},
    }


def known_issue_list(verdicts: list[dict]) -> list[dict]:
    """Every known issue a finding of ``verdicts`` matched, once: kind, versions affected, the fixed
    release, reference, summary, the invariant and its severity class, the specs it was seen with
    (culprits) and the cells, in the order first seen."""
    from conformance.pipeline.checks import SEVERITY

    out: dict[tuple, dict] = {}
    for v in sorted(verdicts, key=lambda v: v["run"]):
        for f in known_findings(v):
            k = f["known_issue"]
            row = out.setdefault((k["reference"], f["invariant"]), {
                **k, "invariant": f["invariant"], "severity": SEVERITY.get(f["invariant"]), "specs": [], "cells": []})
            spec = culprit_spec(v, f)
            if spec and spec not in row["specs"]:
                row["specs"].append(spec)
            if v["run"] not in row["cells"]:
                row["cells"].append(v["run"])
    return list(out.values())


def blame_by_spec(verdicts: list[dict]) -> dict[str, dict]:
    """The per-spec view, computed with the grid's own attribution (so the two agree): for each
    member spec, the cells it ran in; ``failed_cells``: the cells in which a pair of it failed;
    ``known_issue_cells``: those in which a pair of it showed a known issue and none failed; per
    invariant, how often a finding that fails a pair or is a known issue named it ``culprit``, named
    it ``harmed``, or, having no culprit, ``implicated`` it."""
    out: dict[str, dict] = {}

    def row(spec: str) -> dict:
        return out.setdefault(spec, {"cells": 0, "failed_cells": 0, "known_issue_cells": 0, "culprit": {},
                                     "harmed": {}, "implicated": {}})

    def count(spec: str, field: str, inv: str) -> None:
        r = row(spec)[field]
        r[inv] = r.get(inv, 0) + 1

    for v in verdicts:
        mine = set(v.get("members") or [])
        results: dict[str, set[str]] = {}
        for a, b in pairs(v.get("members") or []):
            result = pair_result(v, a, b)
            results.setdefault(a, set()).add(result)
            results.setdefault(b, set()).add(result)
        for spec in mine:
            row(spec)["cells"] += 1
            got = results.get(spec, set())
            if "fail" in got:
                row(spec)["failed_cells"] += 1
            elif "known-issue" in got:
                row(spec)["known_issue_cells"] += 1
        for f in failing_findings(v) + known_findings(v):
            culprit = culprit_spec(v, f)
            if culprit:
                count(culprit, "culprit", f["invariant"])
                for spec in harmed_specs(v, f):
                    count(spec, "harmed", f["invariant"])
            else:
                for spec in implicated(v, f):
                    count(spec, "implicated", f["invariant"])
    return {spec: out[spec] for spec in sorted(out, key=_spec_sort_key)}
