"""Inline SVG charts (no scripts, no external resources).

- :func:`gantt`: per-partition ownership timeline, one row per partition, one
  bar per ownership interval coloured by member, faults as red dashed lines
  (invoke) / green (heal), generations as grey ticks on top. A time axis below
  the plot counts seconds from ``t0`` (the run's start), as every tooltip does;
  intervals that overlap another of their partition are outlined in red
  (class ``overlap``); fault labels are placed in up to :data:`LABEL_ROWS` rows so
  that no two collide where there is room, and never past the right edge.
- :func:`bars`: a labelled horizontal bar chart (rebalance latencies, pauses).
"""

from __future__ import annotations

from html import escape

#: Rows of fault labels under the time axis; a label goes to the first row where it fits.
LABEL_ROWS: int = 3
#: Approximate width of one character of a 9 px label (for placing labels without a browser).
CHAR_W: float = 5.2
#: Axis steps, in seconds: the first that gives at most 10 ticks is used.
AXIS_STEPS_S: tuple[float, ...] = (0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600)

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#bab0ac", "#e15759")


def member_colors(members) -> dict[str, str]:
    return {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(sorted(set(members)))}


def gantt(ownership: list[dict], faults: list[dict], generations: list[dict], t0: float | None = None,
          t1: float | None = None, width: int = 900, row_h: int = 16, title: str = "") -> str:
    rows = sorted({(o["topic"], o["partition"]) for o in ownership})
    times = [o["start"] for o in ownership] + [o["end"] for o in ownership if o["end"] is not None]
    times += [f["ts"] for f in faults] + [g["ts"] for g in generations]
    lo = t0 if t0 is not None else (min(times) if times else 0.0)
    hi = t1 if t1 is not None else (max(times) if times else lo + 1.0)
    hi = max(hi, lo + 1.0)
    label_w, top, bottom = 70, 30, 22 + 10 * LABEL_ROWS + 22
    plot_w = width - label_w - 10
    height = top + max(1, len(rows)) * row_h + bottom + 6

    def x(ts: float) -> float:
        return label_w + (min(max(ts, lo), hi) - lo) / (hi - lo) * plot_w

    colors = member_colors(o["member"] for o in ownership)
    parts = [f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title or "ownership timeline")}">',
             f'<text x="4" y="14" font-size="12" font-weight="bold">{escape(title)}</text>']
    index = {tp: i for i, tp in enumerate(rows)}
    for (t, p), i in index.items():
        y: float = top + i * row_h
        parts.append(f'<text x="4" y="{y + row_h - 4}" font-size="11">{escape(t)}-{p}</text>'
                     f'<line x1="{label_w}" y1="{y + row_h}" x2="{label_w + plot_w}" y2="{y + row_h}" stroke="#eee"/>')
    # Overlapping intervals of one partition (an R2 violation, or an allowed overlap) get their own lanes.
    lanes: dict[int, int] = {}
    lane_count: dict[tuple, int] = {}
    by_row: dict[tuple, list[int]] = {}
    for k, o in enumerate(ownership):
        by_row.setdefault((o["topic"], o["partition"]), []).append(k)
    for tp, ks in by_row.items():
        ends: list[float] = []
        for k in sorted(ks, key=lambda k: ownership[k]["start"]):
            o = ownership[k]
            free = next((i for i, e in enumerate(ends) if e <= o["start"]), None)
            if free is None:
                ends.append(0.0)
                free = len(ends) - 1
            ends[free] = o["end"] if o["end"] is not None else float("inf")
            lanes[k] = free
        lane_count[tp] = max(1, len(ends))
    for k, o in enumerate(ownership):
        tp = (o["topic"], o["partition"])
        h = (row_h - 4) / lane_count[tp]
        y = top + index[tp] * row_h + 2 + lanes[k] * h
        x0, x1 = x(o["start"]), x(o["end"] if o["end"] is not None else hi)
        end = "the end" if o["end"] is None else _rel(o["end"], lo)
        overlap = lane_count[tp] > 1 and any(
            j != k and ownership[j]["start"] < (o["end"] if o["end"] is not None else float("inf"))
            and o["start"] < (ownership[j]["end"] if ownership[j]["end"] is not None else float("inf"))
            for j in by_row[tp])
        tip = (f'{o["member"]} owns {o["topic"]}-{o["partition"]} {_rel(o["start"], lo)} .. {end} '
               f'(ended by {o.get("ended_by")})' + ("; overlaps another owner" if overlap else ""))
        outline = ' stroke="#d62728" stroke-width="1.5"' if overlap else ""
        parts.append(f'<rect class="own{" overlap" if overlap else ""}" x="{x0:.1f}" y="{y:.1f}" '
                     f'width="{max(1.0, x1 - x0):.1f}" height="{h:.1f}" fill="{colors[o["member"]]}"{outline}>'
                     f'<title>{escape(tip)}</title></rect>')
    for g in generations:
        gx = x(g["ts"])
        parts.append(f'<line x1="{gx:.1f}" y1="{top - 8}" x2="{gx:.1f}" y2="{top}" stroke="#888"/>'
                     f'<text x="{gx + 1:.1f}" y="{top - 9}" font-size="9" fill="#666">g{g["generation"]}'
                     f'<title>{escape(_gen_tip(g))}</title></text>')
    plot_bottom = top + max(1, len(rows)) * row_h
    parts.append(_axis(lo, hi, x, label_w, label_w + plot_w, plot_bottom))
    row_end = [float("-inf")] * LABEL_ROWS
    for f in sorted(faults, key=lambda f: f["ts"]):
        fx = x(f["ts"])
        color = "#d62728" if f["phase"] == "invoke" else "#2ca02c"
        label = f'{f["fault"]} {f["target"]}'
        w = CHAR_W * len(label)
        right = fx + 2 + w > width - 4           # past the right edge: the label ends at the line instead
        start = fx - 2 - w if right else fx + 2
        row = next((r for r in range(LABEL_ROWS) if row_end[r] <= start), min(range(LABEL_ROWS), key=row_end.__getitem__))
        row_end[row] = start + w + 4
        parts.append(f'<line class="fault" x1="{fx:.1f}" y1="{top}" x2="{fx:.1f}" y2="{plot_bottom}" stroke="{color}" '
                     f'stroke-dasharray="4 3"><title>{escape(label + " (" + f["phase"] + ") at " + _rel(f["ts"], lo))}'
                     f'</title></line>'
                     f'<text class="fault-label" x="{fx - 2 if right else fx + 2:.1f}" y="{plot_bottom + 32 + 10 * row}" '
                     f'font-size="9" fill="{color}"{" text-anchor=" + chr(34) + "end" + chr(34) if right else ""}>'
                     f'{escape(label)}</text>')
    ly = plot_bottom + 32 + 10 * LABEL_ROWS + 8
    lx = label_w
    for m, c in colors.items():
        parts.append(f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" fill="{c}"/>'
                     f'<text x="{lx + 14}" y="{ly}" font-size="11">{escape(m)}</text>')
        lx += 24 + 7 * len(m)
    parts.append(f'<text x="{width - 10}" y="{ly}" font-size="10" fill="#666" text-anchor="end">'
                 f'{(hi - lo) / 1000:.1f} s shown; red: fault, green: heal, gN: generation N</text>')
    parts.append("</svg>")
    return "".join(parts)


