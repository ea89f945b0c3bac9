"""Mutations the revoke invariants must fail (R1-R5; the checks are
:mod:`conformance.pipeline.checks.revoke`), with R2/fault-window narrowed to the faulted member.
"""

from __future__ import annotations

from typing import Callable

from conformance import config
from conformance.mutate.run_edit import TP, NotApplicable, RunEdit, _drop_tp, _erase_intervals, _fmt
from conformance.mutate.wire import _flat, _leader_syncs, _move
from conformance.nemesis.faults import LOG_LINES
from conformance.protocol import DecodeError, decode_assignment, decode_subscription


def skipped_revoke(run: RunEdit, pair: Callable[[str, str], bool] = lambda revoker, taker: True) -> tuple[str | None, str]:
    """R2. A member never gives up a partition it was told to revoke (its history has no
    ``revoked`` for it: the client skipped the callback and kept the partition), while the
    partition's new owner takes it a few hundred milliseconds later, as recorded: two live owners.
    The first revoke (cooperative, or eager before a rejoin) whose partition reaches another member
    while the revoker lives on (``pair(revoker, taker)`` must hold for the two)."""
    ivs = run.intervals()
    for iv in ivs:
        if iv.end_reason != "revoked":
            continue
        events = run.histories[iv.member]
        # What the revoker's ownership would then run to: its next close of the partition, else its end.
        later = [o for o in ivs if o.member == iv.member and o.incarnation == iv.incarnation and o.tp == iv.tp
                 and o.start_ts > iv.end_ts]
        inc_end = max((o.end_ts for o in ivs if o.member == iv.member and o.incarnation == iv.incarnation),
                      default=iv.end_ts)
        extended_to = later[0].end_ts if later else inc_end
        for new in ivs:
            if (new.tp == iv.tp and new.member != iv.member and pair(iv.member, new.member)
                    and iv.end_ts <= new.start_ts <= iv.end_ts + run.revoke_ms
                    and min(extended_to, new.end_ts) - new.start_ts > 2 * run.heartbeat_ms
                    # R2/fault-window excuses only an overlap that begins inside a window.
                    and run.quiet(iv.end_ts, new.start_ts, [iv.member, new.member])):
                revoke = events[iv.end_i]
                if _drop_tp(revoke, iv.tp):
                    del events[iv.end_i]
                return iv.member, (f"{iv.member} skipped the revoke of {_fmt(iv.tp)} at {revoke['ts']:.0f}; "
                                   f"{new.member} owns it from {new.start_ts:.0f}")
    raise NotApplicable("no revoke whose partition moved to a member that then held it")


# -- R2/fault-window narrowed (issue 38): the faulted member only, from its removal on the wire --------------

def _dead_member_windows(run: RunEdit) -> list[tuple[dict, float]]:
    """(invoke line, window end) of every fault that always makes its member look dead (the table of
    faults' ``looks_dead == "yes"`` lines), the window ending at the member's next nemesis line (its
    heal; the run's end when none) plus a session timeout and a heartbeat, as the checks' windows."""
    out = []
    for i, f in enumerate(run.nemesis):
        line = LOG_LINES.get(f.get("fault"))
        if f.get("phase") != "invoke" or line is None or line.looks_dead != "yes" or f.get("target") not in run.consumers:
            continue
        heal = next((g["ts"] for g in run.nemesis[i + 1:] if g.get("target") == f["target"]), run.end_ts)
        out.append((f, heal + run.session_ms + run.heartbeat_ms))
    return out


