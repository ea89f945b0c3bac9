"""The producer harness: ``python -m conformance.members.producer CONFIG_JSON``.

Writes records to every partition of the config's topics, round-robin, at
``extra.rate_per_s`` records per second in total (default
``config.PRODUCER_RATE_PER_S``), with ``acks=all``, using kafka-python from
the suite's virtual environment. Each record's value carries its sequence
number within its partition: ``<member>:<topic>:<partition>:<seq>``.

History (:mod:`conformance.history`): ``started``; ``produced`` events with
the offsets the broker acknowledged, one per contiguous run of acknowledged
offsets of one partition (so ``count == last_offset - first_offset + 1``),
written at least every 200 ms while producing; ``error`` for every failed send
(not fatal: D1 only counts acknowledged records); ``stopped``.

Settings in ``extra``: ``rate_per_s``; ``partitions`` (``{topic: count}`` or
one count for every topic; default: from the broker's metadata);
``max_records`` (stop after that many acknowledged sends, reason
``max-records``).

SIGTERM: stop sending, flush (every in-flight record acknowledged or failed),
record the remaining ``produced`` events, then ``stopped`` (reason
``sigterm``), exit 0. A producer that cannot reach the cluster records a fatal
``error`` and exits 3.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from conformance import config
from conformance.history import HistoryWriter

FLUSH_EVERY_S = 0.2


def command(config_path: Path) -> list[str]:
    """The producer's argv (run from the suite's own interpreter)."""
    return [sys.executable, "-m", "conformance.members.producer", str(config_path)]


def runs(offsets: list[int]) -> list[tuple[int, int]]:
    """Contiguous runs of sorted offsets: ``[0, 1, 2, 5, 6] -> [(0, 2), (5, 6)]``."""
    out: list[tuple[int, int]] = []
    for off in sorted(set(offsets)):
        if out and off == out[-1][1] + 1:
            out[-1] = (out[-1][0], off)
        else:
            out.append((off, off))
    return out


class Acks:
    """Acknowledged offsets per partition, drained into ``produced`` events."""

    def __init__(self, history: HistoryWriter) -> None:
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, int], list[int]] = defaultdict(list)
        self._history = history
        self.acked = 0
        self.failed = 0

    def ok(self, metadata: Any) -> None:
        with self._lock:
            self._pending[(metadata.topic, metadata.partition)].append(metadata.offset)
            self.acked += 1

    def failed_send(self, topic: str, partition: int, exc: BaseException) -> None:
        with self._lock:
            self.failed += 1
        self._history.record("error", error=f"send to {topic}-{partition} failed: {exc!r}", fatal=False)

    def drain(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, defaultdict(list)
        for (topic, partition), offsets in sorted(pending.items()):
            for first, last in runs(offsets):
                self._history.record("produced", topic=topic, partition=partition, first_offset=first,
                                     last_offset=last, count=last - first + 1)


def partitions_of(cfg: dict[str, Any], producer: Any) -> list[tuple[str, int]]:
    """Every (topic, partition) to write to, from ``extra.partitions`` or the metadata."""
    spec = cfg.get("extra", {}).get("partitions")
    out = []
    for topic in cfg["topics"]:
        if isinstance(spec, dict) and topic in spec:
            count = int(spec[topic])
            out += [(topic, p) for p in range(count)]
        elif isinstance(spec, int):
            out += [(topic, p) for p in range(spec)]
        else:
            deadline = time.monotonic() + 30
            parts = producer.partitions_for(topic)
            while not parts and time.monotonic() < deadline:
                time.sleep(0.2)
                parts = producer.partitions_for(topic)
            out += [(topic, p) for p in sorted(parts or ())]
    return out


def main(argv: list[str]) -> int:
    import json

    if len(argv) != 1:
        print("usage: python -m conformance.members.producer CONFIG_JSON", file=sys.stderr)
        return 2
    cfg = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    extra = cfg.get("extra") or {}
    history = HistoryWriter(cfg["history_path"], cfg["member"], cfg.get("client") or "producer",
                            cfg.get("client_version") or "")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    import kafka
    from kafka import KafkaProducer

    try:
        producer = KafkaProducer(bootstrap_servers=cfg["bootstrap_servers"], client_id=cfg.get("client_id") or cfg["member"],
                                 acks="all", linger_ms=5, retries=5, max_in_flight_requests_per_connection=1)
        targets = partitions_of(cfg, producer)
    except Exception as exc:  # every failure to start is recorded and fatal
        history.record("error", error=f"cannot start the producer: {exc!r}", fatal=True)
        history.close()
        return 3
    if not targets:
        history.record("error", error=f"no partitions found for topics {cfg['topics']}", fatal=True)
        history.close()
        return 3
    rate = float(extra.get("rate_per_s") or config.PRODUCER_RATE_PER_S)
    max_records = extra.get("max_records")
    acks = Acks(history)
    history.record("started", library_version=kafka.__version__, rate_per_s=rate,
                   partitions=[[t, p] for t, p in targets])

    seq: dict[tuple[str, int], int] = defaultdict(int)
    sent = 0
    began = time.monotonic()
    last_drain = began
    reason = "sigterm"
    while not stop.is_set():
        if max_records is not None and sent >= int(max_records):
            reason = "max-records"
            break
        topic, partition = targets[sent % len(targets)]
        value = f"{cfg['member']}:{topic}:{partition}:{seq[(topic, partition)]}".encode()
        seq[(topic, partition)] += 1
        try:
            future = producer.send(topic, value=value, partition=partition)
            future.add_callback(acks.ok)
            future.add_errback(lambda exc, t=topic, p=partition: acks.failed_send(t, p, exc))
        except Exception as exc:  # recorded; the run goes on
            acks.failed_send(topic, partition, exc)
        sent += 1
        now = time.monotonic()
        if now - last_drain >= FLUSH_EVERY_S:
            acks.drain()
            last_drain = now
        wait = began + sent / rate - time.monotonic()
        if wait > 0:
            stop.wait(wait)
    try:
        producer.flush(timeout=30)
    except Exception as exc:
        history.record("error", error=f"flush failed: {exc!r}", fatal=False)
    acks.drain()
    producer.close(timeout=10)
    history.record("stopped", reason=reason, sent=sent, acked=acks.acked, failed=acks.failed)
    history.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