def _rel(ts: float, lo: float) -> str:
    return f"+{(ts - lo) / 1000:.3f} s"


def _axis(lo: float, hi: float, x, x_left: float, x_right: float, y: float) -> str:
    """The time axis under the plot: seconds from ``lo``, at most 10 ticks."""
    span = (hi - lo) / 1000
    step = next((s for s in AXIS_STEPS_S if span / s <= 10), span / 10 or 1.0)
    parts = [f'<g class="axis"><line x1="{x_left}" y1="{y}" x2="{x_right}" y2="{y}" stroke="#444"/>']
    k = 0
    while k * step <= span + 1e-9:
        tx = x(lo + k * step * 1000)
        anchor = "end" if tx > x_right - 15 else "middle"
        parts.append(f'<line x1="{tx:.1f}" y1="{y}" x2="{tx:.1f}" y2="{y + 4}" stroke="#444"/>'
                     f'<text class="tick" x="{tx:.1f}" y="{y + 14}" font-size="9" fill="#444" text-anchor="{anchor}">'
                     f'{k * step:g} s</text>')
        k += 1
    return "".join(parts) + "</g>"


def _gen_tip(g: dict) -> str:
    return f"generation {g['generation']} led by {g.get('leader')} ({g.get('protocol')})"


def bars(items: list[tuple[str, float]], unit: str = "ms", width: int = 500, title: str = "") -> str:
    """Horizontal bars, one per (label, value)."""
    row_h, label_w, top = 18, 160, 20
    height = top + max(1, len(items)) * row_h + 6
    peak = max([v for _, v in items] + [1.0])
    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
             f'<text x="4" y="13" font-size="12" font-weight="bold">{escape(title)}</text>']
    if not items:
        parts.append(f'<text x="4" y="{top + 12}" font-size="11" fill="#666">nothing to show</text>')
    for i, (label, value) in enumerate(items):
        y = top + i * row_h
        w = (width - label_w - 70) * value / peak
        parts.append(f'<text x="4" y="{y + 12}" font-size="11">{escape(label)}</text>'
                     f'<rect x="{label_w}" y="{y + 2}" width="{max(1.0, w):.1f}" height="{row_h - 5}" fill="#4e79a7"/>'
                     f'<text x="{label_w + w + 4:.1f}" y="{y + 12}" font-size="11">{value:.0f} {escape(unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)
