"""A recorded run loaded for editing (:class:`RunEdit`), the two ways a mutation does not apply
(:class:`NotApplicable`, :class:`BadRun`), and the history edits every family shares: a partition
dropped from an event, ownership intervals erased.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance import config, wirelog
from conformance.nemesis.faults import WINDOW_LINES

TP = tuple[str, int]

#: Nemesis faults during which a member may legitimately look dead (the checks' fault windows,
#: :data:`conformance.nemesis.faults.DEAD_LOOKING`, plus kills; every ``toxic-add``, whatever its latency):
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
    def max_poll_ms(self) -> float:
        return self.timing("max_poll_interval_ms", config.MAX_POLL_INTERVAL_MS)

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

            def close(tp: TP, i: int | None, ts: float, reason: str) -> None:  # called in this member's loop only
                s_i, s_ts, s_inc = open_.pop(tp)  # noqa: B023
                out.append(Interval(member, s_inc, tp, s_i, s_ts, i, ts, reason))  # noqa: B023

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

    def request_of(self, j: int) -> int | None:
        """The index of the request response frame ``j`` answers: the last request before it with
        the same :func:`conformance.wirelog.pair_key`."""
        key = wirelog.pair_key(self.wire[j])
        return next((i for i in range(j - 1, -1, -1)
                     if self.wire[i].get("direction") == "request" and wirelog.pair_key(self.wire[i]) == key), None)

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


def _fmt(tp: TP) -> str:
    return f"{tp[0]}-{tp[1]}"


def _drop_tp(event: dict, tp: TP) -> bool:
    """Remove ``tp`` from an assigned/revoked/lost event; True when the event is left empty."""
    event["partitions"] = [p for p in event["partitions"] if (p[0], p[1]) != tp]
    return not event["partitions"]


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
