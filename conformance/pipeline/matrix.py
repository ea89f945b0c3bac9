"""The compatibility matrix: pass/fail per pair of member specs, per broker version and scenario.

Input: CellVerdicts (from one or many ``judge`` calls). A cell (one scenario
execution with one member mix) contributes its result to every unordered pair
of the member specs it ran (a spec paired with itself when it ran twice or
alone). A matrix entry is "pass" when every contributing cell passed, "fail"
when every one failed, "flaky" when some passed and some failed. A cell
passes only with verdict "pass" (fail, unknown and malformed all fail it).
A cell cut short with nothing violated (verdict "incomplete") neither
passes nor fails its pairs: it says nothing about them either way. An entry
only such cells contributed to is "incomplete".

Nightly runs: cells under ``<matrix-run>/runs/<cell>/`` belong to the matrix
run ``<matrix-run>``; the trend of an entry lists its result per matrix run,
ordered by run time (the earliest cell start of the run, else its id).
"""

from __future__ import annotations

import itertools
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


def matrix_run_of(verdict: dict) -> str:
    """The nightly/matrix run a cell belongs to (see the module docstring)."""
    d = verdict.get("run_dir")
    if d:
        p = Path(d)
        if p.parent.name == "runs":
            return p.parent.parent.name
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
    """What a cell contributes to its matrix entries: "pass", "fail", or "incomplete" (a cell cut
    short before its scenario ended, with nothing violated: no evidence either way)."""
    return "pass" if cell_passed(verdict) else "incomplete" if verdict.get("verdict") == "incomplete" else "fail"


def _merge(seen: str | None, result: str) -> str:
    """An entry's status once ``result`` joins the results ``seen`` sums up (None: none yet)."""
    if seen in (None, "incomplete"):
        return result
    if result == "incomplete" or result == seen:
        return seen
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
        result = cell_result(v)
        for a, b in pairs(v.get("members") or []):
            key = (v["broker_version"], v["scenario"], a, b)
            e = entries.setdefault(key, {"broker_version": key[0], "scenario": key[1], "a": a, "b": b, "passes": 0,
                                         "fails": 0, "incompletes": 0, "cells": [], "by_run": {}})
            e[{"pass": "passes", "fail": "fails", "incomplete": "incompletes"}[result]] += 1
            e["cells"].append({"run": v["run"], "verdict": v.get("verdict"), "failing": failing_invariants(v)})
            mr = matrix_run_of(v)
            e["by_run"][mr] = _merge(e["by_run"].get(mr), result)
    out_entries = []
    for key in sorted(entries, key=lambda k: (k[0], k[1], _spec_sort_key(k[2]), _spec_sort_key(k[3]))):
        e = entries[key]
        e["status"] = ("flaky" if e["passes"] and e["fails"] else "pass" if e["passes"] else "fail" if e["fails"]
                       else "incomplete")
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
        "summary": {"cells": len(verdicts), "passed": sum(cell_result(v) == "pass" for v in verdicts),
                    "failed": sum(cell_result(v) == "fail" for v in verdicts),
                    "incomplete": sum(cell_result(v) == "incomplete" for v in verdicts),
                    "entries": {s: sum(e["status"] == s for e in out_entries)
                                for s in ("pass", "fail", "flaky", "incomplete")}},
    }
