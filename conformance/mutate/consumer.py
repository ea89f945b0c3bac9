"""Mutations of a KIP-848 group (K1-K5, and R2 across protocols and by the broker's hand-over; the
checks are :mod:`conformance.pipeline.checks.consumer`), the online migration's among them.
"""

from __future__ import annotations

import json
from typing import Callable, Iterator

from conformance.members.spec_grammar import split_spec
from conformance.mutate.revoke import _dead_member_windows, skipped_revoke
from conformance.mutate.run_edit import TP, NotApplicable, RunEdit, _fmt
from conformance.mutate.wire import _flat
from conformance.protocol import Assignment, decode_assignment, encode_assignment
from conformance.reference.codes import GROUP_ID_NOT_FOUND, INCONSISTENT_GROUP_PROTOCOL

# -- R2/fault-window in a KIP-848 group (issue 38): the removal shown by the broker handing over ------------

def _handovers(run: RunEdit) -> list[tuple[int, str, TP]]:
    """(wire index, member, partition) of every partition a ConsumerGroupHeartbeat answer without error
    gave a member (KIP-848: the broker's own assignor), in wire order; partitions as the pipeline names
    them (the manifest's topic ids)."""
    names = {v: k for k, v in (run.manifest.get("topic_ids") or {}).items()}
    out = []
    for i in run.frames("ConsumerGroupHeartbeat", "response"):
        f = run.wire[i]
        if f.get("error_code") or not f.get("assigned"):
            continue
        out += [(i, f["member"], (names.get(a.get("topic_id"), a.get("topic_id")), p))
                for a in f["assigned"] for p in a.get("partitions") or ()]
    return out


def handed_over_after_heard(run: RunEdit) -> tuple[str | None, str]:
    """R2 (rule R2/fault-window, KIP-848 removal by handover). The broker answers, without error, the
    member a fault made look dead after the fault and before it hands one of that member's partitions
    to another member, yet the member still records the partition owned past the handover: the broker
    heard it (it may have acknowledged giving the partition up) and its history kept it (a zombie
    owner). The edit copies the member's last answered request before the fault (a heartbeat) and its
    answer to 2 ms before the request of the first handover the recorded run shows allowed."""
    for fault, w_end in _dead_member_windows(run):
        old_member = fault["target"]
        answered = [i for i, f in enumerate(run.wire) if f.get("member") == old_member and f.get("direction") == "request"
                    and f.get("api") in ("Heartbeat", "ConsumerGroupHeartbeat") and f["ts"] < fault["ts"]
                    and (j := run.response_of(i)) is not None and not run.wire[j].get("error_code")]
        if not answered:
            continue
        for i, got, tp in _handovers(run):
            q = run.request_of(i)
            if q is None or got == old_member:
                continue
            at = run.wire[q]["ts"]     # when the exchange that handed the partition over began
            if not fault["ts"] < at <= w_end:
                continue
            old = next((iv for iv in run.intervals() if iv.member == old_member and iv.tp == tp
                        and iv.start_ts < fault["ts"] and iv.end_ts > at), None)
            if old is None:
                continue
            req_i = answered[-1]
            req, resp = dict(run.wire[req_i]), dict(run.wire[run.response_of(req_i)])
            req.update(ts=at - 2, correlation_id=2_000_000_000)
            resp.update(ts=at - 1, correlation_id=2_000_000_000)
            run.wire[q:q] = [req, resp]
            return None, (f"the broker answered {old_member} ({req['api']}, no error) at {at - 1:.0f}, after its "
                          f"{fault['fault']} at {fault['ts']:.0f} and before it gave {_fmt(tp)}, which "
                          f"{old_member} recorded owned until {old.end_ts:.0f}, to {got} (request at {at:.0f})")
    raise NotApplicable("no partition of a dead-looking member handed over by a ConsumerGroupHeartbeat answer "
                        "inside its fault window")


# -- the consumer group protocol (KIP-848) ---------------------------------------------------------

def _consumer_protocol(run: RunEdit, member: str) -> bool:
    """Whether ``member``'s spec chooses the consumer protocol (``KIND[@VERSION]+consumer``)."""
    return any(m["name"] == member and split_spec(str(m.get("spec") or "")).protocol == "consumer"
               for m in run.manifest.get("members", []))


