"""The static HTML report: one self-contained file (inline CSS, SVG and a few
lines of inline JS; no CDN, no external resource).

Sections: summary; the matrix per broker version and scenario (each entry
links to the cells behind it); the per-member view (what each member spec was
implicated in and blamed for); the trend over matrix runs; one section per
cell with the command that reproduces it and links to its run directory's files
(:mod:`conformance.report.evidence`), the finding to read first, its invariants, violations (evidence
expandable, culprit or known issue labelled), allowed findings with the rule
that excused each and their counts per rule, metrics,
malformed lines, the per-partition ownership Gantt chart with faults, and the
rebalance latency / pause charts.
"""

from __future__ import annotations

import json
from html import escape

from conformance.pipeline.checks import CATALOG
from conformance.report import svg
from conformance.report.evidence import WIRE_FILE, CellLinks, located, message, wire_lines

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:20px;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px;vertical-align:top}
th{background:#f4f4f4}.pass{background:#d9f2d9}.fail{background:#f8d0d0}.flaky{background:#fbe7b5}
.unknown{background:#e0e0f0}.malformed{background:#f0e0f0}.incomplete{background:#e4e4e4}.known-issue{background:#e6f0fa}.none{background:#fafafa;color:#aaa}
td.entry a{display:block;color:inherit;text-decoration:none}section.cell{margin:18px 0;padding:8px 12px;border:1px solid #ddd}
section.cell:target{outline:3px solid #4e79a7}pre{background:#f7f7f7;padding:6px;overflow:auto;font-size:12px;max-height:300px}
.badge{display:inline-block;padding:1px 8px;border-radius:8px;font-size:12px}.small{font-size:12px;color:#555}
.trend span{display:inline-block;width:12px;height:12px;margin-right:2px;border:1px solid #999}
pre.command{background:#1e1e1e;color:#f0f0f0;white-space:pre-wrap;word-break:break-all}.files a{margin-right:8px}
"""

JS = """
function openTarget(){var id=location.hash.slice(1);if(!id)return;var el=document.getElementById(id);
 if(el){el.querySelectorAll('details').forEach(function(d){d.open=true;});}}
window.addEventListener('hashchange',openTarget);window.addEventListener('load',openTarget);
window.addEventListener('load',function(){var t=document.querySelector('svg.timeline'),m=document.querySelector('table.matrix');
 var cut=0,collisions=0;document.querySelectorAll('svg.timeline').forEach(function(s){
  var w=s.viewBox.baseVal.width,h=s.viewBox.baseVal.height;
  s.querySelectorAll('text').forEach(function(x){var b=x.getBBox();
   if(b.x<-0.5||b.y<-0.5||b.x+b.width>w+0.5||b.y+b.height>h+0.5)cut++;});
  var l=[].slice.call(s.querySelectorAll('text.fault-label')).map(function(x){return x.getBBox();});
  for(var i=0;i<l.length;i++)for(var j=i+1;j<l.length;j++){var a=l[i],b=l[j];
   if(a.x<b.x+b.width&&b.x<a.x+a.width&&a.y<b.y+b.height&&b.y<a.y+a.height)collisions++;}});
 document.body.setAttribute('data-rendered',JSON.stringify({timeline:t?Math.round(t.getBoundingClientRect().width):0,
 bars:t?t.querySelectorAll('rect.own').length:0,matrix_rows:m?m.rows.length:0,cut:cut,label_collisions:collisions,
 ticks:document.querySelectorAll('svg.timeline text.tick').length,commands:document.querySelectorAll('pre.command').length}));});
"""


def _anchor(run: str) -> str:
    return "cell-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in run)


def _badge(status: str) -> str:
    return f'<span class="badge {escape(status)}">{escape(status)}</span>'


def _matrix_tables(matrix: dict) -> str:
    out = []
    specs = matrix["specs"]
    groups: dict[tuple, dict] = {}
    for e in matrix["entries"]:
        groups.setdefault((e["broker_version"], e["scenario"]), {})[(e["a"], e["b"])] = e
    for (broker, scenario), entries in sorted(groups.items()):
        used = [s for s in specs if any(s in k for k in entries)]
        out.append(f'<h3>broker {escape(broker)} &middot; {escape(scenario)}</h3>'
                   f'<table class="matrix" data-broker="{escape(broker)}" data-scenario="{escape(scenario)}">'
                   '<tr><th></th>' + "".join(f"<th>{escape(s)}</th>" for s in used) + "</tr>")
        for a in used:
            row = [f"<th>{escape(a)}</th>"]
            for b in used:
                e = entries.get((a, b)) or entries.get((b, a))
                if not e:
                    row.append('<td class="none">&ndash;</td>')
                    continue
                links = " ".join(f'<a href="#{_anchor(c["run"])}" title="{escape(c["run"])}: {escape(str(c["verdict"]))}'
                                 f'{(" (" + ", ".join(c["failing"]) + ")") if c["failing"] else ""}">'
                                 f'{escape(str(c["verdict"]))}</a>' for c in e["cells"])
                row.append(f'<td class="entry {e["status"]}"><b>{e["status"]}</b> '
                           f'<span class="small">{e["passes"]}/{e["passes"] + e["fails"]}</span>{links}</td>')
            out.append("<tr>" + "".join(row) + "</tr>")
        out.append("</table>")
    return "".join(out) or "<p>No cells.</p>"


def _trend(matrix: dict) -> str:
    if len(matrix["runs"]) < 2:
        return "<p class=small>One matrix run; the trend appears with more.</p>"
    head = "".join(f'<th title="{escape(r["run"])}">{i + 1}</th>' for i, r in enumerate(matrix["runs"]))
    rows = []
    for e in matrix["entries"]:
        by = {t["run"]: t["status"] for t in e["trend"]}
        cells = "".join(f'<td class="{by.get(r["run"], "none")}">{by.get(r["run"], "")[:1]}</td>' for r in matrix["runs"])
        rows.append(f'<tr><th>{escape(e["broker_version"])} {escape(e["scenario"])}: {escape(e["a"])} &times; '
                    f'{escape(e["b"])}</th>{cells}</tr>')
    legend = "".join(f"<li>{escape(r['run'])}</li>" for r in matrix["runs"])   # <ol>: numbered as the columns
    return f'<table class="trend-table"><tr><th>entry</th>{head}</tr>{"".join(rows)}</table><ol class=small>{legend}</ol>'


def _reproduce(link: CellLinks | None) -> str:
    """The cell's reproduce command and its run directory's files, linked."""
    if link is None:
        return ""
    command = ('<p class="small">reproduce (in a checkout of the suite after <code>make setup</code>; '
               '<code>conformance</code> is <code>.venv/bin/conformance</code>):</p>'
               f'<pre class="command">{escape(link.command)}</pre>' if link.command else
               '<p class="small">no readable manifest.json: no command to reproduce this cell</p>')
    files = "".join(f'<a href="{escape(href)}">{escape(name)}</a>' for name, href in link.files)
    where = f'<span class="small">run directory {escape(link.run_dir)}:</span> ' if link.run_dir else ""
    return command + (f'<p class="files">{where}{files}</p>' if files else "")


def _evidence_links(viol: dict, link: CellLinks | None) -> str:
    lines = wire_lines(viol)
    href = link.href(WIRE_FILE) if link else None
    if not lines:
        return ""
    text = f"{WIRE_FILE} line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}"
    return '<p class="small">evidence: ' + (f'<a href="{escape(href)}">{escape(text)}</a>' if href else escape(text)) + "</p>"


def _cell_section(v: dict, tl: dict | None, link: CellLinks | None = None) -> str:
    t0 = (v.get("timing") or {}).get("start_ts")
    parts = [f'<section class="cell" id="{_anchor(v["run"])}"><h3>{escape(v["run"])} {_badge(v.get("verdict", "?"))}</h3>',
             f'<p class=small>scenario {escape(v["scenario"])} &middot; broker {escape(v["broker_version"])} &middot; '
             f'seed {escape(str(v.get("seed")))} &middot; members {escape(", ".join(v.get("members") or []))}'
             f' &middot; times are from the run\'s start</p>',
             _reproduce(link),
             f'<p class="cut-short">cut short before its scenario ended: {escape(v["cut_short"])}</p>'
             if v.get("cut_short") else "",
             _root_cause(v),
             "<table><tr><th>invariant</th><th>status</th><th>statement</th><th>violations</th><th>allowed</th></tr>"]
    for inv, (_check, statement) in CATALOG.items():
        i = v["invariants"].get(inv, {"status": "unknown", "violations": [], "error": "not run"})
        detail = ""
        if i.get("error"):
            detail = f"<pre>{escape(i['error'])}</pre>"
        for viol in i["violations"]:
            label = ""
            if viol.get("known_issue"):
                label = f'<span class="badge known-issue">known issue {escape(viol["known_issue"]["reference"])}</span> '
            elif viol.get("culprit"):
                label = f'<span class="badge fail">culprit {escape(viol["culprit"])}</span> '
            detail += (f"<details><summary>{label}{escape(message(viol['message']))}</summary>"
                       f"{_evidence_links(viol, link)}"
                       f"<pre>{escape(json.dumps(located(viol, t0), indent=1, sort_keys=True, default=str))}</pre></details>")
        allowed = "".join(f'<details class="allowed"><summary>{escape(f["allowed_by"])}: {escape(message(f["message"]))}'
                          f"</summary>{_evidence_links(f, link)}"
                          f"<pre>{escape(json.dumps(located(f, t0), indent=1, sort_keys=True, default=str))}</pre></details>"
                          for f in i.get("allowed") or [])
        parts.append(f'<tr><td>{inv}</td><td class="{i["status"]}">{i["status"]}</td><td>{escape(statement)}</td>'
                     f"<td>{detail}</td><td>{allowed}</td></tr>")
    parts.append("</table>")
    if v.get("allowed"):
        counts = ", ".join(f"{escape(rule)} &times;{n}" for rule, n in v["allowed"].items())
        parts.append(f'<p class="allowed-counts small">allowed findings (named exemptions): {counts}</p>')
    m = v.get("metrics") or {}
    parts.append(f"<details><summary>metrics</summary><pre>{escape(json.dumps(located(m, t0), indent=1, sort_keys=True))}"
                 "</pre></details>")
    if v.get("malformed"):
        items = "".join(f"<li>{escape(x['file'])}:{x['line']}: {escape(x['problem'])}</li>" for x in v["malformed"][:200])
        parts.append(f"<details open><summary>{len(v['malformed'])} malformed line(s)</summary><ul>{items}</ul></details>")
    if tl is not None:
        timing = v.get("timing") or {}
        t0 = timing.get("start_ts") or None
        parts.append(svg.gantt(tl["ownership"], tl["faults"], tl["generations"], t0=t0, t1=timing.get("end_ts"),
                               title=f"partition ownership: {v['scenario']} ({v['run']})"))
        if tl.get("truncated"):
            parts.append("<p class=small>timeline truncated to its first intervals</p>")
    conv = [(f"{i + 1}. {c['fault']} {c['target']}", float(c["ms"]))
            for i, c in enumerate(m.get("convergence") or []) if c.get("ms") is not None]
    parts.append(svg.bars(conv, title="rebalance latency after each fault"))
    pauses = [(k, float(x)) for k, x in sorted((m.get("pause_ms") or {}).items())]
    parts.append(svg.bars(pauses, title="longest consumption pause during a rebalance"))
    parts.append("</section>")
    return "".join(parts)


def _root_cause(v: dict) -> str:
    rc = v.get("root_cause")
    if not rc:
        return ""
    who = f" (culprit {escape(rc['culprit'])})" if rc.get("culprit") else ""
    return f'<p class="root-cause"><b>read first</b>: {escape(rc["invariant"])}{who}: {escape(message(rc["message"]))}</p>'


def _kinds(matrix: dict) -> str:
    rows = []
    for spec, k in (matrix.get("kinds") or {}).items():
        implicated = ", ".join(f"{inv} &times;{n}" for inv, n in sorted(k["implicated"].items())) or "&ndash;"
        culprit = ", ".join(f"{inv} &times;{n}" for inv, n in sorted(k["culprit"].items())) or "&ndash;"
        rows.append(f"<tr><th>{escape(spec)}</th><td>{k['cells']}</td><td>{k['implicated_cells']}</td>"
                    f"<td>{implicated}</td><td>{culprit}</td></tr>")
    return ('<table class="kinds"><tr><th>member</th><th>cells</th><th>failed cells implicating it</th>'
            "<th>findings implicating it</th><th>findings blaming it</th></tr>" + "".join(rows) + "</table>")


def render(verdicts: list[dict], matrix: dict, timelines: dict[str, dict],
           links: dict[str, CellLinks] | None = None, history: bool = False) -> str:
    """The page; ``history``: link to ``history.html`` beside it (conformance.report.history)."""
    s = matrix["summary"]
    cells = "".join(_cell_section(v, timelines.get(v["run"]), (links or {}).get(v["run"]))
                    for v in sorted(verdicts, key=lambda v: v["run"]))
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>Conformance report</title>"
        f"<style>{CSS}</style></head><body>"
        "<h1>Consumer-group interoperability conformance (KIP-429)</h1>"
        + ('<p><a class="history" href="history.html">history across nights</a></p>' if history else "") +
        f"<p>{s['cells']} cell(s): {s['passed']} passed, {s['failed']} failed"
        + (f", {s['known_issue']} known issue(s)" if s.get("known_issue") else "")
        + (f", {s['incomplete']} cut short" if s["incomplete"] else "") + " &middot; matrix entries: "
        f"{s['entries']['pass']} pass, {s['entries']['fail']} fail, {s['entries']['flaky']} flaky"
        + (f", {s['entries']['incomplete']} incomplete" if s["entries"]["incomplete"] else "") + "</p>"
        f"<h2>Matrix</h2>{_matrix_tables(matrix)}<h2>Per member</h2>{_kinds(matrix)}"
        f"<h2>Trend</h2>{_trend(matrix)}<h2>Cells</h2>{cells}"
        f"<script>{JS}</script></body></html>"
    )
