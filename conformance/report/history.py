"""History across nights: each report's matrix kept as one night, and what changed between nights.

``conformance report ... --history DIR`` records the report's matrix entries as one night
(``DIR/<night>.json``, :func:`record`; a night is named by its earliest cell's start, UTC, and its
matrix run) and writes ``history.html`` beside ``index.html`` from every night in DIR
(:func:`analyse`, :func:`render`). The nightly workflow restores DIR from its cache before the
report and saves it after. The page shows:

- **newly failing**: entries (broker, scenario, spec pair) failing or flaky in the latest night
  that were not in the reference night: the last night before it in which nothing failed (the
  last green night), else the night before it;
- per entry, its status in every night, the **first night it failed**, and whether it is
  **flaky across nights** (passed in one night, failed in another);
- per member spec, how many entries involving it failed in each night, with the worst severity
  class of those failures (an entry fails only for the pair of a finding's culprit and a member it
  harmed, :mod:`conformance.pipeline.matrix`, so a spec counts only failures attributed to it).

Nights sort by name (their UTC stamp first). A night file that cannot be read is named on stderr
and left out; the history never stops a report.
"""

from __future__ import annotations

import datetime as _dt
import json
import sys
from html import escape
from pathlib import Path

from conformance.pipeline.checks import SEVERITIES

FAILING: frozenset[str] = frozenset({"fail", "flaky"})
PASSING: frozenset[str] = frozenset({"pass", "known-issue"})


def _key(e: dict) -> str:
    return f"{e['broker_version']} · {e['scenario']} · {e['a']} × {e['b']}"