def _heartbeats(run: RunEdit) -> list[int]:
    return [i for i, f in enumerate(run.wire) if f.get("api") == "ConsumerGroupHeartbeat" and not f.get("undecodable")]


def _admitted(f: dict) -> bool:
    return f.get("direction") == "response" and (f.get("error_code") or 0) == 0 and (f.get("member_epoch") or 0) > 0


def cross_protocol_skipped_revoke(run: RunEdit) -> tuple[str | None, str]:
    """R2, across protocols. As :func:`skipped_revoke`, for a partition that moves between a
    consumer-protocol member and a classic one (either way): R2 judges ownership from the histories,
    whatever protocol each owner speaks."""
    return skipped_revoke(run, lambda a, b: _consumer_protocol(run, a) != _consumer_protocol(run, b))


def stale_heartbeat_epoch(run: RunEdit) -> tuple[str | None, str]:
    """K1. A consumer member heartbeats with its previous epoch after the broker gave it a new one (a
    client that cached its epoch): the request after the first epoch change of a member id carries
    the epoch before it. The response is left as recorded (K1 judges what the member sent)."""
    last: dict[str, int] = {}
    bumped: dict[str, int] = {}
    for i in _heartbeats(run):
        f = run.wire[i]
        mid = f.get("member_id")
        if _admitted(f):
            if mid in last and f["member_epoch"] > last[mid]:
                bumped[mid] = last[mid]
            last[mid] = f["member_epoch"]
        elif f.get("direction") == "request" and mid in bumped and (f.get("member_epoch") or 0) > bumped[mid]:
            old, new = bumped[mid], f["member_epoch"]
            f["member_epoch"] = f["generation"] = old
            return f["member"], (f"{f['member']} heartbeats with epoch {old} instead of {new} at {f['ts']:.0f} "
                                 f"(wire line {i + 1})")
    raise NotApplicable("no consumer member whose epoch changed and that heartbeat after")


def bridged_assignor(run: RunEdit) -> tuple[str | None, str]:
    """K2. A classic member in a consumer group runs its assignor although its JoinGroup response named
    no leader: its SyncGroup request carries an assignment (for itself, what the broker then gives
    it). The first such SyncGroup."""
    leaderless: set[tuple[str, int]] = set()
    for i, f in enumerate(run.wire):
        if f.get("api") == "JoinGroup" and f.get("direction") == "response" and (f.get("error_code") or 0) == 0 \
                and f.get("leader") == "" and isinstance(f.get("generation"), int):
            leaderless.add((f["member"], f["generation"]))
        elif f.get("api") == "SyncGroup" and f.get("direction") == "request" and not f.get("assignments") \
                and (f["member"], f.get("generation")) in leaderless:
            j = run.response_of(i)
            if j is None or (run.wire[j].get("error_code") or 0) != 0 or not run.wire[j].get("assignment"):
                continue
            f["assignments"] = [{"member_id": f["member_id"], "assignment": run.wire[j]["assignment"]}]
            return f["member"], (f"{f['member']} sends its own assignment in its SyncGroup of generation "
                                 f"{f['generation']} at {f['ts']:.0f} (wire line {i + 1})")
    raise NotApplicable("no classic member's SyncGroup after a JoinGroup response that named no leader")


#: The rebalance timeout :func:`unacknowledged_assignment` gives its copy (see there).
SHORT_REBALANCE_TIMEOUT_MS = 15000


