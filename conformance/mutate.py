"""Mutation of real run directories: one anomaly class injected into a copy of a run.

Hand-made stories (the tests' ``tests/stories/``) have unreal timing: every
event on a round millisecond, no clock skew, no heartbeat noise. A mutant is a
REAL recorded run (``fixtures/real-runs/``) with one short, deterministic edit
of its histories, wire capture or manifest: the edit a real buggy client (or
leader, or broker) would have produced, everything else as recorded. Timing
stays real: an edit reuses recorded timestamps, and an inserted event is
placed milliseconds from a real one, as real members stamp theirs.

Each function of :data:`MUTATIONS` takes a :class:`RunEdit` (a copy of the
run, loaded), edits it in place and returns ``(culprit, detail)``: the member
whose misbehaviour the edit plays (None where the recorded evidence cannot
point at one) and one line saying exactly what was edited. It raises
:class:`NotApplicable` when the original has no place for the anomaly (e.g.
no cooperative revoke to skip); that is reported, never silently skipped.
Choices are deterministic: the first (or middle) candidate in time order.

Each mutation names the invariant it must fail (the catalog of
:mod:`conformance.pipeline.checks`); ``conformance mutation-score``
(:mod:`conformance.mutation_score`) judges every mutant and reports the
mutants an invariant did not catch.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from conformance import config, wirelog
from conformance.faults import FAULTS, GRACEFUL_STOP_LINES, LOG_LINES, STOP_LINES, TIMED_DEAD_LOOKING, WINDOW_LINES
from conformance.members.spec_grammar import split_spec
from conformance.protocol import (Assignment, DecodeError, Subscription, TopicPartitions, decode_assignment,
                                  decode_subscription, encode_assignment, encode_subscription)
from conformance.reference.codes import GROUP_ID_NOT_FOUND, INCONSISTENT_GROUP_PROTOCOL

TP = tuple[str, int]

#: Nemesis faults during which a member may legitimately look dead (the checks' fault windows,
#: :data:`conformance.faults.DEAD_LOOKING`, plus kills; every ``toxic-add``, whatever its latency):
#: a mutation never places its anomaly inside one, where a rule could rightly excuse it.
_WINDOW_FAULTS = WINDOW_LINES


class NotApplicable(Exception):
    """The original run has no place for this anomaly; the message says what was missing."""


class BadRun(ValueError):
    """A run directory that cannot be loaded for editing (a missing or unreadable file, a line that
    is not a JSON object with ``ts``); the message names the file."""


@dataclass
class Interval:
    """One ownership interval in a member's history (as :mod:`conformance.pipeline.derived` builds them)."""

    member: str
    incarnation: int
    tp: TP
    start_i: int            # index of the opening ``assigned`` in the member's events
    start_ts: float
    end_i: int | None       # index of the closing revoked/lost/stopped event, None: incarnation end
    end_ts: float
    end_reason: str


@dataclass
class RunEdit:
    """A run directory loaded for editing: manifest, histories, wire frames, nemesis log.

    :meth:`save` writes back only what was loaded (every file, one JSON object a line)."""

    path: Path
    manifest: dict = field(default_factory=dict)
    histories: dict[str, list[dict]] = field(default_factory=dict)   # member -> events, file order
    wire: list[dict] = field(default_factory=list)
    nemesis: list[dict] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> "RunEdit":
        """Raises :class:`BadRun` naming the file that cannot be read."""
        path = Path(path)
        try:
            manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
            if not isinstance(manifest, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            raise BadRun(f"{path / 'manifest.json'}: {exc}") from None
        run = cls(path, manifest)
        for f in sorted((path / "members").glob("*.jsonl")):
            run.histories[f.stem] = _read_jsonl(f)
        run.wire = _read_jsonl(path / "wire.jsonl")
        if (path / "nemesis.jsonl").is_file():
            run.nemesis = _read_jsonl(path / "nemesis.jsonl")
        return run

    def save(self) -> None:
        (self.path / "manifest.json").write_text(json.dumps(self.manifest, indent=1) + "\n", encoding="utf-8")
        for member, events in self.histories.items():
            _write_jsonl(self.path / "members" / f"{member}.jsonl", events)
        _write_jsonl(self.path / "wire.jsonl", self.wire)
        if (self.path / "nemesis.jsonl").is_file():
            _write_jsonl(self.path / "nemesis.jsonl", self.nemesis)

    # -- what the run is ---------------------------------------------------
    @property
    def consumers(self) -> list[str]:
        return [m["name"] for m in self.manifest.get("members", [])]

    def cooperative(self) -> bool:
        return (self.manifest.get("expected_protocol") or "cooperative") == "cooperative"

    def cooperative_member(self, member: str) -> bool:
        """First strategy cooperative, in a cooperative cell (as E5 decides)."""
        for m in self.manifest.get("members", []):
            if m["name"] == member:
                return bool(m.get("strategies")) and m["strategies"][0] in config.COOPERATIVE_ASSIGNORS \
                    and self.cooperative()
        return False

    def timing(self, key: str, default: float) -> float:
        value = (self.manifest.get("timing") or {}).get(key)
        return float(value) if isinstance(value, (int, float)) else float(default)

    @property
    def session_ms(self) -> float:
        return self.timing("session_timeout_ms", config.SESSION_TIMEOUT_MS)

    @property
    def heartbeat_ms(self) -> float:
        return self.timing("heartbeat_interval_ms", config.HEARTBEAT_INTERVAL_MS)

    @property
    def convergence_ms(self) -> float:
        return self.timing("convergence_bound_ms", self.session_ms + self.timing("max_poll_interval_ms",
                                                                                 config.MAX_POLL_INTERVAL_MS))

    @property
    def revoke_ms(self) -> float:
        return self.timing("revoke_bound_ms", self.timing("max_poll_interval_ms", config.MAX_POLL_INTERVAL_MS))

    @property
    def end_ts(self) -> float:
        end = self.manifest.get("end_ts")
        if isinstance(end, (int, float)):
            return float(end)
        return max(e["ts"] for evs in self.histories.values() for e in evs)

    def topics(self) -> list[TP]:
        return sorted((t, p) for t, n in (self.manifest.get("topics") or {}).items() for p in range(int(n)))

    def quiet(self, t0: float, t1: float, members: list[str]) -> bool:
        """No fault window of ``members``, the broker or everyone (a fault that can make a member
        look dead, from its invocation to the target's next nemesis line plus a session timeout and
        a heartbeat) overlaps [t0, t1]: the span where the checks' exemption rules look."""
        for i, f in enumerate(self.nemesis):
            if f.get("fault") not in _WINDOW_FAULTS or f.get("phase") != "invoke":
                continue
            if f.get("target") not in (*members, "broker", "all"):
                continue
            heal = next((g["ts"] for g in self.nemesis[i + 1:] if g.get("target") == f.get("target")), self.end_ts)
            if f["ts"] <= t1 and heal + self.session_ms + self.heartbeat_ms >= t0:
                return False
        return True

    # -- histories -----------------------------------------------------------
    def intervals(self) -> list[Interval]:
        """Every ownership interval of every consumer, in order of start."""
        out: list[Interval] = []
        for member in self.consumers:
            events = self.histories.get(member, [])
            open_: dict[TP, tuple[int, float, int]] = {}
            inc = 0

            def close(tp: TP, i: int | None, ts: float, reason: str) -> None:
                s_i, s_ts, s_inc = open_.pop(tp)
                out.append(Interval(member, s_inc, tp, s_i, s_ts, i, ts, reason))

            for i, e in enumerate(events):
                kind = e["event"]
                if kind == "started":
                    for tp in list(open_):
                        close(tp, None, e["ts"], "restarted")
                    inc += 1
                elif kind == "assigned":
                    for t, p in e["partitions"]:
                        open_.setdefault((t, p), (i, e["ts"], inc))
                elif kind in ("revoked", "lost"):
                    for t, p in e["partitions"]:
                        if (t, p) in open_:
                            close((t, p), i, e["ts"], kind)
                elif kind == "stopped":
                    for tp in list(open_):
                        close(tp, i, e["ts"], "stopped")
            last = max([self.end_ts] + [e["ts"] for e in events])
            for tp in list(open_):
                close(tp, None, last, "run-end")
        return sorted(out, key=lambda iv: (iv.start_ts, iv.member, iv.tp))

    def consumed(self, member: str, tp: TP, t0: float = float("-inf"), t1: float = float("inf")) -> list[int]:
        """Indexes of ``member``'s consumed events of ``tp`` with t0 <= ts <= t1."""
        return [i for i, e in enumerate(self.histories.get(member, []))
                if e["event"] == "consumed" and (e["topic"], e["partition"]) == tp and t0 <= e["ts"] <= t1]

    def event_like(self, model: dict, event: str, ts: float, **fields: Any) -> dict:
        """A new history event of ``model``'s member: its common fields and context, a new ``ts``."""
        keep = ("member", "client", "client_version", "member_id", "generation", "protocol")
        return {"ts": ts, **{k: model[k] for k in keep if k in model}, "event": event, **fields}

    # -- wire --------------------------------------------------------------
    def frames(self, api: str, direction: str) -> list[int]:
        return [i for i, f in enumerate(self.wire) if f.get("api") == api and f.get("direction") == direction
                and not f.get("undecodable")]

    def response_of(self, i: int) -> int | None:
        """The index of the response to request frame ``i`` (:func:`conformance.wirelog.pair_key`)."""
        key = wirelog.pair_key(self.wire[i])
        return next((j for j in range(i + 1, len(self.wire))
                     if self.wire[j].get("direction") == "response" and wirelog.pair_key(self.wire[j]) == key), None)

    def member_of_id(self, member_id: str) -> str | None:
        return next((f["member"] for f in self.wire if f.get("member_id") == member_id), None)


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    try:
        with path.open(encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                row = json.loads(line)
                if not isinstance(row, dict) or not isinstance(row.get("ts"), (int, float)):
                    raise ValueError(f"line {number} is not a JSON object with a numeric ts")
                rows.append(row)
    except (OSError, ValueError) as exc:
        raise BadRun(f"{path}: {exc}") from None
    return rows


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, separators=(",", ":")) + "\n")


