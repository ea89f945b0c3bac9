"""Mutations the consumption invariants must fail (C1, C2; the checks are
:mod:`conformance.pipeline.checks.consumption`).
"""

from __future__ import annotations

from conformance.mutate.run_edit import TP, NotApplicable, RunEdit, _fmt


def _next_offsets(run: RunEdit, member: str, tp: TP, before_i: int, n: int) -> tuple[int, int]:
    """``n`` offsets right after the last one ``member`` consumed of ``tp`` before event ``before_i``."""
    events = run.histories[member]
    last = max((e["last_offset"] for e in events[:before_i]
                if e["event"] == "consumed" and (e["topic"], e["partition"]) == tp), default=-1)
    return last + 1, last + n


def consumed_after_revoke(run: RunEdit) -> tuple[str | None, str]:
    """C1. A member's callback revokes a partition as the rule says, but the client goes on handing
    that partition's records to the application: 10 records consumed 40 ms after the recorded
    ``revoked``, from a poll begun 30 ms after it, while the new owner takes the partition over.
    The first cooperative revoke whose partition reaches another member within the revoke bound."""
    ivs = run.intervals()
    for iv in ivs:
        if iv.end_reason != "revoked" or iv.end_i is None:
            continue
        if not any(o.tp == iv.tp and o.member != iv.member and iv.end_ts <= o.start_ts <= iv.end_ts + run.revoke_ms
                   for o in ivs):
            continue
        events = run.histories[iv.member]
        revoke = events[iv.end_i]
        first, last = _next_offsets(run, iv.member, iv.tp, iv.end_i, 10)
        events.insert(iv.end_i + 1, run.event_like(revoke, "consumed", revoke["ts"] + 40, topic=iv.tp[0],
                                                  partition=iv.tp[1], first_offset=first, last_offset=last, count=10,
                                                  poll_ts=revoke["ts"] + 30))
        return iv.member, (f"{iv.member} revoked {_fmt(iv.tp)} at {revoke['ts']:.0f} and handed offsets "
                           f"{first}..{last} of it to its application 40 ms later")
    raise NotApplicable("no revoke whose partition moved to another member")


def consumed_after_fence(run: RunEdit) -> tuple[str | None, str]:
    """C2. The broker fences a member (its Heartbeat answered UNKNOWN_MEMBER_ID, as after a session
    expiry) and the member ignores it: 10 records of a partition it holds handed to its application
    from a poll begun 20 ms after the answer. The middle successful Heartbeat answer to a member
    holding a partition it goes on holding for a second, outside every fault window."""
    ivs = run.intervals()
    candidates = []
    for i in run.frames("Heartbeat", "response"):
        f = run.wire[i]
        if f.get("error_code"):
            continue
        held = [iv for iv in ivs if iv.member == f.get("member") and iv.start_ts < f["ts"] and iv.end_ts > f["ts"] + 1000]
        if held and run.quiet(f["ts"] - 1000, f["ts"] + 1000, [f["member"]]):
            candidates.append((i, held[0]))
    if not candidates:
        raise NotApplicable("no successful Heartbeat answer to a member holding a partition outside fault windows")
    i, iv = candidates[len(candidates) // 2]
    answer = run.wire[i]
    answer["error_code"] = 25
    events = run.histories[iv.member]
    at = next((k for k, e in enumerate(events) if e["ts"] > answer["ts"] + 25), len(events))
    first, last = _next_offsets(run, iv.member, iv.tp, at, 10)
    events.insert(at, run.event_like(events[iv.start_i], "consumed", answer["ts"] + 25, topic=iv.tp[0],
                                     partition=iv.tp[1], first_offset=first, last_offset=last, count=10,
                                     poll_ts=answer["ts"] + 20))
    return iv.member, (f"{iv.member}'s Heartbeat answered UNKNOWN_MEMBER_ID at {answer['ts']:.0f}; it then handed "
                       f"offsets {first}..{last} of {_fmt(iv.tp)} to its application")
