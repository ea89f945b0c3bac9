"""Mutations the rebalance-count invariant must fail (V2; the check is
:mod:`conformance.pipeline.checks.rebalances`).
"""

from __future__ import annotations

from conformance.mutate.run_edit import NotApplicable, RunEdit


def rebalance_storm(run: RunEdit) -> tuple[str | None, str]:
    """V2. After the last fault the group keeps rebalancing while ownership stays put: the last
    generation formed by the scenario's end is formed again, as new generations, one more time than
    V2's bound allows (two per membership change after the last fault), its JoinGroup requests and
    answers copied (fresh correlation ids) and spread evenly up to the scenario's end. The member
    whose request opened that round opens every copy."""
    since = run.manifest.get("last_fault_ts") or run.manifest.get("start_ts") or 0.0
    joins = [i for i in run.frames("JoinGroup", "response")
             if not run.wire[i].get("error_code") and run.wire[i].get("generation") is not None
             and since < run.wire[i]["ts"] <= run.end_ts]
    if not joins:
        raise NotApplicable("no generation formed after the last fault")
    last_gen = max(run.wire[i]["generation"] for i in joins)
    answers = [i for i in joins if run.wire[i]["generation"] == last_gen]
    first_answer = min(run.wire[i]["ts"] for i in answers)
    prev = max((run.wire[i]["ts"] for i in run.frames("JoinGroup", "response")
                if run.wire[i]["ts"] < first_answer and run.wire[i].get("generation") not in (None, last_gen)),
               default=since)
    requests = [i for i in run.frames("JoinGroup", "request") if prev < run.wire[i]["ts"] <= first_answer]
    changes = (1 if run.manifest.get("last_fault_ts") else 0) + sum(
        1 for evs in run.histories.values() for e in evs if e["event"] == "started" and since < e["ts"] <= run.end_ts
        and e.get("member") in run.consumers)
    extra = 2 * changes + 1
    span = run.end_ts - max(run.wire[i]["ts"] for i in answers)
    if span < extra * 20:
        raise NotApplicable("no room between the last generation and the scenario's end")
    step = span / (extra + 1)
    top = max((f.get("correlation_id") or 0) for f in run.wire) + 1
    opener = run.wire[min(requests, key=lambda i: run.wire[i]["ts"])]["member"] if requests else None
    added = []
    for k in range(1, extra + 1):
        slot = run.end_ts - span + k * step   # each copy's requests 10 ms before it, its answers at it
        for n, i in enumerate(sorted(requests, key=lambda i: run.wire[i]["ts"]) + answers):
            f = dict(run.wire[i])
            f["ts"] = slot - 10 + 0.1 * n if f["direction"] == "request" else slot + 0.1 * n
            f["correlation_id"] = (f.get("correlation_id") or 0) + k * top   # a request and its answer stay a pair
            if f["direction"] == "response":
                f["generation"] = last_gen + k
            added.append(f)
    run.wire = sorted(run.wire + added, key=lambda f: f["ts"])
    return opener, (f"generation {last_gen} formed again as generations {last_gen + 1}..{last_gen + extra} "
                    f"after the last fault (bound {2 * changes})")
