"""Mutations the leadership invariants must fail (L1-L4; the checks are
:mod:`conformance.pipeline.checks.leadership`), with L1's exemptions bound to their evidence.
"""

from __future__ import annotations

from typing import Any

from conformance import config
from conformance.mutate.run_edit import NotApplicable, RunEdit, _fmt
from conformance.mutate.wire import _flat, _group, _leader_syncs, _move, _set_assignment, _sync_response
from conformance.nemesis.faults import FAULTS, GRACEFUL_STOP_LINES, STOP_LINES
from conformance.protocol import Assignment, DecodeError, decode_assignment, decode_subscription, encode_assignment


def leader_sync_missing_member(run: RunEdit) -> tuple[str | None, str]:
    """L1. The leader's SyncGroup leaves out a member of its generation (an assignor that drops a
    member it did not recognise): the last non-leader entry is removed from the request, and that
    member's SyncGroup response carries the empty assignment the broker then sends. The first leader
    SyncGroup with two members or more."""
    for i in _leader_syncs(run):
        req = run.wire[i]
        others = [a for a in req["assignments"] if a["member_id"] != req.get("member_id")]
        if not others:
            continue
        gone = others[-1]
        req["assignments"] = [a for a in req["assignments"] if a is not gone]
        j = _sync_response(run, gone["member_id"], req.get("generation"), i)
        if j is not None:
            run.wire[j]["assignment"] = ""
        who = run.member_of_id(gone["member_id"]) or gone["member_id"]
        return req["member"], (f"leader {req['member']} left {who} out of its SyncGroup of generation "
                               f"{req.get('generation')} at {req['ts']:.0f} (wire line {i + 1})")
    raise NotApplicable("no leader SyncGroup with two members")


def partition_assigned_twice(run: RunEdit) -> tuple[str | None, str]:
    """L2. The leader assigns one partition to two members in one generation (an assignor that does
    not remove what it handed out): the first partition of one member's assignment is added to
    another member's, re-encoded with the codec, in the request and in that member's SyncGroup
    response. Between two members other than the leader (the first leader SyncGroup giving a
    partition to a member other than itself, with a third member), else between the leader and
    another (the first leader SyncGroup with two members)."""
    def pairs(with_leader: bool):
        for i in _leader_syncs(run):
            req = run.wire[i]
            try:
                decoded = [(a, decode_assignment(bytes.fromhex(a["assignment"]))) for a in req["assignments"]]
            except (DecodeError, ValueError):
                continue
            pool = [ad for ad in decoded if with_leader or ad[0]["member_id"] != req.get("member_id")]
            giver = next((ad for ad in pool if _flat(ad[1].assigned_partitions)), None)
            to = next((ad for ad in pool if giver is not None and ad is not giver), None)
            if giver is not None and to is not None:
                yield i, req, giver, to

    for i, req, (giver, _), (to, d) in [*pairs(False), *pairs(True)][:1]:
        tp = _flat(decode_assignment(bytes.fromhex(giver["assignment"])).assigned_partitions)[0]
        _set_assignment(run, i, to, encode_assignment(Assignment(
            d.version, _group(_flat(d.assigned_partitions) + [tp]), d.user_data, d.trailing)).hex())
        who = run.member_of_id(to["member_id"]) or to["member_id"]
        owner = run.member_of_id(giver["member_id"]) or giver["member_id"]
        return req["member"], (f"leader {req['member']} gave {_fmt(tp)} to {who} as well as {owner} in "
                               f"generation {req.get('generation')} (wire line {i + 1})")
    raise NotApplicable("no leader SyncGroup with two members and a partition")


def unbalanced_final(run: RunEdit) -> tuple[str | None, str]:
    """L3. The leader of the final generation hands one partition of the member with the fewest to the
    member with the most (an assignor that does not balance): re-encoded with the codec in the
    SyncGroup request and in both members' responses. The last leader SyncGroup of the run with two
    members or more (a generation formed after the scenario's end, in teardown, may follow it).
    Only for balancing assignors (L3's scope: ``config.BALANCED_ASSIGNORS``)."""
    syncs = _leader_syncs(run)
    if not syncs:
        raise NotApplicable("no leader SyncGroup with two members")
    last_gen = max(run.wire[i].get("generation") or -1 for i in syncs)
    i = max(k for k in syncs if run.wire[k].get("generation") == last_gen)
    req = run.wire[i]
    protocol = next((run.wire[k].get("protocol_name") for k in run.frames("JoinGroup", "response")
                     if run.wire[k].get("generation") == last_gen and run.wire[k].get("protocol_name")), None)
    if protocol not in config.BALANCED_ASSIGNORS:
        raise NotApplicable(f"the final generation's assignor {protocol} is not one L3 judges (balancing assignors)")
    try:
        given = {a["member_id"]: decode_assignment(bytes.fromhex(a["assignment"])) for a in req["assignments"]}
    except (DecodeError, ValueError):
        raise NotApplicable("the final leader SyncGroup does not decode") from None
    counts = sorted(given, key=lambda mid: (len(_flat(given[mid].assigned_partitions)), mid))
    low, high = counts[0], counts[-1]
    if not _flat(given[low].assigned_partitions):
        raise NotApplicable("the final generation already leaves a member without partitions")
    tp = _flat(given[low].assigned_partitions)[0]
    _move(run, i, given, [(low, [], [tp]), (high, [tp], [])])
    return req["member"], (f"leader {req['member']} moved {_fmt(tp)} from {run.member_of_id(low) or low} to "
                           f"{run.member_of_id(high) or high} in generation {last_gen}, its last with two members or more "
                           f"(wire line {i + 1})")


