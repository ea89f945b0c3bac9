"""The nemesis: every fault the suite injects, each recorded with its time.

Each fault has an *invoke* and, where it is temporary, a *heal*; both are
written to ``nemesis.jsonl`` (contract: ts, fault, target, phase, details)
before the runner continues, so the log orders faults exactly as they
happened. :meth:`Nemesis.heal_all` (teardown) ends every temporary fault
still in force: paused members are resumed, cut proxies re-enabled, toxics
removed. Healing also runs when a scenario fails half-way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from conformance.history import now_ms
from conformance.jsonl import JsonLinesAppender


#: Every ``fault`` name a nemesis log line may carry (the pipeline's ingestion reads this same list).
FAULTS: tuple[str, ...] = (
    "start", "terminate", "kill", "pause", "resume", "broker-restart", "broker-kill", "proxy-disable", "proxy-enable",
    "toxic-add", "toxic-remove", "add-partitions", "heal-failed",
)
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
    """Applies faults to members (by handle) and to the cluster, logging each one."""

    def __init__(self, log: NemesisLog, cluster: Any) -> None:
        self.log = log
        self.cluster = cluster
        self._heals: dict[tuple[str, str], Callable[[], None]] = {}
        self.last_fault_ts: float | None = None

    def _invoke(self, fault: str, target: str, **details: Any) -> None:
        self.last_fault_ts = self.log.record(fault, target, "invoke", **details)

    def _healed(self, fault: str, target: str, **details: Any) -> None:
        """Record the heal under its contract name (resume, proxy-enable) and forget the pending heal."""
        self._heals.pop({"resume": ("pause", target), "proxy-enable": ("cut", target)}[fault], None)
        self.last_fault_ts = self.log.record(fault, target, "heal", **details)

    # -- members ---------------------------------------------------------
    def start(self, name: str, start: Callable[[], None], **details: Any) -> None:
        self.log.record("start", name, "invoke", **details)
        start()

    def terminate(self, name: str, proc: Any) -> None:
        self._invoke("terminate", name)
        proc.terminate()

    def kill(self, name: str, proc: Any) -> None:
        self._invoke("kill", name)
        proc.kill()

    def pause(self, name: str, proc: Any) -> None:
        self._invoke("pause", name)
        proc.pause()
        self._heals[("pause", name)] = lambda: self.resume(name, proc)

    def resume(self, name: str, proc: Any) -> None:
        proc.resume()
        self._healed("resume", name)

    # -- network ---------------------------------------------------------
    def cut(self, name: str) -> None:
        self._invoke("proxy-disable", name)
        self.cluster.proxy(name).disable()
        self._heals[("cut", name)] = lambda: self.uncut(name)

    def uncut(self, name: str) -> None:
        self.cluster.proxy(name).enable()
        self._healed("proxy-enable", name)

    def add_toxic(self, name: str, toxic: Any) -> str:
        toxic_name = self.cluster.proxy(name).add_toxic(toxic)
        self._invoke("toxic-add", name, type=toxic.type, stream=toxic.stream, attributes=toxic.attributes,
                     toxic=toxic_name)
        self._heals[("toxic:" + toxic_name, name)] = lambda: self.remove_toxic(name, toxic_name)
        return toxic_name

    def remove_toxic(self, name: str, toxic_name: str) -> None:
        self.cluster.proxy(name).remove_toxic(toxic_name)
        self._heals.pop(("toxic:" + toxic_name, name), None)
        self.last_fault_ts = self.log.record("toxic-remove", name, "heal", toxic=toxic_name)

    # -- broker ----------------------------------------------------------
    def add_partitions(self, topic: str, total: int, grow: Callable[[str, int], None]) -> None:
        """Grow ``topic`` to ``total`` partitions with ``grow`` (a permanent change: no heal)."""
        grow(topic, total)
        self._invoke("add-partitions", "broker", topic=topic, total=total)

    def broker_restart(self, kill: bool) -> None:
        fault = "broker-kill" if kill else "broker-restart"
        self._invoke(fault, "broker")
        self.cluster.broker.restart(kill=kill)
        self.last_fault_ts = self.log.record(fault, "broker", "heal")

    def heal_all(self) -> None:
        """End every temporary fault still in force (teardown)."""
        for key, heal in list(self._heals.items()):
            try:
                heal()
            except Exception as exc:  # healing must go on for the others
                self.log.record("heal-failed", key[1], "heal", error=repr(exc))