def _group(tps) -> tuple[TopicPartitions, ...]:
    by: dict[str, set[int]] = {}
    for t, p in tps:
        by.setdefault(t, set()).add(int(p))
    return tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(by.items()))


def _flat(tps: tuple[TopicPartitions, ...]) -> list[TP]:
    return [(tp.topic, p) for tp in tps for p in tp.partitions]


def _fmt(tp: TP) -> str:
    return f"{tp[0]}-{tp[1]}"


def _drop_tp(event: dict, tp: TP) -> bool:
    """Remove ``tp`` from an assigned/revoked/lost event; True when the event is left empty."""
    event["partitions"] = [p for p in event["partitions"] if (p[0], p[1]) != tp]
    return not event["partitions"]


# -- the mutations -----------------------------------------------------------------------------------

def skipped_revoke(run: RunEdit, pair: Callable[[str, str], bool] = lambda revoker, taker: True) -> tuple[str | None, str]:
    """R2. A member never gives up a partition it was told to revoke (its history has no
    ``revoked`` for it: the client skipped the callback and kept the partition), while the
    partition's new owner takes it a few hundred milliseconds later, as recorded: two live owners.
    The first revoke (cooperative, or eager before a rejoin) whose partition reaches another member
    while the revoker lives on (``pair(revoker, taker)`` must hold for the two)."""
    ivs = run.intervals()
    for iv in ivs:
        if iv.end_reason != "revoked":
            continue
        events = run.histories[iv.member]
        # What the revoker's ownership would then run to: its next close of the partition, else its end.
        later = [o for o in ivs if o.member == iv.member and o.incarnation == iv.incarnation and o.tp == iv.tp
                 and o.start_ts > iv.end_ts]
        inc_end = max((o.end_ts for o in ivs if o.member == iv.member and o.incarnation == iv.incarnation),
                      default=iv.end_ts)
        extended_to = later[0].end_ts if later else inc_end
        for new in ivs:
            if (new.tp == iv.tp and new.member != iv.member and pair(iv.member, new.member)
                    and iv.end_ts <= new.start_ts <= iv.end_ts + run.revoke_ms
                    and min(extended_to, new.end_ts) - new.start_ts > 2 * run.heartbeat_ms
                    # R2/fault-window excuses only an overlap that begins inside a window.
                    and run.quiet(iv.end_ts, new.start_ts, [iv.member, new.member])):
                revoke = events[iv.end_i]
                if _drop_tp(revoke, iv.tp):
                    del events[iv.end_i]
                return iv.member, (f"{iv.member} skipped the revoke of {_fmt(iv.tp)} at {revoke['ts']:.0f}; "
                                   f"{new.member} owns it from {new.start_ts:.0f}")
    raise NotApplicable("no revoke whose partition moved to a member that then held it")


# -- R2/fault-window narrowed (issue 38): the faulted member only, from its removal on the wire --------------

def _dead_member_windows(run: RunEdit) -> list[tuple[dict, float]]:
    """(invoke line, window end) of every fault that always makes its member look dead (the table of
    faults' ``looks_dead == "yes"`` lines), the window ending at the member's next nemesis line (its
    heal; the run's end when none) plus a session timeout and a heartbeat, as the checks' windows."""
    out = []
    for i, f in enumerate(run.nemesis):
        line = LOG_LINES.get(f.get("fault"))
        if f.get("phase") != "invoke" or line is None or line.looks_dead != "yes" or f.get("target") not in run.consumers:
            continue
        heal = next((g["ts"] for g in run.nemesis[i + 1:] if g.get("target") == f["target"]), run.end_ts)
        out.append((f, heal + run.session_ms + run.heartbeat_ms))
    return out


def taken_before_removal(run: RunEdit) -> tuple[str | None, str]:
    """R2 (rule R2/fault-window narrowed). A member takes a partition of a member a fault made look
    dead before the broker removed that member: its ``assigned`` of the partition is recorded half-way
    between the fault and the assignment the group really gave it (a client that grabs the partitions
    of a member gone silent while the coordinator still counts it in). The first handover inside the
    dead-looking window of the previous owner, whose overlap the recorded run shows allowed."""
    for fault, w_end in _dead_member_windows(run):
        for old in run.intervals():
            if old.member != fault["target"] or not old.start_ts < fault["ts"] < old.end_ts:
                continue
            for new in run.intervals():
                if new.tp != old.tp or new.member == old.member \
                        or not fault["ts"] < new.start_ts < old.end_ts <= w_end:
                    continue
                events = run.histories[new.member]
                ts = (fault["ts"] + new.start_ts) / 2
                at = next((k for k, e in enumerate(events) if e["ts"] > ts), len(events))
                events.insert(at, run.event_like(events[new.start_i], "assigned", ts, partitions=[list(new.tp)]))
                return new.member, (f"{new.member} recorded {_fmt(new.tp)} assigned at {ts:.0f}, half-way between "
                                    f"{old.member}'s {fault['fault']} at {fault['ts']:.0f} and its real assignment at "
                                    f"{new.start_ts:.0f}; {old.member} held it until {old.end_ts:.0f}")
    raise NotApplicable("no partition of a dead-looking member handed to another member inside its fault window")


def held_beside_faulted(run: RunEdit) -> tuple[str | None, str]:
    """R2 (rule R2/fault-window narrowed). A healthy member records the revoke of a partition two
    heartbeats after the member a fault had made look dead (back, and rejoined) took it over (a client
    whose revoke callback runs late, after the partition's new owner has it): the overlap lies inside the
    faulted member's window, but the member that kept the partition is the healthy one. The first
    revoke whose partition the faulted member took within the revoke bound, early enough that the
    delayed revoke still falls inside its window."""
    ivs = run.intervals()
    for fault, w_end in _dead_member_windows(run):
        for new in ivs:
            if new.member != fault["target"] or not fault["ts"] < new.start_ts < w_end:
                continue
            for iv in ivs:
                late = new.start_ts + 2 * run.heartbeat_ms
                if (iv.tp != new.tp or iv.member == new.member or iv.end_reason != "revoked" or iv.end_i is None
                        or not new.start_ts - run.revoke_ms <= iv.end_ts <= new.start_ts
                        or late >= min(w_end - run.heartbeat_ms, new.end_ts)):
                    continue
                events = run.histories[iv.member]
                between = events[iv.end_i + 1:]
                if any(e["ts"] <= late and (e["event"] in ("started", "stopped") or (e.get("topic"), e.get("partition")) == iv.tp
                                            or list(iv.tp) in (e.get("partitions") or [])) for e in between):
                    continue
                revoke = events.pop(iv.end_i)
                if revoke["partitions"] != [list(iv.tp)]:
                    _drop_tp(revoke, iv.tp)
                    events.insert(iv.end_i, revoke)
                    revoke = run.event_like(revoke, "revoked", late, partitions=[list(iv.tp)])
                else:
                    revoke["ts"] = late
                at = next((k for k, e in enumerate(events) if e["ts"] > late), len(events))
                events.insert(at, revoke)
                return iv.member, (f"{iv.member} recorded the revoke of {_fmt(iv.tp)} at {late:.0f} instead of "
                                   f"{iv.end_ts:.0f}, after {new.member} (its {fault['fault']} at {fault['ts']:.0f}) "
                                   f"took it at {new.start_ts:.0f}")
    raise NotApplicable("no partition a dead-looking member took back from a healthy one inside its window")


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
            q = next((k for k in range(i - 1, -1, -1) if wirelog.pair_key(run.wire[k])[:3] == wirelog.pair_key(
                run.wire[i])[:3] and run.wire[k].get("direction") == "request"
                and run.wire[k].get("correlation_id") == run.wire[i].get("correlation_id")), None)
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


# -- P1/fault-window narrowed (issue 38): session-expiring faults only, the bound on the total stall -----------

@dataclass(frozen=True)
class _Window:
    """A dead-looking fault of a member or of the broker, as P1 weighs it: ``start`` (its invocation) to
    ``end`` (its heal plus a session timeout and a heartbeat); ``expiring``: it can expire a session
    (:data:`conformance.faults.TIMED_DEAD_LOOKING` lines only when they lasted a session timeout)."""

    fault: str
    target: str
    start: float
    end: float
    expiring: bool


