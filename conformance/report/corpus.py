"""The bug corpus's table on the terminal and its pages, ``corpus.md`` and ``corpus.html``, from the records of
:func:`conformance.corpus.to_json` (the only input: a page says nothing the records do not).

Each page has the table (one row per entry: the bug, its reference, the culprit release, the
release that fixed it, the expected check, the buggy and control cells' results and the outcome)
and, per entry, its mechanism, what was tried for an entry not reproduced, and each cell: the
finding that caught the bug with the known issue it was reported as, or the cell's result, and
the command that runs the cell again. Every text from a record is escaped in the HTML page.
"""

from __future__ import annotations

from html import escape
from typing import Any

_COLUMNS = ("bug", "reference", "culprit", "control release", "check", "buggy", "control", "outcome")


def _row(r: dict[str, Any], sep: str = ", ") -> tuple[str, ...]:
    """One entry's row of :data:`_COLUMNS`; ``sep`` joins the results of its cells of one role."""
    buggy = sep.join(c["result"] for c in r["cells"] if c["role"] == "buggy") or "-"
    control = sep.join(c["result"] for c in r["cells"] if c["role"] == "control") or (
        "no fix" if r["control_release"] is None else "-")
    return (r["id"], r["reference"], r["culprit"], r["control_release"] or "-", r["expect"], buggy, control, r["outcome"])


def render_text(records: list[dict[str, Any]]) -> str:
    """The table for the terminal: the columns but the reference, aligned, under a rule."""
    rows = [tuple(c for i, c in enumerate(row) if i != 1) for row in [_COLUMNS, *(_row(r, " ") for r in records)]]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell_line(c: dict[str, Any]) -> str:
    what = f"caught: {c['finding']}" if c["caught"] else c["result"]
    if c.get("known_issue"):
        what += f" (known issue: {c['known_issue']})"
    return f"{c['role']}, seed {c['seed']}: {what}"


def render_markdown(records: list[dict[str, Any]]) -> str:
    lines = ["# Bug corpus", "", "| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    lines += ["| " + " | ".join(_row(r)) + " |" for r in records]
    for r in records:
        lines += ["", f"## {r['id']}: {r['title']}", "", r["mechanism"], ""]
        if r.get("tried"):
            lines += [f"Tried: {r['tried']}", ""]
        for c in r["cells"]:
            lines.append(f"- {_cell_line(c)}")
            if c.get("command"):
                lines.append(f"  `{c['command']}`")
    return "\n".join(lines) + "\n"


def render_html(records: list[dict[str, Any]]) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in _COLUMNS)
    rows = "".join("<tr class=\"{}\">{}</tr>".format(
        "expected" if r["as_expected"] else "unexpected",
        "".join(f"<td>{escape(v)}</td>" for v in _row(r))) for r in records)
    sections = []
    for r in records:
        cells = "".join(f"<li>{escape(_cell_line(c))}" + (f"<br><code>{escape(c['command'])}</code>" if c.get("command")
                                                           else "") + "</li>" for c in r["cells"])
        tried = f"<p>Tried: {escape(r['tried'])}</p>" if r.get("tried") else ""
        sections.append(f"<section id=\"{escape(r['id'])}\"><h2>{escape(r['id'])}: {escape(r['title'])}</h2>"
                        f"<p>{escape(r['mechanism'])}</p>{tried}<ul>{cells}</ul></section>")
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>Bug corpus</title><style>"
            "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
            "padding:4px 8px;text-align:left}tr.unexpected td:last-child{background:#f4c7c3}"
            "tr.expected td:last-child{background:#c8e6c9}</style></head><body><h1>Bug corpus</h1>"
            f"<p>Each documented client bug: its buggy release must fail the expected check, naming that release "
            f"as the culprit; its fixed release (the control) must pass.</p><table><tr>{head}</tr>{rows}</table>"
            + "".join(sections) + "</body></html>\n")
