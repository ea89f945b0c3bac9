"""Writing run directories by hand, in the formats the suite's writers use, for the pipeline's tests.

:class:`CellBuilder` writes one run directory exactly as the real writers do:
``manifest.json`` (the fields of ``conformance/scenarios/runner.py``), member
histories per :mod:`conformance.history`, wire records per
:mod:`conformance.cluster.tap` with subscriptions and assignments encoded by
:mod:`conformance.protocol`, and the nemesis log per :mod:`conformance.nemesis`.
Events are written in the order the methods are called (file order is what
line numbers in findings refer to).

:class:`CooperativeRun` adds the acts of the healthy cooperative run every
story starts from (see :func:`healthy`); a broken story calls the same acts
with its own arguments and adds its anomaly between them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Sequence

from conformance.members.spec_grammar import split_spec
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
            "members": [{"name": n, "spec": s, "kind": w.kind, "version": w.version, "faults": list(w.faults),
                         "strategies": list(strategies), "group_instance_id": None}
                        for n, s, w in ((n, s, split_spec(s)) for n, s in members)],
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
        #: Members whose history names no member id or generation (the Java harness before 2.5).
        self.unnamed: set[str] = set()
        #: Member ids other than ``<name>-id`` (a restarted instance joins under a new one).
        self.ids: dict[str, str] = {}

    def mid(self, member: str) -> str:
        """The member id ``member``'s current instance uses."""
        return self.ids.get(member, f"{member}-id")

    # -- histories -------------------------------------------------------------------------------
    def event(self, member: str, ts: float, event: str, **fields) -> None:
        words = split_spec(self.members.get(member, "producer@0"))
        entry = {"ts": float(ts), "member": member, "client": words.kind,
                 "client_version": words.version or "0", "event": event,
                 "member_id": self.mid(member), "protocol": "cooperative"
                 if self.manifest["expected_protocol"] == "cooperative" else "eager"}
        if member in self.generation_of:
            entry["generation"] = self.generation_of[member]
        if member in self.unnamed:
            del entry["member_id"]
            entry.pop("generation", None)
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

    def consumed(self, m: str, ts: float, topic: str, p: int, first: int, last: int,
                 poll_ts: float | None = None) -> None:
        extra = {} if poll_ts is None else {"poll_ts": float(poll_ts)}
        self.event(m, ts, "consumed", topic=topic, partition=p, first_offset=first, last_offset=last,
                   count=last - first + 1, **extra)

    def produced(self, ts: float, topic: str, p: int, first: int, last: int) -> None:
        self.event("producer", ts, "produced", topic=topic, partition=p, first_offset=first, last_offset=last,
                   count=last - first + 1)

    def error(self, m: str, ts: float, error: str, fatal: bool = False) -> None:
        self.event(m, ts, "error", error=error, fatal=fatal)

    # -- wire --------------------------------------------------------------------------------------
    def frame(self, ts: float, member: str, api: str, direction: str, **fields) -> dict:
        keys = {"JoinGroup": 11, "SyncGroup": 14, "Heartbeat": 12, "LeaveGroup": 13, "OffsetCommit": 8,
                "OffsetForLeaderEpoch": 23}
        if direction == "request":
            self.corr += 1
        f = {"ts": float(ts), "member": member, "api": api, "api_key": keys.get(api, -1), "version": 5,
             "correlation_id": self.corr, "direction": direction, "group_id": "g", "member_id": self.mid(member),
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
             offered: dict[str, list[str]] | None = None, leader_of: dict[str, str] | None = None,
             leader_id: str | None = None, sent: dict[str, float] | None = None) -> None:
        """JoinGroup requests (at ts) and responses (at ts+5) for generation ``gen``.

        ``metadata``: member -> subscription hex (see :meth:`subscription`);
        ``offered``: member -> protocol names in preference order (default: just ``protocol``);
        ``leader_of``: member -> the leader its response names instead of ``leader`` (a broken broker);
        ``leader_id``: the leader's member id, if not its current instance's (then nobody gets the member list);
        ``sent``: member -> when it sent its request, if earlier than ``ts`` (requests are written in time order).
        """
        at = {m: (sent or {}).get(m, ts) for m in metadata}
        for m, meta in sorted(metadata.items(), key=lambda item: at[item[0]]):
            names = (offered or {}).get(m, [protocol])
            self.frame(at[m], m, "JoinGroup", "request", generation=-1,
                       protocols=[{"name": n, "metadata": meta} for n in names])
        for m in metadata:
            members = ([{"member_id": self.mid(x), "group_instance_id": None, "metadata": md}
                        for x, md in metadata.items()]
                       if m == leader and leader_id in (None, self.mid(m)) else [])
            named = leader_id or self.mid((leader_of or {}).get(m, leader))
            self.frame(ts + 5, m, "JoinGroup", "response", generation=gen, error_code=0, leader=named,
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
                fields["assignments"] = [{"member_id": self.mid(x), "assignment": h} for x, h in enc.items()]
            else:
                fields["assignments"] = []
            self.frame(ts, m, "SyncGroup", "request", **fields)
        for m in assignments:
            # As the tap writes it: the generation comes from the request (SyncGroup responses lack one).
            self.frame(ts + 5, m, "SyncGroup", "response", generation=gen, protocol_name=protocol, error_code=0,
                       assignment=enc[m])

    def commit(self, member: str, ts: float, gen: int, offsets: Iterable[tuple[str, int, int]], error: int = 0,
               leader_epoch: int | None = None) -> None:
        """An OffsetCommit of ``offsets`` answered ``error`` (2 ms later); with ``leader_epoch``, each offset
        names that epoch (without, the frame has no ``leader_epochs``, as below v6)."""
        offs = [[t, p, o] for t, p, o in offsets]
        epochs = {} if leader_epoch is None else {"leader_epochs": [[t, p, leader_epoch] for t, p, _ in offs]}
        self.frame(ts, member, "OffsetCommit", "request", generation=gen, offsets=offs, **epochs)
        self.frame(ts + 2, member, "OffsetCommit", "response", partition_errors=[[t, p, error] for t, p, _ in offs])
        self.event(member, ts + 3, "committed", offsets=offs, error=None if error == 0 else f"error {error}")

    def epoch_end(self, member: str, ts: float, topic: str, partition: int, epoch: int, end_offset: int) -> None:
        """``member`` asks where leader epoch ``epoch`` of the partition ended (KIP-320) and is told ``end_offset``."""
        self.frame(ts, member, "OffsetForLeaderEpoch", "request", epochs=[[topic, partition, epoch, epoch + 1]])
        self.frame(ts + 1, member, "OffsetForLeaderEpoch", "response",
                   epoch_ends=[[topic, partition, epoch, end_offset, 0]])

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


T = "t"
#: t-0..t-3, the topic every story's members subscribe to.
ALL4: list[TP] = [(T, p) for p in range(4)]
#: Who owns what once the healthy run's follow-up generation 3 settles.
FINAL: dict[str, list[TP]] = {"m1": ALL4[:2], "m2": ALL4[2:]}
#: The scenario's end (the manifest's end_ts); teardown's stops come after it.
END = 60000.0


class CooperativeRun(CellBuilder):
    """The healthy cooperative run as acts, in time order; :func:`healthy` plays them all.

    Members: java m1 and the reference member m2 (cooperative-sticky); topic t with 4
    partitions; session 10 s, heartbeat 1 s, convergence bound 40 s, revoke bound 30 s.
    Each act's arguments default to the healthy run; a story that breaks an act passes
    its own.
    """

    def m1_leads_alone(self) -> None:
        """m1 starts at 1 s; 50 records per partition are produced; m1 leads generation 1 (2 s)
        with t-0..3, consumes offsets 0-49 and commits 50 (4 s)."""
        self.started("m1", 1000)
        for p in range(4):
            self.produced(1500 + p, T, p, 0, 49)
        self.join(1, 2000, "m1", {"m1": self.subscription("m1")})
        self.sync(1, 2100, "m1", {"m1": ALL4})
        self.assigned("m1", 2200, ALL4)
        for p in range(4):
            self.consumed("m1", 3000 + p, T, p, 0, 49)
        self.commit("m1", 4000, 1, [(T, p, 50) for p in range(4)])

    def m2_starts(self) -> None:
        """m2 starts at 10 s."""
        self.started("m2", 10000)

    def generation_2(self, m2_subscription: str | None = None, *, leader_of: dict[str, str] | None = None,
                     leader_id: str | None = None) -> None:
        """Generation 2 forms at 11 s, led by m1, which declares t-0..3 owned (m2: nothing)."""
        self.join(2, 11000, "m1", {"m1": self.subscription("m1", owned=ALL4, generation=1),
                                   "m2": m2_subscription or self.subscription("m2")},
                  leader_of=leader_of, leader_id=leader_id)

    def sync_2(self, assignments: dict[str, list[TP]] | None = None, raw: dict[str, str] | None = None) -> None:
        """m1's SyncGroup (11.1 s) keeps t-0, t-1 for itself and withholds t-2, t-3 (cooperative)."""
        self.sync(2, 11100, "m1", {"m1": ALL4[:2], "m2": []} if assignments is None else assignments, raw=raw)

    def m1_commits_2(self, offsets: list[tuple[str, int, int]] | None = None) -> None:
        """m1 commits 50 on every partition in generation 2 (11.2 s)."""
        self.commit("m1", 11200, 2, [(T, p, 50) for p in range(4)] if offsets is None else offsets)

    def m1_revokes_t2_t3(self) -> None:
        """m1 revokes t-2, t-3 (11.4 s)."""
        self.revoked("m1", 11400, ALL4[2:])

    def subscriptions_3(self, m1_owns: Iterable[TP] = ALL4[:2], m2_owns: Iterable[TP] = (), *,
                        m2_version: int = 3) -> dict[str, str]:
        """Both members' JoinGroup metadata for the follow-up generation 3 (they name generation 2)."""
        return {"m1": self.subscription("m1", owned=m1_owns, generation=2),
                "m2": self.subscription("m2", owned=m2_owns, generation=2, version=m2_version)}

    def generation_3(self, members: dict[str, str] | None = None, *, protocol: str = "cooperative-sticky",
                     offered: dict[str, list[str]] | None = None) -> None:
        """The follow-up generation 3 forms at 12.5 s, led by m1."""
        self.join(3, 12500, "m1", self.subscriptions_3() if members is None else members, protocol=protocol,
                  offered=offered)

    def sync_3(self, final: dict[str, list[TP]] | None = None, protocol: str = "cooperative-sticky") -> None:
        """m1's SyncGroup of generation 3 (12.6 s) gives t-2, t-3 to m2."""
        self.sync(3, 12600, "m1", FINAL if final is None else final, protocol=protocol)

    def m2_takes(self, tps: list[TP] = ALL4[2:]) -> None:
        """m2 records what generation 3 gave it (12.7 s)."""
        self.assigned("m2", 12700, tps)

    def steady(self, owners: dict[str, list[TP]] | None = None, *, short: dict[TP, int] | None = None) -> None:
        """50 more records per partition (13 s), each consumed by its owner (14 s); ``short``: a
        partition -> the last offset its owner reads instead of 99."""
        for p in range(4):
            self.produced(13000 + p, T, p, 50, 99)
        owner = {tp: m for m, tps in (FINAL if owners is None else owners).items() for tp in tps}
        for (t, p), m in sorted(owner.items()):
            self.consumed(m, 14000 + p, t, p, 50, (short or {}).get((t, p), 99))

    def opening(self) -> None:
        """:meth:`m1_leads_alone`, then :meth:`m2_starts`."""
        self.m1_leads_alone()
        self.m2_starts()

    def follow_up(self) -> None:
        """m1 revokes t-2, t-3; generation 3 gives them to m2, which records them."""
        self.m1_revokes_t2_t3()
        self.generation_3()
        self.sync_3()
        self.m2_takes()

    def through_steady(self) -> None:
        """The healthy run up to its steady state: every act but :meth:`teardown`."""
        self.opening()
        self.generation_2()
        self.sync_2()
        self.m1_commits_2()
        self.follow_up()
        self.steady()

    def closing(self) -> Path:
        """:meth:`steady`, then :meth:`teardown`."""
        self.steady()
        return self.teardown()

    def teardown(self, *, m2: bool = True, m3: bool = False, **manifest) -> Path:
        """The scenario ends at 60 s; then the runner stops every member (m1, then m2, then m3)."""
        self.stopped("m1", END + 100)
        if m2:
            self.stopped("m2", END + 150)
        if m3:
            self.stopped("m3", END + 170)
        return self.write(END, **manifest)


def healthy(b: CooperativeRun) -> Path:
    """The clean cooperative story: every invariant holds.

    java m1 starts alone and leads generation 1, taking t-0..3. The producer writes 50 records
    to each partition; m1 consumes and commits them. The reference member m2 starts at 10 s;
    generation 2: m1 (leader) declares t-0..3 owned and keeps t-0, t-1, withholding t-2, t-3,
    which m1 commits and revokes; the follow-up generation 3 (1.5 s later) gives t-2, t-3 to m2.
    50 more records per partition are produced and consumed by their owners. Both stop cleanly.
    """
    b.m1_leads_alone()
    b.m2_starts()
    b.generation_2()
    b.sync_2()
    b.m1_commits_2()
    b.m1_revokes_t2_t3()
    b.generation_3()
    b.sync_3()
    b.m2_takes()
    b.steady()
    return b.teardown()
