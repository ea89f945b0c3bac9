"""Whether a cell's producer kept writing: a cell whose producer stopped is damaged input.

Every delivery and progress invariant reads the producer's acknowledgements (its ``produced``
events) as "records were waiting". A producer that stopped acknowledging, or whose history is
gone, would turn D1 and P1 into passes on nothing; so such a cell is judged "malformed" with the
reason, never "pass" and never a client's violation.

Statement: in a run whose manifest says a producer ran (``producer_rate_per_s`` > 0; the runner
writes it), the producer's history exists, starts (``started``), acknowledges records, and ends
with ``stopped`` (the runner's SIGTERM). Between its ``started`` and its ``stopped``, no stretch
without an acknowledgement lasts longer than :data:`ACK_GAP_MS`, not counting the time the broker
was down: a stretch that meets a broker fault (a dead-looking line the target's next line heals,
:data:`conformance.nemesis.faults.HEALED_BY_NEXT_LINE`) counts from the broker's return.

Each breach is one malformed row on the producer's history, at the line of the last
acknowledgement before the stretch (0 when there is none), so every invariant that reads
histories becomes "malformed" for the cell (:mod:`conformance.pipeline.verdicts`).

Guarantee: reads only the producer's history (through :func:`conformance.history.read_history`,
the format's owner) and the staged nemesis rows; never raises on bad content (a line it cannot
read is the history reader's malformed row already).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.history import read_history
from conformance.nemesis.faults import HEALED_BY_NEXT_LINE

#: The longest the producer may go without an acknowledgement while the broker is up (ms). It
#: flushes acknowledgements every 200 ms; recorded real runs show stretches of at most 1.9 s on a
#: loaded 2-core machine, and kafka-python reconnects within its 1 s backoff once the broker is back.
ACK_GAP_MS = 10_000.0


def _broker_down(nemesis: list[dict]) -> list[tuple[float, float]]:
    """[invoke, healed) spans of the broker faults in ``nemesis`` (one run's staged rows); a fault
    with no later line of its target lasts to the end."""
    rows = sorted(nemesis, key=lambda r: (r["ts"], r["line"]))
    spans = []
    for i, r in enumerate(rows):
        if r["fault"] in HEALED_BY_NEXT_LINE and r["phase"] == "invoke":
            nxt = next((n["ts"] for n in rows[i + 1:] if n["target"] == r["target"]), float("inf"))
            spans.append((r["ts"], nxt))
    return spans


def stalls(run: str, run_dir: Path, manifest: dict[str, Any], nemesis: list[dict]) -> list[dict]:
    """Malformed rows (run, file, line, problem) for ``run``'s producer, per the module docstring."""
    rate = manifest.get("producer_rate_per_s")
    if not rate:
        return []
    path = run_dir / "members" / "producer.jsonl"

    def row(line: int, problem: str) -> dict:
        return {"run": run, "file": str(path), "line": line, "problem": problem}

    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            events = [(n, e) for n, e, _ in read_history(fh) if e is not None]
    except OSError:
        return [row(0, f"the producer's history is missing (the manifest says it wrote {rate} records/s): "
                       "nothing shows which records were waiting")]
    started = next(((n, e["ts"]) for n, e in events if e["event"] == "started"), None)
    stopped = next(((n, e["ts"]) for n, e in events if e["event"] == "stopped"), None)
    fatal = next(((n, e) for n, e in events if e["event"] == "error" and e.get("fatal")), None)
    acks = [(n, e["ts"]) for n, e in events if e["event"] == "produced"]
    out = []
    if fatal is not None:
        out.append(row(fatal[0], f"the producer failed: {fatal[1].get('error')}"))
    if started is None:
        out.append(row(0, "the producer's history has no started event"))
        return out
    if stopped is None:
        last = events[-1] if events else (0, {"ts": started[1]})
        out.append(row(last[0], f"the producer's history ends at {last[1]['ts']:.0f} without a stopped event "
                                "(it died before the run stopped it)"))
    down = _broker_down(nemesis)
    end = stopped[1] if stopped else (events[-1][1]["ts"] if events else started[1])
    marks: list[tuple[int | None, float, str]] = [(started[0], started[1], "its start"),
                                                  *((n, ts, "an acknowledgement") for n, ts in acks)]
    marks.append((None, end, "its stop" if stopped else "the end of its history"))
    for (n, since, what), (_, until, upto) in zip(marks, marks[1:]):
        # A stretch that meets a broker fault counts from the broker's return.
        back = max([since, *(healed for at, healed in down if at < until and healed > since)])
        if until - back > ACK_GAP_MS:
            out.append(row(n if what == "an acknowledgement" and n is not None else 0,
                           f"the producer stopped acknowledging: nothing acknowledged for {(until - since) / 1000:.1f} s "
                           f"between {what} at {since:.0f} and {upto} at {until:.0f} "
                           f"({(until - back) / 1000:.1f} s of it with the broker up; at most {ACK_GAP_MS / 1000:.0f} s)"))
    return out
