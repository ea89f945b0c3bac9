"""A Markdown summary for a CI job summary ($GITHUB_STEP_SUMMARY).

The member x member grid across every scenario and broker (worst outcome and severity class per
entry, cell counts, known issues linked), the known issues met, the matrix table, then what did not
pass (each finding culprit first, with its severity class) (the finding to read first, failing invariants), then
every cell with the command that reproduces it and links to its run directory's files
(:mod:`conformance.report.evidence`; relative to the report's directory).
"""

from __future__ import annotations

from conformance.pipeline.checks import SEVERITY
from conformance.report.evidence import CellLinks, message


def _icon(status: str) -> str:
    return {"pass": "✅ pass", "fail": "❌ fail", "flaky": "⚠️ flaky", "incomplete": "⏹️ incomplete",
            "known-issue": "🔷 known issue", "malformed": "🟪 malformed"}.get(status, status)


#: Matrix runs the trend column shows at most (the newest).
TREND_RUNS = 10
_MARK = {"pass": "✅", "fail": "❌", "flaky": "⚠️", "incomplete": "⏹️", "known-issue": "🔷", "malformed": "🟪"}


def _trend(entry: dict, runs: list[str]) -> str:
    """One mark per matrix run, oldest first (``·``: the entry was not run that time)."""
    by = {t["run"]: t["status"] for t in entry["trend"]}
    return "".join(_MARK.get(by.get(r, ""), "·") for r in runs)


def _md_link(name: str, href: str) -> str:
    return f"[{name}]({href.replace(' ', '%20').replace('(', '%28').replace(')', '%29')})"


def _cells(verdicts: list[dict], links: dict[str, CellLinks]) -> list[str]:
    lines = ["", "## Every cell: reproduce and files", ""]
    for v in sorted(verdicts, key=lambda v: v["run"]):
        link = links.get(v["run"])
        lines.append(f"- **{v['run']}**: {_icon(str(v.get('verdict')))}")
        if link is None:
            continue
        lines.append(f"  - reproduce: `{link.command}`" if link.command else "  - reproduce: no readable manifest.json")
        if link.files:
            lines.append("  - files: " + " · ".join(_md_link(name, href) for name, href in link.files))
    return lines


def _count(e: dict) -> str:
    """How many cells are behind an entry (how many passed it when they disagree): never "0/0"."""
    n = len(e["cells"])
    passed = sum(c["result"] == "pass" for c in e["cells"])
    return f"{passed} of {n} passed" if e["status"] == "flaky" else f"{n} cell{'s' if n != 1 else ''}"


def _status(e: dict) -> str:
    """One status, with the worst severity class when it is not a pass."""
    return _icon(e["status"]) + (f" ({e['severity']})" if e.get("severity") and e["status"] != "pass" else "")


def _grid(matrix: dict, hrefs: dict[str, str]) -> list[str]:
    """The first table: member spec x member spec across every scenario and broker."""
    specs = matrix["specs"]
    by = {(g["a"], g["b"]): g for g in matrix.get("grid") or []}
    lines = ["| | " + " | ".join(specs) + " |", "| --- |" + " --- |" * len(specs)]
    for a in specs:
        row = []
        for b in specs:
            g = by.get((a, b)) or by.get((b, a))
            row.append(f"{_status(g)}, {_count(g)}" + "".join(f"; {_issue(r, hrefs)}" for r in g["issues"])
                       if g else "–")
        lines.append(f"| **{a}** | " + " | ".join(row) + " |")
    return lines


def _issue(ref: str, hrefs: dict[str, str]) -> str:
    short = ref.split(" (", 1)[0]
    return _md_link(short, hrefs[ref]) if ref in hrefs else short