def unacknowledged_assignment(run: RunEdit) -> tuple[str | None, str]:
    """K3. A consumer member stops acknowledging its assignments: from the first change of its
    assignment to a set other than what it reported (in the member id's last stint that lasts
    longest after such a change), every later ``owned`` it sends repeats what it reported before.

    The recorded cells bounce a member every ~10 s, so no stint outlasts the 30 s rebalance
    timeout by much; the copy's manifest says the cell ran with a rebalance timeout
    (``max_poll_interval_ms``) of :data:`SHORT_REBALANCE_TIMEOUT_MS`, and the chosen stint must
    outlast that plus a heartbeat after the change. Frames and their timing stay as recorded."""
    bound = SHORT_REBALANCE_TIMEOUT_MS + run.heartbeat_ms
    by_id: dict[str, list[int]] = {}
    for i in _heartbeats(run):
        f = run.wire[i]
        if f.get("direction") == "request" and f.get("member_epoch") == 0:
            by_id.pop(f.get("member_id"), None)   # a new stint: the last one of each member id
        by_id.setdefault(f.get("member_id"), []).append(i)

    def owned_set(j: int) -> set:
        return {(t["topic_id"], p) for t in run.wire[j]["owned"] for p in t["partitions"]}

    best = None
    for _mid, rows in sorted(by_id.items(), key=lambda kv: kv[1][0]):
        requests = [j for j in rows if run.wire[j].get("direction") == "request" and run.wire[j].get("owned") is not None]
        for i in (i for i in rows if _admitted(run.wire[i]) and run.wire[i].get("assigned") is not None):
            before = [j for j in requests if j < i]
            later = [j for j in requests if j > i and (run.wire[j].get("member_epoch") or 0) > 0]
            target = {(t["topic_id"], p) for t in run.wire[i]["assigned"] for p in t["partitions"]}
            if not before or not later or owned_set(before[-1]) == target:
                continue
            lasts = run.wire[rows[-1]]["ts"] - run.wire[i]["ts"]
            if lasts > bound and (best is None or lasts > best[0]):
                best = (lasts, i, before[-1], later)
            break   # the first such change of the stint
    if best is None:
        raise NotApplicable("no consumer member's stint that outlasts the rebalance timeout after a new assignment")
    lasts, i, prev, later = best
    for j in later:
        run.wire[j]["owned"] = json.loads(json.dumps(run.wire[prev]["owned"]))
    run.manifest.setdefault("timing", {})["max_poll_interval_ms"] = SHORT_REBALANCE_TIMEOUT_MS
    f = run.wire[i]
    return f["member"], (f"{f['member']} reports the owned set of wire line {prev + 1} in every heartbeat after the "
                         f"assignment of epoch {f['member_epoch']} at {f['ts']:.0f} (wire line {i + 1}); its stint "
                         f"lasts {lasts / 1000:.1f} s more (rebalance timeout {SHORT_REBALANCE_TIMEOUT_MS} ms)")


def stale_epoch_commit(run: RunEdit) -> tuple[str | None, str]:
    """K4. The broker accepts a commit from an epoch below the member's: a consumer member's accepted
    commit of a partition first assigned at its current epoch E is sent with epoch E - 1 (request
    and response), which KIP-1251's assignment epoch does not cover either."""
    epoch: dict[str, int] = {}
    since: dict[str, dict[TP, int]] = {}
    names = {v: k for k, v in (run.manifest.get("topic_ids") or {}).items()}
    for i, f in enumerate(run.wire):
        mid = f.get("member_id")
        if f.get("api") == "ConsumerGroupHeartbeat" and _admitted(f):
            epoch[mid] = f["member_epoch"]
            if f.get("assigned") is not None:
                now = {(names.get(t["topic_id"], t["topic_id"]), int(p)) for t in f["assigned"] for p in t["partitions"]}
                held = since.get(mid, {})
                since[mid] = {tp: held.get(tp, f["member_epoch"]) for tp in now}
        elif f.get("api") == "OffsetCommit" and f.get("direction") == "request" and mid in epoch:
            e = epoch[mid]
            tps = [(names.get(str(t), str(t)), int(p)) for t, p, _ in f.get("offsets") or []]
            fresh = [tp for tp in tps if since.get(mid, {}).get(tp) == e]
            j = run.response_of(i)
            if f.get("generation") != e or e < 2 or not fresh or j is None or (run.wire[j].get("error_code") or 0) != 0:
                continue
            f["generation"] = run.wire[j]["generation"] = e - 1
            return f["member"], (f"{f['member']} commits {', '.join(map(_fmt, fresh))} with epoch {e - 1} at "
                                 f"{f['ts']:.0f} (wire line {i + 1}); its epoch was {e}, at which it got them")
    raise NotApplicable("no accepted commit of a partition first assigned at the member's current epoch")


# K4 for classic members in a consumer group: a stale commit the broker's bridge accepted (a mutation)
# and the KIP-1251 commit it may accept (the neighbour tests/test_consumer_protocol_recorded.py applies).

