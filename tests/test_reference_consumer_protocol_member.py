"""The reference KIP-848 member's state machine, without a broker.

The member is driven with ConsumerGroupHeartbeat responses (decoded values, as the broker's answers
arrive) and its next request is read back with ``next_request``: what it would put on the wire.
Position lookups are answered "offset 0" (no OffsetFetch); the member has no coordinator, so it
sends no commit. What each fault changes is asserted against the same story without the fault.
"""

from __future__ import annotations

import math

import pytest

from conformance import config, ownership
from conformance.errors import UsageError
from conformance.history import HistoryWriter
from conformance.jsonl import read_records
from conformance.members import kinds
from conformance.members.harness_config import HarnessConfig
from conformance.protocol.consumer_group_heartbeat import HeartbeatResponse, TopicIdPartitions
from conformance.reference.consumer_member import ConsumerProtocolMember, new_member_id

TOPIC_ID = bytes(range(16))
T = "t"


def _member(tmp_path, faults: list[str] | None = None, **settings) -> ConsumerProtocolMember:
    extra = {"faults": faults or [], **settings.pop("extra", {})}
    cfg = HarnessConfig(member="k", client="reference", client_version=kinds.default_version("reference"),
                        bootstrap_servers="127.0.0.1:1", group_id="g", topics=[T], group_protocol="consumer",
                        history_path=str(tmp_path / "k.jsonl"), extra=extra, **settings)
    member = ConsumerProtocolMember(cfg, HistoryWriter(cfg.history_path, "k", "reference", cfg.client_version))
    member.topic_names = {TOPIC_ID: T}
    member.init_positions = lambda tps: member.positions.update({tp: 0 for tp in tps})  # no OffsetFetch
    return member


def _answer(member: ConsumerProtocolMember, epoch: int, partitions: list[int] | None) -> None:
    """The broker answers the member's request with ``epoch`` and (unless None) this assignment."""
    req = member.next_request()
    if req.topic_partitions is not None:
        member.sent_owned = frozenset(member.owned) if req.member_epoch else frozenset()
    assignment = None if partitions is None else (TopicIdPartitions(TOPIC_ID, tuple(partitions)),)
    member.on_success(HeartbeatResponse(error_code=0, member_epoch=epoch, heartbeat_interval_ms=500,
                                        assignment=assignment))


def _owned_in_history(member: ConsumerProtocolMember) -> set[int]:
    return {p for _, p in ownership.owned_at(read_records(member.cfg.history_path), math.inf)}


def _declared(member: ConsumerProtocolMember) -> set[int] | None:
    tps = member.next_request().topic_partitions
    return None if tps is None else {p for t in tps for p in t.partitions}


def test_join_is_full_then_heartbeats_are_light_and_an_acknowledgement_carries_the_owned_set(tmp_path) -> None:
    # Join: epoch 0, everything, an empty owned list. The answer gives t-0..2 at epoch 2: the next
    # request acknowledges them (light, with owned); once sent, heartbeats carry nothing more.
    m = _member(tmp_path, extra={"server_assignor": "range"}, group_instance_id="i-1")
    join = m.next_request()
    assert (join.member_epoch, join.subscribed_topic_names, join.server_assignor, join.topic_partitions) == \
           (0, (T,), "range", ())
    assert join.rebalance_timeout_ms == m.cfg.max_poll_interval_ms and join.instance_id == "i-1"
    _answer(m, 2, [0, 1, 2])
    ack = m.next_request()
    assert ack.member_epoch == 2 and _declared(m) == {0, 1, 2} and ack.subscribed_topic_names is None
    assert ack.rebalance_timeout_ms == -1 and ack.server_assignor is None and ack.instance_id == "i-1"
    _answer(m, 2, None)
    assert _declared(m) is None and m.next_request().member_epoch == 2
    assert _owned_in_history(m) == {0, 1, 2}


def test_revoke_comes_first_and_the_epoch_of_each_event_is_recorded(tmp_path) -> None:
    # Epoch 2 gives t-0..3; epoch 2 again asks to give up t-2, t-3 (revoked at epoch 2, then the
    # acknowledgement declares t-0, t-1); epoch 3 adds t-4 (assigned at epoch 3).
    m = _member(tmp_path)
    _answer(m, 2, [0, 1, 2, 3])
    _answer(m, 2, [0, 1])
    assert _declared(m) == {0, 1} and _owned_in_history(m) == {0, 1}
    _answer(m, 3, [0, 1, 4])
    events = [(e["event"], sorted(p for _, p in e["partitions"]), e["member_epoch"], e["generation"])
              for e in read_records(m.cfg.history_path) if e["event"] in ("assigned", "revoked")]
    assert events == [("assigned", [0, 1, 2, 3], 2, 2), ("revoked", [2, 3], 2, 2), ("assigned", [4], 3, 3)]


