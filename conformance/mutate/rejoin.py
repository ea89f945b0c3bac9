"""The mutation the rejoin invariant must fail (V3; the check is :mod:`conformance.pipeline.checks.rejoin`)."""

from __future__ import annotations

from conformance.mutate.run_edit import NotApplicable, RunEdit
from conformance.reference.codes import REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID

#: The answers that tell a classic member a round began (as the check reads them).
_TELLING = ("Heartbeat", "SyncGroup")


def ignored_rebalance(run: RunEdit) -> tuple[str | None, str]:
    """V3. A member told that a rebalance is in progress does not rejoin, and the coordinator drops it
    (KAFKA-14024's class): the first JoinGroup a member sent under its member id after an answer told
    it so, with no fault window of it or the broker from the telling to the JoinGroup, is sent instead
    as a new member's (no member id), 1 ms after a Heartbeat of its old id answered UNKNOWN_MEMBER_ID."""
    told: dict[str, int] = {}          # member id -> index of the first answer telling it, since its last JoinGroup
    for i, f in enumerate(run.wire):
        member_id = f.get("member_id")
        if not member_id or f.get("undecodable"):
            continue
        if (f.get("direction") == "response" and f.get("api") in _TELLING
                and f.get("error_code") == REBALANCE_IN_PROGRESS):
            told.setdefault(member_id, i)
        elif f.get("api") == "JoinGroup" and f.get("direction") == "request":
            k = told.pop(member_id, None)
            if k is None or f["ts"] - run.wire[k]["ts"] < 3.0 or not run.quiet(run.wire[k]["ts"], f["ts"], [f["member"]]):
                continue
            return _dropped_before(run, i, k)
    raise NotApplicable("no JoinGroup sent under a member id after it was told a rebalance was in progress, "
                        "outside fault windows")


def _dropped_before(run: RunEdit, i: int, k: int) -> tuple[str | None, str]:
    """Turn JoinGroup request ``i`` into a new member's, after a Heartbeat of its member id answered
    UNKNOWN_MEMBER_ID; ``k`` is the answer that told the member of the round."""
    join, tell = run.wire[i], run.wire[k]
    member, member_id = join["member"], join["member_id"]
    top = max((f.get("correlation_id") or 0) for f in run.wire) + 1
    base = {key: tell.get(key) for key in ("member", "group_id", "member_id", "group_instance_id", "generation",
                                           "slot", "connection") if key in tell}
    request = {**base, "ts": join["ts"] - 2.0, "api": "Heartbeat", "api_key": 12, "version": tell.get("version", 4),
               "correlation_id": top, "direction": "request", "protocol_type": None, "error_code": None,
               "client_id": member}
    answer = {**request, "ts": join["ts"] - 1.0, "direction": "response", "error_code": UNKNOWN_MEMBER_ID}
    join["member_id"] = ""
    run.wire[i:i] = [request, answer]
    return member, (f"{member} ({member_id}), told at {tell['ts']:.0f} (wire line {k + 1}), sent no JoinGroup under "
                    f"its id: its Heartbeat was answered UNKNOWN_MEMBER_ID at {answer['ts']:.0f} and it joined again "
                    f"as a new member (wire line {i + 3})")