def _bridged_commits(run: RunEdit) -> Iterator[tuple[int, int, int, int | None, dict[TP, int | None]]]:
    """The accepted commits of classic members (no ConsumerGroupHeartbeat of their member id) sent while a
    consumer member was admitted within a session timeout before (the group a consumer group), at the
    generation of the member id's last JoinGroup answer G, in wire order: (request index, response
    index, G, the generation of the member id's JoinGroup answer before (None: none), each committed
    partition -> the generation since which the member's SyncGroup answers held it without a break,
    None when the last answer did not hold it). Answers from before the first
    admitted heartbeat count at the generation of the last of them (the assignment epoch the broker
    gives at the conversion)."""
    names = {v: k for k, v in (run.manifest.get("topic_ids") or {}).items()}
    consumer_ids = {f.get("member_id") for i in _heartbeats(run) for f in [run.wire[i]]}
    admitted = [f["ts"] for i in _heartbeats(run) for f in [run.wire[i]] if _admitted(f)]
    if not admitted:
        return
    converted = min(admitted)
    joined: dict[str, int] = {}          # member id -> generation of its last JoinGroup answer
    before: dict[str, int] = {}          # member id -> generation of the JoinGroup answer before that
    since: dict[str, dict[TP, int]] = {}  # member name -> partition -> generation held since
    synced_ids: dict[str, str] = {}       # member name -> the member id its answers belong to
    for i, f in enumerate(run.wire):
        api, member, mid = f.get("api"), f.get("member"), f.get("member_id")
        if api == "JoinGroup" and f.get("direction") == "response" and not f.get("error_code") \
                and isinstance(f.get("generation"), int) and mid not in consumer_ids:
            if mid in joined and joined[mid] != f["generation"]:
                before[mid] = joined[mid]
            joined[mid] = f["generation"]
            if synced_ids.get(member) != mid:
                synced_ids[member], since[member] = mid, {}
        elif api == "SyncGroup" and f.get("direction") == "request" and member in synced_ids:
            j = run.response_of(i)
            if j is None or run.wire[j].get("error_code") or not run.wire[j].get("assignment"):
                continue
            g = f.get("generation")
            held = since[member]
            now = _flat(decode_assignment(bytes.fromhex(run.wire[j]["assignment"])).assigned_partitions)
            if run.wire[j]["ts"] < converted:
                since[member] = {tp: g for tp in now}
            else:
                since[member] = {tp: held.get(tp, g) for tp in now}
        elif api == "OffsetCommit" and f.get("direction") == "request" and mid in joined \
                and f.get("generation") == joined[mid] \
                and any(f["ts"] - run.session_ms <= t <= f["ts"] for t in admitted):
            j = run.response_of(i)
            if j is None or (run.wire[j].get("error_code") or 0) != 0 or \
                    any(e for _t, _p, e in run.wire[j].get("partition_errors") or []):
                continue
            held = since.get(member, {}) if synced_ids.get(member) == mid else {}
            tps = [(names.get(str(t), str(t)), int(p)) for t, p, _ in f.get("offsets") or []]
            yield i, j, joined[mid], before.get(mid), {tp: held.get(tp) for tp in tps}


def bridged_stale_commit(run: RunEdit) -> tuple[str | None, str]:
    """K4 (a classic member in a consumer group). The broker's bridge accepts a classic member's commit
    from a generation below its member epoch: the first accepted commit of a classic member in the
    consumer group, at its epoch G, of a partition its SyncGroup answer of G gave it afresh, is sent
    with its previous epoch (the generation of its JoinGroup answer before; request and response), which
    KIP-1251's assignment epoch (G) does not cover either: a client that tags the new partitions'
    commits with the generation it had before the rebalance."""
    for i, j, g, prev, held in _bridged_commits(run):
        fresh = [tp for tp, s in held.items() if s == g]
        if prev is None or prev >= g or not fresh:
            continue
        f = run.wire[i]
        f["generation"] = run.wire[j]["generation"] = prev
        return f["member"], (f"{f['member']} (classic) commits {', '.join(map(_fmt, fresh))} with generation {prev} "
                             f"at {f['ts']:.0f} (wire line {i + 1}) in the consumer group; its epoch was {g}, at "
                             "which it got them; the broker accepts it")
    raise NotApplicable("no accepted classic commit in a consumer group of a partition first assigned at the "
                        "member's epoch")