def needless_moves(run: RunEdit) -> tuple[str | None, str]:
    """L4. The leader of the final generation swaps two partitions between two members that both
    declared them owned and keep their counts (an assignor that is not sticky): each gets the
    other's, re-encoded with the codec in the SyncGroup request and in both responses. The last
    cooperative leader SyncGroup of the run with two members keeping a declared partition each."""
    syncs = _leader_syncs(run)
    for i in sorted(syncs, key=lambda k: (run.wire[k].get("generation") or -1, k), reverse=True):
        req = run.wire[i]
        gen = req.get("generation")
        view = next((run.wire[k] for k in run.frames("JoinGroup", "response")
                     if run.wire[k].get("generation") == gen and run.wire[k].get("members")
                     and run.wire[k].get("member") == req["member"]), None)
        if view is None or view.get("protocol_name") not in config.COOPERATIVE_ASSIGNORS:
            continue
        try:
            declared = {m["member_id"]: set(_flat(decode_subscription(bytes.fromhex(m["metadata"])).owned_partitions))
                        for m in view["members"]}
            given = {a["member_id"]: decode_assignment(bytes.fromhex(a["assignment"])) for a in req["assignments"]}
        except (DecodeError, ValueError):
            continue
        keeping = [(mid, sorted(declared.get(mid, set()) & set(_flat(d.assigned_partitions))))
                   for mid, d in given.items()]
        keeping = [(mid, kept) for mid, kept in keeping if kept]
        if len(keeping) < 2:
            continue
        (x, (p, *_)), (y, (q, *_)) = keeping[0], keeping[1]
        _move(run, i, given, [(x, [q], [p]), (y, [p], [q])])
        return req["member"], (f"leader {req['member']} swapped {_fmt(p)} of {run.member_of_id(x) or x} and "
                               f"{_fmt(q)} of {run.member_of_id(y) or y} in generation {gen} (wire line {i + 1})")
    raise NotApplicable("no cooperative leader SyncGroup with two members keeping a declared partition")


# -- L1's exemptions bound to their evidence (issue 38): a leader that never synced ------------------
#: The toxic's lines and the pause's lines, and the graceful stop's, from the table of faults.
_TOXIC_ADD, _TOXIC_REMOVE = (line.name for line in FAULTS["toxic"].lines)
_PAUSE, _RESUME = (line.name for line in FAULTS["pause"].lines)
(_TERMINATE,) = GRACEFUL_STOP_LINES


def _unsynced_leader(run: RunEdit) -> tuple[str, int, float, float]:
    """Remove the leader's SyncGroup (request and answer) of the first generation it led and synced
    with two members or more, whose leader no fault window touches, that is neither stopped, killed nor
    leaving, and whose history goes on, from a minute before its JoinGroup response until its SyncGroup
    was due (the response plus the rebalance timeout, the cell's max.poll.interval.ms, as L1 reads it):
    a leader that went silent for no reason the run shows. (leader, generation, its JoinGroup response
    ts, the ts of the request that response answered.)"""
    rebalance_ms = run.timing("max_poll_interval_ms", config.MAX_POLL_INTERVAL_MS)
    for i in _leader_syncs(run):
        req = run.wire[i]
        leader, gen = req.get("member"), req.get("generation")
        joined = [j for j in run.frames("JoinGroup", "response") if j < i and run.wire[j].get("member") == leader
                  and run.wire[j].get("generation") == gen and not run.wire[j].get("error_code")]
        if not joined or run.wire[joined[0]].get("leader") != run.wire[joined[0]].get("member_id"):
            continue
        resp_ts = run.wire[joined[0]]["ts"]
        asked = [run.wire[j]["ts"] for j in run.frames("JoinGroup", "request")
                 if run.wire[j].get("member") == leader and run.wire[j]["ts"] <= resp_ts]
        due = resp_ts + rebalance_ms
        stops = [f for f in run.nemesis if f.get("target") == leader and f.get("fault") in STOP_LINES
                 and resp_ts - 60_000 <= f["ts"] <= due]
        leaves = [f for f in run.wire if f.get("member") == leader and f.get("api") == "LeaveGroup"
                  and resp_ts - 60_000 <= f["ts"] <= due]
        alive = any(e["ts"] > due for e in run.histories.get(leader, []))
        if stops or leaves or not alive or not asked or not run.quiet(resp_ts - 60_000, due, [leader]):
            continue
        answer = run.response_of(i)
        run.wire = [f for k, f in enumerate(run.wire) if k not in (i, answer)]
        return leader, gen, resp_ts, asked[-1]
    raise NotApplicable("no leader SyncGroup of a leader alive, unfaulted and not leaving until its sync was due")


