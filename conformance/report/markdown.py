"""A Markdown summary for a CI job summary ($GITHUB_STEP_SUMMARY)."""

from __future__ import annotations


def _icon(status: str) -> str:
    return {"pass": "✅ pass", "fail": "❌ fail", "flaky": "⚠️ flaky"}.get(status, status)


def render(verdicts: list[dict], matrix: dict) -> str:
    s = matrix["summary"]
    lines = ["# Conformance summary", "",
             f"{s['cells']} cell(s): **{s['passed']} passed**, **{s['failed']} failed**. Matrix entries: "
             f"{s['entries']['pass']} pass, {s['entries']['fail']} fail, {s['entries']['flaky']} flaky.", "",
             "| broker | scenario | member | member | result | cells |", "| --- | --- | --- | --- | --- | --- |"]
    for e in matrix["entries"]:
        lines.append(f"| {e['broker_version']} | {e['scenario']} | {e['a']} | {e['b']} | {_icon(e['status'])} | "
                     f"{e['passes']}/{e['passes'] + e['fails']} |")
    bad = [v for v in verdicts if v.get("verdict") != "pass"]
    if bad:
        lines += ["", "## Failing cells", ""]
        for v in sorted(bad, key=lambda v: v["run"]):
            lines.append(f"- **{v['run']}** ({v['scenario']}, broker {v['broker_version']}, "
                         f"{', '.join(v.get('members') or [])}): {v.get('verdict')}")
            for inv, i in sorted(v["invariants"].items()):
                if i["status"] == "unknown":
                    lines.append(f"  - {inv} unknown: {i.get('error')}")
                for x in i["violations"][:3] if i["status"] == "fail" else []:
                    lines.append(f"  - {inv}: {x['message']}")
            if v.get("malformed"):
                m = v["malformed"][0]
                lines.append(f"  - {len(v['malformed'])} malformed line(s), first {m['file']}:{m['line']}: {m['problem']}")
    return "\n".join(lines) + "\n"
