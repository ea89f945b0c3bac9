"""Mutations the progress invariant must fail (P1; the check is
:mod:`conformance.pipeline.checks.progress`), with P1/fault-window narrowed to session-expiring faults
and P1's bound taken from the owner's own settings; and the neighbour the rule P1/rebalance allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from conformance import config
from conformance.members.kinds import member_fetch_max_wait_ms
from conformance.mutate.run_edit import Interval, NotApplicable, RunEdit, _fmt
from conformance.nemesis.faults import LOG_LINES, can_expire
from conformance.reference.codes import REBALANCE_IN_PROGRESS

# -- P1/fault-window narrowed (issue 38): session-expiring faults only, the bound on the total stall -----------

@dataclass(frozen=True)
class _Window:
    """A dead-looking fault of a member or of the broker, as P1 weighs it: ``start`` (its invocation) to
    ``end`` (its heal plus a session timeout and a heartbeat); ``expiring``: it can expire a session
    (:func:`conformance.nemesis.faults.can_expire`: timed lines only when they lasted their bound)."""

    fault: str
    target: str
    start: float
    end: float
    expiring: bool


def _p1_windows(run: RunEdit) -> list[_Window]:
    out = []
    for i, f in enumerate(run.nemesis):
        line = LOG_LINES.get(f.get("fault"))
        if f.get("phase") != "invoke" or line is None or line.looks_dead != "yes":
            continue
        heal = next((g["ts"] for g in run.nemesis[i + 1:] if g.get("target") == f.get("target")), run.end_ts)
        out.append(_Window(f["fault"], f.get("target"), f["ts"], heal + run.session_ms + run.heartbeat_ms,
                           can_expire(f["fault"], heal - f["ts"], run.session_ms, run.max_poll_ms)))
    return sorted(out, key=lambda w: w.start)


def _outside(t0: float, t1: float, windows: list[_Window]) -> tuple[float, float]:
    """(total, longest): the time of [t0, t1] outside every window of ``windows`` (sorted by start),
    in all and its longest stretch."""
    total, longest, cursor = 0.0, 0.0, t0
    for w in windows:
        lo, hi = min(max(w.start, t0), t1), max(min(w.end, t1), t0)
        total += max(0.0, lo - cursor)
        longest = max(longest, lo - cursor)
        cursor = max(cursor, hi)
    return total + max(0.0, t1 - cursor), max(longest, t1 - cursor)


def _merge_into_resume(run: RunEdit, member: str, inside: list[int], resume_i: int) -> dict:
    """Fold ``member``'s consumed batches ``inside`` (history indexes) into the batch at ``resume_i``
    (its offsets widened to cover theirs, their counts added) and drop them: the records are still
    consumed once, only later. Returns the resuming batch."""
    events = run.histories[member]
    resume = events[resume_i]
    merged = [events[k] for k in inside] + [resume]
    resume["first_offset"] = min(m["first_offset"] for m in merged)
    resume["last_offset"] = max(m["last_offset"] for m in merged)
    resume["count"] = sum(m["count"] for m in merged)
    dropped = set(inside)
    run.histories[member] = [e for k, e in enumerate(events) if k not in dropped]
    return resume


def _stall_across(run: RunEdit, keep: Callable[[_Window], bool], what: str) -> tuple[str | None, str]:
    """A member stops fetching one partition it owns around a run of the fault windows ``keep`` selects
    (its own or the broker's, each less than the bound after the previous one): it consumes nothing of it
    from up to a bound minus two heartbeats before the first window to up to as long after the last one
    (no further than the other windows next to them), then resumes and catches up in one batch (its
    consumed events in between merged into the resume). Every stretch of the stall outside the windows
    of every dead-looking fault is shorter than the bound; its time outside the windows that can expire
    a session, in all, is longer than the bound by two heartbeats or more. The first ownership interval
    that holds such a stall."""
    reach = run.convergence_ms - 2 * run.heartbeat_ms
    windows = _p1_windows(run)
    for iv in run.intervals():
        mine = [w for w in windows if w.target in (iv.member, "broker", "all")]
        groups: list[list[_Window]] = []
        for w in (w for w in mine if keep(w)):
            if groups and w.start - max(x.end for x in groups[-1]) <= reach:
                groups[-1].append(w)
            else:
                groups.append([w])
        for group in groups:
            end = max(w.end for w in group)
            before = [w.end for w in mine if w not in group and w.start < group[0].start]
            after = [w.start for w in mine if w not in group and w.start > end]
            t0 = max([iv.start_ts + 2 * run.heartbeat_ms, group[0].start - reach] + before)
            t1 = min([iv.end_ts - 2 * run.heartbeat_ms, end + reach] + after)
            total, _ = _outside(t0, t1, [w for w in mine if w.expiring])
            _, longest = _outside(t0, t1, mine)
            if total <= run.convergence_ms + 2 * run.heartbeat_ms or longest > reach:
                continue
            cons = run.consumed(iv.member, iv.tp, iv.start_ts, iv.end_ts)
            events = run.histories[iv.member]
            inside = [k for k in cons if t0 < events[k]["ts"] <= t1]
            later = [k for k in cons if events[k]["ts"] > t1]
            if not inside or not later or not any(events[k]["ts"] <= t0 for k in cons):
                continue
            resume = _merge_into_resume(run, iv.member, inside, later[0])
            faults = ", ".join(f"{w.fault} of {w.target} at {w.start:.0f}" for w in group)
            return iv.member, (f"{iv.member} consumed nothing of {_fmt(iv.tp)} from {t0:.0f} to {resume['ts']:.0f} "
                               f"({(resume['ts'] - t0) / 1000:.1f} s, across {faults}; {len(inside)} batch(es) "
                               f"merged into the resume)")
    raise NotApplicable(f"no ownership interval holding a stall across {what}")


def stalled_across_short_pause(run: RunEdit) -> tuple[str | None, str]:
    """P1 (rule P1/fault-window narrowed). :func:`_stall_across` a pause (or cut) of the owner shorter
    than its session timeout, which the group never noticed: it opens no fault window, so the whole
    stall counts against the bound."""
    return _stall_across(run, lambda w: not w.expiring and w.target not in ("broker", "all"),
                         "a fault shorter than a session")


def stalled_across_restarts(run: RunEdit) -> tuple[str | None, str]:
    """P1 (rule P1/fault-window narrowed). :func:`_stall_across` broker restarts (windows that each
    expire a session, back to back where the run has several): the bound holds the stall's total time
    outside the windows, not its longest stretch, so the windows excuse nothing before, between or
    after them."""
    return _stall_across(run, lambda w: w.expiring and w.target in ("broker", "all"), "broker restarts")


def stalled_partition(run: RunEdit) -> tuple[str | None, str]:
    """P1. A member stops fetching one partition it owns for longer than the convergence bound, then
    resumes and catches up in one batch (a client that pauses a partition and forgets to resume it
    until something else wakes it): its consumed events of that partition in the stall are merged
    into the first one after it (same offsets in total, the resume's real timestamp). The first
    ownership interval long enough to hold such a stall outside any fault window."""
    stall = run.convergence_ms + 5 * run.heartbeat_ms
    for iv in run.intervals():
        if iv.end_ts - iv.start_ts <= stall:
            continue
        cons = run.consumed(iv.member, iv.tp, iv.start_ts, iv.end_ts)
        if not cons:
            continue
        events = run.histories[iv.member]
        t0 = events[cons[0]]["ts"]
        inside = [k for k in cons if t0 < events[k]["ts"] <= t0 + stall]
        after = [k for k in cons if events[k]["ts"] > t0 + stall]
        if not inside or not after or not run.quiet(t0, events[after[0]]["ts"], [iv.member]):
            continue
        resume = _merge_into_resume(run, iv.member, inside, after[0])
        return iv.member, (f"{iv.member} consumed nothing of {_fmt(iv.tp)} from {t0:.0f} to {resume['ts']:.0f} "
                           f"({(resume['ts'] - t0) / 1000:.1f} s; {len(inside)} batch(es) merged into the resume)")
    raise NotApplicable(f"no ownership interval longer than {stall / 1000:.0f} s with consumption after such a stall")
def _p1_bound(run: RunEdit, member: str) -> float:
    """P1's bound for ``member`` as the judge takes it: its fetch wait (manifest, else its kind's) plus
    the cell's max poll interval."""
    entry: dict = next((m for m in run.manifest.get("members", []) if m.get("name") == member), {})
    return member_fetch_max_wait_ms(entry) + run.timing("max_poll_interval_ms", config.MAX_POLL_INTERVAL_MS)


def _rebalance_spans(run: RunEdit, member: str) -> list[tuple[float, float]]:
    """``member``'s rebalances by its own wire, as P1 reads them (``checks.common.rebalance_spans``):
    from a REBALANCE_IN_PROGRESS answer or its JoinGroup request to its SyncGroup response; from a
    ConsumerGroupHeartbeat answer with an assignment to its next request reporting what it owns."""
    spans: list[tuple[float, float]] = []
    start: float | None = None
    given: float | None = None
    for f in run.wire:
        if f.get("member") != member or f.get("undecodable"):
            continue
        api, direction = f.get("api"), f.get("direction")
        if api == "ConsumerGroupHeartbeat":
            if direction == "response" and f.get("assigned") is not None and given is None:
                given = f["ts"]
            elif direction == "request" and f.get("owned") is not None and given is not None:
                spans.append((given, f["ts"]))
                given = None
        elif start is None and ((api == "JoinGroup" and direction == "request")
                                or (direction == "response" and f.get("error_code") == REBALANCE_IN_PROGRESS)):
            start = f["ts"]
        elif start is not None and api == "SyncGroup" and direction == "response":
            spans.append((start, f["ts"]))
            start = None
    spans += [(s, run.end_ts) for s in (start, given) if s is not None]
    return sorted(spans)


def _stall_between(run: RunEdit, iv: Interval, t0: float, t1: float) -> tuple[list[int], int] | None:
    """(the owner's consumed events of ``iv``'s partition in (t0, t1], the first one after t1) when
    it consumed it at or before t0 too; None otherwise."""
    cons = run.consumed(iv.member, iv.tp, iv.start_ts, iv.end_ts)
    events = run.histories[iv.member]
    inside = [k for k in cons if t0 < events[k]["ts"] <= t1]
    later = [k for k in cons if events[k]["ts"] > t1]
    if not inside or not later or not any(events[k]["ts"] <= t0 for k in cons):
        return None
    return inside, later[0]


def _spans_in(spans: list[tuple[float, float]], t0: float, t1: float) -> list[_Window]:
    return [_Window("rebalance", "", s0, s1, True) for s0, s1 in spans if s0 < t1 and s1 > t0]


def stalled_past_own_bound(run: RunEdit) -> tuple[str | None, str]:
    """P1 (its bound from the owner's own settings). A member stops fetching one partition it owns for
    its own bound (its fetch wait plus its max poll interval) and two heartbeats more, in a stretch
    with no fault window and none of its rebalances, then resumes and catches up in one batch (its
    consumed events in between merged into the resume): shorter than the run's convergence bound, so
    the bound P1 took before (the session and rebalance timeouts) excused it. The first consumption of
    an ownership interval that starts such a stall."""
    for iv in run.intervals():
        bound, spans = _p1_bound(run, iv.member), _rebalance_spans(run, iv.member)
        events = run.histories[iv.member]
        for k in run.consumed(iv.member, iv.tp, iv.start_ts, iv.end_ts):
            t0 = events[k]["ts"]
            t1 = t0 + bound + 2 * run.heartbeat_ms
            found = _stall_between(run, iv, t0, t1)
            if found is None:
                continue
            inside, resume_i = found
            resume_ts = events[resume_i]["ts"]
            if (resume_ts - t0 >= run.convergence_ms - run.heartbeat_ms or _spans_in(spans, t0, resume_ts)
                    or not run.quiet(t0, resume_ts, [iv.member])):
                continue
            _merge_into_resume(run, iv.member, inside, resume_i)
            return iv.member, (f"{iv.member} consumed nothing of {_fmt(iv.tp)} from {t0:.0f} to {resume_ts:.0f} "
                               f"({(resume_ts - t0) / 1000:.1f} s; its bound {bound / 1000:.1f} s, the convergence "
                               f"bound {run.convergence_ms / 1000:.1f} s; {len(inside)} batch(es) merged into the "
                               f"resume)")
    raise NotApplicable("no quiet ownership interval holding a stall past its owner's bound")


def stalled_through_rebalance(run: RunEdit) -> tuple[str | None, str]:
    """The neighbour of :func:`stalled_past_own_bound` (not a bug: rule P1/rebalance allows it). A
    member stops fetching one partition it owns across one of its own rebalances of at least two
    heartbeats, for its bound plus half that rebalance, in a stretch with no fault window, then
    resumes and catches up in one batch: longer than its bound, but no more than its bound outside
    its rebalances. The first consumption (in time) that starts such a stall."""
    for iv in run.intervals():
        bound, spans = _p1_bound(run, iv.member), _rebalance_spans(run, iv.member)
        events = run.histories[iv.member]
        for s0, s1 in spans:
            length = s1 - s0
            if length < 2 * run.heartbeat_ms or s0 <= iv.start_ts or s1 >= iv.end_ts:
                continue
            stall = bound + length / 2
            for k in run.consumed(iv.member, iv.tp, s1 - stall + run.heartbeat_ms, s0):
                t0 = events[k]["ts"]
                found = _stall_between(run, iv, t0, t0 + stall)
                if found is None:
                    continue
                inside, resume_i = found
                resume_ts = events[resume_i]["ts"]
                outside, _ = _outside(t0, resume_ts, _spans_in(spans, t0, resume_ts))
                if resume_ts - t0 <= bound + run.heartbeat_ms or outside > bound - run.heartbeat_ms \
                        or not run.quiet(t0, resume_ts, [iv.member]):
                    continue
                _merge_into_resume(run, iv.member, inside, resume_i)
                return iv.member, (f"{iv.member} consumed nothing of {_fmt(iv.tp)} from {t0:.0f} to "
                                   f"{resume_ts:.0f} ({(resume_ts - t0) / 1000:.1f} s, {outside / 1000:.1f} s of it "
                                   f"outside its own rebalances; its rebalance {s0:.0f}-{s1:.0f}; its bound "
                                   f"{bound / 1000:.1f} s)")
    raise NotApplicable("no quiet ownership interval holding a stall through a rebalance of two heartbeats")
