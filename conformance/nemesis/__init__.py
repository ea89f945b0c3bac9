"""The nemesis: every fault the suite injects, each recorded with its time.

Each fault has an *invoke* and, where it is temporary, a *heal*; both are
written to ``nemesis.jsonl`` (one JSON object a line: ts, fault, target, phase,
details) before the runner continues, so the log orders faults exactly as they
happened. :meth:`Nemesis.heal_all` (teardown) ends every temporary fault
still in force: paused members are resumed, cut proxies re-enabled, toxics
removed. Healing also runs when a scenario fails half-way.

What a fault is, the names its lines carry and which line heals which are the
one table of faults (:mod:`conformance.nemesis.faults`); the nemesis applies a fault's
primitives through a :class:`conformance.nemesis.faults.Backend` (processes or
containers) and logs each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from conformance.cluster.toxiproxy import Toxic
from conformance.history import now_ms
from conformance.jsonl import JsonLinesAppender
from conformance.nemesis.faults import LOG_LINES, Backend

#: Every ``fault`` name a nemesis log line may carry (the pipeline's ingestion reads this same list):
#: the lines of the table of faults.
FAULTS: tuple[str, ...] = tuple(LOG_LINES)
#: A heal line -> the line of the fault it ends (``resume`` ends ``pause``), from the table.
_ENDS: dict[str, str] = {line.healed_by: name for name, line in LOG_LINES.items()
                         if line.healed_by in LOG_LINES}
#: The two phases of a fault.
PHASES: tuple[str, ...] = ("invoke", "heal")


class NemesisLog:
    """Writer of ``nemesis.jsonl``: one flushed line per fault, in the order they happened.

    Guarantee: every line it writes names a fault of :data:`FAULTS` and a phase of
    :data:`PHASES` (anything else raises ``ValueError`` before a line is written).
    """

    def __init__(self, path: Path) -> None:
        self._out = JsonLinesAppender(path)

    def record(self, fault: str, target: str, phase: str = "invoke", **details: Any) -> float:
        if fault not in FAULTS or phase not in PHASES:
            raise ValueError(f"nemesis log: unknown fault {fault!r} or phase {phase!r}; faults: {', '.join(FAULTS)}")
        ts = now_ms()
        self._out.write({"ts": ts, "fault": fault, "target": target, "phase": phase, "details": details})
        return ts

    def close(self) -> None:
        self._out.close()


class Nemesis:
    """Applies faults to members (by the backend's handle) and to the cluster through ``backend``,
    logging each one."""

    def __init__(self, log: NemesisLog, backend: Backend) -> None:
        self.log = log
        self.backend = backend
        self._heals: dict[tuple[str, str], Callable[[], None]] = {}
        self.last_fault_ts: float | None = None

    def _invoke(self, fault: str, target: str, **details: Any) -> None:
        self.last_fault_ts = self.log.record(fault, target, "invoke", **details)

    def _healed(self, fault: str, target: str, **details: Any) -> None:
        """Record the heal under its line's name (resume, proxy-enable) and forget the pending heal."""
        self._heals.pop((_ENDS[fault], target), None)
        self.last_fault_ts = self.log.record(fault, target, "heal", **details)

    # -- members ---------------------------------------------------------
    def start(self, name: str, start: Callable[[], None], **details: Any) -> None:
        self.log.record("start", name, "invoke", **details)
        start()

    def terminate(self, name: str, proc: Any) -> None:
        self._invoke("terminate", name)
        self.backend.terminate_member(name, proc)

    def kill(self, name: str, proc: Any) -> None:
        self.backend.hold_member(name, proc)   # nothing of the member after the line (see Backend)
        self._invoke("kill", name)
        self.backend.kill_member(name, proc)

    def pause(self, name: str, proc: Any) -> None:
        self._invoke("pause", name)
        self.backend.pause_member(name, proc)
        self._heals[("pause", name)] = lambda: self.resume(name, proc)

    def resume(self, name: str, proc: Any) -> None:
        self.backend.resume_member(name, proc)
        self._healed("resume", name)

    # -- the member's application (its control file; the runner writes the command) ----------------
    def stall(self, name: str, for_ms: int) -> None:
        """Log a stall of ``name``'s application (the runner then gives the command)."""
        self._invoke("stall", name, ms=for_ms)
        self._heals[("stall", name)] = lambda: self.stall_end(name)

    def stall_end(self, name: str) -> None:
        """Log the end of ``name``'s stall (the member ends it itself, ``ms`` after it began)."""
        self._healed("stall-end", name)

    def subscribe(self, name: str, topics: list[str]) -> None:
        """Log a change of ``name``'s subscription in place (the runner then gives the command)."""
        self._invoke("subscribe", name, topics=topics)

    # -- network ---------------------------------------------------------
    def cut(self, name: str) -> None:
        self._invoke("proxy-disable", name)
        self.backend.disable_path(name)
        self._heals[("proxy-disable", name)] = lambda: self.uncut(name)

    def uncut(self, name: str) -> None:
        self.backend.enable_path(name)
        self._healed("proxy-enable", name)

    def disconnect(self, name: str, proc: Any) -> None:
        """Take ``name``'s container off the run's network (a container-level cut)."""
        self._invoke("net-disconnect", name)
        self.backend.disconnect_member(name, proc)
        self._heals[("net-disconnect", name)] = lambda: self.connect(name, proc)

    def connect(self, name: str, proc: Any) -> None:
        self.backend.connect_member(name, proc)
        self._healed("net-connect", name)

    def add_toxic(self, name: str, toxic: Toxic) -> str:
        toxic_name = self.backend.add_toxic(name, toxic)
        self._invoke("toxic-add", name, type=toxic.type, stream=toxic.stream, attributes=toxic.attributes,
                     toxic=toxic_name)
        self._heals[("toxic:" + toxic_name, name)] = lambda: self.remove_toxic(name, toxic_name)
        return toxic_name

    def remove_toxic(self, name: str, toxic_name: str) -> None:
        self.backend.remove_toxic(name, toxic_name)
        self._heals.pop(("toxic:" + toxic_name, name), None)
        self.last_fault_ts = self.log.record("toxic-remove", name, "heal", toxic=toxic_name)

    # -- broker ----------------------------------------------------------
    def add_partitions(self, topic: str, total: int) -> None:
        """Grow ``topic`` to ``total`` partitions (a permanent change: no heal)."""
        self.backend.add_partitions(topic, total)
        self._invoke("add-partitions", "broker", topic=topic, total=total)

    def broker_restart(self, kill: bool) -> None:
        fault = "broker-kill" if kill else "broker-restart"
        self._invoke(fault, "broker")
        self.backend.restart_broker(kill)
        self.last_fault_ts = self.log.record(fault, "broker", "heal")

    def heal_all(self) -> None:
        """End every temporary fault still in force (teardown)."""
        for key, heal in list(self._heals.items()):
            try:
                heal()
            except Exception as exc:  # healing must go on for the others
                self.log.record("heal-failed", key[1], "heal", error=repr(exc))