def _p1_windows(run: RunEdit) -> list[_Window]:
    out = []
    for i, f in enumerate(run.nemesis):
        line = LOG_LINES.get(f.get("fault"))
        if f.get("phase") != "invoke" or line is None or line.looks_dead != "yes":
            continue
        heal = next((g["ts"] for g in run.nemesis[i + 1:] if g.get("target") == f.get("target")), run.end_ts)
        out.append(_Window(f["fault"], f.get("target"), f["ts"], heal + run.session_ms + run.heartbeat_ms,
                           f["fault"] not in TIMED_DEAD_LOOKING or heal - f["ts"] >= run.session_ms))
    return sorted(out, key=lambda w: w.start)


def _outside(t0: float, t1: float, windows: list[_Window]) -> tuple[float, float]:
    """(total, longest): the time of [t0, t1] outside every window of ``windows`` (sorted by start),
    in all and its longest stretch."""
    total, longest, cursor = 0.0, 0.0, t0
    for w in windows:
        lo, hi = min(max(w.start, t0), t1), max(min(w.end, t1), t0)
        total += max(0.0, lo - cursor)
        longest = max(longest, lo - cursor)
        cursor = max(cursor, hi)
    return total + max(0.0, t1 - cursor), max(longest, t1 - cursor)


def _merge_into_resume(run: RunEdit, member: str, inside: list[int], resume_i: int) -> dict:
    """Fold ``member``'s consumed batches ``inside`` (history indexes) into the batch at ``resume_i``
    (its offsets widened to cover theirs, their counts added) and drop them: the records are still
    consumed once, only later. Returns the resuming batch."""
    events = run.histories[member]
    resume = events[resume_i]
    merged = [events[k] for k in inside] + [resume]
    resume["first_offset"] = min(m["first_offset"] for m in merged)
    resume["last_offset"] = max(m["last_offset"] for m in merged)
    resume["count"] = sum(m["count"] for m in merged)
    dropped = set(inside)
    run.histories[member] = [e for k, e in enumerate(events) if k not in dropped]
    return resume


def _stall_across(run: RunEdit, keep: Callable[[_Window], bool], what: str) -> tuple[str | None, str]:
    """A member stops fetching one partition it owns around a run of the fault windows ``keep`` selects
    (its own or the broker's, each less than the bound after the previous one): it consumes nothing of it
    from up to a bound minus two heartbeats before the first window to up to as long after the last one
    (no further than the other windows next to them), then resumes and catches up in one batch (its
    consumed events in between merged into the resume). Every stretch of the stall outside the windows
    of every dead-looking fault is shorter than the bound; its time outside the windows that can expire
    a session, in all, is longer than the bound by two heartbeats or more. The first ownership interval
    that holds such a stall."""
    reach = run.convergence_ms - 2 * run.heartbeat_ms
    windows = _p1_windows(run)
    for iv in run.intervals():
        mine = [w for w in windows if w.target in (iv.member, "broker", "all")]
        groups: list[list[_Window]] = []
        for w in (w for w in mine if keep(w)):
            if groups and w.start - max(x.end for x in groups[-1]) <= reach:
                groups[-1].append(w)
            else:
                groups.append([w])
        for group in groups:
            end = max(w.end for w in group)
            before = [w.end for w in mine if w not in group and w.start < group[0].start]
            after = [w.start for w in mine if w not in group and w.start > end]
            t0 = max([iv.start_ts + 2 * run.heartbeat_ms, group[0].start - reach] + before)
            t1 = min([iv.end_ts - 2 * run.heartbeat_ms, end + reach] + after)
            total, _ = _outside(t0, t1, [w for w in mine if w.expiring])
            _, longest = _outside(t0, t1, mine)
            if total <= run.convergence_ms + 2 * run.heartbeat_ms or longest > reach:
                continue
            cons = run.consumed(iv.member, iv.tp, iv.start_ts, iv.end_ts)
            events = run.histories[iv.member]
            inside = [k for k in cons if t0 < events[k]["ts"] <= t1]
            later = [k for k in cons if events[k]["ts"] > t1]
            if not inside or not later or not any(events[k]["ts"] <= t0 for k in cons):
                continue
            resume = _merge_into_resume(run, iv.member, inside, later[0])
            faults = ", ".join(f"{w.fault} of {w.target} at {w.start:.0f}" for w in group)
            return iv.member, (f"{iv.member} consumed nothing of {_fmt(iv.tp)} from {t0:.0f} to {resume['ts']:.0f} "
                               f"({(resume['ts'] - t0) / 1000:.1f} s, across {faults}; {len(inside)} batch(es) "
                               f"merged into the resume)")
    raise NotApplicable(f"no ownership interval holding a stall across {what}")


def stalled_across_short_pause(run: RunEdit) -> tuple[str | None, str]:
    """P1 (rule P1/fault-window narrowed). :func:`_stall_across` a pause (or cut) of the owner shorter
    than its session timeout, which the group never noticed: it opens no fault window, so the whole
    stall counts against the bound."""
    return _stall_across(run, lambda w: not w.expiring and w.target not in ("broker", "all"),
                         "a fault shorter than a session")


def stalled_across_restarts(run: RunEdit) -> tuple[str | None, str]:
    """P1 (rule P1/fault-window narrowed). :func:`_stall_across` broker restarts (windows that each
    expire a session, back to back where the run has several): the bound holds the stall's total time
    outside the windows, not its longest stretch, so the windows excuse nothing before, between or
    after them."""
    return _stall_across(run, lambda w: w.expiring and w.target in ("broker", "all"), "broker restarts")


def stale_claim(run: RunEdit) -> tuple[str | None, str]:
    """E5. A cooperative member declares in a JoinGroup a partition its last assignment did not give
    it (a client that keeps a stale owned set): the subscription bytes are re-encoded with the codec,
    in the request and in the leader's view of the same join. The first rejoin of a cooperative
    member (it has received an assignment) whose subscription declares owned partitions (v1+)."""
    last_assigned: dict[str, list[TP]] = {}
    for i, f in enumerate(run.wire):
        if f.get("undecodable"):
            continue
        if f.get("api") == "SyncGroup" and f.get("direction") == "response" and (f.get("error_code") or 0) == 0 \
                and f.get("assignment"):
            try:
                last_assigned[f["member"]] = _flat(decode_assignment(bytes.fromhex(f["assignment"])).assigned_partitions)
            except (DecodeError, ValueError):
                pass
            continue
        if not (f.get("api") == "JoinGroup" and f.get("direction") == "request" and f.get("member_id")
                and f["member"] in last_assigned and run.cooperative_member(f["member"])):
            continue
        for proto, sub in _cooperative_subscriptions(f):
            stale = next((tp for tp in run.topics() if tp not in last_assigned[f["member"]]), None)
            if stale is None:
                continue
            old = proto["metadata"]
            new = encode_subscription(Subscription(
                sub.version, sub.topics, sub.user_data, _group(_flat(sub.owned_partitions) + [stale]),
                sub.generation_id, sub.rack_id, sub.trailing)).hex()
            proto["metadata"] = new
            seen = _replace_leader_view(run, i, f["member_id"], old, new)
            return f["member"], (f"{f['member']} declared {_fmt(stale)} owned in its JoinGroup at {f['ts']:.0f} "
                                 f"(wire line {i + 1}; leader view updated in {seen} response(s)); its last "
                                 f"assignment was {', '.join(map(_fmt, last_assigned[f['member']])) or 'empty'}")
    raise NotApplicable("no rejoin of a cooperative member with a v1+ subscription")


def _replace_leader_view(run: RunEdit, request_i: int, member_id: str, old: str, new: str) -> int:
    """Put ``new`` subscription bytes where the leader's JoinGroup responses after frame ``request_i``
    show ``member_id`` with ``old`` (what the broker forwards of that join); how many were changed."""
    changed = 0
    for f in run.wire[request_i + 1:]:
        if f.get("api") == "JoinGroup" and f.get("direction") == "response":
            for m in f.get("members") or []:
                if m.get("member_id") == member_id and m.get("metadata") == old:
                    m["metadata"] = new
                    changed += 1
        if f.get("api") == "JoinGroup" and f.get("direction") == "request" and f.get("member_id") == member_id:
            break
    return changed


def retained_revoked(run: RunEdit) -> tuple[str | None, str]:
    """R3. A cooperative member revokes a partition it keeps and takes it straight back in the same
    generation (a client that revokes everything on every rebalance, eager style, inside a cooperative
    group): a ``revoked`` of a retained partition one millisecond before the rebalance's ``assigned``,
    which lists it again. The first cooperative rebalance in which a member gained partitions while
    keeping one."""
    if not run.cooperative():
        raise NotApplicable("an eager cell: revoking everything is the protocol")
    for iv in run.intervals():
        events = run.histories[iv.member]
        for i in range(iv.start_i + 1, len(events)):
            e = events[i]
            if e["ts"] >= iv.end_ts or (iv.end_i is not None and i >= iv.end_i):
                break
            if e["event"] == "started":
                break
            if (e["event"] == "assigned" and e["partitions"] and e.get("protocol") != "eager"
                    and run.quiet(e["ts"] - 1, e["ts"], [iv.member])):
                revoke = run.event_like(e, "revoked", e["ts"] - 1.0, partitions=[list(iv.tp)])
                e["partitions"] = e["partitions"] + [list(iv.tp)]
                events.insert(i, revoke)
                return iv.member, (f"{iv.member} revoked retained {_fmt(iv.tp)} at {revoke['ts']:.0f} and was "
                                   f"assigned it back 1 ms later (generation {e.get('generation')})")
    raise NotApplicable("no cooperative rebalance in which a member gained partitions and kept one")