def night_name(matrix: dict) -> str:
    """``<YYYYMMDDTHHMMSSZ>-<matrix run>`` of the matrix's earliest run (``undated`` without times)."""
    runs = matrix.get("runs") or [{"run": "report", "time": None}]
    first = runs[0]
    stamp = (_dt.datetime.fromtimestamp(first["time"] / 1000, _dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
             if first.get("time") else "undated")
    return f"{stamp}-{first['run']}"


def record(matrix: dict, history_dir: Path) -> str:
    """Write the matrix's entries as a night into ``history_dir``; return the night's name."""
    name = night_name(matrix)
    history_dir.mkdir(parents=True, exist_ok=True)
    night = {"night": name, "entries": [{**{k: e[k] for k in ("broker_version", "scenario", "a", "b", "status")},
                                         "severity": e.get("severity")} for e in matrix["entries"]]}
    tmp = history_dir / f".{name}.json.tmp"
    tmp.write_text(json.dumps(night, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(history_dir / f"{name}.json")
    return name


def load(history_dir: Path) -> list[dict]:
    """Every readable night in ``history_dir``, oldest first."""
    nights = []
    for path in sorted(history_dir.glob("*.json")):
        try:
            night = json.loads(path.read_text(encoding="utf-8"))
            if not (isinstance(night["night"], str) and isinstance(night["entries"], list)):
                raise TypeError("night or entries of the wrong type")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"conformance: history: skipped {path}: not a night file ({type(exc).__name__})", file=sys.stderr)
            continue
        nights.append(night)
    return sorted(nights, key=lambda n: n["night"])


def analyse(nights: list[dict]) -> dict:
    """What the history page shows (see the module), from nights oldest first."""
    names = [n["night"] for n in nights]
    status: dict[str, dict[str, str]] = {}
    severity: dict[str, dict[str, str]] = {}
    pair: dict[str, tuple[str, str]] = {}
    for n in nights:
        for e in n["entries"]:
            status.setdefault(_key(e), {})[n["night"]] = e["status"]
            if e.get("severity") in SEVERITIES:
                severity.setdefault(_key(e), {})[n["night"]] = e["severity"]
            pair[_key(e)] = (e["a"], e["b"])
    latest = names[-1] if names else None
    green = [x for x in names[:-1] if all(s.get(x) in PASSING for s in status.values() if x in s)]
    reference = green[-1] if green else (names[-2] if len(names) > 1 else None)
    entries = []
    for key in sorted(status):
        by = status[key]
        failed = [x for x in names if by.get(x) in FAILING]
        entries.append({
            "entry": key, "statuses": by,
            "first_failed": failed[0] if failed else None,
            "flaky_across_nights": bool(failed) and any(by.get(x) in PASSING for x in names),
            "newly_failing": latest is not None and by.get(latest) in FAILING
                             and (reference is None or by.get(reference) not in FAILING),
        })
    specs: dict[str, dict[str, int]] = {}
    classes: dict[str, dict[str, str]] = {}
    for key, by in status.items():
        for spec in set(pair[key]):
            row = specs.setdefault(spec, {x: 0 for x in names})
            for x, s in by.items():
                row[x] += s in FAILING
                sev = severity.get(key, {}).get(x)
                if s in FAILING and sev:
                    worst = classes.setdefault(spec, {}).get(x)
                    classes[spec][x] = sev if worst is None or SEVERITIES.index(sev) < SEVERITIES.index(worst) else worst
    return {"nights": names, "latest": latest, "reference": reference, "last_green": green[-1] if green else None,
            "entries": entries, "specs": dict(sorted(specs.items())), "spec_severity": classes}


def render(history: dict) -> str:
    """``history.html``: self-contained, like index.html."""
    nights = history["nights"]
    head = "".join(f'<th title="{escape(n)}">{i + 1}</th>' for i, n in enumerate(nights))
    new = [e for e in history["entries"] if e["newly_failing"]]
    rows = "".join(
        f'<tr id="pair-{i}"><th>{escape(e["entry"])}</th>'
        + "".join(f'<td class="{escape(e["statuses"].get(n, "none"))}">{escape(e["statuses"].get(n, "")[:1])}</td>'
                  for n in nights)
        + f'<td>{escape(e["first_failed"] or "–")}</td><td>{"yes" if e["flaky_across_nights"] else ""}</td></tr>'
        for i, e in enumerate(history["entries"]))
    worst = history.get("spec_severity") or {}
    specs = "".join(f'<tr id="kind-{escape(s)}"><th>{escape(s)}</th>'
                    + "".join(f"<td>{by[n] or ''}{(' ' + escape(worst.get(s, {}).get(n, ''))) if by[n] else ''}</td>"
                              for n in nights)
                    + "</tr>" for s, by in history["specs"].items())
    since = history["last_green"] and f"the last green night, {history['last_green']}" or \
        (history["reference"] and f"the night before, {history['reference']} (no green night yet)") or "nothing (one night)"
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>Conformance history</title><style>"
            "body{font-family:system-ui,sans-serif;margin:20px}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
            "padding:3px 6px;font-size:13px}.pass{background:#d9f2d9}.fail{background:#f8d0d0}.flaky{background:#fbe7b5}"
            ".known-issue{background:#e6f0fa}.malformed{background:#f0e0f0}.incomplete{background:#e4e4e4}.none{background:#fafafa}</style></head><body>"
            f'<h1>Conformance history: {len(nights)} night(s)</h1><p><a href="index.html">latest report</a></p>'
            f"<h2>Newly failing since {escape(since)}</h2>"
            + ("<ul class=newly-failing>" + "".join(f"<li>{escape(e['entry'])}</li>" for e in new) + "</ul>" if new
               else "<p>none</p>")
            + f'<h2>Per pair</h2><table class="pairs"><tr><th>entry</th>{head}<th>first night failed</th>'
              f"<th>flaky across nights</th></tr>{rows}</table>"
            + f'<h2>Per member spec: failing entries per night</h2><table class="kinds"><tr><th>spec</th>{head}</tr>'
              f"{specs}</table><h2>Nights</h2><ol>" + "".join(f"<li>{escape(n)}</li>" for n in nights)
            + "</ol></body></html>")
