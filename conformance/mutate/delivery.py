"""Mutations the delivery invariants must fail (D1-D3 and V1; the checks are
:mod:`conformance.pipeline.checks.delivery`).
"""

from __future__ import annotations

from conformance.mutate.run_edit import _WINDOW_FAULTS, TP, NotApplicable, RunEdit, _erase_intervals, _fmt


def dropped_consumption(run: RunEdit) -> tuple[str | None, str]:
    """D1. A member drops a fetched batch without processing it (and goes on past it: the records
    are never consumed by anyone): one ``consumed`` event removed. The middle (in time) of the
    batches nobody else read, so that no re-read covers the loss."""
    ranges: dict[TP, list[tuple[int, int]]] = {}
    batches = []
    for member in run.consumers:
        for i, e in enumerate(run.histories.get(member, [])):
            if e["event"] == "consumed":
                tp = (e["topic"], e["partition"])
                ranges.setdefault(tp, []).append((e["first_offset"], e["last_offset"]))
                batches.append((e["ts"], member, i, tp))
    alone = [b for b in sorted(batches) if sum(1 for a, z in ranges[b[3]]
                                               if a <= run.histories[b[1]][b[2]]["last_offset"]
                                               and z >= run.histories[b[1]][b[2]]["first_offset"]) == 1]
    if not alone:
        raise NotApplicable("no consumed batch read by one member only")
    ts, member, i, tp = alone[len(alone) // 2]
    e = run.histories[member].pop(i)
    return member, (f"{member} dropped its batch of {_fmt(tp)} offsets {e['first_offset']}-{e['last_offset']} "
                    f"consumed at {ts:.0f}")


def _accepted_commits(run: RunEdit) -> list[tuple[float, int, int, TP, int]]:
    """(response ts, request index, response index, partition, offset) of every accepted commit, in
    order of the response (as D2 orders them)."""
    out = []
    for i in run.frames("OffsetCommit", "request"):
        j = run.response_of(i)
        if j is None:
            continue
        resp = run.wire[j]
        errors = {(str(t), int(p)): int(e) for t, p, e in (resp.get("partition_errors") or [])}
        for t, p, off in run.wire[i].get("offsets") or []:
            if errors.get((str(t), int(p)), resp.get("error_code")) == 0:
                out.append((resp["ts"], i, j, (str(t), int(p)), int(off)))
    return sorted(out)


def commit_backwards(run: RunEdit) -> tuple[str | None, str]:
    """D2. A member commits a position it had already moved past (a client re-sending a stale cached
    offset): an accepted commit's offset replaced by the one the same member committed two commits
    of that partition earlier, which is lower. Request and history's ``committed`` both changed."""
    by_tp: dict[TP, list] = {}
    for c in _accepted_commits(run):
        by_tp.setdefault(c[3], []).append(c)
    for c in sorted(c for cs in by_tp.values() for c in cs):
        seq = by_tp[c[3]]
        k = seq.index(c)
        if k < 2:
            continue
        (_, i2, _, _, o2), (_, i1, _, _, o1), (_, i0, _, tp, o0) = seq[k - 2], seq[k - 1], seq[k]
        member = run.wire[i0]["member"]
        if not (o2 < o1 <= o0 and run.wire[i2]["member"] == run.wire[i1]["member"] == member):
            continue
        req = run.wire[i0]
        req["offsets"] = [[t, p, o2 if (str(t), int(p)) == tp else off] for t, p, off in req["offsets"]]
        for e in run.histories.get(member, []):
            if e["event"] == "committed" and abs(e["ts"] - req["ts"]) < 5000:
                hit = [o for o in e["offsets"] if (o[0], o[1], o[2]) == (tp[0], tp[1], o0)]
                if hit:
                    hit[0][2] = o2
                    break
        return member, (f"{member} committed {_fmt(tp)} at offset {o2} at {req['ts']:.0f} (wire line {i0 + 1}), "
                        f"instead of {o0}, after committing {o1}")
    raise NotApplicable("no partition with three accepted commits of one member, rising")


def stale_generation_commit(run: RunEdit) -> tuple[str | None, str]:
    """D2. A member commits with the generation it had before the current one formed, and the broker
    accepts it (a client that caches its generation across a rebalance, a broker that does not fence
    it): the request's (and its response's) generation set one lower. The first accepted commit of a
    member in a generation whose predecessor it was also in."""
    joined: dict[str, set[int]] = {}
    for i in run.frames("JoinGroup", "response"):
        f = run.wire[i]
        if (f.get("error_code") or 0) == 0 and isinstance(f.get("generation"), int):
            joined.setdefault(f["member"], set()).add(f["generation"])
    formed: dict[int, float] = {}
    for i in run.frames("JoinGroup", "response"):
        f = run.wire[i]
        if (f.get("error_code") or 0) == 0 and isinstance(f.get("generation"), int):
            formed.setdefault(f["generation"], f["ts"])
    for _ts, i, j, tp, _off in _accepted_commits(run):
        req = run.wire[i]
        gen = req.get("generation")
        if not isinstance(gen, int) or gen < 1 or (gen - 1) not in joined.get(req["member"], set()):
            continue
        if formed.get(gen, float("inf")) >= req["ts"]:
            continue
        req["generation"] = run.wire[j]["generation"] = gen - 1
        return req["member"], (f"{req['member']} committed {_fmt(tp)} at {req['ts']:.0f} (wire line {i + 1}) with "
                               f"generation {gen - 1}; generation {gen} had formed at {formed[gen]:.0f}")
    raise NotApplicable("no accepted commit in a generation after one the member was in")


def reread_after_rebalance(run: RunEdit) -> tuple[str | None, str]:
    """D3. After a clean cooperative rebalance a member re-reads a partition it kept (a client that
    resets a retained partition's position, as eager clients do): its last batch of that partition
    before the rebalance is consumed again, 2 ms after the rebalance's ``assigned``. The first
    rebalance in which a member gained partitions while keeping one it had read only by itself."""
    if not run.cooperative():
        raise NotApplicable("an eager cell: eager members give everything up at a rebalance")
    read_by: dict[TP, list[tuple[int, int, str]]] = {}
    for member in run.consumers:
        for e in run.histories.get(member, []):
            if e["event"] == "consumed":
                read_by.setdefault((e["topic"], e["partition"]), []).append((e["first_offset"], e["last_offset"], member))
    for iv in run.intervals():
        events = run.histories[iv.member]
        for i in range(iv.start_i + 1, len(events)):
            e = events[i]
            if e["event"] == "started" or (iv.end_i is not None and i >= iv.end_i) or e["ts"] >= iv.end_ts:
                break
            if not (e["event"] == "assigned" and e["partitions"] and e.get("protocol") != "eager"):
                continue
            before = [k for k in run.consumed(iv.member, iv.tp, iv.start_ts, e["ts"]) if k < i]
            if not before:
                continue
            last = events[before[-1]]
            shared = [r for r in read_by[iv.tp] if r[0] <= last["last_offset"] and r[1] >= last["first_offset"]
                      and r[2] != iv.member]
            if shared or not run.quiet(last["ts"], e["ts"] + 2.0, [iv.member]):
                continue
            nxt = events[i + 1]["ts"] if i + 1 < len(events) else e["ts"] + 4.0
            again = dict(last, ts=e["ts"] + min(2.0, (nxt - e["ts"]) / 2))
            events.insert(i + 1, again)
            return iv.member, (f"{iv.member} re-read {_fmt(iv.tp)} offsets {last['first_offset']}-{last['last_offset']} "
                               f"at {again['ts']:.0f}, after the rebalance that kept it")
    raise NotApplicable("no cooperative rebalance in which a member kept a partition it had read alone")


def new_owner_ignores_commit(run: RunEdit) -> tuple[str | None, str]:
    """D3. A member that takes a partition over resumes two records below the offset the previous
    owner committed before the handover (a client that resumes from a position it fetched too early,
    or from its own stale one): its first batch of the partition starts two offsets lower, re-reading
    records the previous owner read and committed. The first handover (a revoke, then the new
    owner's first batch starting exactly at the last commit the broker accepted before it took the
    partition, by the tap's clock) with two records or more committed."""
    commits = _accepted_commits(run)
    ivs = run.intervals()
    for iv in ivs:
        prev = [o for o in ivs if o.tp == iv.tp and o.member != iv.member and o.end_reason == "revoked"
                and o.end_ts <= iv.start_ts]
        if not prev or not run.quiet(prev[-1].end_ts, iv.start_ts + run.heartbeat_ms, [iv.member, prev[-1].member]):
            continue
        before = [c for c in commits if c[3] == iv.tp and c[0] < iv.start_ts]
        cons = run.consumed(iv.member, iv.tp, iv.start_ts, iv.end_ts)
        if not before or not cons:
            continue
        committed = before[-1][4]
        first = run.histories[iv.member][cons[0]]
        if first["first_offset"] != committed or committed < 2:
            continue
        first["first_offset"] = committed - 2
        first["count"] += 2
        return iv.member, (f"{iv.member} took {_fmt(iv.tp)} over from {prev[-1].member} and resumed at offset "
                           f"{committed - 2} at {first['ts']:.0f}, below the offset {committed} committed "
                           f"before the handover")
    raise NotApplicable("no handover whose new owner resumed exactly at the last accepted commit")


def unowned_at_end(run: RunEdit) -> tuple[str | None, str]:
    """V1. A member never takes its partitions in the last rebalance (the SyncGroup response gave
    them; the client did not start consuming them): its last ``assigned`` after the last fault is
    dropped, with its consumption of those partitions, so they have no owner at the end."""
    faults = [f["ts"] for f in run.nemesis if f.get("fault") != "start" and f["ts"] <= run.end_ts]
    since = max(faults, default=float("-inf"))
    at_end = [iv for iv in run.intervals() if iv.start_ts > since and iv.start_ts <= run.end_ts <= iv.end_ts]
    if not at_end:
        raise NotApplicable("no partition assigned after the last fault and owned at the end")
    first = min(at_end, key=lambda iv: (iv.start_ts, iv.member))
    group = [iv for iv in at_end if iv.member == first.member and iv.start_i == first.start_i]
    _erase_intervals(run, first.member, group)
    return first.member, (f"{first.member} never took {', '.join(_fmt(iv.tp) for iv in group)} assigned at "
                          f"{first.start_ts:.0f} (after the last fault at {since:.0f})")


def resumed_below_commit_in_fault(run: RunEdit) -> tuple[str | None, str]:
    """D3 (rule D3/fault narrowed). A member takes over a partition whose owner a fault made look
    dead (a kill, a pause) and resumes two records below the offset committed before the fault: it
    ignored an accepted commit, which no fault excuses. The first handover inside a fault window of
    the previous owner whose new owner's first batch starts at or above the last commit the broker
    accepted before that fault, with two records or more committed (the batch is extended down)."""
    commits = _accepted_commits(run)
    ivs = run.intervals()
    faults = [f for f in run.nemesis if f.get("phase") == "invoke" and f.get("fault") in _WINDOW_FAULTS]
    for iv in ivs:
        # The previous owner: the last other member that held the partition before (a dead-looking one
        # may still hold it when the new owner takes it: R2/fault-window).
        prev = [o for o in ivs if o.tp == iv.tp and o.member != iv.member and o.start_ts < iv.start_ts]
        if not prev:
            continue
        fault = next((f for f in faults if f.get("target") == prev[-1].member
                      and f["ts"] <= iv.start_ts <= f["ts"] + 2 * run.session_ms + run.heartbeat_ms), None)
        if fault is None:
            continue
        before = [c for c in commits if c[3] == iv.tp and c[0] < fault["ts"]]
        cons = run.consumed(iv.member, iv.tp, iv.start_ts, iv.end_ts)
        if not before or not cons or before[-1][4] < 2:
            continue
        committed = before[-1][4]
        first = run.histories[iv.member][cons[0]]
        if first["first_offset"] < committed:
            continue
        first["count"] += first["first_offset"] - (committed - 2)
        first["first_offset"] = committed - 2
        return iv.member, (f"{iv.member} took {_fmt(iv.tp)} over from {prev[-1].member} during its {fault['fault']} "
                           f"and resumed at offset {committed - 2}, below the offset {committed} committed before "
                           f"the fault")
    raise NotApplicable("no handover inside a fault window whose new owner resumed at or above the last accepted commit")


def unowned_reread(run: RunEdit) -> tuple[str | None, str]:
    """D3 (rule D3/rebalance narrowed). A member that revoked a partition goes on reading it: it
    re-reads the first batch the new owner read of it, 20 ms later, without owning it. The first
    cooperative handover whose new owner read a batch within the revoke bound."""
    ivs = run.intervals()
    for iv in ivs:
        if iv.end_reason != "revoked" or iv.end_i is None:
            continue
        for new in ivs:
            if new.tp != iv.tp or new.member == iv.member or not iv.end_ts <= new.start_ts <= iv.end_ts + run.revoke_ms:
                continue
            cons = run.consumed(new.member, new.tp, new.start_ts, new.end_ts)
            if not cons:
                continue
            batch = run.histories[new.member][cons[0]]
            events = run.histories[iv.member]
            at = next((k for k, e in enumerate(events) if e["ts"] > batch["ts"] + 20), len(events))
            events.insert(at, run.event_like(events[iv.end_i], "consumed", batch["ts"] + 20, topic=iv.tp[0],
                                             partition=iv.tp[1], first_offset=batch["first_offset"],
                                             last_offset=batch["last_offset"], count=batch["count"],
                                             poll_ts=batch["ts"] + 10))
            return iv.member, (f"{iv.member} revoked {_fmt(iv.tp)} and re-read offsets {batch['first_offset']}.."
                               f"{batch['last_offset']} after {new.member} had read them")
    raise NotApplicable("no handover whose new owner read a batch")