def _view_ids(run: RunEdit) -> dict[int, frozenset]:
    """Generation -> the member ids of its leader's JoinGroup view."""
    out: dict[int, frozenset] = {}
    for i in run.frames("JoinGroup", "response"):
        f = run.wire[i]
        if f.get("members") and isinstance(f.get("generation"), int):
            out[f["generation"]] = frozenset(m["member_id"] for m in f["members"])
    return out


def kept_revoked_across_rebalance(run: RunEdit) -> tuple[str | None, str]:
    """R3. A cooperative member revokes a partition its assignment kept, and gets it back in the
    next generation, after the group's membership changed in between (where rule R3/replanned
    excuses a revoke that was due, and must not excuse one of a partition the assignment kept): a
    ``revoked`` 1 ms after the member's ``assigned`` of the generation that kept the partition, and
    the partition listed again in its ``assigned`` of the next generation. The first such pair of
    generations of a member owning a partition across both."""
    if not run.cooperative():
        raise NotApplicable("an eager cell: revoking everything is the protocol")
    ids = _view_ids(run)
    for iv in run.intervals():
        events = run.histories[iv.member]
        gens = [(i, e) for i, e in enumerate(events) if iv.start_i < i and e["ts"] < iv.end_ts
                and (iv.end_i is None or i < iv.end_i) and e["event"] == "assigned"
                and isinstance(e.get("generation"), int) and e.get("protocol") != "eager"]
        for (i1, a1), (i2, a2) in zip(gens, gens[1:]):
            g1, g2 = a1["generation"], a2["generation"]
            if g2 <= g1 or g1 not in ids or g2 not in ids or ids[g1] == ids[g2]:
                continue
            if not run.quiet(a1["ts"], a2["ts"], [iv.member]):
                continue
            a2["partitions"] = a2["partitions"] + [list(iv.tp)]
            nxt = events[i1 + 1]["ts"] if i1 + 1 < len(events) else a1["ts"] + 2.0
            events.insert(i1 + 1, run.event_like(a1, "revoked", a1["ts"] + min(1.0, (nxt - a1["ts"]) / 2),
                                                 partitions=[list(iv.tp)]))
            return iv.member, (f"{iv.member} revoked {_fmt(iv.tp)}, which generation {g1}'s assignment kept, "
                               f"at {a1['ts']:.0f} and got it back in generation {g2} at {a2['ts']:.0f} "
                               f"(membership changed in between)")
    raise NotApplicable("no member owning a partition across two generations of different membership")


def revoke_unreached(run: RunEdit) -> tuple[str | None, str]:
    """R4. A revoked partition never reaches its new owner: the member the leader gave it to (as the
    wire shows) never takes it (no ``assigned``, no consumption, no revoke of it: a client that drops
    a follow-up assignment). The first cooperative revoke whose new owner held the partition past the
    revoke bound, so that no other owner comes within the bound."""
    if not run.cooperative():
        raise NotApplicable("an eager cell")
    ivs = run.intervals()
    for iv in ivs:
        if iv.end_reason != "revoked" or iv.end_ts + run.revoke_ms > run.end_ts:
            continue
        takers = [o for o in ivs if o.tp == iv.tp and o.member != iv.member
                  and iv.end_ts <= o.start_ts <= iv.end_ts + run.revoke_ms]
        if len(takers) != 1:
            continue
        new = takers[0]
        others = [o for o in ivs if o.tp == iv.tp and o is not new and o.start_ts > iv.end_ts
                  and o.start_ts <= iv.end_ts + run.revoke_ms + run.heartbeat_ms]
        if others or new.end_ts < iv.end_ts + run.revoke_ms + run.heartbeat_ms \
                or not run.quiet(iv.end_ts, iv.end_ts + run.revoke_ms, [iv.member, new.member]):
            continue
        dropped = _erase_intervals(run, new.member, [new])
        return new.member, (f"{new.member} never took {_fmt(new.tp)}, revoked by {iv.member} at {iv.end_ts:.0f} "
                            f"(its assignment at {new.start_ts:.0f} and {dropped} event(s) of it dropped)")
    raise NotApplicable("no cooperative revoke with one new owner holding the partition past the revoke bound")


