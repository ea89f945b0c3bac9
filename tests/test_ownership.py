"""conformance.ownership and conformance.wirelog on short hand-written records (pure Python)."""

from __future__ import annotations

from conformance import ownership, wirelog
from conformance.ownership import IncarnationEnd, Interval


def ev(ts: float, event: str, *tps: tuple[str, int], **fields) -> dict:
    return {"ts": float(ts), "member": "m1", "event": event, **({"partitions": [list(tp) for tp in tps]}
                                                              if event in ("assigned", "revoked", "lost") else {}),
            **fields}


def test_a_partition_is_owned_from_assigned_to_revoked_else_to_the_incarnation_end():
    # m1 gets t-0 and t-1, gives t-1 back, is told t-0 again (extends nothing), then stops.
    events = [ev(1, "started"), ev(2, "assigned", ("t", 0), ("t", 1)), ev(3, "revoked", ("t", 1)),
              ev(4, "assigned", ("t", 0)), ev(5, "revoked", ("t", 9)), ev(6, "stopped", reason="done")]
    ends = ownership.incarnation_ends("m1", events, run_end_ts=10.0)
    assert ends == {1: IncarnationEnd(6.0, "stopped")}
    assert ownership.intervals("m1", events, ends) == [
        Interval("m1", 1, "t", 0, 2.0, 6.0, "stopped"), Interval("m1", 1, "t", 1, 2.0, 3.0, "revoked")]
    assert ownership.owned_at(events, 3.5) == {("t", 0)} and ownership.owned_at(events, 6) == set()


def test_an_eager_assigned_adds_what_it_lists_and_keeps_what_was_not_revoked():
    # An eager member rejoins without revoking t-0 and is given t-1: the history says it owns both.
    events = [ev(1, "started"), ev(2, "assigned", ("t", 0), protocol="eager"),
              ev(3, "assigned", ("t", 1), protocol="eager")]
    assert ownership.owned_at(events, 10) == {("t", 0), ("t", 1)}


def test_incarnations_end_by_stop_kill_exit_restart_or_run_end():
    # Incarnation 1 is killed at 5; 2 exits on its own (note at 9), last seen on the wire at 8;
    # 3 restarts without a stop (a crash); 4 runs to the end of observation.
    events = [ev(1, "started"), ev(2, "assigned", ("t", 0)), ev(6, "started"), ev(7, "assigned", ("t", 0)),
              ev(10, "started"), ev(12, "started"), ev(13, "assigned", ("t", 1))]
    ends = ownership.incarnation_ends("m1", events, run_end_ts=20.0, kills=[5.0], exits=[9.0], frame_ts=[8.0, 30.0])
    assert ends == {1: IncarnationEnd(5.0, "killed"), 2: IncarnationEnd(8.0, "crashed"),
                    3: IncarnationEnd(12.0, "restarted"), 4: IncarnationEnd(20.0, "run-end")}
    assert [(i.incarnation, i.end_ts, i.end_reason) for i in ownership.intervals("m1", events, ends)] == [
        (1, 5.0, "killed"), (2, 8.0, "crashed"), (4, 20.0, "run-end")]


def test_holdings_follow_the_live_history():
    h = ownership.Holdings()
    assert h.apply(ev(1, "started")) and h.started
    assert h.apply(ev(2, "assigned", ("t", 0)))
    assert not h.apply(ev(3, "consumed")) and h.owned == {("t", 0)}
    assert h.apply(ev(4, "stopped")) and not h.started and h.owned == set()


def test_wire_reader_is_tolerant_and_pairs_per_connection():
    lines = ['{"ts": 1, "member": "m1", "api": "SyncGroup", "direction": "request", "connection": 1, "correlation_id": 7}',
             'not json',
             '{"ts": 2, "member": "m1", "api": "SyncGroup", "direction": "sideways"}',
             '',
             '{"ts": 3, "member": "m1", "api": "SyncGroup", "direction": "response", "connection": 2, "correlation_id": 7}',
             '{"ts": 4, "member": "m1", "api": "SyncGroup", "direction": "response", "connection": 1, "correlation_id": 7}']
    read = list(wirelog.read_wire(lines))
    assert [(n, p) for n, r, p in read if r is None] == [
        (2, "Expecting value: line 1 column 1 (char 0)"), (3, "direction must be request|response, got 'sideways'")]
    records = [r for _, r, _ in read if r is not None]
    # Correlation ids are unique per connection only: the response on connection 2 answers another request.
    assert wirelog.response_to(records, records[0])["ts"] == 4
    pending: wirelog.Pending[str] = wirelog.Pending()
    pending.request(records[0], "generation 3")
    assert pending.response(records[1]) is None and pending.response(records[2]) == "generation 3"
    assert pending.response(records[2]) is None
