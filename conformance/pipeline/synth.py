"""Hand-made and synthetic run directories (for the pipeline's tests and bench).

:class:`CellBuilder` writes a RunDir exactly as the real writers do (manifest,
member histories per conformance.history, wire frames per contract section 4
with subscriptions/assignments encoded by conformance.protocol, nemesis log),
so the pipeline is tested on the formats it reads in production.

:func:`cooperative_story` is the clean two-member cooperative story every
invariant test starts from (see its docstring), with hooks to break it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Sequence

from conformance.protocol import Assignment, Subscription, TopicPartitions, encode_assignment, encode_subscription
from conformance.protocol.userdata import encode_cooperative_generation

TP = tuple[str, int]


def _group(tps: Iterable[TP]) -> tuple[TopicPartitions, ...]:
    by: dict[str, list[int]] = defaultdict(list)
    for t, p in tps:
        by[t].append(int(p))
    return tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(by.items()))


class CellBuilder:
    """Builds one RunDir; call the event methods in time order, then :meth:`write`."""

    def __init__(self, root: Path, run_id: str, *, scenario: str = "hand-made", broker_version: str = "4.4.0",
                 members: Sequence[tuple[str, str]] = (("m1", "java@4.4.0"), ("m2", "reference@0.1.0")),
                 topics: dict[str, int] | None = None, expected_protocol: str = "cooperative",
                 strategies: Sequence[str] = ("cooperative-sticky",), leader_rotation: bool = False,
                 timing: dict | None = None, seed: int = 1) -> None:
        self.path = Path(root) / run_id
        (self.path / "members").mkdir(parents=True, exist_ok=True)
        self.run_id = run_id
        self.topics = topics or {"t": 4}
        self.members = {name: spec for name, spec in members}
        self.manifest = {
            "run_id": run_id, "scenario": scenario, "seed": seed, "broker_version": broker_version, "group_id": "g",
            "topics": self.topics,
            "members": [{"name": n, "spec": s, "kind": s.split("@")[0], "version": s.split("@")[1].split("/")[0],
                         "faults": s.split("/")[1:], "strategies": list(strategies), "group_instance_id": None}
                        for n, s in members],
            "expected_protocol": expected_protocol,
            "timing": timing or {"session_timeout_ms": 10000, "heartbeat_interval_ms": 1000,
                                 "max_poll_interval_ms": 30000, "convergence_bound_ms": 40000, "revoke_bound_ms": 30000},
            "phases": [], "last_fault_ts": None, "end_ts": None, "leader_rotation": leader_rotation,
            "versions": {}, "command": f"conformance run --scenario {scenario}", "complete": True,
        }
        self.history: dict[str, list[str]] = defaultdict(list)
        self.wire: list[str] = []
        self.nemesis_lines: list[str] = []
        self.corr = 0
        self.generation_of: dict[str, int] = {}

    # -- histories -------------------------------------------------------------------------------
    def event(self, member: str, ts: float, event: str, **fields) -> None:
        spec = self.members.get(member, "producer@0")
        entry = {"ts": float(ts), "member": member, "client": spec.split("@")[0],
                 "client_version": spec.split("@")[1] if "@" in spec else "0", "event": event,
                 "member_id": f"{member}-id", "protocol": "cooperative"
                 if self.manifest["expected_protocol"] == "cooperative" else "eager"}
        if member in self.generation_of:
            entry["generation"] = self.generation_of[member]
        entry.update(fields)
        self.history[member].append(json.dumps(entry))

    def raw(self, member: str, text: str) -> None:
        """A raw (possibly malformed) history line."""
        self.history[member].append(text)

    def started(self, m: str, ts: float) -> None:
        self.event(m, ts, "started")

    def stopped(self, m: str, ts: float, reason: str = "terminated") -> None:
        self.event(m, ts, "stopped", reason=reason)

    def assigned(self, m: str, ts: float, tps: Iterable[TP]) -> None:
        self.event(m, ts, "assigned", partitions=[[t, p] for t, p in tps])

    def revoked(self, m: str, ts: float, tps: Iterable[TP]) -> None:
        self.event(m, ts, "revoked", partitions=[[t, p] for t, p in tps])

    def lost(self, m: str, ts: float, tps: Iterable[TP]) -> None:
        self.event(m, ts, "lost", partitions=[[t, p] for t, p in tps])

    def consumed(self, m: str, ts: float, topic: str, p: int, first: int, last: int) -> None:
        self.event(m, ts, "consumed", topic=topic, partition=p, first_offset=first, last_offset=last,
                   count=last - first + 1)

    def produced(self, ts: float, topic: str, p: int, first: int, last: int) -> None:
        self.event("producer", ts, "produced", topic=topic, partition=p, first_offset=first, last_offset=last,
                   count=last - first + 1)

    def error(self, m: str, ts: float, error: str, fatal: bool = False) -> None:
        self.event(m, ts, "error", error=error, fatal=fatal)

    # -- wire --------------------------------------------------------------------------------------
    def frame(self, ts: float, member: str, api: str, direction: str, **fields) -> dict:
        keys = {"JoinGroup": 11, "SyncGroup": 14, "Heartbeat": 12, "LeaveGroup": 13, "OffsetCommit": 8}
        if direction == "request":
            self.corr += 1
        f = {"ts": float(ts), "member": member, "api": api, "api_key": keys.get(api, -1), "version": 5,
             "correlation_id": self.corr, "direction": direction, "group_id": "g", "member_id": f"{member}-id",
             "group_instance_id": None, "generation": None, "protocol_type": "consumer", "error_code": None}
        f.update(fields)
        self.wire.append(json.dumps(f))
        return f

    def subscription(self, member: str, owned: Iterable[TP] = (), generation: int = -1, version: int = 3,
                     topics: Sequence[str] | None = None, user_data: bytes | None = None) -> str:
        sub = Subscription(version=version, topics=tuple(sorted(topics or self.topics)),
                           user_data=user_data if user_data is not None else encode_cooperative_generation(generation),
                           owned_partitions=_group(owned) if version >= 1 else (),
                           generation_id=generation if version >= 2 else -1, rack_id=None)
        return encode_subscription(sub).hex()

    def join(self, gen: int, ts: float, leader: str, metadata: dict[str, str], protocol: str = "cooperative-sticky",
             offered: dict[str, list[str]] | None = None) -> None:
        """JoinGroup requests (at ts) and responses (at ts+5) for generation ``gen``.

        ``metadata``: member -> subscription hex (see :meth:`subscription`);
        ``offered``: member -> protocol names in preference order (default: just ``protocol``).
        """
        for m, meta in metadata.items():
            names = (offered or {}).get(m, [protocol])
            self.frame(ts, m, "JoinGroup", "request", generation=-1,
                       protocols=[{"name": n, "metadata": meta} for n in names])
        for m in metadata:
            members = ([{"member_id": f"{x}-id", "group_instance_id": None, "metadata": md} for x, md in metadata.items()]
                       if m == leader else [])
            self.frame(ts + 5, m, "JoinGroup", "response", generation=gen, error_code=0, leader=f"{leader}-id",
                       protocol_name=protocol, members=members)
            self.generation_of[m] = gen

    def sync(self, gen: int, ts: float, leader: str, assignments: dict[str, Iterable[TP]],
             protocol: str = "cooperative-sticky", raw: dict[str, str] | None = None) -> None:
        """Leader SyncGroup request with every assignment, then each member's response (ts+5)."""
        enc = {m: (raw or {}).get(m) or encode_assignment(Assignment(version=3, assigned_partitions=_group(tps))).hex()
               for m, tps in assignments.items()}
        for m in assignments:
            fields = {"generation": gen, "protocol_name": protocol}
            if m == leader:
                fields["assignments"] = [{"member_id": f"{x}-id", "assignment": h} for x, h in enc.items()]
            else:
                fields["assignments"] = []
            self.frame(ts, m, "SyncGroup", "request", **fields)
        for m in assignments:
            self.frame(ts + 5, m, "SyncGroup", "response", protocol_name=protocol, error_code=0, assignment=enc[m])

    def commit(self, member: str, ts: float, gen: int, offsets: Iterable[tuple[str, int, int]], error: int = 0) -> None:
        offs = [[t, p, o] for t, p, o in offsets]
        self.frame(ts, member, "OffsetCommit", "request", generation=gen, offsets=offs)
        self.frame(ts + 2, member, "OffsetCommit", "response", partition_errors=[[t, p, error] for t, p, _ in offs])
        self.event(member, ts + 3, "committed", offsets=offs, error=None if error == 0 else f"error {error}")

    def fault(self, ts: float, fault: str, target: str, phase: str = "invoke", **details) -> None:
        self.nemesis_lines.append(json.dumps({"ts": float(ts), "fault": fault, "target": target, "phase": phase,
                                              "details": details}))
        if phase == "invoke":
            self.manifest["last_fault_ts"] = float(ts)

    # -- output ------------------------------------------------------------------------------------
    def write(self, end_ts: float, **manifest) -> Path:
        self.manifest["end_ts"] = float(end_ts)
        self.manifest.setdefault("phases", [])
        if not self.manifest["phases"]:
            self.manifest["phases"] = [{"name": "all", "start_ts": 0.0, "end_ts": float(end_ts)}]
        self.manifest.update(manifest)
        (self.path / "manifest.json").write_text(json.dumps(self.manifest, indent=1))
        for m, lines in self.history.items():
            (self.path / "members" / f"{m}.jsonl").write_text("".join(line + "\n" for line in lines))
        (self.path / "wire.jsonl").write_text("".join(line + "\n" for line in self.wire))
        (self.path / "nemesis.jsonl").write_text("".join(line + "\n" for line in self.nemesis_lines))
        return self.path


