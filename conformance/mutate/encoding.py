"""Mutations the encoding invariants must fail (E1, E2, E4, E5; the checks are
:mod:`conformance.pipeline.checks.encoding`).
"""

from __future__ import annotations

from conformance.mutate.run_edit import TP, NotApplicable, RunEdit, _fmt
from conformance.mutate.wire import (
    _cooperative_subscriptions,
    _flat,
    _group,
    _leader_syncs,
    _replace_leader_view,
    _set_assignment,
)
from conformance.protocol import (
    DecodeError,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_subscription,
)


def stale_claim(run: RunEdit) -> tuple[str | None, str]:
    """E5. A cooperative member declares in a JoinGroup a partition its last assignment did not give
    it (a client that keeps a stale owned set): the subscription bytes are re-encoded with the codec,
    in the request and in the leader's view of the same join. The first rejoin of a cooperative
    member (it has received an assignment) whose subscription declares owned partitions (v1+)."""
    last_assigned: dict[str, list[TP]] = {}
    for i, f in enumerate(run.wire):
        if f.get("undecodable"):
            continue
        if f.get("api") == "SyncGroup" and f.get("direction") == "response" and (f.get("error_code") or 0) == 0 \
                and f.get("assignment"):
            try:
                last_assigned[f["member"]] = _flat(decode_assignment(bytes.fromhex(f["assignment"])).assigned_partitions)
            except (DecodeError, ValueError):
                pass
            continue
        if not (f.get("api") == "JoinGroup" and f.get("direction") == "request" and f.get("member_id")
                and f["member"] in last_assigned and run.cooperative_member(f["member"])):
            continue
        for proto, sub in _cooperative_subscriptions(f):
            stale = next((tp for tp in run.topics() if tp not in last_assigned[f["member"]]), None)
            if stale is None:
                continue
            old = proto["metadata"]
            new = encode_subscription(Subscription(
                sub.version, sub.topics, sub.user_data, _group(_flat(sub.owned_partitions) + [stale]),
                sub.generation_id, sub.rack_id, sub.trailing)).hex()
            proto["metadata"] = new
            seen = _replace_leader_view(run, i, f["member_id"], old, new)
            return f["member"], (f"{f['member']} declared {_fmt(stale)} owned in its JoinGroup at {f['ts']:.0f} "
                                 f"(wire line {i + 1}; leader view updated in {seen} response(s)); its last "
                                 f"assignment was {', '.join(map(_fmt, last_assigned[f['member']])) or 'empty'}")
    raise NotApplicable("no rejoin of a cooperative member with a v1+ subscription")


def forgotten_claim(run: RunEdit) -> tuple[str | None, str]:
    """E5. A cooperative member rejoins declaring nothing owned while it keeps consuming its
    partitions (a client that rebuilds its subscription without its owned set): the owned partitions
    of one JoinGroup subscription emptied, re-encoded with the codec, in the request and in the
    leader's view. The first cooperative rejoin at which the member's history shows it owning a
    partition from two heartbeats before the JoinGroup to two after."""
    ivs = run.intervals()
    for i in run.frames("JoinGroup", "request"):
        f = run.wire[i]
        if not f.get("member_id") or not run.cooperative_member(f["member"]):
            continue
        hb = 2 * run.heartbeat_ms
        held = [iv for iv in ivs if iv.member == f["member"] and iv.start_ts <= f["ts"] - hb and iv.end_ts >= f["ts"] + hb]
        if not held:
            continue
        for proto, sub in _cooperative_subscriptions(f):
            if not sub.owned_partitions:
                continue
            old = proto["metadata"]
            proto["metadata"] = new = encode_subscription(Subscription(
                sub.version, sub.topics, sub.user_data, (), sub.generation_id, sub.rack_id, sub.trailing)).hex()
            seen = _replace_leader_view(run, i, f["member_id"], old, new)
            return f["member"], (f"{f['member']} declared nothing owned in its JoinGroup at {f['ts']:.0f} (wire line "
                                 f"{i + 1}; leader view updated in {seen}) while owning "
                                 f"{', '.join(sorted({_fmt(iv.tp) for iv in held}))}")
    raise NotApplicable("no cooperative rejoin of a member owning partitions across it")


def malformed_subscription(run: RunEdit) -> tuple[str | None, str]:
    """E1. A member's JoinGroup subscription is two bytes short of its declared version (a client
    writing its last field too short), in the request and in the leader's view of that join. The
    first JoinGroup request of a member that already has a member id."""
    for i in run.frames("JoinGroup", "request"):
        f = run.wire[i]
        if not f.get("member_id") or not f.get("protocols"):
            continue
        proto = f["protocols"][0]
        old = proto.get("metadata") or ""
        if len(old) < 8:
            continue
        proto["metadata"] = new = old[:-4]
        seen = _replace_leader_view(run, i, f["member_id"], old, new)
        return f["member"], (f"{f['member']}'s {proto.get('name')} subscription at {f['ts']:.0f} (wire line {i + 1}) "
                             f"lost its last 2 bytes (leader view updated in {seen} response(s))")
    raise NotApplicable("no JoinGroup request of a member with an id")


