"""kafka-python harness: one group member speaking the harness contract.

Run as ``<venv>/bin/python clients/kafka-python/harness.py CONFIG_JSON`` with
the repository root on ``PYTHONPATH`` (see conformance.members.kinds.kafka_python).

Mapping of the contract onto kafka-python:

- ``assignment_strategies`` -> ``partition_assignment_strategy`` classes in
  order: ``cooperative-sticky`` -> ``kafka.coordinator.assignors.cooperative_sticky.
  CooperativeStickyAssignor`` (3.x only), ``sticky`` -> ``StickyPartitionAssignor``,
  ``range``, ``roundrobin``. kafka-python 3.x refuses lists mixing eager and
  cooperative assignors; its error becomes a fatal ``error`` event (exit 2).
  ``group_protocol=consumer`` (KIP-848) is not implemented by kafka-python:
  fatal ``error``, exit 2.
- Protocol: 3.x exposes the validated mode of its assignors
  (``coordinator._rebalance_protocol``); 2.x is eager only.
- ``ConsumerRebalanceListener``: ``on_partitions_revoked`` -> commit (per
  commit mode) then ``revoked``; ``on_partitions_assigned`` -> ``assigned``
  (also when empty: it marks the end of a rebalance at that generation);
  ``on_partitions_lost`` (3.x) -> ``lost``. The listener runs inside
  ``poll()`` on the main thread.
- ``member_id``/``generation`` are read from the coordinator's current
  generation (``coordinator._generation``, a private attribute in both 2.x and
  3.x: kafka-python has no public accessor) whenever an event is recorded.
- Commit modes: ``auto`` -> ``enable_auto_commit``; ``sync-batch`` -> a
  synchronous ``commit()`` of the batch's partitions after each poll;
  ``on-revoke`` -> commits only in the revoke callback and at close.
- Commits carry ``OffsetAndMetadata`` in the shape the installed release
  defines (read from its ``_fields``): ``(offset, metadata, leader_epoch)``
  from 2.1.0, ``(offset, metadata)`` in 2.0.x.
- SIGTERM: leave the poll loop, commit what is uncommitted, ``close()``
  (3.x revokes through the listener; both leave the group unless static),
  ``stopped``, exit 0.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import kafka
from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.structs import OffsetAndMetadata

from conformance.history import HistoryWriter, now_ms
from conformance.members.control import ControlReader, serve
from conformance.members.harness_config import HarnessConfig
from conformance.members.harness_main import main

POLL_TIMEOUT_MS = 500
BATCH_MAX = 500


def offset_and_metadata(offset: int) -> OffsetAndMetadata:
    """``offset`` with empty metadata, and an unknown leader epoch (-1) where this release's
    OffsetAndMetadata has that field (2.1.0+; 2.0.x has offset and metadata only)."""
    if "leader_epoch" in OffsetAndMetadata._fields:
        return OffsetAndMetadata(offset, "", -1)
    return OffsetAndMetadata(offset, "")


def assignor_classes(names: list[str]) -> list[type]:
    """The kafka-python assignor classes for canonical strategy names; ValueError for one this version lacks."""
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    table: dict[str, Any] = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    try:
        from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
        table["sticky"] = StickyPartitionAssignor
    except ImportError:
        pass
    try:
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        table["cooperative-sticky"] = CooperativeStickyAssignor
    except ImportError:
        pass
    missing = [n for n in names if n not in table]
    if missing:
        raise ValueError(f"kafka-python {kafka.__version__} has no assignor for {missing}; it has {sorted(table)}")
    return [table[n] for n in names]


def _tp_list(partitions: Any) -> list[list[Any]]:
    return [[tp.topic, tp.partition] for tp in sorted(partitions, key=lambda tp: (tp.topic, tp.partition))]


class Listener(ConsumerRebalanceListener):
    def __init__(self, harness: "Harness") -> None:
        self.h = harness

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.h.refresh_context()
        tps = [(tp.topic, tp.partition) for tp in revoked]
        self.h.commit(tps)
        self.h.release("revoked", revoked)

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.h.refresh_context()
        self.h.history.record("assigned", partitions=_tp_list(assigned))
        self.h.owned.update((tp.topic, tp.partition) for tp in assigned)

    def on_partitions_lost(self, lost: Any) -> None:
        self.h.refresh_context()
        self.h.release("lost", lost)


class Harness:
    def __init__(self, cfg: HarnessConfig) -> None:
        self.cfg = cfg
        self.history = HistoryWriter(cfg.history_path, cfg.member, cfg.client, cfg.client_version)
        self.stopping = False
        self.owned: set[tuple[str, int]] = set()
        self.positions: dict[tuple[str, int], int] = {}
        self.committed_at: dict[tuple[str, int], int] = {}
        self.consumer: KafkaConsumer | None = None

    def client_config(self) -> dict[str, Any]:
        c = self.cfg
        conf: dict[str, Any] = {
            "bootstrap_servers": c.bootstrap_servers,
            "group_id": c.group_id,
            "client_id": c.client_id,
            "partition_assignment_strategy": assignor_classes(c.assignment_strategies),
            "session_timeout_ms": c.session_timeout_ms,
            "heartbeat_interval_ms": c.heartbeat_interval_ms,
            "max_poll_interval_ms": c.max_poll_interval_ms,
            "request_timeout_ms": max(30_000, c.session_timeout_ms + 5_000),
            "enable_auto_commit": c.commit_mode == "auto",
            "auto_offset_reset": c.auto_offset_reset,
        }
        if c.group_instance_id:
            conf["group_instance_id"] = c.group_instance_id
        if c.rack_id:
            conf["client_rack"] = c.rack_id
        return conf

    def refresh_context(self) -> None:
        """Copy member id, generation and protocol from the coordinator into every later event."""
        coord = getattr(self.consumer, "_coordinator", None)
        gen = getattr(coord, "_generation", None)
        if gen is not None and getattr(gen, "generation_id", -1) not in (None, -1):
            self.history.context["generation"] = gen.generation_id
            if gen.member_id:
                self.history.context["member_id"] = gen.member_id
        mode = getattr(coord, "_rebalance_protocol", None)
        name = getattr(mode, "name", None)
        self.history.context["protocol"] = "cooperative" if name == "COOPERATIVE" else "eager"

    def release(self, event: str, partitions: Any) -> None:
        self.history.record(event, partitions=_tp_list(partitions))
        for tp in partitions:
            key = (tp.topic, tp.partition)
            self.owned.discard(key)
            self.positions.pop(key, None)
            self.committed_at.pop(key, None)

    def commit(self, tps: list[tuple[str, int]]) -> None:
        """Synchronously commit the next offsets of ``tps`` not yet committed; one ``committed`` event."""
        assert self.consumer is not None
        offsets = [[t, p, self.positions[(t, p)]] for t, p in sorted(tps)
                   if (t, p) in self.positions and self.committed_at.get((t, p)) != self.positions[(t, p)]]
        if not offsets:
            return
        error: str | None = None
        try:
            self.consumer.commit({TopicPartition(t, p): offset_and_metadata(o) for t, p, o in offsets})
            self.committed_at.update({(t, p): o for t, p, o in offsets})
        except Exception as exc:  # kafka-python raises many error types; all are recorded
            error = f"{type(exc).__name__}: {exc}"
        self.history.record("committed", offsets=offsets, error=error)

    def process(self, records: dict[Any, list[Any]], poll_ts: float) -> None:
        delay = self.cfg.processing_delay_ms / 1000.0
        batches = [(tp, recs) for tp, recs in records.items() if recs]
        for tp, recs in batches:
            if delay:
                time.sleep(delay * len(recs))
            self.history.record("consumed", topic=tp.topic, partition=tp.partition, first_offset=recs[0].offset,
                                last_offset=recs[-1].offset, count=len(recs), poll_ts=poll_ts)
            self.positions[(tp.topic, tp.partition)] = recs[-1].offset + 1
        if self.cfg.commit_mode == "sync-batch" and batches:
            self.commit([(tp.topic, tp.partition) for tp, _ in batches])

    def run(self) -> int:
        self.history.record("started", kafka_python_version=kafka.__version__,
                            strategies=self.cfg.assignment_strategies)
        if self.cfg.group_protocol != "classic":
            self.history.record("error", error=f"kafka-python {kafka.__version__} does not implement "
                                f"group_protocol={self.cfg.group_protocol!r} (KIP-848); only 'classic'", fatal=True)
            return 2
        try:
            self.consumer = KafkaConsumer(**self.client_config())
            self.consumer.subscribe(self.cfg.topics, listener=Listener(self))
        except Exception as exc:  # configuration errors of any type end the member
            self.history.record("error", error=f"consumer configuration rejected: {type(exc).__name__}: {exc}",
                                fatal=True)
            return 2
        self.refresh_context()
        control = ControlReader(self.cfg.control_path)
        while not self.stopping:
            serve(control, self.history, lambda: self.stopping,
                  lambda topics: self.consumer.subscribe(topics, listener=Listener(self)))
            if self.stopping:
                break
            poll_ts = now_ms()
            try:
                records = self.consumer.poll(timeout_ms=POLL_TIMEOUT_MS, max_records=BATCH_MAX)
            except Exception as exc:  # recorded, then the loop decides
                self.history.record("error", error=f"poll: {type(exc).__name__}: {exc}", fatal=False)
                time.sleep(0.2)
                continue
            self.process(records, poll_ts)
        self.commit(sorted(self.owned))
        self.consumer.close()
        self.history.record("stopped", reason="sigterm")
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv, Harness))