@pytest.mark.parametrize("fault", [None, "ack-unrevoked"])
def test_ack_unrevoked_declares_less_than_its_history_owns(tmp_path, fault) -> None:
    m = _member(tmp_path, [fault] if fault else [])
    _answer(m, 2, [0, 1, 2, 3])
    _answer(m, 2, [0, 1])                       # give up t-2, t-3
    assert _declared(m) == {0, 1}               # the acknowledgement goes out either way
    if fault:
        assert _owned_in_history(m) == {0, 1, 2, 3} and {(T, 2), (T, 3)} <= m.fetching
    else:
        assert _owned_in_history(m) == {0, 1} and m.fetching == {(T, 0), (T, 1)}


@pytest.mark.parametrize("fault", [None, "ignore-fenced"])
def test_ignore_fenced_keeps_what_it_owned_without_recording_lost(tmp_path, fault) -> None:
    m = _member(tmp_path, [fault] if fault else [])
    _answer(m, 2, [0, 1, 2])
    m.on_fenced("FencedMemberEpochError(110) on ConsumerGroupHeartbeat")
    rejoin = m.next_request()
    assert (rejoin.member_epoch, rejoin.topic_partitions, rejoin.subscribed_topic_names) == (0, (), (T,))
    lost = [e for e in read_records(m.cfg.history_path) if e["event"] == "lost"]
    if fault:
        assert lost == [] and _owned_in_history(m) == {0, 1, 2} and len(m.fetching) == 3
    else:
        assert [sorted(p for _, p in e["partitions"]) for e in lost] == [[0, 1, 2]] and not m.fetching
        assert lost[0]["member_epoch"] == 2


@pytest.mark.parametrize("fault", [None, "stale-epoch"])
def test_stale_epoch_sends_one_heartbeat_and_one_commit_below_its_epoch(tmp_path, fault) -> None:
    m = _member(tmp_path, [fault] if fault else [])
    _answer(m, 2, [0, 1])
    _answer(m, 2, None)                          # acknowledged: the next heartbeat is light
    epochs = [m.next_request().member_epoch for _ in range(3)]
    commits = [m.commit_identity()[0] for _ in range(3)]
    if fault:
        assert epochs == [1, 2, 2] and commits == [1, 2, 2]
    else:
        assert epochs == [2, 2, 2] and commits == [2, 2, 2]


def test_bad_settings_are_refused_saying_what_to_do(tmp_path) -> None:
    with pytest.raises(UsageError, match="server_assignor 'sticky' is not one of uniform, range"):
        _member(tmp_path, extra={"server_assignor": "sticky"})
    with pytest.raises(UsageError, match="unknown consumer-protocol reference fault"):
        _member(tmp_path, ["skip-revoke"])
    assert len(new_member_id()) == 22 and new_member_id() != new_member_id()


def test_the_process_refuses_a_bad_setting_with_one_line_and_exit_2(tmp_path) -> None:
    # The harness entry point with group_protocol consumer and an assignor the broker has not:
    # one line on stderr naming the setting, a fatal error event in the history, exit code 2.
    import subprocess
    import sys

    cfg = HarnessConfig(member="k", client="reference", client_version=kinds.default_version("reference"),
                        bootstrap_servers="127.0.0.1:1", group_id="g", topics=[T], group_protocol="consumer",
                        history_path=str(tmp_path / "k.jsonl"), extra={"server_assignor": "sticky"})
    path = cfg.write(tmp_path / "k.json")
    done = subprocess.run([sys.executable, "-m", "conformance.reference", str(path)], capture_output=True,
                          text=True, timeout=60, cwd=config.REPO_ROOT)
    assert done.returncode == 2, done
    assert done.stderr.strip().count("\n") == 0 and "server_assignor 'sticky'" in done.stderr, done.stderr
    last = read_records(tmp_path / "k.jsonl")[-1]
    assert last["event"] == "error" and last["fatal"] and "server_assignor" in last["error"]