def taken_before_removal(run: RunEdit) -> tuple[str | None, str]:
    """R2 (rule R2/fault-window narrowed). A member takes a partition of a member a fault made look
    dead before the broker removed that member: its ``assigned`` of the partition is recorded half-way
    between the fault and the assignment the group really gave it (a client that grabs the partitions
    of a member gone silent while the coordinator still counts it in). The first handover inside the
    dead-looking window of the previous owner, whose overlap the recorded run shows allowed."""
    for fault, w_end in _dead_member_windows(run):
        for old in run.intervals():
            if old.member != fault["target"] or not old.start_ts < fault["ts"] < old.end_ts:
                continue
            for new in run.intervals():
                if new.tp != old.tp or new.member == old.member \
                        or not fault["ts"] < new.start_ts < old.end_ts <= w_end:
                    continue
                events = run.histories[new.member]
                ts = (fault["ts"] + new.start_ts) / 2
                at = next((k for k, e in enumerate(events) if e["ts"] > ts), len(events))
                events.insert(at, run.event_like(events[new.start_i], "assigned", ts, partitions=[list(new.tp)]))
                return new.member, (f"{new.member} recorded {_fmt(new.tp)} assigned at {ts:.0f}, half-way between "
                                    f"{old.member}'s {fault['fault']} at {fault['ts']:.0f} and its real assignment at "
                                    f"{new.start_ts:.0f}; {old.member} held it until {old.end_ts:.0f}")
    raise NotApplicable("no partition of a dead-looking member handed to another member inside its fault window")


def held_beside_faulted(run: RunEdit) -> tuple[str | None, str]:
    """R2 (rule R2/fault-window narrowed). A healthy member records the revoke of a partition two
    heartbeats after the member a fault had made look dead (back, and rejoined) took it over (a client
    whose revoke callback runs late, after the partition's new owner has it): the overlap lies inside the
    faulted member's window, but the member that kept the partition is the healthy one. The first
    revoke whose partition the faulted member took within the revoke bound, early enough that the
    delayed revoke still falls inside its window."""
    ivs = run.intervals()
    for fault, w_end in _dead_member_windows(run):
        for new in ivs:
            if new.member != fault["target"] or not fault["ts"] < new.start_ts < w_end:
                continue
            for iv in ivs:
                late = new.start_ts + 2 * run.heartbeat_ms
                if (iv.tp != new.tp or iv.member == new.member or iv.end_reason != "revoked" or iv.end_i is None
                        or not new.start_ts - run.revoke_ms <= iv.end_ts <= new.start_ts
                        or late >= min(w_end - run.heartbeat_ms, new.end_ts)):
                    continue
                events = run.histories[iv.member]
                between = events[iv.end_i + 1:]
                if any(e["ts"] <= late and (e["event"] in ("started", "stopped") or (e.get("topic"), e.get("partition")) == iv.tp
                                            or list(iv.tp) in (e.get("partitions") or [])) for e in between):
                    continue
                revoke = events.pop(iv.end_i)
                if revoke["partitions"] != [list(iv.tp)]:
                    _drop_tp(revoke, iv.tp)
                    events.insert(iv.end_i, revoke)
                    revoke = run.event_like(revoke, "revoked", late, partitions=[list(iv.tp)])
                else:
                    revoke["ts"] = late
                at = next((k for k, e in enumerate(events) if e["ts"] > late), len(events))
                events.insert(at, revoke)
                return iv.member, (f"{iv.member} recorded the revoke of {_fmt(iv.tp)} at {late:.0f} instead of "
                                   f"{iv.end_ts:.0f}, after {new.member} (its {fault['fault']} at {fault['ts']:.0f}) "
                                   f"took it at {new.start_ts:.0f}")
    raise NotApplicable("no partition a dead-looking member took back from a healthy one inside its window")


def retained_revoked(run: RunEdit) -> tuple[str | None, str]:
    """R3. A cooperative member revokes a partition it keeps and takes it straight back in the same
    generation (a client that revokes everything on every rebalance, eager style, inside a cooperative
    group): a ``revoked`` of a retained partition one millisecond before the rebalance's ``assigned``,
    which lists it again. The first cooperative rebalance in which a member gained partitions while
    keeping one."""
    if not run.cooperative():
        raise NotApplicable("an eager cell: revoking everything is the protocol")
    for iv in run.intervals():
        events = run.histories[iv.member]
        for i in range(iv.start_i + 1, len(events)):
            e = events[i]
            if e["ts"] >= iv.end_ts or (iv.end_i is not None and i >= iv.end_i):
                break
            if e["event"] == "started":
                break
            if (e["event"] == "assigned" and e["partitions"] and e.get("protocol") != "eager"
                    and run.quiet(e["ts"] - 1, e["ts"], [iv.member])):
                revoke = run.event_like(e, "revoked", e["ts"] - 1.0, partitions=[list(iv.tp)])
                e["partitions"] = e["partitions"] + [list(iv.tp)]
                events.insert(i, revoke)
                return iv.member, (f"{iv.member} revoked retained {_fmt(iv.tp)} at {revoke['ts']:.0f} and was "
                                   f"assigned it back 1 ms later (generation {e.get('generation')})")
    raise NotApplicable("no cooperative rebalance in which a member gained partitions and kept one")


