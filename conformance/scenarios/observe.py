"""Watching the group while a scenario runs: ownership, leader, stability, drain.

The runner needs a few live facts to drive a schedule (who leads now, has the
group settled, has every produced record been consumed). They come from the
same files the checks read later (member histories and the wire capture),
tailed incrementally; the observer never asks the clients anything. It is a
driver, not a judge: the verdicts are the pipeline's.

*Stable* means: every live member has started and, if the runner told the observer when it
launched it (:meth:`GroupObserver.launched`), has joined the group since (a SyncGroup answered
without error, or a ConsumerGroupHeartbeat answered without error with a member epoch above 0,
on its slot: a member that has started but not joined owns nothing yet, and partitions that
cover the group without it would look settled); every live member whose fault healed (a heal line
of a dead-looking fault in the nemesis log: a resume, a proxy or network back, a toxic removed) has
been answered by the coordinator without error since (a Heartbeat, a SyncGroup, or a
ConsumerGroupHeartbeat with a member epoch above 0: back in the group, or rejoined when its
session had expired; a member that stops instead is no longer live), so a cell observes the
member's return, fencing answers and rejoin included; the partitions they own are
disjoint and cover every partition of the topics they subscribe to (what a
member owns is :class:`conformance.ownership.Holdings`, the judge's own
rules); and nothing has moved (no assigned/revoked/lost event, no JoinGroup or SyncGroup
on the wire, no ConsumerGroupHeartbeat movement) for a quiet period derived from the heartbeat
interval.

ConsumerGroupHeartbeat (KIP-848) movement, per member (:meth:`GroupObserver.cgh_moves`): a
request that joins or leaves (member epoch 0, -1 or -2); a response with an error; a response
whose member epoch differs from the member's last one; a response that carries an assignment
different from the last one the member was given. A steady heartbeat (no assignment in the
response, the same epoch, no error) is not movement, nor is a repeated full assignment equal to
the last (a member's full heartbeat after a reconnect is answered with its whole assignment).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from conformance import wirelog
from conformance.history import now_ms
from conformance.nemesis.faults import HEAL_OF
from conformance.ownership import Holdings

TP = tuple[str, int]
#: Nemesis lines that heal a fault which can make its member look dead (resume, proxy-enable, ...).
_HEALS = frozenset(HEAL_OF.values())


class _Tail:
    """Yields the complete new lines of a growing file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pos = 0
        self._buf = ""

    def lines(self) -> list[str]:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as f:
                f.seek(self._pos)
                chunk = f.read()
                self._pos = f.tell()
        except FileNotFoundError:
            return []
        self._buf += chunk
        *complete, self._buf = self._buf.split("\n")
        return [c for c in complete if c.strip()]


@dataclass
class MemberView:
    holdings: Holdings = field(default_factory=Holdings)
    member_id: str | None = None
    last_change_ts: float = 0.0
    consumed_upto: dict[TP, int] = field(default_factory=dict)


