"""Hand-made and synthetic run directories (for the pipeline's tests and bench).

:class:`CellBuilder` writes a RunDir exactly as the real writers do (manifest,
member histories per conformance.history, wire frames per conformance.cluster.tap
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
from conformance.protocol.userdata import encode_cooperative_generation, encode_sticky_userdata

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
        #: Members whose history names no member id or generation (the Java harness before 2.5).
        self.unnamed: set[str] = set()
        #: Member ids other than ``<name>-id`` (a restarted instance joins under a new one).
        self.ids: dict[str, str] = {}

    def mid(self, member: str) -> str:
        """The member id ``member``'s current instance uses."""
        return self.ids.get(member, f"{member}-id")

    # -- histories -------------------------------------------------------------------------------
    def event(self, member: str, ts: float, event: str, **fields) -> None:
        spec = self.members.get(member, "producer@0")
        entry = {"ts": float(ts), "member": member, "client": spec.split("@")[0],
                 "client_version": spec.split("@")[1] if "@" in spec else "0", "event": event,
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
             leader_id: str | None = None) -> None:
        """JoinGroup requests (at ts) and responses (at ts+5) for generation ``gen``.

        ``metadata``: member -> subscription hex (see :meth:`subscription`);
        ``offered``: member -> protocol names in preference order (default: just ``protocol``);
        ``leader_of``: member -> the leader its response names instead of ``leader`` (a broken broker);
        ``leader_id``: the leader's member id, if not its current instance's (then nobody gets the member list).
        """
        for m, meta in metadata.items():
            names = (offered or {}).get(m, [protocol])
            self.frame(ts, m, "JoinGroup", "request", generation=-1,
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


#: Defects :func:`cooperative_story` can introduce, each breaking one invariant (the key).
BREAKS: dict[str, str] = {
    "e1": "m2's subscription is v3 but ends inside its topic array",
    "e2": "the leader sends m2 an assignment that ends inside its partition array",
    "e3": "m2's cooperative-sticky userData is 3 garbage bytes (a warning)",
    "e4": "the reference member m2 writes its owned partitions unsorted (Java sorts them)",
    "e5": "m1 still declares t-2, t-3 owned in generation 3, a second after revoking them",
    "e5-v0": "m2 offers cooperative-sticky in generation 3 with a v0 subscription (no owned partitions)",
    "e5-slack-allowed": "m2 declares t-2, t-3 in generation 4, 50 ms before its history records them assigned "
                        "(its SyncGroup response gave them): allowed by E5/clock-slack",
    "l1-pause-allowed": "the leader of generation 2 is paused 50 ms after the join and sends no SyncGroup: "
                        "allowed by L1/fault-hit-leader",
    "l1-sync-generation-fault": "as l1-sync-generation, with a short pause of the leader in the window: not excused",
    "r2-outlives-window": "m1 is paused for 100 ms; m2 takes t-0 and m1 keeps it until the end: the overlap "
                          "outlives the pause's window",
    "d3-rebalance-allowed": "m1 reads t-2 50-59 without committing before giving it up; m2 reads them again: "
                            "allowed by D3/rebalance",
    "d3-commit-back-allowed": "m1's commits of t-2 go out of order (50, then 45); m2 takes t-2 over and reads "
                              "45-49 again, from the last commit: allowed by D3/rebalance (D2 fails)",
    "d3-below-commit": "m2 takes t-2 over and reads 40-49 again, below the 50 m1 committed before: a D3 violation",
    "e5-missing": "m1 declares nothing owned in generation 3 although it owns t-0, t-1",
    "e5-missing-retried": "as e5-missing, but m1 sends that JoinGroup three times (the first two answered "
                          "NOT_COORDINATOR): one finding naming the three requests",
    "l1": "the leader of generation 2 sends no assignment for m2",
    "l1-nosync": "the leader of generation 2 sends no SyncGroup at all, and nothing stopped it",
    "l1-nosync-allowed": "as l1-nosync, but m1 was being terminated when generation 2 formed: allowed",
    "l1-killed-leader-allowed": "m1 sends its JoinGroup for generation 2, is killed and starts again under a new "
                                "member id; generation 2 names the killed id leader, which never syncs: allowed",
    "l1-killed-leader": "as l1-killed-leader-allowed, but generation 2 names m1's new instance leader, which does "
                        "not sync",
    "l1-sync-generation": "the leader of generation 2 sends its SyncGroup for generation -1, which the broker refuses "
                          "(librdkafka before 2.10 after a commit of the generation before failed)",
    "l1-two-leaders": "m2's JoinGroup response of generation 2 names m2 the leader, m1's names m1",
    "l2": "the leader of generation 2 assigns m1 a partition of a topic nobody subscribed to",
    "l2-double": "the leader of generation 2 assigns t-0 to both m1 and m2",
    "l2-incomplete": "the final generation 3 assigns nobody t-3",
    "l3": "the final generation gives m1 one partition and m2 three",
    "l4": "a generation 4 with the same members swaps every partition",
    "l4-eager-allowed": "as l4, but both members declare nothing owned in generation 4 (eager): allowed",
    "l4-userdata": "as l4, but generation 4 is eager sticky: the members declare nothing owned and name generation "
                   "3's assignment in sticky userData, which that assignor reads",
    "l4-cooperative-userdata-allowed": "as l4-userdata, but generation 4 is cooperative-sticky, whose assignors read "
                                       "only the declared owned partitions: allowed",
    "l4-lost-allowed": "m3 joins in generation 4, which takes t-3 from m2; m1 then loses t-0, t-1 and declares nothing "
                       "in generation 5, which gives t-0 to m3: one move needed and made by a leader, allowed",
    "l4-stale-userdata-allowed": "in generation 4 each member names only one partition (owned and sticky userData "
                                 "of generation 2), and only the unnamed ones move: allowed",
    "l5": "a leader-rotation cell in which the reference member never leads",
    "l5-every-kind-led": "a leader-rotation cell in which the reference member leads generation 4: allowed",
    "r1": "generation 2 hands t-2 to m2 while m1 validly declares it owned",
    "r2": "m2 records t-2 assigned while m1 still owns it",
    "r2-allowed": "as r2, but m1 is paused (SIGSTOP) at the time: allowed",
    "r2-unhealed-allowed": "m1 is paused at 20 s and never resumed (the run was interrupted); m2 records t-0 "
                           "assigned at 40 s while m1 still owns it: allowed",
    "r3": "m1 revokes t-0 and gets it back with no other owner in between",
    "r3-allowed": "as r3, but during a broker restart (the session was cut, not rebalanced): allowed",
    "r3-regrouped-allowed": "m2 is killed after m1 revoked t-2, t-3 for it in generation 2; generation 3 (m1 alone) "
                            "gives them back to m1, planned for a smaller group: allowed, the whole cell passes",
    "r3-regrouped": "as r3-regrouped-allowed, but m1 also revokes t-0, which generation 2 left it, and gets it back "
                    "in generation 3",
    "r3-regrouped-unnamed-allowed": "as r3-regrouped-allowed, but m1's history names no generation (the Java harness "
                                    "before 2.5): the wire's SyncGroups tell them, allowed",
    "r3-regrouped-unnamed": "as r3-regrouped, with m1's history naming no generation",
    "r3-new-topic-allowed": "both subscribe to t and u, which generation 2's leader does not know yet: it withholds "
                            "t-2, t-3 from m1 for m2; generation 3, which knows u, gives m2 u-0..3 and m1 t-2, t-3 "
                            "back: allowed",
    "r4": "t-2, t-3 are revoked and nobody gets them for the rest of a long run",
    "r4-broker-allowed": "a broker restart at 14.5 s cuts m1's session: it revokes t-0, t-1 (Sarama-style) and gets "
                         "them back in generation 4 at 50 s, past the 30 s bound: allowed",
    "r5": "every member offers only cooperative-sticky but the final generation is range",
    "r5-not-offered": "generation 3 is cooperative-sticky although m2 offered only range",
    "d1": "m2 never consumes offsets 90-99 of t-3",
    "d2": "m1's accepted commit moves t-1 back from 50 to 30",
    "d2-stale": "the broker accepts m1's commit from generation 1 after generation 2 formed",
    "d3": "m1 re-reads t-0 90-99 with no rebalance or fault in between",
    "d3-allowed": "as d3, but m1 was paused in between: counted, allowed",
    "d3-resumed-allowed": "m2 is paused at 20 s; m1 reads t-2 90-99 at 35 s; m2 is resumed at 40 s and reads them "
                          "again at once, its history's whole millisecond just before the heal's: counted, allowed",
    "v1": "m2 reports a fatal error and never stops",
    "v1-hang": "m2 never stops in a complete run (no error, no kill)",
    "v1-crash": "m2 starts again at 30 s without having stopped and without a kill",
    "v1-unowned": "m2 loses t-3 at 30 s and nobody owns it to the end",
    "v1-slow": "m2's start is the last fault, and the group converges 2.7 s later against a 1 s bound",
    "v1-await": "the runner's await stable of phase bounce timed out (manifest notes): the group never settled",
    "v1-kill-allowed": "m2 is killed at 30 s; m1 takes t-2, t-3 in generation 4: allowed, the whole cell passes",
}


def cooperative_story(root: Path, run_id: str, *, break_: str | None = None, **kw) -> Path:
    """The clean cooperative story, optionally broken in one named way (:data:`BREAKS`).

    Story: java member m1 starts alone and leads generation 1, taking t-0..3.
    The producer writes 50 records to each partition; m1 consumes and commits
    them. The reference member m2 starts at 10 s; generation 2: m1 (leader)
    declares t-0..3 owned and keeps t-0, t-1, withholding t-2, t-3, which m1
    commits and revokes; the follow-up generation 3 (2 s later) gives t-2,
    t-3 to m2. 50 more records per partition are produced and consumed by
    their owners. Both stop cleanly at the end. Every invariant holds.
    """
    if break_ is not None and break_ not in BREAKS:
        raise ValueError(f"unknown break {break_!r}; known: {', '.join(BREAKS)}")
    if break_ in ("l5", "l5-every-kind-led"):
        kw["leader_rotation"] = True
    if break_ == "r3-new-topic-allowed":
        kw["topics"] = {"t": 4, "u": 4}
    if break_ == "l4-lost-allowed":
        kw["members"] = (("m1", "java@4.4.0"), ("m2", "reference@0.1.0"), ("m3", "librdkafka@2.16.1"))
    b = CellBuilder(root, run_id, **kw)
    if break_ in ("r3-regrouped-unnamed", "r3-regrouped-unnamed-allowed"):
        b.unnamed.add("m1")
    if break_ == "v1-slow":
        b.manifest["timing"] = {**b.manifest["timing"], "convergence_bound_ms": 1000}
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
    if break_ == "v1-slow":
        b.fault(9990, "start", "m2")
    b.started("m2", 10000)
    sub_m2 = b.subscription("m2")
    if break_ == "e1":
        sub_m2 = "0003" + "00000002" + "0001" + "74"          # two topics announced, one present
    elif break_ == "e4":
        # v1: topics [t], userData empty, owned [t: 1, 0] (unsorted): decodes, but Java would write [0, 1].
        sub_m2 = "0001" + "00000001" + "000174" + "00000000" + "00000001" + "000174" + "00000002" + "00000001" + "00000000"
    elif break_ == "e3":
        sub_m2 = b.subscription("m2", user_data=b"\x01\x02\x03")
    killed_leader = break_ in ("l1-killed-leader", "l1-killed-leader-allowed")
    if killed_leader:
        b.frame(10800, "m1", "JoinGroup", "request", generation=-1,
                protocols=[{"name": "cooperative-sticky", "metadata": b.subscription("m1", owned=all4, generation=1)}])
        b.fault(10900, "kill", "m1")
        b.fault(10950, "start", "m1")
        b.ids["m1"] = "m1-id2"
        b.started("m1", 10960)
    b.join(2, 11000, "m1", {"m1": b.subscription("m1", owned=all4, generation=1), "m2": sub_m2},
           leader_of={"m2": "m2"} if break_ == "l1-two-leaders" else None,
           leader_id="m1-id" if break_ == "l1-killed-leader-allowed" else None)
    g2: dict[str, list] = {"m1": all4[:2], "m2": []}
    if break_ == "l1":
        g2 = {"m1": all4[:2]}
        b.frame(11100, "m2", "SyncGroup", "request", generation=2, protocol_name="cooperative-sticky", assignments=[])
    elif break_ == "l2":
        g2 = {"m1": all4[:2] + [("other", 0)], "m2": []}
    elif break_ == "r1":
        g2 = {"m1": all4[:2], "m2": [(T, 2)]}
    elif break_ == "l2-double":
        g2 = {"m1": all4[:2], "m2": [(T, 0)]}
    raw = {"m2": "0003" + "00000001" + "000174" + "00000002" + "00000000"} if break_ == "e2" else None
    if break_ == "l1-nosync-allowed":
        b.fault(10900, "terminate", "m1")
    if break_ == "l1-pause-allowed":
        b.fault(11050, "pause", "m1")                   # the leader freezes before it can sync
        b.fault(23000, "resume", "m1", phase="heal")
    if break_ == "l1-sync-generation-fault":
        b.fault(11050, "pause", "m1")
        b.fault(11080, "resume", "m1", phase="heal")
    if break_ in ("l1-sync-generation", "l1-sync-generation-fault"):
        gave = [{"member_id": f"{m}-id", "assignment": encode_assignment(Assignment(3, _group(tps))).hex()}
                for m, tps in g2.items()]
        b.frame(11100, "m1", "SyncGroup", "request", generation=-1, protocol_name="cooperative-sticky",
                assignments=gave)
        b.frame(11105, "m1", "SyncGroup", "response", generation=-1, error_code=22, assignment="")
    elif break_ not in ("l1-nosync", "l1-nosync-allowed", "l1-pause-allowed") and not killed_leader:
        b.sync(2, 11100, "m1", g2, raw=raw)
    if break_ == "d2":
        b.commit("m1", 11200, 2, [(T, 0, 50), (T, 1, 30)])
    else:
        b.commit("m1", 11200, 2, [(T, p, 50) for p in range(4)])
    if break_ == "d2-stale":
        b.commit("m1", 11300, 1, [(T, 0, 50)])
    if break_ == "d3-rebalance-allowed":
        b.produced(11250, T, 2, 50, 59)
        b.consumed("m1", 11300, T, 2, 50, 59)           # read, not yet committed when m1 gives t-2 up
    if break_ in ("r2", "r2-allowed"):
        if break_ == "r2-allowed":
            b.fault(11240, "pause", "m1")
            b.fault(11260, "resume", "m1", phase="heal")
        b.assigned("m2", 11250, [(T, 2)])               # m1 has not given t-2 up yet
    if break_ == "r3-allowed":
        b.fault(11290, "broker-restart", "broker")
        b.fault(11320, "broker-restart", "broker", phase="heal")
    if break_ in ("r3", "r3-allowed"):
        b.revoked("m1", 11300, [(T, 0)])
        b.assigned("m1", 11350, [(T, 0)])
    regrouped = break_ in ("r3-regrouped", "r3-regrouped-allowed", "r3-regrouped-unnamed", "r3-regrouped-unnamed-allowed")
    retained = break_ in ("r3-regrouped", "r3-regrouped-unnamed")     # t-0, which generation 2 left m1
    if retained:
        b.revoked("m1", 11300, [(T, 0)])
    b.revoked("m1", 11400, all4[2:])
    m1_owned_g3 = (all4 if break_ == "e5" else [] if break_ in ("e5-missing", "e5-missing-retried")
                   else [(T, 1)] if retained else all4[:2])
    final_proto = "range" if break_ == "r5" else "cooperative-sticky"
    offered = ({"m1": ["cooperative-sticky"], "m2": ["cooperative-sticky"]} if break_ == "r5"
               else {"m1": ["cooperative-sticky"], "m2": ["range"]} if break_ == "r5-not-offered" else None)
    g3_members = {"m1": b.subscription("m1", owned=m1_owned_g3, generation=2),
                  "m2": b.subscription("m2", owned=[(T, 2)] if break_ in ("r2", "r2-allowed") else [], generation=2,
                                       version=0 if break_ == "e5-v0" else 3)}
    if regrouped:
        b.fault(12000, "kill", "m2")
        del g3_members["m2"]
    if break_ == "e5-missing-retried":
        for ts in (12200, 12350):
            b.frame(ts, "m1", "JoinGroup", "request", generation=-1,
                    protocols=[{"name": "cooperative-sticky", "metadata": g3_members["m1"]}])
            b.frame(ts + 5, "m1", "JoinGroup", "response", generation=-1, error_code=16, leader="",
                    protocol_name=None, members=[])
    b.join(3, 12500, "m1", g3_members, protocol=final_proto, offered=offered)
    final: dict[str, list] = {"m1": all4[:2], "m2": all4[2:]}
    if regrouped:
        final = {"m1": all4}
    elif break_ == "r3-new-topic-allowed":
        final = {"m1": all4, "m2": [("u", p) for p in range(4)]}
    elif break_ == "l3":
        final = {"m1": all4[:1], "m2": all4[1:]}
    elif break_ == "r4":
        final = {"m1": all4[:2], "m2": []}
    elif break_ == "l2-incomplete":
        final = {"m1": all4[:2], "m2": [(T, 2)]}
    b.sync(3, 12600, "m1", final, protocol=final_proto)
    if break_ == "l3":
        b.revoked("m1", 12650, [(T, 1)])
    news = [tp for tp in final.get("m2", []) if not (break_ in ("r2", "r2-allowed") and tp == (T, 2))]
    if news:
        b.assigned("m2", 12700, news)
    if regrouped:
        b.assigned("m1", 12700, ([(T, 0)] if retained else []) + all4[2:])
    if break_ == "r3-new-topic-allowed":
        b.assigned("m1", 12700, all4[2:])
    if break_ in ("l4", "l4-eager-allowed"):
        eager = break_ == "l4-eager-allowed"
        b.join(4, 20000, "m1", {"m1": b.subscription("m1", owned=[] if eager else all4[:2], generation=3),
                                 "m2": b.subscription("m2", owned=[] if eager else all4[2:], generation=3)})
        b.sync(4, 20100, "m1", {"m1": all4[2:], "m2": all4[:2]})
    if break_ in ("l4-userdata", "l4-cooperative-userdata-allowed", "l4-stale-userdata-allowed"):
        # Sticky userData (the previous assignment, then a generation) names what each member had.
        stale = break_ == "l4-stale-userdata-allowed"
        proto = "sticky" if break_ == "l4-userdata" else "cooperative-sticky"
        named = {"m1": [(T, 0)], "m2": [(T, 3)]} if stale else {"m1": all4[:2], "m2": all4[2:]}
        told_gen = 2 if stale else 3
        b.join(4, 20000, "m1", {m: b.subscription(m, owned=named[m] if stale else [], generation=told_gen,
                                                  user_data=encode_sticky_userdata(_group(named[m]), told_gen))
                                 for m in ("m1", "m2")}, protocol=proto)
        b.sync(4, 20100, "m1", {"m1": [(T, 0), (T, 2)], "m2": [(T, 1), (T, 3)]} if stale
               else {"m1": all4[2:], "m2": all4[:2]}, protocol=proto)
    if break_ == "l4-lost-allowed":
        b.started("m3", 19000)
        b.join(4, 20000, "m1", {"m1": b.subscription("m1", owned=all4[:2], generation=3),
                                 "m2": b.subscription("m2", owned=all4[2:], generation=3), "m3": b.subscription("m3")})
        b.sync(4, 20100, "m1", {"m1": all4[:2], "m2": [(T, 2)], "m3": []})
        b.revoked("m2", 20200, [(T, 3)])
        b.lost("m1", 21000, all4[:2])
        b.join(5, 22000, "m1", {"m1": b.subscription("m1", generation=4),
                                 "m2": b.subscription("m2", owned=[(T, 2)], generation=4),
                                 "m3": b.subscription("m3", generation=4)})
        b.sync(5, 22100, "m1", {"m1": [(T, 1)], "m2": [(T, 2)], "m3": [(T, 0), (T, 3)]})
        b.assigned("m1", 22200, [(T, 1)])
        b.assigned("m3", 22200, [(T, 0), (T, 3)])
    if break_ == "l5-every-kind-led":
        b.join(4, 20000, "m2", {"m1": b.subscription("m1", owned=all4[:2], generation=3),
                                 "m2": b.subscription("m2", owned=all4[2:], generation=3)})
        b.sync(4, 20100, "m2", final)
    for p in range(4):
        b.produced(13000 + p, T, p, 50, 99)
    owners = {tp: m for m, tps in final.items() for tp in tps}
    for (t, p), m in sorted(owners.items()):
        last = 89 if (break_ == "d1" and p == 3) else 99
        b.consumed(m, 14000 + p, t, p, 50, last)
    if break_ == "r4":
        pass                                            # nobody consumes t-2, t-3 again (D1 fails too)
    if break_ == "d3":
        b.consumed("m1", 15000, T, 0, 90, 99)           # re-read with no rebalance or fault since 14000
    if break_ == "d3-allowed":
        b.fault(14500, "pause", "m1")
        b.fault(14600, "resume", "m1", phase="heal")
        b.consumed("m1", 15000, T, 0, 90, 99)
    if break_ == "r2-outlives-window":
        b.fault(20000, "pause", "m1")
        b.fault(20100, "resume", "m1", phase="heal")
        b.assigned("m2", 20500, [(T, 0)])               # m1 keeps t-0 long after its window closed
    if break_ == "d3-commit-back-allowed":
        b.commit("m1", 11350, 2, [(T, 2, 45)])          # out of order: the broker's last commit of t-2 is 45
        b.consumed("m2", 13900, T, 2, 45, 49)           # m2 resumes from it: at-least-once, not below it
    if break_ == "d3-below-commit":
        b.consumed("m2", 13900, T, 2, 40, 49)           # m1 committed 50 before m2 took t-2 over
    if break_ == "e5-slack-allowed":
        # m2 rejoins 45 ms after its SyncGroup response; its history records t-2, t-3 assigned 5 ms later.
        b.join(4, 12650, "m1", {"m1": b.subscription("m1", owned=all4[:2], generation=3),
                                 "m2": b.subscription("m2", owned=all4[2:], generation=3)})
        b.sync(4, 12750, "m1", final)
    if break_ == "r2-unhealed-allowed":
        b.fault(20000, "pause", "m1")
        b.assigned("m2", 40000, [(T, 0)])
    if break_ == "d3-resumed-allowed":
        b.fault(20000, "pause", "m2")
        b.consumed("m1", 35000, T, 2, 90, 99)
        b.consumed("m2", 40000, T, 2, 90, 99)
        b.fault(40000.4, "resume", "m2", phase="heal")
    if break_ == "r4-broker-allowed":
        b.fault(14500, "broker-restart", "broker")
        b.fault(14600, "broker-restart", "broker", phase="heal")
        b.revoked("m1", 14550, all4[:2])
        b.join(4, 50000, "m1", {"m1": b.subscription("m1", generation=3),
                                 "m2": b.subscription("m2", owned=all4[2:], generation=3)})
        b.sync(4, 50100, "m1", final)
        b.assigned("m1", 50200, all4[:2])
    if break_ == "v1-unowned":
        b.lost("m2", 30000, [(T, 3)])
    if break_ == "v1-crash":
        b.started("m2", 30000)                          # a second life with no stop, no kill before it
    if break_ == "v1-kill-allowed":
        b.fault(30000, "kill", "m2")
        b.join(4, 41000, "m1", {"m1": b.subscription("m1", owned=all4[:2], generation=3)})
        b.sync(4, 41100, "m1", {"m1": all4})
        b.assigned("m1", 41200, all4[2:])
    end = 60000.0
    if break_ == "r2-unhealed-allowed":
        return b.write(end, complete=False)              # m1 is still paused: nobody stops
    # Teardown, as the runner does it: the scenario ends (end_ts), then every member is stopped.
    b.stopped("m1", end + 100)
    if break_ == "v1":
        b.error("m2", end - 200, "boom: unexpected client state", fatal=True)
    elif break_ not in ("v1-hang", "v1-kill-allowed") and not regrouped:
        b.stopped("m2", end + 150)
    if break_ == "l4-lost-allowed":
        b.stopped("m3", end + 170)
    if break_ == "v1-await":
        return b.write(end, notes=[{"ts": 45000.0, "phase": "bounce", "await": "stable", "timeout_ms": 30000,
                                    "state": "t-1 owned by m1, m2"}])
    return b.write(end)


def eager_story(root: Path, run_id: str, *, break_: str | None = None, **kw) -> Path:
    """A clean eager (range) story, or with ``break_="r5"``: m1 rejoins still owning.

    Story: java m1 (range) leads generation 1 with t-0..3. librdkafka m2
    (range) starts; m1 revokes everything, then both join generation 2, which
    gives each two partitions. Eager: R1 and R3 do not apply; R5 requires the
    full revoke before the rejoin.
    """
    kw.setdefault("members", (("m1", "java@4.4.0"), ("m2", "librdkafka@2.16.1")))
    b = CellBuilder(root, run_id, expected_protocol="eager", strategies=("range",), **kw)
    T = "t"
    all4 = [(T, p) for p in range(4)]
    b.started("m1", 1000)
    for p in range(4):
        b.produced(1500 + p, T, p, 0, 9)
    b.join(1, 2000, "m1", {"m1": b.subscription("m1", version=1, user_data=b"")}, protocol="range")
    b.sync(1, 2100, "m1", {"m1": all4}, protocol="range")
    b.assigned("m1", 2200, all4)
    for p in range(4):
        b.consumed("m1", 3000 + p, T, p, 0, 9)
    b.started("m2", 10000)
    if break_ != "r5":
        b.revoked("m1", 10900, all4)
    b.join(2, 11000, "m1", {"m1": b.subscription("m1", version=1, user_data=b""),
                             "m2": b.subscription("m2", version=1, user_data=b"")}, protocol="range")
    if break_ == "r5":
        b.revoked("m1", 11050, all4)
    b.sync(2, 11100, "m1", {"m1": all4[:2], "m2": all4[2:]}, protocol="range")
    b.assigned("m1", 11200, all4[:2])
    b.assigned("m2", 11200, all4[2:])
    b.stopped("m1", 60100)    # teardown, after the scenario's end
    b.stopped("m2", 60150)
    return b.write(60000.0)


def cut_short_story(root: Path, run_id: str, *, ended: bool = False, overlap: bool = False) -> Path:
    """A leader-rotation cell that a suite error cut short 50 ms after its generation 2 formed.

    Story: every member offers range before cooperative-sticky (an upgrade under
    way: the group is eager, and the manifest expects the cooperative group the
    final lists vote for). java m1 leads generation 1 with t-0..3 and reads
    offsets 0-49. The reference member m2 starts at 10 s; offsets 50-59 of each
    partition are produced at 10.5 s; m1 revokes everything (eager) and rejoins;
    generation 2 forms at 11 s, led by m1 again, and the run stops at 11.05 s,
    before the leader's SyncGroup and before anyone read 50-59. What the run
    observed violates nothing.

    ``ended``: the same history marked complete (the control): then D1 (50-59
    never read), L1 (no SyncGroup), L5 (the reference never led), R5 (the
    final generation eager) and V1 (nobody stopped; t-0..3 unowned) fail. ``overlap``: m2 also records t-0 assigned at
    10.8 s, while m1 still owns it: R2 fails, cut short or not.
    """
    b = CellBuilder(root, run_id, scenario="leader-rotation", leader_rotation=True)
    T = "t"
    all4 = [(T, p) for p in range(4)]
    lists = {"m1": ["range", "cooperative-sticky"], "m2": ["range", "cooperative-sticky"]}
    b.started("m1", 1000)
    for p in range(4):
        b.produced(1500 + p, T, p, 0, 49)
    b.join(1, 2000, "m1", {"m1": b.subscription("m1", version=1, user_data=b"")}, protocol="range", offered=lists)
    b.sync(1, 2100, "m1", {"m1": all4}, protocol="range")
    b.assigned("m1", 2200, all4)
    for p in range(4):
        b.consumed("m1", 3000 + p, T, p, 0, 49)
    b.started("m2", 10000)
    for p in range(4):
        b.produced(10500 + p, T, p, 50, 59)
    if overlap:
        b.assigned("m2", 10800, [(T, 0)])
    b.revoked("m1", 10900, all4)
    b.join(2, 11000, "m1", {"m1": b.subscription("m1", version=1, user_data=b""),
                             "m2": b.subscription("m2", version=1, user_data=b"")}, protocol="range", offered=lists)
    if ended:
        return b.write(11050.0)
    return b.write(11050.0, complete=False, cut_short="SuiteError: java@3.9.2 is not set up")


def malformed_story(root: Path, run_id: str) -> Path:
    """The clean story plus unusable lines in every input file (each must be reported)."""
    path = cooperative_story(root, run_id)
    with (path / "members" / "m1.jsonl").open("a") as fh:
        fh.write("this is not json\n")
        fh.write('{"ts": 1.0, "member": "m1", "client": "java", "client_version": "4.4.0", "event": "assigned"}\n')
    with (path / "wire.jsonl").open("a") as fh:
        fh.write('{"ts": 5, "member": "m1"\n')
        fh.write('{"ts": 6.0, "member": "m1", "api": "JoinGroup", "direction": "request", "undecodable": "short frame", "raw": "00"}\n')
    with (path / "nemesis.jsonl").open("a") as fh:
        fh.write('{"ts": 7.0, "fault": "meteor", "target": "m1", "phase": "invoke"}\n')
    return path


def bad_manifest_story(root: Path, run_id: str) -> Path:
    """The clean story with a manifest whose fields are partly wrong-typed (each must be reported,
    the rest of the cell judged)."""
    path = cooperative_story(root, run_id)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["seed"] = "seven"
    manifest["timing"]["session_timeout_ms"] = "10s"
    manifest["topics"]["u"] = "four"
    manifest["members"].append("m3")
    (path / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return path


_JUDGED: dict[str, tuple[Path, list[dict]]] = {}


def judged_catalog(root: Path) -> tuple[Path, list[dict]]:
    """Build every story cell (clean, each break, eager, malformed, bad manifest, cut short) under ``root``
    and judge them once.

    Cached per process, so that several test modules share one Spark judge
    call. Returns (out_dir, verdicts).
    """
    if "catalog" not in _JUDGED:
        from conformance.pipeline import judge

        runs = root / "runs +1"     # a space and a '+': paths must survive Spark's file URIs
        dirs = [cooperative_story(runs, "clean", scenario="rolling-restart")]
        dirs += [cooperative_story(runs, f"break-{name}", break_=name, scenario=f"break-{name}") for name in BREAKS]
        dirs.append(eager_story(runs, "eager-clean", scenario="upgrade-eager-to-cooperative"))
        dirs.append(eager_story(runs, "eager-r5", break_="r5", scenario="upgrade-eager-to-cooperative"))
        dirs.append(malformed_story(runs, "malformed"))
        dirs.append(bad_manifest_story(runs, "bad-manifest"))
        dirs.append(cut_short_story(runs, "cut-short"))
        dirs.append(cut_short_story(runs, "cut-short-ended", ended=True))
        dirs.append(cut_short_story(runs, "cut-short-r2", overlap=True))
        out = root / "out"
        _JUDGED["catalog"] = (out, judge(dirs, out))
    return _JUDGED["catalog"]