def _view_ids(run: RunEdit) -> dict[int, frozenset]:
    """Generation -> the member ids of its leader's JoinGroup view."""
    out: dict[int, frozenset] = {}
    for i in run.frames("JoinGroup", "response"):
        f = run.wire[i]
        if f.get("members") and isinstance(f.get("generation"), int):
            out[f["generation"]] = frozenset(m["member_id"] for m in f["members"])
    return out


def kept_revoked_across_rebalance(run: RunEdit) -> tuple[str | None, str]:
    """R3. A cooperative member revokes a partition its assignment kept, and gets it back in the
    next generation, after the group's membership changed in between (where rule R3/replanned
    excuses a revoke that was due, and must not excuse one of a partition the assignment kept): a
    ``revoked`` 1 ms after the member's ``assigned`` of the generation that kept the partition, and
    the partition listed again in its ``assigned`` of the next generation. The first such pair of
    generations of a member owning a partition across both."""
    if not run.cooperative():
        raise NotApplicable("an eager cell: revoking everything is the protocol")
    ids = _view_ids(run)
    for iv in run.intervals():
        events = run.histories[iv.member]
        gens = [(i, e) for i, e in enumerate(events) if iv.start_i < i and e["ts"] < iv.end_ts
                and (iv.end_i is None or i < iv.end_i) and e["event"] == "assigned"
                and isinstance(e.get("generation"), int) and e.get("protocol") != "eager"]
        for (i1, a1), (_i2, a2) in zip(gens, gens[1:]):
            g1, g2 = a1["generation"], a2["generation"]
            if g2 <= g1 or g1 not in ids or g2 not in ids or ids[g1] == ids[g2]:
                continue
            if not run.quiet(a1["ts"], a2["ts"], [iv.member]):
                continue
            a2["partitions"] = a2["partitions"] + [list(iv.tp)]
            nxt = events[i1 + 1]["ts"] if i1 + 1 < len(events) else a1["ts"] + 2.0
            events.insert(i1 + 1, run.event_like(a1, "revoked", a1["ts"] + min(1.0, (nxt - a1["ts"]) / 2),
                                                 partitions=[list(iv.tp)]))
            return iv.member, (f"{iv.member} revoked {_fmt(iv.tp)}, which generation {g1}'s assignment kept, "
                               f"at {a1['ts']:.0f} and got it back in generation {g2} at {a2['ts']:.0f} "
                               f"(membership changed in between)")
    raise NotApplicable("no member owning a partition across two generations of different membership")


def revoke_unreached(run: RunEdit) -> tuple[str | None, str]:
    """R4. A revoked partition never reaches its new owner: the member the leader gave it to (as the
    wire shows) never takes it (no ``assigned``, no consumption, no revoke of it: a client that drops
    a follow-up assignment). The first cooperative revoke whose new owner held the partition past the
    revoke bound, so that no other owner comes within the bound."""
    if not run.cooperative():
        raise NotApplicable("an eager cell")
    ivs = run.intervals()
    for iv in ivs:
        if iv.end_reason != "revoked" or iv.end_ts + run.revoke_ms > run.end_ts:
            continue
        takers = [o for o in ivs if o.tp == iv.tp and o.member != iv.member
                  and iv.end_ts <= o.start_ts <= iv.end_ts + run.revoke_ms]
        if len(takers) != 1:
            continue
        new = takers[0]
        others = [o for o in ivs if o.tp == iv.tp and o is not new and o.start_ts > iv.end_ts
                  and o.start_ts <= iv.end_ts + run.revoke_ms + run.heartbeat_ms]
        if others or new.end_ts < iv.end_ts + run.revoke_ms + run.heartbeat_ms \
                or not run.quiet(iv.end_ts, iv.end_ts + run.revoke_ms, [iv.member, new.member]):
            continue
        dropped = _erase_intervals(run, new.member, [new])
        return new.member, (f"{new.member} never took {_fmt(new.tp)}, revoked by {iv.member} at {iv.end_ts:.0f} "
                            f"(its assignment at {new.start_ts:.0f} and {dropped} event(s) of it dropped)")
    raise NotApplicable("no cooperative revoke with one new owner holding the partition past the revoke bound")