def render(verdicts: list[dict], matrix: dict, links: dict[str, CellLinks] | None = None,
           issue_hrefs: dict[str, str] | None = None) -> str:
    hrefs = issue_hrefs or {}
    s = matrix["summary"]
    runs = [r["run"] for r in matrix["runs"]][-TREND_RUNS:]
    trend = len(runs) > 1
    cut = f", **{s['incomplete']} cut short**" if s["incomplete"] else ""
    lines = ["# Conformance summary", "",
             f"{s['cells']} cell(s): **{s['passed']} passed**, **{s['failed']} failed**"
             + (f", {s['known_issue']} known issue(s)" if s.get("known_issue") else "")
             + (f", {s['malformed']} malformed" if s.get("malformed") else "") + f"{cut}. Matrix entries: "
             f"{s['entries']['pass']} pass, {s['entries']['fail']} fail, {s['entries']['flaky']} flaky"
             + (f", {s['entries']['malformed']} malformed" if s["entries"].get("malformed") else "")
             + (f", {s['entries']['incomplete']} incomplete" if s["entries"]["incomplete"] else "") + ".", ""]
    if matrix.get("grid"):
        lines += ["## Member × member, every scenario and broker", ""] + _grid(matrix, hrefs) + [""]
    if matrix.get("known_issues"):
        lines += ["## Known issues", "", "| client | invariant (class) | versions affected | fixed in | reference | seen with |",
                  "| --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {k['kind']} | {k['invariant']} ({k.get('severity')}) | {k['versions']} | {k.get('fixed') or 'not fixed'}"
                  f" | {_issue(k['reference'], hrefs)} | {', '.join(k['specs'])} |" for k in matrix["known_issues"]]
        lines += [""]
    if trend:
        lines += [f"Trend: the last {len(runs)} matrix runs, oldest first ({runs[0]} … {runs[-1]}).", ""]
    lines += ["| broker | scenario | member | member | result | cells |" + (" trend |" if trend else ""),
              "| --- | --- | --- | --- | --- | --- |" + (" --- |" if trend else "")]
    for e in matrix["entries"]:
        lines.append(f"| {e['broker_version']} | {e['scenario']} | {e['a']} | {e['b']} | {_status(e)} | "
                     f"{_count(e)} |" + (f" {_trend(e, runs)} |" if trend else ""))
    bad = [v for v in verdicts if v.get("verdict") != "pass"]
    if bad:
        lines += ["", "## Cells that did not pass", ""]
        for v in sorted(bad, key=lambda v: v["run"]):
            lines.append(f"- **{v['run']}** ({v['scenario']}, broker {v['broker_version']}, "
                         f"{', '.join(v.get('members') or [])}): {v.get('verdict')}")
            if v.get("cut_short"):
                lines.append(f"  - cut short: {v['cut_short']}")
            rc = v.get("root_cause")
            if rc:
                lines.append(f"  - read first: {rc['invariant']}" + (f" (culprit {rc['culprit']})" if rc.get("culprit") else "")
                             + f": {message(rc['message'])}")
            link = (links or {}).get(v["run"])
            if link and link.command:
                lines.append(f"  - reproduce: `{link.command}`")
            for inv, i in sorted(v["invariants"].items()):
                if i["status"] == "unknown":
                    lines.append(f"  - {inv} unknown: {i.get('error')}")
                for x in i["violations"][:3] if i["status"] in ("fail", "known-issue") else []:
                    known = f" (known issue {_issue(x['known_issue']['reference'], hrefs)})" if x.get("known_issue") else ""
                    who = (f"culprit {x['culprit']}" + (f", harmed {', '.join(x['harmed'])}" if x.get("harmed") else "")
                           if x.get("culprit") else "culprit unknown")
                    lines.append(f"  - {who}: {inv} ({SEVERITY.get(inv)}){known}: {message(x['message'])}")
            if v.get("malformed"):
                m = v["malformed"][0]
                lines.append(f"  - {len(v['malformed'])} malformed line(s), first {m['file']}:{m['line']}: {m['problem']}")
    allowed: dict[str, int] = {}
    for v in verdicts:
        for rule, n in (v.get("allowed") or {}).items():
            allowed[rule] = allowed.get(rule, 0) + n
    if allowed:
        lines += ["", "## Allowed findings (named exemptions)", "", "| rule | findings |", "| --- | --- |"]
        lines += [f"| {rule} | {n} |" for rule, n in sorted(allowed.items())]
    if links:
        lines += _cells(verdicts, links)
    return "\n".join(lines) + "\n"