def bridged_held_commit(run: RunEdit) -> tuple[str | None, str]:
    """K4's neighbour (not a mutation: K4 must still allow it on a broker from 4.3). The first accepted
    commit of a classic member in the consumer group, at its epoch G, every partition of which its
    SyncGroup answers held since an earlier generation, is sent from the latest of those generations
    (request and response): KIP-1251 accepts a commit from an epoch between the partitions'
    assignment epochs and the member's."""
    for i, j, g, _prev, held in _bridged_commits(run):
        if not held or any(s is None or s >= g for s in held.values()):
            continue
        f = run.wire[i]
        e = max(held.values())
        f["generation"] = run.wire[j]["generation"] = e
        return f["member"], (f"{f['member']} (classic) commits {', '.join(map(_fmt, held))} with generation {e} at "
                             f"{f['ts']:.0f} (wire line {i + 1}) in the consumer group; its epoch was {g}, and it "
                             f"held them since generation {e} or before")
    raise NotApplicable("no accepted classic commit in a consumer group of partitions held since an earlier "
                        "generation")


def _joins(run: RunEdit, answered: Callable[[dict], bool]) -> list[tuple[int, int]]:
    """(request index, response index) of the consumer-protocol joins (a ConsumerGroupHeartbeat at
    epoch 0) whose response ``answered`` says yes to, sent after a classic group formed (a JoinGroup
    answered without error before the request), in time order."""
    first_classic = min((f["ts"] for f in run.wire if f.get("api") == "JoinGroup" and f.get("direction") == "response"
                         and (f.get("error_code") or 0) == 0), default=None)
    out = []
    for i, f in enumerate(run.wire):
        if f.get("api") == "ConsumerGroupHeartbeat" and f.get("direction") == "request" and f.get("member_epoch") == 0 \
                and first_classic is not None and f["ts"] > first_classic:
            j = run.response_of(i)
            if j is not None and answered(run.wire[j]):
                out.append((i, j))
    return out


def _refused(f: dict) -> bool:
    return f.get("direction") == "response" and f.get("error_code") == GROUP_ID_NOT_FOUND


def _join_and_last_sync(run: RunEdit, answered: Callable[[dict], bool], what: str) -> tuple[int, int]:
    """(request index of the first consumer-protocol join ``answered`` says yes to, index of the last
    leader's SyncGroup request with assignments before it); NotApplicable naming ``what`` when either
    is missing."""
    joins = _joins(run, answered)
    if not joins:
        raise NotApplicable(f"no consumer-protocol join {what} after a classic group formed")
    i, _ = joins[0]
    syncs = [k for k, f in enumerate(run.wire[:i]) if f.get("api") == "SyncGroup" and f.get("direction") == "request"
             and f.get("assignments")]
    if not syncs:
        raise NotApplicable(f"no leader's SyncGroup assignments before the first {what} join")
    return i, syncs[-1]


def upgrade_despite_policy(run: RunEdit) -> tuple[str | None, str]:
    """K5. The broker upgrades a classic group its policy keeps classic: on a run whose group
    converted online when a consumer member joined, the manifest's migration policy becomes
    ``disabled`` (the broker played its part as if the policy allowed it)."""
    joins = _joins(run, _admitted)
    if not joins:
        raise NotApplicable("no consumer-protocol join admitted after a classic group formed")
    was = run.manifest.get("migration_policy")
    run.manifest["migration_policy"] = "disabled"
    i, j = joins[0]
    return None, (f"migration_policy {was!r} -> 'disabled'; the broker still admits {run.wire[i]['member']}'s join "
                  f"(wire line {i + 1}) at epoch {run.wire[j]['member_epoch']}")


def refusal_despite_policy(run: RunEdit) -> tuple[str | None, str]:
    """K5. The broker refuses an upgrade its policy allows: on a run whose consumer members were
    refused (GROUP_ID_NOT_FOUND) under ``migration-policy=disabled``, the manifest's policy becomes
    ``bidirectional`` (the recorded group's assignments carry no userData)."""
    joins = _joins(run, _refused)
    if not joins:
        raise NotApplicable("no consumer-protocol join refused with GROUP_ID_NOT_FOUND after a classic group formed")
    was = run.manifest.get("migration_policy")
    run.manifest["migration_policy"] = "bidirectional"
    return None, (f"migration_policy {was!r} -> 'bidirectional'; the broker still refuses "
                  + ", ".join(f"{run.wire[i]['member']} (wire line {i + 1})" for i, _ in joins))


