"""The static HTML report: one self-contained file (inline CSS, SVG and a few
lines of inline JS; no CDN, no external resource).

Sections: summary; ONE grid of member spec x member spec across every scenario and broker of the
run (the worst outcome per entry, its worst severity class, how many cells, links to them); member
spec x broker; the known issues met (versions affected and fixed, the client-bugs page or upstream
reference, whether filed); the per-member view (culprit of, harmed by, implicated in: attributed as
the grid is, so the two agree); the grids per broker version and scenario; the trend over matrix
runs; one section per cell with the command that reproduces it and links to its run directory's
files (:mod:`conformance.report.evidence`), the finding to read first, its invariants with their
severity class, violations (evidence expandable, culprit and harmed, or "culprit unknown", and known
issue labelled), allowed findings with the rule that excused each and their counts per rule,
metrics, malformed lines, the per-partition ownership Gantt chart with faults, and the rebalance
latency / pause charts. An entry shows one status; a count is of cells, never "0/0".
"""

from __future__ import annotations

import json
from html import escape

from conformance.pipeline.checks import CATALOG, SEVERITY
from conformance.report import svg
from conformance.report.evidence import WIRE_FILE, CellLinks, located, message, wire_lines

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:20px;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px;vertical-align:top}
th{background:#f4f4f4}.pass{background:#d9f2d9}.fail{background:#f8d0d0}.flaky{background:#fbe7b5}
.unknown{background:#e0e0f0}.malformed{background:#f0e0f0}.incomplete{background:#e4e4e4}.known-issue{background:#cfe2f7}.none{background:#fafafa;color:#aaa}
td.entry a.status{display:block;color:inherit;text-decoration:none;font-weight:600}td.entry .cells a{margin-right:5px}section.cell{margin:18px 0;padding:8px 12px;border:1px solid #ddd}
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
 var entries=document.querySelectorAll('td.entry'),statuses=0,unlinked=0,broken=0;
 entries.forEach(function(td){var words=(td.innerText.match(/(^|\\s)(pass|fail|flaky|known-issue|malformed|incomplete)(?=\\s|$)/g)||[]).length;
  if(words!==1||td.querySelectorAll('a.status').length!==1)statuses++;
  var l=td.querySelectorAll('a[href^="#cell-"]');if(!l.length)unlinked++;
  l.forEach(function(a){if(!document.getElementById(a.getAttribute('href').slice(1)))broken++;});});
 var first=document.querySelector('table');
 document.body.setAttribute('data-structure',JSON.stringify({first_table:first?first.className:'',entries:entries.length,
 not_one_status:statuses,entries_without_cell_link:unlinked,broken_cell_links:broken,
 zero_of_zero:document.body.innerText.indexOf('0/0')>=0,
 known_issue_links:document.querySelectorAll('a.known-issue-link').length,
 known_issue_unlinked:document.querySelectorAll('span.known-issue-link').length}));
 document.body.setAttribute('data-rendered',JSON.stringify({timeline:t?Math.round(t.getBoundingClientRect().width):0,
 bars:t?t.querySelectorAll('rect.own').length:0,matrix_rows:m?m.rows.length:0,cut:cut,label_collisions:collisions,
 ticks:document.querySelectorAll('svg.timeline text.tick').length,commands:document.querySelectorAll('pre.command').length}));});
"""


def _anchor(run: str) -> str:
    return "cell-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in run)


def _badge(status: str) -> str:
    return f'<span class="badge {escape(status)}">{escape(status)}</span>'


def _cell_links(cells: list[dict]) -> str:
    """Numbered links to the cells behind an entry (title: the cell, its verdict and its result for the pair)."""
    return " ".join(f'<a class="cell-link" href="#{_anchor(c["run"])}" title="{escape(c["run"])}: '
                    f'{escape(str(c["result"]))} for this pair (cell verdict {escape(str(c["verdict"]))}'
                    f'{(", " + ", ".join(c["failing"])) if c["failing"] else ""})">{i + 1}</a>'
                    for i, c in enumerate(cells))


def _short(ref: str) -> str:
    """A known issue's reference in a few words: its client-bugs page's name, or the upstream reference."""
    head = ref.split(" (", 1)[0]
    return head.rsplit("/", 1)[-1].removesuffix(".md") if head.startswith("docs/client-bugs/") else head


def _issue_link(ref: str, hrefs: dict[str, str], short: bool = False) -> str:
    """A known issue's reference, linked to its client-bugs page or upstream address where it has one."""
    text = _short(ref) if short else ref
    href = hrefs.get(ref)
    return (f'<a class="known-issue-link" href="{escape(href)}">{escape(text)}</a>' if href
            else f'<span class="known-issue-link">{escape(text)}</span>')


def _entry(e: dict, hrefs: dict[str, str]) -> str:
    """One matrix entry: ONE status (with the worst severity class of its findings when it is not a
    pass), how many cells are behind it (how many of them passed it when they disagree), its
    known issues linked, and links to its cells. The status links to the first cell that made it."""
    cells = e["cells"]
    first = next((c for c in cells if c["result"] == e["status"]), None) or next(
        (c for c in cells if c["result"] != "pass"), cells[0])
    label = e["status"] + (f' &middot; {escape(e["severity"])}' if e.get("severity") and e["status"] != "pass" else "")
    n = len(cells)
    passed = sum(c["result"] == "pass" for c in cells)
    count = (f"{passed} of {n} cells passed" if e["status"] == "flaky" else f"{n} cell{'s' if n != 1 else ''}")
    refs = e.get("known_issue_refs") or e.get("issues") or []
    one = {_short(r): r for r in reversed(refs)}        # one link per page (L4 and R3 rows share one)
    issues = "".join(f'<div class="small">known issue {_issue_link(r, hrefs, short=True)}</div>' for r in one.values())
    return (f'<td class="entry {escape(e["status"])}" data-status="{escape(e["status"])}"'
            f' data-severity="{escape(e.get("severity") or "")}">'
            f'<a class="status" href="#{_anchor(first["run"])}">{label}</a> '
            f'<span class="small">{count}</span>{issues}<div class="small cells">{_cell_links(cells)}</div></td>')


def _spec_grid(matrix: dict, hrefs: dict[str, str]) -> str:
    """The first table: member spec x member spec across every scenario and broker of the run."""
    specs = matrix["specs"]
    by = {(g["a"], g["b"]): g for g in matrix.get("grid") or []}
    if not by:
        return "<p>No cells.</p>"
    rows = ['<table class="grid"><tr><th></th>' + "".join(f"<th>{escape(s)}</th>" for s in specs) + "</tr>"]
    for a in specs:
        row = [f"<th>{escape(a)}</th>"]
        for b in specs:
            g = by.get((a, b)) or by.get((b, a))
            row.append(_entry(g, hrefs) if g else '<td class="none">&ndash;</td>')
        rows.append("<tr>" + "".join(row) + "</tr>")
    return "".join(rows) + "</table>"


def _broker_grid(matrix: dict, hrefs: dict[str, str]) -> str:
    """Member spec x broker version: the worst outcome of every pair of the spec at that broker."""
    by = {(g["spec"], g["broker_version"]): g for g in matrix.get("by_broker") or []}
    if not by:
        return ""
    brokers = matrix["brokers"]
    rows = ['<table class="by-broker"><tr><th></th>' + "".join(f"<th>broker {escape(b)}</th>" for b in brokers) + "</tr>"]
    for spec in matrix["specs"]:
        rows.append(f"<tr><th>{escape(spec)}</th>" + "".join(
            _entry(by[(spec, b)], hrefs) if (spec, b) in by else '<td class="none">&ndash;</td>' for b in brokers) + "</tr>")
    return "".join(rows) + "</table>"


def _matrix_tables(matrix: dict, hrefs: dict[str, str] | None = None) -> str:
    """The per-scenario grids: one per broker version and scenario."""
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
                row.append(_entry(e, hrefs or {}) if e else '<td class="none">&ndash;</td>')
            out.append("<tr>" + "".join(row) + "</tr>")
        out.append("</table>")
    return "".join(out) or "<p>No cells.</p>"


def _known_issues(matrix: dict, hrefs: dict[str, str]) -> str:
    """Every known issue the run met: kind, invariant and class, versions affected, the fixing
    release, its page or upstream reference, whether it is filed, the specs and cells it was seen in."""
    from conformance.report.issues import filed

    issues = matrix.get("known_issues") or []
    if not issues:
        return "<p>None met in this run.</p>"
    rows = "".join(
        f'<tr id="known-issue-{i + 1}"><td>{i + 1}</td><td>{escape(k["kind"])}</td><td>{escape(k["invariant"])} '
        f'({escape(k.get("severity") or "?")})</td><td>{escape(k["versions"])}</td>'
        f'<td>{escape(k.get("fixed") or "not fixed")}</td><td>{_issue_link(k["reference"], hrefs)}'
        f'<div class="small">{escape(k["summary"])}</div></td><td>{escape(filed(k["reference"]))}</td>'
        f'<td>{escape(", ".join(k["specs"]))}</td>'
        f'<td class="small">{" ".join(f"<a href=#{_anchor(c)}>{escape(c)}</a>" for c in k["cells"])}</td></tr>'
        for i, k in enumerate(issues))
    return ('<table class="known-issues"><tr><th>#</th><th>client</th><th>invariant (class)</th><th>versions affected'
            '</th><th>fixed in</th><th>reference</th><th>filed upstream</th><th>seen with</th><th>cells</th></tr>'
            + rows + "</table>")


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


def _cell_section(v: dict, tl: dict | None, link: CellLinks | None = None,
                  hrefs: dict[str, str] | None = None) -> str:
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
            if viol.get("culprit"):
                label = f'<span class="badge fail">culprit {escape(viol["culprit"])}</span> '
                if viol.get("harmed"):
                    label += f'<span class="badge">harmed {escape(", ".join(viol["harmed"]))}</span> '
            else:
                label = '<span class="badge">culprit unknown</span> '
            if viol.get("known_issue"):
                label += (f'<span class="badge known-issue">known issue '
                          f'{_issue_link(viol["known_issue"]["reference"], hrefs or {}, short=True)}</span> ')
            detail += (f"<details><summary>{label}{escape(message(viol['message']))}</summary>"
                       f"{_evidence_links(viol, link)}"
                       f"<pre>{escape(json.dumps(located(viol, t0), indent=1, sort_keys=True, default=str))}</pre></details>")
        allowed = "".join(f'<details class="allowed"><summary>{escape(f["allowed_by"])}: {escape(message(f["message"]))}'
                          f"</summary>{_evidence_links(f, link)}"
                          f"<pre>{escape(json.dumps(located(f, t0), indent=1, sort_keys=True, default=str))}</pre></details>"
                          for f in i.get("allowed") or [])
        parts.append(f'<tr><td>{inv} <span class="small">{SEVERITY.get(inv, "")}</span></td>'
                     f'<td class="{i["status"]}">{i["status"]}</td><td>{escape(statement)}</td>'
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
    """The per-member table, attributed as the grid is (:func:`conformance.pipeline.matrix.blame_by_spec`)."""
    def counts(d: dict) -> str:
        return ", ".join(f"{inv} &times;{n}" for inv, n in sorted(d.items())) or "&ndash;"

    rows = []
    for spec, k in (matrix.get("kinds") or {}).items():
        rows.append(f'<tr data-spec="{escape(spec)}"><th>{escape(spec)}</th><td>{k["cells"]}</td>'
                    f'<td class="failed-cells">{k["failed_cells"]}</td><td class="known-cells">{k["known_issue_cells"]}</td>'
                    f"<td>{counts(k['culprit'])}</td><td>{counts(k['harmed'])}</td><td>{counts(k['implicated'])}</td></tr>")
    return ('<table class="kinds"><tr><th>member</th><th>cells</th><th>cells failing a pair of it</th>'
            "<th>cells with a known issue of a pair of it</th><th>findings naming it culprit</th>"
            "<th>findings naming it harmed</th><th>findings implicating it (culprit unknown)</th></tr>"
            + "".join(rows) + "</table>")


def render(verdicts: list[dict], matrix: dict, timelines: dict[str, dict],
           links: dict[str, CellLinks] | None = None, history: bool = False,
           issue_hrefs: dict[str, str] | None = None) -> str:
    """The page; ``history``: link to ``history.html`` beside it (conformance.report.history);
    ``issue_hrefs``: known issue reference -> its page or upstream address
    (:func:`conformance.report.issues.copy_pages`)."""
    s = matrix["summary"]
    hrefs = issue_hrefs or {}
    cells = "".join(_cell_section(v, timelines.get(v["run"]), (links or {}).get(v["run"]), hrefs)
                    for v in sorted(verdicts, key=lambda v: v["run"]))
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>Conformance report</title>"
        f"<style>{CSS}</style></head><body>"
        "<h1>Consumer-group interoperability conformance (KIP-429)</h1>"
        + ('<p><a class="history" href="history.html">history across nights</a></p>' if history else "") +
        f"<p>{s['cells']} cell(s): {s['passed']} passed, {s['failed']} failed"
        + (f", {s['known_issue']} known issue(s)" if s.get("known_issue") else "")
        + (f", {s['malformed']} malformed" if s.get("malformed") else "")
        + (f", {s['incomplete']} cut short" if s["incomplete"] else "") + " &middot; matrix entries: "
        f"{s['entries']['pass']} pass, {s['entries']['fail']} fail, {s['entries']['flaky']} flaky"
        + (f", {s['entries']['known-issue']} known issue" if s["entries"].get("known-issue") else "")
        + (f", {s['entries']['malformed']} malformed" if s["entries"].get("malformed") else "")
        + (f", {s['entries']['incomplete']} incomplete" if s["entries"]["incomplete"] else "") + "</p>"
        f"<h2>Member &times; member, every scenario and broker</h2>{LEGEND}{_spec_grid(matrix, hrefs)}"
        f"<h2>Member &times; broker</h2>{_broker_grid(matrix, hrefs)}"
        f"<h2>Known issues</h2>{_known_issues(matrix, hrefs)}"
        f"<h2>Per member</h2>{_kinds(matrix)}"
        f"<h2>Per scenario</h2>{_matrix_tables(matrix, hrefs)}"
        f"<h2>Trend</h2>{_trend(matrix)}<h2>Cells</h2>{cells}"
        f"<script>{JS}</script></body></html>"
    )


LEGEND = ('<p class="small legend">Each entry: the worst outcome of the pair over its cells (<b>fail</b>: a '
          "finding whose culprit and harmed member are the pair; <b>known-issue</b>: only a known client bug; "
          "<b>flaky</b>: the same scenario passed and failed), the worst severity class of those findings (safety, "
          "liveness, protocol, efficiency), and numbered links to the cells behind it. A finding whose culprit "
          "is not known marks every pair it implicates; <b>malformed</b>: only cells whose input the judge could not "
          "trust (damaged run data, a producer that stopped), which blame no client.</p>")