def dropped_consumption(run: RunEdit) -> tuple[str | None, str]:
    """D1. A member drops a fetched batch without processing it (and goes on past it: the records
    are never consumed by anyone): one ``consumed`` event removed. The middle (in time) of the
    batches nobody else read, so that no re-read covers the loss."""
    ranges: dict[TP, list[tuple[int, int]]] = {}
    batches = []
    for member in run.consumers:
        for i, e in enumerate(run.histories.get(member, [])):
            if e["event"] == "consumed":
                tp = (e["topic"], e["partition"])
                ranges.setdefault(tp, []).append((e["first_offset"], e["last_offset"]))
                batches.append((e["ts"], member, i, tp))
    alone = [b for b in sorted(batches) if sum(1 for a, z in ranges[b[3]]
                                               if a <= run.histories[b[1]][b[2]]["last_offset"]
                                               and z >= run.histories[b[1]][b[2]]["first_offset"]) == 1]
    if not alone:
        raise NotApplicable("no consumed batch read by one member only")
    ts, member, i, tp = alone[len(alone) // 2]
    e = run.histories[member].pop(i)
    return member, (f"{member} dropped its batch of {_fmt(tp)} offsets {e['first_offset']}-{e['last_offset']} "
                    f"consumed at {ts:.0f}")


def stalled_partition(run: RunEdit) -> tuple[str | None, str]:
    """P1. A member stops fetching one partition it owns for longer than the convergence bound, then
    resumes and catches up in one batch (a client that pauses a partition and forgets to resume it
    until something else wakes it): its consumed events of that partition in the stall are merged
    into the first one after it (same offsets in total, the resume's real timestamp). The first
    ownership interval long enough to hold such a stall outside any fault window."""
    stall = run.convergence_ms + 5 * run.heartbeat_ms
    for iv in run.intervals():
        if iv.end_ts - iv.start_ts <= stall:
            continue
        cons = run.consumed(iv.member, iv.tp, iv.start_ts, iv.end_ts)
        if not cons:
            continue
        events = run.histories[iv.member]
        t0 = events[cons[0]]["ts"]
        inside = [k for k in cons if t0 < events[k]["ts"] <= t0 + stall]
        after = [k for k in cons if events[k]["ts"] > t0 + stall]
        if not inside or not after or not run.quiet(t0, events[after[0]]["ts"], [iv.member]):
            continue
        resume = _merge_into_resume(run, iv.member, inside, after[0])
        return iv.member, (f"{iv.member} consumed nothing of {_fmt(iv.tp)} from {t0:.0f} to {resume['ts']:.0f} "
                           f"({(resume['ts'] - t0) / 1000:.1f} s; {len(inside)} batch(es) merged into the resume)")
    raise NotApplicable(f"no ownership interval longer than {stall / 1000:.0f} s with consumption after such a stall")


def _accepted_commits(run: RunEdit) -> list[tuple[float, int, int, TP, int]]:
    """(response ts, request index, response index, partition, offset) of every accepted commit, in
    order of the response (as D2 orders them)."""
    out = []
    for i in run.frames("OffsetCommit", "request"):
        j = run.response_of(i)
        if j is None:
            continue
        resp = run.wire[j]
        errors = {(str(t), int(p)): int(e) for t, p, e in (resp.get("partition_errors") or [])}
        for t, p, off in run.wire[i].get("offsets") or []:
            if errors.get((str(t), int(p)), resp.get("error_code")) == 0:
                out.append((resp["ts"], i, j, (str(t), int(p)), int(off)))
    return sorted(out)


def commit_backwards(run: RunEdit) -> tuple[str | None, str]:
    """D2. A member commits a position it had already moved past (a client re-sending a stale cached
    offset): an accepted commit's offset replaced by the one the same member committed two commits
    of that partition earlier, which is lower. Request and history's ``committed`` both changed."""
    by_tp: dict[TP, list] = {}
    for c in _accepted_commits(run):
        by_tp.setdefault(c[3], []).append(c)
    for c in sorted(c for cs in by_tp.values() for c in cs):
        seq = by_tp[c[3]]
        k = seq.index(c)
        if k < 2:
            continue
        (_, i2, _, _, o2), (_, i1, _, _, o1), (_, i0, _, tp, o0) = seq[k - 2], seq[k - 1], seq[k]
        member = run.wire[i0]["member"]
        if not (o2 < o1 <= o0 and run.wire[i2]["member"] == run.wire[i1]["member"] == member):
            continue
        req = run.wire[i0]
        req["offsets"] = [[t, p, o2 if (str(t), int(p)) == tp else off] for t, p, off in req["offsets"]]
        for e in run.histories.get(member, []):
            if e["event"] == "committed" and abs(e["ts"] - req["ts"]) < 5000:
                hit = [o for o in e["offsets"] if (o[0], o[1], o[2]) == (tp[0], tp[1], o0)]
                if hit:
                    hit[0][2] = o2
                    break
        return member, (f"{member} committed {_fmt(tp)} at offset {o2} at {req['ts']:.0f} (wire line {i0 + 1}), "
                        f"instead of {o0}, after committing {o1}")
    raise NotApplicable("no partition with three accepted commits of one member, rising")


def stale_generation_commit(run: RunEdit) -> tuple[str | None, str]:
    """D2. A member commits with the generation it had before the current one formed, and the broker
    accepts it (a client that caches its generation across a rebalance, a broker that does not fence
    it): the request's (and its response's) generation set one lower. The first accepted commit of a
    member in a generation whose predecessor it was also in."""
    joined: dict[str, set[int]] = {}
    for i in run.frames("JoinGroup", "response"):
        f = run.wire[i]
        if (f.get("error_code") or 0) == 0 and isinstance(f.get("generation"), int):
            joined.setdefault(f["member"], set()).add(f["generation"])
    formed: dict[int, float] = {}
    for i in run.frames("JoinGroup", "response"):
        f = run.wire[i]
        if (f.get("error_code") or 0) == 0 and isinstance(f.get("generation"), int):
            formed.setdefault(f["generation"], f["ts"])
    for ts, i, j, tp, off in _accepted_commits(run):
        req = run.wire[i]
        gen = req.get("generation")
        if not isinstance(gen, int) or gen < 1 or (gen - 1) not in joined.get(req["member"], set()):
            continue
        if formed.get(gen, float("inf")) >= req["ts"]:
            continue
        req["generation"] = run.wire[j]["generation"] = gen - 1
        return req["member"], (f"{req['member']} committed {_fmt(tp)} at {req['ts']:.0f} (wire line {i + 1}) with "
                               f"generation {gen - 1}; generation {gen} had formed at {formed[gen]:.0f}")
    raise NotApplicable("no accepted commit in a generation after one the member was in")


def reread_after_rebalance(run: RunEdit) -> tuple[str | None, str]:
    """D3. After a clean cooperative rebalance a member re-reads a partition it kept (a client that
    resets a retained partition's position, as eager clients do): its last batch of that partition
    before the rebalance is consumed again, 2 ms after the rebalance's ``assigned``. The first
    rebalance in which a member gained partitions while keeping one it had read only by itself."""
    if not run.cooperative():
        raise NotApplicable("an eager cell: eager members give everything up at a rebalance")
    read_by: dict[TP, list[tuple[int, int, str]]] = {}
    for member in run.consumers:
        for e in run.histories.get(member, []):
            if e["event"] == "consumed":
                read_by.setdefault((e["topic"], e["partition"]), []).append((e["first_offset"], e["last_offset"], member))
    for iv in run.intervals():
        events = run.histories[iv.member]
        for i in range(iv.start_i + 1, len(events)):
            e = events[i]
            if e["event"] == "started" or (iv.end_i is not None and i >= iv.end_i) or e["ts"] >= iv.end_ts:
                break
            if not (e["event"] == "assigned" and e["partitions"] and e.get("protocol") != "eager"):
                continue
            before = [k for k in run.consumed(iv.member, iv.tp, iv.start_ts, e["ts"]) if k < i]
            if not before:
                continue
            last = events[before[-1]]
            shared = [r for r in read_by[iv.tp] if r[0] <= last["last_offset"] and r[1] >= last["first_offset"]
                      and r[2] != iv.member]
            if shared or not run.quiet(last["ts"], e["ts"] + 2.0, [iv.member]):
                continue
            nxt = events[i + 1]["ts"] if i + 1 < len(events) else e["ts"] + 4.0
            again = dict(last, ts=e["ts"] + min(2.0, (nxt - e["ts"]) / 2))
            events.insert(i + 1, again)
            return iv.member, (f"{iv.member} re-read {_fmt(iv.tp)} offsets {last['first_offset']}-{last['last_offset']} "
                               f"at {again['ts']:.0f}, after the rebalance that kept it")
    raise NotApplicable("no cooperative rebalance in which a member kept a partition it had read alone")


def new_owner_ignores_commit(run: RunEdit) -> tuple[str | None, str]:
    """D3. A member that takes a partition over resumes two records below the offset the previous
    owner committed before the handover (a client that resumes from a position it fetched too early,
    or from its own stale one): its first batch of the partition starts two offsets lower, re-reading
    records the previous owner read and committed. The first handover (a revoke, then the new
    owner's first batch starting exactly at the last commit the broker accepted before it took the
    partition, by the tap's clock) with two records or more committed."""
    commits = _accepted_commits(run)
    ivs = run.intervals()
    for iv in ivs:
        prev = [o for o in ivs if o.tp == iv.tp and o.member != iv.member and o.end_reason == "revoked"
                and o.end_ts <= iv.start_ts]
        if not prev or not run.quiet(prev[-1].end_ts, iv.start_ts + run.heartbeat_ms, [iv.member, prev[-1].member]):
            continue
        before = [c for c in commits if c[3] == iv.tp and c[0] < iv.start_ts]
        cons = run.consumed(iv.member, iv.tp, iv.start_ts, iv.end_ts)
        if not before or not cons:
            continue
        committed = before[-1][4]
        first = run.histories[iv.member][cons[0]]
        if first["first_offset"] != committed or committed < 2:
            continue
        first["first_offset"] = committed - 2
        first["count"] += 2
        return iv.member, (f"{iv.member} took {_fmt(iv.tp)} over from {prev[-1].member} and resumed at offset "
                           f"{committed - 2} at {first['ts']:.0f}, below the offset {committed} committed "
                           f"before the handover")
    raise NotApplicable("no handover whose new owner resumed exactly at the last accepted commit")


def forgotten_claim(run: RunEdit) -> tuple[str | None, str]:
    """E5. A cooperative member rejoins declaring nothing owned while it keeps consuming its
    partitions (a client that rebuilds its subscription without its owned set): the owned partitions
    of one JoinGroup subscription emptied, re-encoded with the codec, in the request and in the
    leader's view. The first cooperative rejoin at which the member's history shows it owning a
    partition from two heartbeats before the JoinGroup to two after."""
    ivs = run.intervals()
    for i in run.frames("JoinGroup", "request"):
        f = run.wire[i]
        if not f.get("member_id") or not run.cooperative_member(f["member"]):
            continue
        hb = 2 * run.heartbeat_ms
        held = [iv for iv in ivs if iv.member == f["member"] and iv.start_ts <= f["ts"] - hb and iv.end_ts >= f["ts"] + hb]
        if not held:
            continue
        for proto, sub in _cooperative_subscriptions(f):
            if not sub.owned_partitions:
                continue
            old = proto["metadata"]
            proto["metadata"] = new = encode_subscription(Subscription(
                sub.version, sub.topics, sub.user_data, (), sub.generation_id, sub.rack_id, sub.trailing)).hex()
            seen = _replace_leader_view(run, i, f["member_id"], old, new)
            return f["member"], (f"{f['member']} declared nothing owned in its JoinGroup at {f['ts']:.0f} (wire line "
                                 f"{i + 1}; leader view updated in {seen}) while owning "
                                 f"{', '.join(sorted({_fmt(iv.tp) for iv in held}))}")
    raise NotApplicable("no cooperative rejoin of a member owning partitions across it")


def unowned_at_end(run: RunEdit) -> tuple[str | None, str]:
    """V1. A member never takes its partitions in the last rebalance (the SyncGroup response gave
    them; the client did not start consuming them): its last ``assigned`` after the last fault is
    dropped, with its consumption of those partitions, so they have no owner at the end."""
    faults = [f["ts"] for f in run.nemesis if f.get("fault") != "start" and f["ts"] <= run.end_ts]
    since = max(faults, default=float("-inf"))
    at_end = [iv for iv in run.intervals() if iv.start_ts > since and iv.start_ts <= run.end_ts <= iv.end_ts]
    if not at_end:
        raise NotApplicable("no partition assigned after the last fault and owned at the end")
    first = min(at_end, key=lambda iv: (iv.start_ts, iv.member))
    group = [iv for iv in at_end if iv.member == first.member and iv.start_i == first.start_i]
    _erase_intervals(run, first.member, group)
    return first.member, (f"{first.member} never took {', '.join(_fmt(iv.tp) for iv in group)} assigned at "
                          f"{first.start_ts:.0f} (after the last fault at {since:.0f})")


def _erase_intervals(run: RunEdit, member: str, ivs: list) -> int:
    """Remove from ``member``'s history every trace of the ownership intervals ``ivs``: their
    consumed events, and the partition from the events that began and ended them (an event left
    with no partition goes); returns how many events went."""
    events = run.histories[member]
    drop: set[int] = set()
    for iv in ivs:
        drop |= set(run.consumed(member, iv.tp, iv.start_ts, iv.end_ts))
        if iv.end_i is not None and iv.end_reason in ("revoked", "lost") and _drop_tp(events[iv.end_i], iv.tp):
            drop.add(iv.end_i)
        if _drop_tp(events[iv.start_i], iv.tp):
            drop.add(iv.start_i)
    run.histories[member] = [e for k, e in enumerate(events) if k not in drop]
    return len(drop)


def _cooperative_subscriptions(frame: dict) -> Iterator[tuple[dict, Any]]:
    """(protocol, decoded subscription) of each cooperative protocol of a JoinGroup request that
    decodes at v1 or later (one that can declare owned partitions)."""
    for proto in frame.get("protocols") or []:
        if proto.get("name") not in config.COOPERATIVE_ASSIGNORS:
            continue
        try:
            sub = decode_subscription(bytes.fromhex(proto["metadata"]))
        except (DecodeError, ValueError):
            continue
        if sub.version >= 1:
            yield proto, sub


def _leader_syncs(run: RunEdit, min_members: int = 2) -> list[int]:
    return [i for i in run.frames("SyncGroup", "request") if len(run.wire[i].get("assignments") or []) >= min_members]


def _sync_response(run: RunEdit, member_id: str, generation: int, after: int) -> int | None:
    for j in range(after, len(run.wire)):
        f = run.wire[j]
        if (f.get("api") == "SyncGroup" and f.get("direction") == "response" and f.get("member_id") == member_id
                and f.get("generation") == generation and (f.get("error_code") or 0) == 0):
            return j
    return None


def _set_assignment(run: RunEdit, i: int, entry: dict, new_hex: str) -> None:
    """Give ``entry`` (an assignment of the leader SyncGroup request at wire line ``i``) the bytes
    ``new_hex``, and the member's SyncGroup response of that generation too when it carried the old
    ones (the broker forwards the leader's bytes)."""
    old, entry["assignment"] = entry["assignment"], new_hex
    j = _sync_response(run, entry["member_id"], run.wire[i].get("generation"), i)
    if j is not None and run.wire[j].get("assignment") == old:
        run.wire[j]["assignment"] = new_hex


def _move(run: RunEdit, i: int, given: dict[str, Any], moves: list[tuple[str, list, list]]) -> None:
    """Re-encode, in the leader SyncGroup request at wire line ``i`` (and the responses that carried
    it), each member's decoded assignment ``given[mid]`` with the partitions ``add`` added and ``drop``
    removed, for each ``(mid, add, drop)`` of ``moves``."""
    changed = {}
    for mid, add, drop in moves:
        d = given[mid]
        tps = [x for x in _flat(d.assigned_partitions) if x not in drop] + add
        changed[mid] = encode_assignment(Assignment(d.version, _group(tps), d.user_data, d.trailing)).hex()
    for a in run.wire[i]["assignments"]:
        if a["member_id"] in changed:
            _set_assignment(run, i, a, changed[a["member_id"]])


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


def eager_rejoin_holding(run: RunEdit) -> tuple[str | None, str]:
    """R5. An eager member rejoins without revoking what it owns (a client that skips the eager
    revoke-before-join): its whole ``revoked`` event before a JoinGroup is dropped. The first eager
    revoke of a member followed by a JoinGroup of that member before it stops."""
    joins = [run.wire[i] for i in run.frames("JoinGroup", "request")]
    for member in run.consumers:
        events = run.histories.get(member, [])
        for k, e in enumerate(events):
            if e["event"] != "revoked" or e.get("protocol") != "eager" or not e["partitions"]:
                continue
            stop = next((x["ts"] for x in events[k + 1:] if x["event"] in ("stopped", "started")), float("inf"))
            join = next((j for j in joins if j["member"] == member and e["ts"] <= j["ts"] < stop), None)
            if join is None:
                continue
            del events[k]
            return member, (f"{member} rejoined at {join['ts']:.0f} without revoking "
                            f"{', '.join(_fmt((t, p)) for t, p in e['partitions'])} (its eager revoke at "
                            f"{e['ts']:.0f} dropped)")
    raise NotApplicable("no eager revoke before a rejoin")


def malformed_subscription(run: RunEdit) -> tuple[str | None, str]:
    """E1. A member's JoinGroup subscription is two bytes short of its declared version (a client
    writing its last field too short), in the request and in the leader's view of that join. The
    first JoinGroup request of a member that already has a member id."""
    for i in run.frames("JoinGroup", "request"):
        f = run.wire[i]
        if not f.get("member_id") or not f.get("protocols"):
            continue
        proto = f["protocols"][0]
        old = proto.get("metadata") or ""
        if len(old) < 8:
            continue
        proto["metadata"] = new = old[:-4]
        seen = _replace_leader_view(run, i, f["member_id"], old, new)
        return f["member"], (f"{f['member']}'s {proto.get('name')} subscription at {f['ts']:.0f} (wire line {i + 1}) "
                             f"lost its last 2 bytes (leader view updated in {seen} response(s))")
    raise NotApplicable("no JoinGroup request of a member with an id")


def non_canonical_subscription(run: RunEdit) -> tuple[str | None, str]:
    """E4. The reference member writes its owned partitions in descending order (a writer that
    keeps its set's iteration order instead of sorting as Java does): same content, other bytes,
    re-encoded with the codec in the request and in the leader's view of that join. The first
    JoinGroup of a reference member declaring two owned partitions or more."""
    refs = {m["name"] for m in run.manifest.get("members", []) if m.get("kind") == "reference"}
    for i in run.frames("JoinGroup", "request"):
        f = run.wire[i]
        if f["member"] not in refs or not f.get("member_id"):
            continue
        for proto in f.get("protocols") or []:
            try:
                sub = decode_subscription(bytes.fromhex(proto.get("metadata") or ""))
            except (DecodeError, ValueError):
                continue
            owned = _flat(sub.owned_partitions)
            if sub.version < 1 or len(owned) < 2:
                continue
            by: dict[str, list[int]] = {}
            for t, p in owned:
                by.setdefault(t, []).append(p)
            unsorted = tuple(TopicPartitions(t, tuple(sorted(ps, reverse=True))) for t, ps in sorted(by.items()))
            if unsorted == sub.owned_partitions:
                unsorted = tuple(reversed(unsorted))
            old = proto["metadata"]
            new = encode_subscription(Subscription(sub.version, sub.topics, sub.user_data, unsorted,
                                                   sub.generation_id, sub.rack_id, sub.trailing)).hex()
            if new == old:
                continue
            proto["metadata"] = new
            seen = _replace_leader_view(run, i, f["member_id"], old, new)
            return f["member"], (f"{f['member']} wrote its owned partitions {', '.join(map(_fmt, owned))} unsorted in "
                                 f"its JoinGroup at {f['ts']:.0f} (wire line {i + 1}; leader view updated in {seen})")
    raise NotApplicable("no JoinGroup of a reference member declaring two owned partitions")


def malformed_assignment(run: RunEdit) -> tuple[str | None, str]:
    """E2. The leader sends a member an assignment two bytes short of its declared version (an
    assignor writing its last field too short), in the SyncGroup request and in the member's
    response the broker forwards it in. The first leader SyncGroup with an assignment for a member
    other than itself."""
    for i in _leader_syncs(run, 1):
        req = run.wire[i]
        for a in req["assignments"]:
            if a["member_id"] == req.get("member_id") or len(a.get("assignment") or "") < 8:
                continue
            _set_assignment(run, i, a, a["assignment"][:-4])
            who = run.member_of_id(a["member_id"]) or a["member_id"]
            return req["member"], (f"leader {req['member']}'s assignment for {who} in generation "
                                   f"{req.get('generation')} (wire line {i + 1}) lost its last 2 bytes")
    raise NotApplicable("no leader SyncGroup assigning another member")


def leader_reassigns_owned(run: RunEdit) -> tuple[str | None, str]:
    """R1. A cooperative leader hands a partition that a member validly declared owned (the highest
    declared generation among its claimants) straight to another member (an eager-style assignor in
    a cooperative group): the partition moves from the claimant's assignment to the next member's in
    the SyncGroup request, re-encoded with the codec, and in both members' responses. The first
    cooperative generation whose leader kept a declared partition in place."""
    for i in _leader_syncs(run):
        req = run.wire[i]
        gen = req.get("generation")
        view = next((run.wire[k] for k in run.frames("JoinGroup", "response")
                     if run.wire[k].get("generation") == gen and run.wire[k].get("members")
                     and run.wire[k].get("member") == req["member"]), None)
        if view is None or view.get("protocol_name") not in config.COOPERATIVE_ASSIGNORS:
            continue
        claims: dict[TP, list[tuple[int, str]]] = {}
        for m in view["members"]:
            try:
                sub = decode_subscription(bytes.fromhex(m.get("metadata") or ""))
            except (DecodeError, ValueError):
                continue
            for tp in _flat(sub.owned_partitions):
                claims.setdefault(tp, []).append((sub.generation_id, m["member_id"]))
        try:
            given = {a["member_id"]: decode_assignment(bytes.fromhex(a["assignment"])) for a in req["assignments"]}
        except (DecodeError, ValueError):
            continue
        ids = [a["member_id"] for a in req["assignments"]]
        for tp, cs in sorted(claims.items()):
            best = max(g for g, _ in cs)
            valid = [mid for g, mid in cs if g == best]
            if len(valid) != 1 or valid[0] not in given or tp not in _flat(given[valid[0]].assigned_partitions):
                continue
            owner = valid[0]
            to = ids[(ids.index(owner) + 1) % len(ids)]
            _move(run, i, given, [(owner, [], [tp]), (to, [tp], [])])
            return req["member"], (f"leader {req['member']} gave {_fmt(tp)}, validly declared owned by "
                                   f"{run.member_of_id(owner) or owner}, to {run.member_of_id(to) or to} in "
                                   f"cooperative generation {gen} (wire line {i + 1})")
    raise NotApplicable("no cooperative generation whose leader kept a declared partition in place")


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
    for mid, rows in sorted(by_id.items(), key=lambda kv: kv[1][0]):
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


def _next_offsets(run: RunEdit, member: str, tp: TP, before_i: int, n: int) -> tuple[int, int]:
    """``n`` offsets right after the last one ``member`` consumed of ``tp`` before event ``before_i``."""
    events = run.histories[member]
    last = max((e["last_offset"] for e in events[:before_i]
                if e["event"] == "consumed" and (e["topic"], e["partition"]) == tp), default=-1)
    return last + 1, last + n


def consumed_after_revoke(run: RunEdit) -> tuple[str | None, str]:
    """C1. A member's callback revokes a partition as the rule says, but the client goes on handing
    that partition's records to the application: 10 records consumed 40 ms after the recorded
    ``revoked``, from a poll begun 30 ms after it, while the new owner takes the partition over.
    The first cooperative revoke whose partition reaches another member within the revoke bound."""
    ivs = run.intervals()
    for iv in ivs:
        if iv.end_reason != "revoked" or iv.end_i is None:
            continue
        if not any(o.tp == iv.tp and o.member != iv.member and iv.end_ts <= o.start_ts <= iv.end_ts + run.revoke_ms
                   for o in ivs):
            continue
        events = run.histories[iv.member]
        revoke = events[iv.end_i]
        first, last = _next_offsets(run, iv.member, iv.tp, iv.end_i, 10)
        events.insert(iv.end_i + 1, run.event_like(revoke, "consumed", revoke["ts"] + 40, topic=iv.tp[0],
                                                  partition=iv.tp[1], first_offset=first, last_offset=last, count=10,
                                                  poll_ts=revoke["ts"] + 30))
        return iv.member, (f"{iv.member} revoked {_fmt(iv.tp)} at {revoke['ts']:.0f} and handed offsets "
                           f"{first}..{last} of it to its application 40 ms later")
    raise NotApplicable("no revoke whose partition moved to another member")


def consumed_after_fence(run: RunEdit) -> tuple[str | None, str]:
    """C2. The broker fences a member (its Heartbeat answered UNKNOWN_MEMBER_ID, as after a session
    expiry) and the member ignores it: 10 records of a partition it holds handed to its application
    from a poll begun 20 ms after the answer. The middle successful Heartbeat answer to a member
    holding a partition it goes on holding for a second, outside every fault window."""
    ivs = run.intervals()
    candidates = []
    for i in run.frames("Heartbeat", "response"):
        f = run.wire[i]
        if f.get("error_code"):
            continue
        held = [iv for iv in ivs if iv.member == f.get("member") and iv.start_ts < f["ts"] and iv.end_ts > f["ts"] + 1000]
        if held and run.quiet(f["ts"] - 1000, f["ts"] + 1000, [f["member"]]):
            candidates.append((i, held[0]))
    if not candidates:
        raise NotApplicable("no successful Heartbeat answer to a member holding a partition outside fault windows")
    i, iv = candidates[len(candidates) // 2]
    answer = run.wire[i]
    answer["error_code"] = 25
    events = run.histories[iv.member]
    at = next((k for k, e in enumerate(events) if e["ts"] > answer["ts"] + 25), len(events))
    first, last = _next_offsets(run, iv.member, iv.tp, at, 10)
    events.insert(at, run.event_like(events[iv.start_i], "consumed", answer["ts"] + 25, topic=iv.tp[0],
                                     partition=iv.tp[1], first_offset=first, last_offset=last, count=10,
                                     poll_ts=answer["ts"] + 20))
    return iv.member, (f"{iv.member}'s Heartbeat answered UNKNOWN_MEMBER_ID at {answer['ts']:.0f}; it then handed "
                       f"offsets {first}..{last} of {_fmt(iv.tp)} to its application")


def rebalance_storm(run: RunEdit) -> tuple[str | None, str]:
    """V2. After the last fault the group keeps rebalancing while ownership stays put: the last
    generation formed by the scenario's end is formed again, as new generations, one more time than
    V2's bound allows (two per membership change after the last fault), its JoinGroup requests and
    answers copied (fresh correlation ids) and spread evenly up to the scenario's end. The member
    whose request opened that round opens every copy."""
    since = run.manifest.get("last_fault_ts") or run.manifest.get("start_ts") or 0.0
    joins = [i for i in run.frames("JoinGroup", "response")
             if not run.wire[i].get("error_code") and run.wire[i].get("generation") is not None
             and since < run.wire[i]["ts"] <= run.end_ts]
    if not joins:
        raise NotApplicable("no generation formed after the last fault")
    last_gen = max(run.wire[i]["generation"] for i in joins)
    answers = [i for i in joins if run.wire[i]["generation"] == last_gen]
    first_answer = min(run.wire[i]["ts"] for i in answers)
    prev = max((run.wire[i]["ts"] for i in run.frames("JoinGroup", "response")
                if run.wire[i]["ts"] < first_answer and run.wire[i].get("generation") not in (None, last_gen)),
               default=since)
    requests = [i for i in run.frames("JoinGroup", "request") if prev < run.wire[i]["ts"] <= first_answer]
    changes = (1 if run.manifest.get("last_fault_ts") else 0) + sum(
        1 for evs in run.histories.values() for e in evs if e["event"] == "started" and since < e["ts"] <= run.end_ts
        and e.get("member") in run.consumers)
    extra = 2 * changes + 1
    span = run.end_ts - max(run.wire[i]["ts"] for i in answers)
    if span < extra * 20:
        raise NotApplicable("no room between the last generation and the scenario's end")
    step = span / (extra + 1)
    top = max((f.get("correlation_id") or 0) for f in run.wire) + 1
    opener = run.wire[min(requests, key=lambda i: run.wire[i]["ts"])]["member"] if requests else None
    added = []
    for k in range(1, extra + 1):
        slot = run.end_ts - span + k * step   # each copy's requests 10 ms before it, its answers at it
        for n, i in enumerate(sorted(requests, key=lambda i: run.wire[i]["ts"]) + answers):
            f = dict(run.wire[i])
            f["ts"] = slot - 10 + 0.1 * n if f["direction"] == "request" else slot + 0.1 * n
            f["correlation_id"] = (f.get("correlation_id") or 0) + k * top   # a request and its answer stay a pair
            if f["direction"] == "response":
                f["generation"] = last_gen + k
            added.append(f)
    run.wire = sorted(run.wire + added, key=lambda f: f["ts"])
    return opener, (f"generation {last_gen} formed again as generations {last_gen + 1}..{last_gen + extra} "
                    f"after the last fault (bound {2 * changes})")


def resumed_below_commit_in_fault(run: RunEdit) -> tuple[str | None, str]:
    """D3 (rule D3/fault narrowed). A member takes over a partition whose owner a fault made look
    dead (a kill, a pause) and resumes two records below the offset committed before the fault: it
    ignored an accepted commit, which no fault excuses. The first handover inside a fault window of
    the previous owner whose new owner's first batch starts at or above the last commit the broker
    accepted before that fault, with two records or more committed (the batch is extended down)."""
    commits = _accepted_commits(run)
    ivs = run.intervals()
    faults = [f for f in run.nemesis if f.get("phase") == "invoke" and f.get("fault") in _WINDOW_FAULTS]
    for iv in ivs:
        # The previous owner: the last other member that held the partition before (a dead-looking one
        # may still hold it when the new owner takes it: R2/fault-window).
        prev = [o for o in ivs if o.tp == iv.tp and o.member != iv.member and o.start_ts < iv.start_ts]
        if not prev:
            continue
        fault = next((f for f in faults if f.get("target") == prev[-1].member
                      and f["ts"] <= iv.start_ts <= f["ts"] + 2 * run.session_ms + run.heartbeat_ms), None)
        if fault is None:
            continue
        before = [c for c in commits if c[3] == iv.tp and c[0] < fault["ts"]]
        cons = run.consumed(iv.member, iv.tp, iv.start_ts, iv.end_ts)
        if not before or not cons or before[-1][4] < 2:
            continue
        committed = before[-1][4]
        first = run.histories[iv.member][cons[0]]
        if first["first_offset"] < committed:
            continue
        first["count"] += first["first_offset"] - (committed - 2)
        first["first_offset"] = committed - 2
        return iv.member, (f"{iv.member} took {_fmt(iv.tp)} over from {prev[-1].member} during its {fault['fault']} "
                           f"and resumed at offset {committed - 2}, below the offset {committed} committed before "
                           f"the fault")
    raise NotApplicable("no handover inside a fault window whose new owner resumed at or above the last accepted commit")


def unowned_reread(run: RunEdit) -> tuple[str | None, str]:
    """D3 (rule D3/rebalance narrowed). A member that revoked a partition goes on reading it: it
    re-reads the first batch the new owner read of it, 20 ms later, without owning it. The first
    cooperative handover whose new owner read a batch within the revoke bound."""
    ivs = run.intervals()
    for iv in ivs:
        if iv.end_reason != "revoked" or iv.end_i is None:
            continue
        for new in ivs:
            if new.tp != iv.tp or new.member == iv.member or not iv.end_ts <= new.start_ts <= iv.end_ts + run.revoke_ms:
                continue
            cons = run.consumed(new.member, new.tp, new.start_ts, new.end_ts)
            if not cons:
                continue
            batch = run.histories[new.member][cons[0]]
            events = run.histories[iv.member]
            at = next((k for k, e in enumerate(events) if e["ts"] > batch["ts"] + 20), len(events))
            events.insert(at, run.event_like(events[iv.end_i], "consumed", batch["ts"] + 20, topic=iv.tp[0],
                                             partition=iv.tp[1], first_offset=batch["first_offset"],
                                             last_offset=batch["last_offset"], count=batch["count"],
                                             poll_ts=batch["ts"] + 10))
            return iv.member, (f"{iv.member} revoked {_fmt(iv.tp)} and re-read offsets {batch['first_offset']}.."
                               f"{batch['last_offset']} after {new.member} had read them")
    raise NotApplicable("no handover whose new owner read a batch")


def declared_after_lost(run: RunEdit) -> tuple[str | None, str]:
    """E5 (rule E5/clock-slack narrowed). A member's history records a partition lost 200 ms before
    a JoinGroup that still declares it, and assigned again 100 ms after it (the client reported the
    loss, then rejoined with its stale owned set; the group happened to give the partition back). The
    slack of one heartbeat either side excused it; the history gave the partition up before the
    JoinGroup, which no clock lag explains. The first rejoin of a cooperative member declaring a
    partition it has owned for over a second, outside fault windows."""
    ivs = run.intervals()
    for i in run.frames("JoinGroup", "request"):
        f = run.wire[i]
        member = f.get("member")
        if not f.get("member_id") or not run.cooperative_member(member):
            continue
        for _proto, sub in _cooperative_subscriptions(f):
            owned = _flat(sub.owned_partitions)
            held = [iv for iv in ivs if iv.member == member and iv.tp in owned
                    and iv.start_ts < f["ts"] - 1000 and iv.end_ts > f["ts"] + 1000]
            if not held or not run.quiet(f["ts"] - 1000, f["ts"] + 1000, [member]):
                continue
            iv = held[0]
            events = run.histories[member]
            lost = run.event_like(events[iv.start_i], "lost", f["ts"] - 200, partitions=[list(iv.tp)])
            again = run.event_like(events[iv.start_i], "assigned", f["ts"] + 100, partitions=[list(iv.tp)])
            for e in (lost, again):
                at = next((k for k, x in enumerate(events) if x["ts"] > e["ts"]), len(events))
                events.insert(at, e)
            return member, (f"{member}'s history lost {_fmt(iv.tp)} 200 ms before its JoinGroup at {f['ts']:.0f} "
                            f"(wire line {i + 1}), which still declares it, and got it back 100 ms after")
    raise NotApplicable("no cooperative rejoin declaring a partition held for over a second either side")


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


@dataclass(frozen=True)
class Mutation:
    """One anomaly class: its name, the invariant that must fail, and the edit (see the module docstring)."""

    name: str
    invariant: str
    apply: Callable[[RunEdit], tuple[str | None, str]]


#: Every mutation, in catalog order of the invariant it must fail.
MUTATIONS: tuple[Mutation, ...] = (
    Mutation("malformed-subscription", "E1", malformed_subscription),
    Mutation("malformed-assignment", "E2", malformed_assignment),
    Mutation("non-canonical-subscription", "E4", non_canonical_subscription),
    Mutation("stale-claim", "E5", stale_claim),
    Mutation("forgotten-claim", "E5", forgotten_claim),
    Mutation("declared-after-lost", "E5", declared_after_lost),
    Mutation("leader-sync-missing-member", "L1", leader_sync_missing_member),
    Mutation("leader-unsynced-under-latency", "L1", leader_unsynced_under_latency),
    Mutation("leader-unsynced-after-stop", "L1", leader_unsynced_after_stop),
    Mutation("partition-assigned-twice", "L2", partition_assigned_twice),
    Mutation("unbalanced-final", "L3", unbalanced_final),
    Mutation("needless-moves", "L4", needless_moves),
    Mutation("leader-reassigns-owned", "R1", leader_reassigns_owned),
    Mutation("skipped-revoke", "R2", skipped_revoke),
    Mutation("retained-revoked", "R3", retained_revoked),
    Mutation("kept-revoked-across-rebalance", "R3", kept_revoked_across_rebalance),
    Mutation("revoke-unreached", "R4", revoke_unreached),
    Mutation("eager-rejoin-holding", "R5", eager_rejoin_holding),
    Mutation("consumed-after-revoke", "C1", consumed_after_revoke),
    Mutation("consumed-after-fence", "C2", consumed_after_fence),
    Mutation("dropped-consumption", "D1", dropped_consumption),
    Mutation("commit-backwards", "D2", commit_backwards),
    Mutation("stale-generation-commit", "D2", stale_generation_commit),
    Mutation("reread-after-rebalance", "D3", reread_after_rebalance),
    Mutation("new-owner-ignores-commit", "D3", new_owner_ignores_commit),
    Mutation("resumed-below-commit-in-fault", "D3", resumed_below_commit_in_fault),
    Mutation("unowned-reread", "D3", unowned_reread),
    Mutation("stalled-partition", "P1", stalled_partition),
    Mutation("unowned-at-end", "V1", unowned_at_end),
    Mutation("rebalance-storm", "V2", rebalance_storm),
    # R2/fault-window and P1/fault-window narrowed to their evidence (issue 38).
    Mutation("taken-before-removal", "R2", taken_before_removal),
    Mutation("held-beside-faulted", "R2", held_beside_faulted),
    Mutation("stalled-across-short-pause", "P1", stalled_across_short_pause),
    Mutation("stalled-across-restarts", "P1", stalled_across_restarts),
)

#: The mutations of a KIP-848 group (a consumer-protocol member beside classic ones). Kept apart from
#: :data:`MUTATIONS`: the corpus of ``conformance mutation-score`` (fixtures/real-runs/) holds no
#: such run; tests/test_consumer_protocol_recorded.py applies them to the recorded KIP-848 runs of
#: fixtures/client-behaviour/.
CONSUMER_PROTOCOL_MUTATIONS: tuple[Mutation, ...] = (
    Mutation("cross-protocol-skipped-revoke", "R2", cross_protocol_skipped_revoke),
    Mutation("stale-heartbeat-epoch", "K1", stale_heartbeat_epoch),
    Mutation("bridged-assignor", "K2", bridged_assignor),
    Mutation("unacknowledged-assignment", "K3", unacknowledged_assignment),
    Mutation("stale-epoch-commit", "K4", stale_epoch_commit),
    Mutation("bridged-stale-commit", "K4", bridged_stale_commit),
    Mutation("handed-over-after-heard", "R2", handed_over_after_heard),
)

#: The mutations of a KIP-848 online migration (K5): the first two need a group that converted
#: online (the classic-first recorded run), the third a run whose upgrade the policy refused (the
#: recorded refused-migration run), the last one a run whose upgrade userData refused (the recorded
#: custom-assignor-upgrade run), and a classic join refused under a policy that admits it (the recorded
#: refused-downgrade run); tests/test_consumer_protocol_recorded.py applies each to its run.
MIGRATION_MUTATIONS: tuple[Mutation, ...] = (
    Mutation("upgrade-despite-policy", "K5", upgrade_despite_policy),
    Mutation("upgrade-despite-userdata", "K5", upgrade_despite_userdata),
    Mutation("refusal-despite-policy", "K5", refusal_despite_policy),
    Mutation("refusal-without-userdata", "K5", refusal_without_userdata),
    Mutation("classic-refusal-despite-policy", "K5", classic_refusal_despite_policy),
)


@dataclass
class Mutant:
    """A mutated copy of a run: where it is, what it must fail, whom it blames, what was edited."""

    mutation: str
    invariant: str
    original: Path
    path: Path
    culprit: str | None
    detail: str


def mutate(original: Path, mutation: Mutation, dest: Path) -> Mutant:
    """Copy ``original`` to ``dest`` and apply ``mutation`` to the copy. The copy's run id is the
    original's with ``~<mutation>`` appended (so one judge call tells them apart). Raises
    :class:`NotApplicable` (the copy removed) when the original has no place for the anomaly."""
    original, dest = Path(original), Path(dest)
    shutil.copytree(original, dest, ignore=shutil.ignore_patterns("logs", "broker"))
    try:
        run = RunEdit.load(dest)
        culprit, detail = mutation.apply(run)
        run.manifest["run_id"] = f"{run.manifest.get('run_id') or original.name}~{mutation.name}"
        run.save()
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return Mutant(mutation.name, mutation.invariant, original, dest, culprit, detail)
