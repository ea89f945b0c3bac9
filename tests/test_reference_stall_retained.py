"""The reference consumer's ``stall-retained`` fault, without a broker: the member's own state
machine is driven with assignments (as the join worker hands them over) and its Fetch requests
are captured instead of sent.

A member with the fault stops fetching every partition it keeps across a rebalance, for good,
while it still owns and declares it and fetches the rest; its history is the one a member
without the fault writes (only ``consumed`` events are missing, never an event added).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance.history import HistoryWriter
from conformance.jsonl import read_records
from conformance.members import kinds
from conformance.members.harness_config import HarnessConfig
from conformance.members.spec import MemberSpec
from conformance.reference.claims import from_topic_partitions
from conformance.reference.faults import Faults
from conformance.reference.member import JoinResult, ReferenceMember

T0, T1, T2, T3 = (("t", p) for p in range(4))


class CapturedData:
    """Stands in for the member's data connection: records each Fetch's partitions, answers empty."""

    def __init__(self) -> None:
        self.fetches: list[list[tuple[str, int]]] = []

    def request(self, req, *args, **kwargs):
        self.fetches.append(sorted((t.topic, p.partition) for t in req.topics for p in t.partitions))
        return SimpleNamespace(responses=[])


def _member(tmp_path, faults: list[str]) -> tuple[ReferenceMember, CapturedData]:
    cfg = HarnessConfig(member="r", client="reference", client_version=kinds.default_version("reference"),
                        bootstrap_servers="127.0.0.1:1", group_id="g", topics=["t"],
                        history_path=str(tmp_path / "r.jsonl"), extra={"faults": faults})
    member = ReferenceMember(cfg, HistoryWriter(cfg.history_path, "r", "reference", cfg.client_version))
    member.init_positions = lambda tps: member.positions.update({tp: 0 for tp in tps})  # no OffsetFetch
    member.data = CapturedData()
    return member, member.data


def _generation(member: ReferenceMember, generation: int, partitions) -> None:
    member.apply_assignment(JoinResult(member_id="r-id", generation=generation, protocol="cooperative-sticky",
                                       leader="other-id", partitions=list(partitions)))


def _fetched_after(member: ReferenceMember, data: CapturedData) -> list[tuple[str, int]]:
    before = len(data.fetches)
    member.fetch_once()
    return data.fetches[before] if len(data.fetches) > before else []


def _declared(member: ReferenceMember) -> set:
    return set(from_topic_partitions(member.subscription("cooperative-sticky").owned_partitions))


@pytest.mark.parametrize("fault", [None, "stall-retained"])
def test_stall_retained_stops_fetching_kept_partitions_for_good(tmp_path, fault) -> None:
    member, data = _member(tmp_path, [fault] if fault else [])
    try:
        _generation(member, 1, [T0, T1, T2])
        assert _fetched_after(member, data) == [T0, T1, T2]       # nothing retained yet: the first assignment
        # Generation 2 keeps t-0, t-1, takes t-2 away (revoked) and adds t-3.
        _generation(member, 2, [T0, T1, T3])
        assert _declared(member) == {T0, T1, T3}                  # still owns and declares what it keeps
        assert _fetched_after(member, data) == ([T3] if fault else [T0, T1, T3])
        # Generation 3 keeps everything: t-3 is retained now, too; t-0, t-1 stay stalled.
        _generation(member, 3, [T0, T1, T3])
        assert _declared(member) == {T0, T1, T3}
        assert _fetched_after(member, data) == ([] if fault else [T0, T1, T3])
        # A partition revoked and assigned again later is a new assignment: fetched until it is retained.
        _generation(member, 4, [T0, T1])
        _generation(member, 5, [T0, T1, T3])
        assert _fetched_after(member, data) == ([T3] if fault else [T0, T1, T3])
        member.close("test")
    finally:
        member.executor.shutdown(wait=False)
    events = [(e["event"], sorted(map(tuple, e.get("partitions", [])))) for e in read_records(tmp_path / "r.jsonl")]
    # The history tells the truth, the same with and without the fault: assignments, revokes, the close.
    assert events == [("assigned", [T0, T1, T2]), ("revoked", [T2]), ("assigned", [T3]), ("assigned", []),
                      ("revoked", [T3]), ("assigned", []), ("assigned", [T3]), ("revoked", [T0, T1, T3]),
                      ("stopped", [])]


def test_stall_retained_is_a_known_fault() -> None:
    assert MemberSpec.parse("reference/stall-retained").faults == ("stall-retained",)
    assert Faults.parse(["stall-retained"]).stall_retained and not Faults.parse([]).stall_retained