class GroupObserver:
    def __init__(self, members_dir: Path, wire_path: Path, producer_history: Path | None, quiet_ms: float,
                 nemesis_log: Path | None = None) -> None:
        self.members_dir = members_dir
        self._nemesis = _Tail(nemesis_log) if nemesis_log else None
        self.wire = _Tail(wire_path)
        self.quiet_ms = quiet_ms
        self.views: dict[str, MemberView] = defaultdict(MemberView)
        self._tails: dict[str, _Tail] = {}
        self._producer = _Tail(producer_history) if producer_history else None
        self.produced_upto: dict[TP, int] = {}
        self.leader_member_id: str | None = None
        self.leader_generation: int = -1
        self.member_ids: dict[str, str] = {}           # member_id -> member name (from the wire)
        self.leaders_seen: list[str] = []              # member names, in order of generations
        self.last_wire_change_ts: float = 0.0
        self.launched_ts: dict[str, float] = {}                    # member name -> when the runner launched it
        self.joined_ts: dict[str, float] = {}                      # tap owner -> its last successful join
        self.answered_ts: dict[str, float] = {}                    # tap owner -> its last membership answered OK
        self.healed_ts: dict[str, tuple[float, str]] = {}          # member -> when its fault healed, the heal line
        self.cgh_epoch: dict[str, int] = {}                       # tap owner -> its last member epoch
        self.cgh_assigned: dict[str, list[tuple[str, tuple[int, ...]]]] = {}   # tap owner -> last assignment

    # -- ingestion -------------------------------------------------------
    def _ingest_history(self, name: str, event: dict) -> None:
        view = self.views[name]
        if event.get("event") == "consumed":
            tp = (event["topic"], event["partition"])
            view.consumed_upto[tp] = max(view.consumed_upto.get(tp, -1), event["last_offset"])
            return
        if not view.holdings.apply(event):
            return
        if event.get("member_id"):
            view.member_id = event["member_id"]
        view.last_change_ts = float(event.get("ts", now_ms()))

    def poll(self) -> None:
        for path in sorted(self.members_dir.glob("*.jsonl")):
            name = path.stem
            tail = self._tails.setdefault(name, _Tail(path))
            for line in tail.lines():
                try:
                    self._ingest_history(name, json.loads(line))
                except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                    continue  # the pipeline reports malformed lines; the driver skips them
        for _, rec, _ in wirelog.read_wire(self.wire.lines()):
            if rec is None:
                continue
            if rec.get("direction") == "response" and not rec.get("error_code") and (
                    rec.get("api") == "SyncGroup" or (rec.get("api") == "ConsumerGroupHeartbeat"
                                                      and isinstance(rec.get("member_epoch"), int)
                                                      and rec["member_epoch"] > 0)):
                self.joined_ts[str(rec.get("member", "?"))] = float(rec.get("ts", now_ms()))
            if rec.get("direction") == "response" and not rec.get("error_code") and (
                    rec.get("api") in ("Heartbeat", "SyncGroup") or (rec.get("api") == "ConsumerGroupHeartbeat"
                                                                     and isinstance(rec.get("member_epoch"), int)
                                                                     and rec["member_epoch"] > 0)):
                self.answered_ts[str(rec.get("member", "?"))] = float(rec.get("ts", now_ms()))
            if rec.get("api") in ("JoinGroup", "SyncGroup") or (
                    rec.get("api") == "ConsumerGroupHeartbeat" and self.cgh_moves(rec)):
                self.last_wire_change_ts = float(rec.get("ts", now_ms()))
            if rec.get("api") == "JoinGroup" and rec.get("direction") == "response" and not rec.get("error_code"):
                member_id, gen = rec.get("member_id"), rec.get("generation")
                if member_id:
                    self.member_ids[member_id] = rec.get("member", "?")
                if member_id and rec.get("leader") == member_id and isinstance(gen, int) and gen > self.leader_generation:
                    self.leader_generation = gen
                    self.leader_member_id = member_id
                    self.leaders_seen.append(rec.get("member", "?"))
        for line in self._nemesis.lines() if self._nemesis is not None else ():
            try:
                entry = json.loads(line)
                if entry.get("fault") in _HEALS:
                    self.healed_ts[str(entry.get("target"))] = (float(entry["ts"]), entry["fault"])
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                continue
        if self._producer is not None:
            for line in self._producer.lines():
                try:
                    ev = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if ev.get("event") == "produced":
                    tp = (ev["topic"], ev["partition"])
                    self.produced_upto[tp] = max(self.produced_upto.get(tp, -1), ev["last_offset"])

    def cgh_moves(self, rec: dict) -> bool:
        """Whether one ConsumerGroupHeartbeat record is movement (see the module docstring), and
        take it into the member's last epoch and assignment. Records of the member's slot (tap
        owner): one member process at a time holds a slot."""
        member = str(rec.get("member", "?"))
        epoch = rec.get("member_epoch")
        if rec.get("direction") == "request":
            return epoch in (0, -1, -2)
        if rec.get("error_code"):
            self.cgh_epoch.pop(member, None)
            return True
        moved = False
        if isinstance(epoch, int):
            moved = self.cgh_epoch.get(member) != epoch
            self.cgh_epoch[member] = epoch
        assigned = rec.get("assigned")
        if isinstance(assigned, list):
            now = sorted((str(tp.get("topic_id")), tuple(sorted(tp.get("partitions") or ())))
                         for tp in assigned if isinstance(tp, dict))
            moved = moved or self.cgh_assigned.get(member) != now
            self.cgh_assigned[member] = now
        return moved

    # -- questions -------------------------------------------------------
    def leader(self) -> str | None:
        """The member name (tap owner) that led the newest generation seen."""
        self.poll()
        return self.member_ids.get(self.leader_member_id or "", None)

    def launched(self, name: str, ts: float | None = None) -> None:
        """The runner is launching a new incarnation of ``name`` now (or at ``ts``): until the wire
        shows it joined after this, the group is not stable."""
        self.launched_ts[name] = now_ms() if ts is None else ts

    def stable(self, live: dict[str, set[str]], partitions: dict[str, int]) -> tuple[bool, str]:
        """Whether the group is stable; the second value says why not (for timeouts)."""
        self.poll()
        now = now_ms()
        owned_by: dict[TP, list[str]] = defaultdict(list)
        expected: set[TP] = set()
        for name, topics in live.items():
            view = self.views.get(name)
            if view is None or not view.holdings.started:
                return False, f"{name} has not started"
            if name in self.launched_ts and self.joined_ts.get(name, 0.0) <= self.launched_ts[name]:
                return False, f"{name} has not joined the group since it was started"
            if name in self.healed_ts and self.answered_ts.get(name, 0.0) <= self.healed_ts[name][0]:
                return False, f"{name} has not been answered by the coordinator since its {self.healed_ts[name][1]}"
            for tp in view.holdings.owned:
                owned_by[tp].append(name)
            expected |= {(t, p) for t in topics for p in range(partitions.get(t, 0))}
        doubles = {tp: names for tp, names in owned_by.items() if len(names) > 1}
        if doubles:
            return False, f"owned twice: {sorted(doubles.items())[:4]}"
        missing = expected - set(owned_by)
        if missing:
            return False, f"{len(missing)} partitions unowned, e.g. {sorted(missing)[:4]}"
        last = max([v.last_change_ts for n, v in self.views.items() if n in live] + [self.last_wire_change_ts])
        if now - last < self.quiet_ms:
            return False, f"still moving ({now - last:.0f} ms since the last change)"
        return True, "stable"

    def drained(self) -> tuple[bool, str]:
        """Every partition's newest produced offset has been consumed by some member."""
        self.poll()
        consumed: dict[TP, int] = {}
        for view in self.views.values():
            for tp, off in view.consumed_upto.items():
                consumed[tp] = max(consumed.get(tp, -1), off)
        behind = {tp: (consumed.get(tp, -1), hi) for tp, hi in self.produced_upto.items() if consumed.get(tp, -1) < hi}
        if behind:
            return False, f"{len(behind)} partitions behind, e.g. {sorted(behind.items())[:3]} (consumed, produced)"
        return True, "drained"