def cooperative_story(root: Path, run_id: str, *, break_: str | None = None, **kw) -> Path:
    """The clean cooperative story, optionally broken in one named way.

    Story: java member m1 starts alone and leads generation 1, taking t-0..3.
    The producer writes 100 records to each partition. The reference member
    m2 starts at 10 s; generation 2: m1 (leader) declares t-0..3 owned and
    keeps t-0, t-1, withholding t-2, t-3, which m1 revokes (after committing);
    the follow-up generation 3 gives t-2, t-3 to m2, which consumes the rest.
    Both stop cleanly at 40 s. Every invariant holds.

    ``break_`` names a defect (see the tests): each changes one thing.
    """
    b = CellBuilder(root, run_id, **kw)
    T = "t"
    all4 = [(T, p) for p in range(4)]
    b.started("m1", 1000)
    for p in range(4):
        b.produced(1500 + p, T, p, 0, 49)
    b.join(1, 2000, "m1", {"m1": b.subscription("m1")})
    b.sync(1, 2100, "m1", {"m1": all4})
    b.assigned("m1", 2200, all4)
    for p in range(4):
        b.consumed("m1", 3000 + p, T, p, 0, 49)
    b.commit("m1", 4000, 1, [(T, p, 50) for p in range(4)])
    b.started("m2", 10000)
    for p in range(4):
        b.produced(10500 + p, T, p, 50, 99)
    owned_m1 = all4 if break_ != "e5-stale" else all4 + [(T, 3)]
    sub_m1 = b.subscription("m1", owned=owned_m1, generation=1)
    if break_ == "e5-stale":
        sub_m1 = b.subscription("m1", owned=all4[:2], generation=1)
    sub_m2 = b.subscription("m2")
    if break_ == "e1":
        sub_m2 = "0003000000"            # v3 but truncated topic array
    if break_ == "e4":
        # A v1 subscription whose owned partitions are written unsorted: decodes, but is not canonical.
        sub_m2 = "0001" + "00000001" + "0001" + "74" + "00000000" + "00000001" + "0001" + "74" + "00000002" + "00000001" + "00000000"
    if break_ == "e3":
        sub_m2 = b.subscription("m2", user_data=b"\x01\x02\x03")
    b.join(2, 11000, "m1", {"m1": sub_m1, "m2": sub_m2})
    g2 = {"m1": all4[:2], "m2": []}
    if break_ == "l1":
        g2 = {"m1": all4[:2]}
    if break_ == "l2":
        g2 = {"m1": all4[:2] + [("other", 0)], "m2": []}
    if break_ == "r1":
        g2 = {"m1": all4[:2], "m2": [(T, 2)]}
    raw = {"m2": "00030000"} if break_ == "e2" else None
    b.sync(2, 11100, "m1", g2, raw=raw)
    b.commit("m1", 11200, 2, [(T, p, 100) for p in range(4)] if break_ != "d2" else [(T, 0, 100), (T, 1, 30)])
    if break_ == "d2-stale":
        b.commit("m1", 11300, 1, [(T, 0, 100)])
    if break_ == "r2":
        b.assigned("m2", 11250, [(T, 2)])    # m2 takes t-2 before m1 gave it up
    if break_ == "r3":
        b.revoked("m1", 11300, [(T, 0)])
        b.assigned("m1", 11350, [(T, 0)])
    if break_ == "r5-eager":
        pass
    b.revoked("m1", 11400, all4[2:])
    b.join(3, 11500, "m1", {"m1": b.subscription("m1", owned=all4[:2], generation=2),
                             "m2": b.subscription("m2", owned=[(T, 2)] if break_ == "r2" else [], generation=2)})
    final = {"m1": all4[:2], "m2": all4[2:]}
    if break_ == "l3":
        final = {"m1": all4[:1], "m2": all4[1:]}
    if break_ == "v1-unowned" or break_ == "r4":
        final = {"m1": all4[:2], "m2": []}
    b.sync(3, 11600, "m1", final)
    if break_ == "l3":
        b.revoked("m1", 11650, [(T, 1)])
    if break_ not in ("v1-unowned", "r4"):
        b.assigned("m2", 11700, [tp for tp in final["m2"] if not (break_ == "r2" and tp == (T, 2))])
    if break_ == "r2":
        pass
    for p in (0, 1):
        b.consumed("m1", 12000 + p, T, p, 50, 99)
    if break_ not in ("v1-unowned", "r4"):
        for p in (2, 3):
            if break_ == "d1" and p == 3:
                b.consumed("m2", 12000 + p, T, p, 50, 89)
                continue
            b.consumed("m2", 12000 + p, T, p, 50, 99)
    if break_ == "d3":
        b.consumed("m1", 12500, T, 0, 90, 99)    # re-read with no rebalance or fault since 12000
    if break_ == "d3-allowed":
        b.fault(12400, "pause", "m1")
        b.fault(12450, "resume", "m1", phase="heal")
        b.consumed("m1", 12500, T, 0, 90, 99)
    end = 60000 if break_ == "r4" else 40000
    if break_ == "v1-crash":
        b.error("m2", 39000, "boom: unexpected client state", fatal=True)
    b.stopped("m1", end - 100)
    b.stopped("m2", end - 50)
    return b.write(end)