def classic_refusal_despite_policy(run: RunEdit) -> tuple[str | None, str]:
    """K5 (KAFKA-20640). The broker refuses a classic member's join into a consumer group its policy
    allows: on a run whose classic JoinGroups were refused (INCONSISTENT_GROUP_PROTOCOL) under
    ``migration-policy=disabled`` with no other classic member in the group, the manifest's policy
    becomes ``bidirectional``, under which the broker admits classic members."""
    refused = [i for i, f in enumerate(run.wire) if f.get("api") == "JoinGroup" and f.get("direction") == "response"
               and f.get("error_code") == INCONSISTENT_GROUP_PROTOCOL]
    if not refused:
        raise NotApplicable("no classic JoinGroup refused with INCONSISTENT_GROUP_PROTOCOL")
    was = run.manifest.get("migration_policy")
    run.manifest["migration_policy"] = "bidirectional"
    return run.wire[refused[0]]["member"], (f"migration_policy {was!r} -> 'bidirectional'; the broker still refuses "
                                            + ", ".join(f"{run.wire[i]['member']} (wire line {i + 1})" for i in refused))


def upgrade_despite_userdata(run: RunEdit) -> tuple[str | None, str]:
    """K5 (KAFKA-18134). The broker upgrades a classic group whose assignments carry userData: on a
    run whose group converted online, the last classic leader's SyncGroup before the first admitted
    join gives every member 4 bytes of userData (request and each member's response of that
    generation), as an assignor that writes userData into assignments would."""
    i, k = _join_and_last_sync(run, _admitted, "admitted")
    sync, gen = run.wire[k], run.wire[k].get("generation")
    _set_userdata(run, k, i, b"\x00\x01\x02\x03")
    return None, (f"{sync['member']}'s SyncGroup of generation {gen} (wire line {k + 1}) gives {len(sync['assignments'])} "
                  f"member(s) userData; the broker still admits {run.wire[i]['member']}'s join (wire line {i + 1})")


def refusal_without_userdata(run: RunEdit) -> tuple[str | None, str]:
    """K5 (KAFKA-18134). The broker refuses an upgrade it must allow: on a run whose upgrade was
    refused because the classic group's assignments carry userData (policy bidirectional), the
    last leader's SyncGroup before the refused join, and each member's response of that
    generation, lose their userData."""
    i, k = _join_and_last_sync(run, _refused, "refused with GROUP_ID_NOT_FOUND")
    sync, gen = run.wire[k], run.wire[k].get("generation")
    stripped = _set_userdata(run, k, i, None)
    if not stripped:
        raise NotApplicable(f"the assignments of generation {gen} (wire line {k + 1}) carry no userData to remove")
    return None, (f"{sync['member']}'s SyncGroup of generation {gen} (wire line {k + 1}) and its responses lose the "
                  f"userData of {stripped} assignment(s); the broker still refuses {run.wire[i]['member']}'s join "
                  f"(wire line {i + 1})")


def _set_userdata(run: RunEdit, sync: int, until: int, user_data: bytes | None) -> int:
    """Re-encode with ``user_data`` every assignment of the SyncGroup request ``sync`` and of the
    SyncGroup responses of its generation before frame ``until``; the number of the request's
    assignments whose userData changed (the responses' are not counted)."""
    gen = run.wire[sync].get("generation")
    changed = 0

    def recode(hex_text: str) -> str:
        nonlocal changed
        d = decode_assignment(bytes.fromhex(hex_text))
        if (d.user_data or None) != user_data:
            changed += 1
        return encode_assignment(Assignment(d.version, d.assigned_partitions, user_data, d.trailing)).hex()

    for a in run.wire[sync]["assignments"]:
        a["assignment"] = recode(a["assignment"])
    count = changed
    for f in run.wire[sync:until]:
        if f.get("api") == "SyncGroup" and f.get("direction") == "response" and f.get("generation") == gen \
                and f.get("assignment"):
            f["assignment"] = recode(f["assignment"])
    return count