def eager_rejoin_holding(run: RunEdit) -> tuple[str | None, str]:
    """R5. An eager member rejoins without revoking what it owns (a client that skips the eager
    revoke-before-join): its whole ``revoked`` event before a JoinGroup is dropped. The first eager
    revoke of a member followed by a JoinGroup of that member before it stops."""
    joins = [run.wire[i] for i in run.frames("JoinGroup", "request")]
    for member in run.consumers:
        events = run.histories.get(member, [])
        for k, e in enumerate(events):
            if e["event"] != "revoked" or e.get("protocol") != "eager" or not e["partitions"]:
                continue
            stop = next((x["ts"] for x in events[k + 1:] if x["event"] in ("stopped", "started")), float("inf"))
            join = next((j for j in joins if j["member"] == member and e["ts"] <= j["ts"] < stop), None)
            if join is None:
                continue
            del events[k]
            return member, (f"{member} rejoined at {join['ts']:.0f} without revoking "
                            f"{', '.join(_fmt((t, p)) for t, p in e['partitions'])} (its eager revoke at "
                            f"{e['ts']:.0f} dropped)")
    raise NotApplicable("no eager revoke before a rejoin")


def leader_reassigns_owned(run: RunEdit) -> tuple[str | None, str]:
    """R1. A cooperative leader hands a partition that a member validly declared owned (the highest
    declared generation among its claimants) straight to another member (an eager-style assignor in
    a cooperative group): the partition moves from the claimant's assignment to the next member's in
    the SyncGroup request, re-encoded with the codec, and in both members' responses. The first
    cooperative generation whose leader kept a declared partition in place."""
    for i in _leader_syncs(run):
        req = run.wire[i]
        gen = req.get("generation")
        view = next((run.wire[k] for k in run.frames("JoinGroup", "response")
                     if run.wire[k].get("generation") == gen and run.wire[k].get("members")
                     and run.wire[k].get("member") == req["member"]), None)
        if view is None or view.get("protocol_name") not in config.COOPERATIVE_ASSIGNORS:
            continue
        claims: dict[TP, list[tuple[int, str]]] = {}
        for m in view["members"]:
            try:
                sub = decode_subscription(bytes.fromhex(m.get("metadata") or ""))
            except (DecodeError, ValueError):
                continue
            for tp in _flat(sub.owned_partitions):
                claims.setdefault(tp, []).append((sub.generation_id, m["member_id"]))
        try:
            given = {a["member_id"]: decode_assignment(bytes.fromhex(a["assignment"])) for a in req["assignments"]}
        except (DecodeError, ValueError):
            continue
        ids = [a["member_id"] for a in req["assignments"]]
        for tp, cs in sorted(claims.items()):
            best = max(g for g, _ in cs)
            valid = [mid for g, mid in cs if g == best]
            if len(valid) != 1 or valid[0] not in given or tp not in _flat(given[valid[0]].assigned_partitions):
                continue
            owner = valid[0]
            to = ids[(ids.index(owner) + 1) % len(ids)]
            _move(run, i, given, [(owner, [], [tp]), (to, [tp], [])])
            return req["member"], (f"leader {req['member']} gave {_fmt(tp)}, validly declared owned by "
                                   f"{run.member_of_id(owner) or owner}, to {run.member_of_id(to) or to} in "
                                   f"cooperative generation {gen} (wire line {i + 1})")
    raise NotApplicable("no cooperative generation whose leader kept a declared partition in place")