def non_canonical_subscription(run: RunEdit) -> tuple[str | None, str]:
    """E4. The reference member writes its owned partitions in descending order (a writer that
    keeps its set's iteration order instead of sorting as Java does): same content, other bytes,
    re-encoded with the codec in the request and in the leader's view of that join. The first
    JoinGroup of a reference member declaring two owned partitions or more."""
    refs = {m["name"] for m in run.manifest.get("members", []) if m.get("kind") == "reference"}
    for i in run.frames("JoinGroup", "request"):
        f = run.wire[i]
        if f["member"] not in refs or not f.get("member_id"):
            continue
        for proto in f.get("protocols") or []:
            try:
                sub = decode_subscription(bytes.fromhex(proto.get("metadata") or ""))
            except (DecodeError, ValueError):
                continue
            owned = _flat(sub.owned_partitions)
            if sub.version < 1 or len(owned) < 2:
                continue
            by: dict[str, list[int]] = {}
            for t, p in owned:
                by.setdefault(t, []).append(p)
            unsorted = tuple(TopicPartitions(t, tuple(sorted(ps, reverse=True))) for t, ps in sorted(by.items()))
            if unsorted == sub.owned_partitions:
                unsorted = tuple(reversed(unsorted))
            old = proto["metadata"]
            new = encode_subscription(Subscription(sub.version, sub.topics, sub.user_data, unsorted,
                                                   sub.generation_id, sub.rack_id, sub.trailing)).hex()
            if new == old:
                continue
            proto["metadata"] = new
            seen = _replace_leader_view(run, i, f["member_id"], old, new)
            return f["member"], (f"{f['member']} wrote its owned partitions {', '.join(map(_fmt, owned))} unsorted in "
                                 f"its JoinGroup at {f['ts']:.0f} (wire line {i + 1}; leader view updated in {seen})")
    raise NotApplicable("no JoinGroup of a reference member declaring two owned partitions")


def malformed_assignment(run: RunEdit) -> tuple[str | None, str]:
    """E2. The leader sends a member an assignment two bytes short of its declared version (an
    assignor writing its last field too short), in the SyncGroup request and in the member's
    response the broker forwards it in. The first leader SyncGroup with an assignment for a member
    other than itself."""
    for i in _leader_syncs(run, 1):
        req = run.wire[i]
        for a in req["assignments"]:
            if a["member_id"] == req.get("member_id") or len(a.get("assignment") or "") < 8:
                continue
            _set_assignment(run, i, a, a["assignment"][:-4])
            who = run.member_of_id(a["member_id"]) or a["member_id"]
            return req["member"], (f"leader {req['member']}'s assignment for {who} in generation "
                                   f"{req.get('generation')} (wire line {i + 1}) lost its last 2 bytes")
    raise NotApplicable("no leader SyncGroup assigning another member")


def declared_after_lost(run: RunEdit) -> tuple[str | None, str]:
    """E5 (rule E5/clock-slack narrowed). A member's history records a partition lost 200 ms before
    a JoinGroup that still declares it, and assigned again 100 ms after it (the client reported the
    loss, then rejoined with its stale owned set; the group happened to give the partition back). The
    slack of one heartbeat either side excused it; the history gave the partition up before the
    JoinGroup, which no clock lag explains. The first rejoin of a cooperative member declaring a
    partition it has owned for over a second, outside fault windows."""
    ivs = run.intervals()
    for i in run.frames("JoinGroup", "request"):
        f = run.wire[i]
        member = f.get("member")
        if not f.get("member_id") or not run.cooperative_member(member):
            continue
        for _proto, sub in _cooperative_subscriptions(f):
            owned = _flat(sub.owned_partitions)
            held = [iv for iv in ivs if iv.member == member and iv.tp in owned
                    and iv.start_ts < f["ts"] - 1000 and iv.end_ts > f["ts"] + 1000]
            if not held or not run.quiet(f["ts"] - 1000, f["ts"] + 1000, [member]):
                continue
            iv = held[0]
            events = run.histories[member]
            lost = run.event_like(events[iv.start_i], "lost", f["ts"] - 200, partitions=[list(iv.tp)])
            again = run.event_like(events[iv.start_i], "assigned", f["ts"] + 100, partitions=[list(iv.tp)])
            for e in (lost, again):
                at = next((k for k, x in enumerate(events) if x["ts"] > e["ts"]), len(events))
                events.insert(at, e)
            return member, (f"{member}'s history lost {_fmt(iv.tp)} 200 ms before its JoinGroup at {f['ts']:.0f} "
                            f"(wire line {i + 1}), which still declares it, and got it back 100 ms after")
    raise NotApplicable("no cooperative rejoin declaring a partition held for over a second either side")