def _log(run: RunEdit, ts: float, fault: str, target: str, phase: str = "invoke", **details: Any) -> None:
    """Insert a nemesis line (as the nemesis writes it) at ``ts``, in time order."""
    line = {"ts": ts, "fault": fault, "target": target, "phase": phase, "details": details}
    at = next((k for k, f in enumerate(run.nemesis) if f["ts"] > ts), len(run.nemesis))
    run.nemesis.insert(at, line)


def leader_unsynced_under_latency(run: RunEdit) -> tuple[str | None, str]:
    """L1 (rule L1/fault-hit-leader narrowed). The leader never sends its SyncGroup, and the only fault
    near is a 100 ms latency toxic on its path from 20 ms after its JoinGroup response, for 3 s (chaos's
    smallest latency pick). The old rule excused any fault line against the leader between the join and
    the next one; 100 ms silences nobody (the toxic rule), so nothing excuses a leader that stayed
    silent. The leader's SyncGroup is removed as :func:`_unsynced_leader` says."""
    leader, gen, resp_ts, _asked = _unsynced_leader(run)
    toxic = f"{leader}-latency"
    _log(run, resp_ts + 20, _TOXIC_ADD, leader, type="latency", stream="downstream", attributes={"latency": 100},
         toxic=toxic)
    _log(run, resp_ts + 3020, _TOXIC_REMOVE, leader, phase="heal", toxic=toxic)
    return leader, (f"leader {leader} of generation {gen} sent no SyncGroup; a 100 ms latency toxic on its path "
                    f"from {resp_ts + 20:.0f} for 3 s")


def leader_unsynced_after_stop(run: RunEdit) -> tuple[str | None, str]:
    """L1 (rule L1/leader-stopping narrowed). The runner asked the leader to stop before the JoinGroup
    it was elected by (2 s before, or halfway from its last start when that is later), and the leader,
    alive, neither synced nor left nor exited before its SyncGroup was due (a client whose close hangs
    while it leads). The old rule excused a leader stopped
    at any earlier time; a stop asked for is no excuse without the LeaveGroup or exit it should bring.
    The leader's SyncGroup is removed as :func:`_unsynced_leader` says."""
    leader, gen, _resp_ts, asked = _unsynced_leader(run)
    # After the leader's last start (a stop before it was over by then), at most 2 s before the JoinGroup.
    started = [f["ts"] for f in run.nemesis if f.get("target") == leader and f.get("fault") == "start"
               and f["ts"] < asked]
    stop_ts = max([asked - 2000] + [(s + asked) / 2 for s in started[-1:]])
    _log(run, stop_ts, _TERMINATE, leader)
    return leader, (f"leader {leader} of generation {gen} sent no SyncGroup and did not leave; the runner had "
                    f"asked it to stop at {stop_ts:.0f}, {(asked - stop_ts) / 1000:.1f} s before its JoinGroup")


def leader_unsynced_paused(run: RunEdit) -> tuple[str | None, str]:
    """Not a mutation that must fail: the still-allowed neighbour of :func:`leader_unsynced_under_latency`.
    The leader is paused 20 ms after its JoinGroup response, past its session timeout (resumed a session
    timeout and 3 s later), and never sends its SyncGroup: a fault that silences it while its SyncGroup
    was due, which L1/fault-hit-leader rightly excuses."""
    leader, gen, resp_ts, _asked = _unsynced_leader(run)
    _log(run, resp_ts + 20, _PAUSE, leader)
    _log(run, resp_ts + 20 + run.session_ms + 3000, _RESUME, leader, phase="heal")
    return leader, f"leader {leader} of generation {gen} paused from {resp_ts + 20:.0f} and sent no SyncGroup"
