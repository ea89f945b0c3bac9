"""librdkafka harness (confluent-kafka-python): one group member speaking the harness contract.

Run as ``<venv>/bin/python clients/librdkafka/harness.py CONFIG_JSON`` with the
repository root on ``PYTHONPATH`` (see conformance.members.kinds.librdkafka).

Mapping of the contract onto librdkafka:

- ``assignment_strategies`` -> ``partition.assignment.strategy`` in order.
  librdkafka has no eager ``sticky`` and rejects a list mixing eager and
  cooperative assignors; both give a fatal ``error`` event that says so, and
  exit 2.
- Rebalance protocol: the Python binding does not expose
  ``rd_kafka_rebalance_protocol()``, and librdkafka only accepts lists whose
  assignors share one protocol, so the protocol follows from the list:
  cooperative when every assignor is ``cooperative-sticky``, else eager;
  ``consumer`` for ``group_protocol=consumer`` (KIP-848, always incremental).
- ``on_assign`` -> ``assigned`` then ``incremental_assign`` (cooperative) or
  ``assign`` (eager); ``on_revoke`` -> commit (per commit mode), ``revoked``,
  then ``incremental_unassign``/``unassign``; ``on_lost`` -> ``lost`` (no
  commit: the generation is gone), then the same unassign.
- ``member_id`` and ``generation`` come from
  ``Consumer.consumer_group_metadata()``: librdkafka's serialized group
  metadata (``rd_kafka_consumer_group_metadata_write``: the magic
  ``CGMDv2:``, the generation as a native int32, then NUL-terminated group id
  and member id), present in 1.x and 2.x alike. ``memberid()`` (2.x only) is
  the fallback for the member id; a blob this harness cannot parse leaves the
  generation unknown (never guessed).
- ``started`` carries ``librdkafka_version`` (``confluent_kafka.libversion()``);
  ``client_version`` stays the spec's version.
- Commit modes: ``auto`` -> ``enable.auto.commit`` (librdkafka's own timer;
  no ``committed`` events except at revoke/close, where the harness commits
  synchronously so the revoke is clean); ``sync-batch`` -> a synchronous commit
  of the batch's partitions after each consumed batch; ``on-revoke`` -> commit
  only at revoke and at close.
- SIGTERM: leave the poll loop, commit per mode, ``close()`` (which revokes
  through the callbacks and sends LeaveGroup unless static), ``stopped``,
  exit 0. An error callback with a fatal error (:func:`is_fatal`), or an exception, writes a fatal
  ``error`` event and exits 1.
"""

from __future__ import annotations

import struct
import sys
import time
from collections import OrderedDict
from typing import Any

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from conformance.history import HistoryWriter, now_ms
from conformance.members.control import ControlReader, serve
from conformance.members.harness_config import HarnessConfig
from conformance.members.harness_main import main

POLL_TIMEOUT_S = 0.5
BATCH_MAX = 500
CGMD_MAGIC = b"CGMDv2:"


def parse_group_metadata(blob: object) -> tuple[int, str] | None:
    """``(generation, member_id)`` from librdkafka's serialized consumer group metadata, else None.

    Layout (``rd_kafka_consumer_group_metadata_write``): ``CGMDv2:``, int32
    generation in native byte order, group id NUL-terminated, member id
    NUL-terminated, then the static-membership fields. Anything else is None.
    """
    if not isinstance(blob, bytes) or not blob.startswith(CGMD_MAGIC) or len(blob) < len(CGMD_MAGIC) + 4:
        return None
    (generation,) = struct.unpack_from("=i", blob, len(CGMD_MAGIC))
    rest = blob[len(CGMD_MAGIC) + 4:].split(b"\x00")
    if len(rest) < 3:
        return None
    try:
        return generation, rest[1].decode("utf-8")
    except UnicodeDecodeError:
        return None


def is_fatal(err: KafkaError) -> bool:
    """True when ``err`` leaves the client unusable. librdkafka raises a fatal error as an error
    whose code is ``_FATAL`` (the original error is in ``rd_kafka_fatal_error()``), and confluent-kafka's
    ``fatal()`` flag is not set on it (seen: 2.16.1, a ConsumerGroupHeartbeat refused with
    GROUP_ID_NOT_FOUND: "_FATAL: Fatal error: Broker: The group id does not exist", fatal() False)."""
    return bool(err.fatal()) or err.code() == KafkaError._FATAL


class Harness:
    def __init__(self, cfg: HarnessConfig) -> None:
        self.cfg = cfg
        self.history = HistoryWriter(cfg.history_path, cfg.member, cfg.client, cfg.client_version)
        self.stopping = False
        self.fatal: str | None = None
        self.owned: set[tuple[str, int]] = set()
        self.positions: dict[tuple[str, int], int] = {}  # next offset to read, per owned partition
        self.committed_at: dict[tuple[str, int], int] = {}  # last successfully committed offset
        self.consumer: Consumer | None = None
        if cfg.group_protocol == "consumer":
            self.protocol = "consumer"
        elif all(s == "cooperative-sticky" for s in cfg.assignment_strategies):
            self.protocol = "cooperative"
        else:
            self.protocol = "eager"
        self.history.context["protocol"] = self.protocol

    # -- configuration ---------------------------------------------------
    def client_config(self) -> dict[str, Any]:
        c = self.cfg
        conf: dict[str, Any] = {
            "bootstrap.servers": c.bootstrap_servers,
            "group.id": c.group_id,
            "client.id": c.client_id,
            "auto.offset.reset": c.auto_offset_reset,
            "enable.auto.commit": c.commit_mode == "auto",
            "error_cb": self.on_error,
        }
        if c.group_protocol == "consumer":
            conf["group.protocol"] = "consumer"  # KIP-848: the broker assigns; no client-side timeouts
        else:
            conf.update({
                "partition.assignment.strategy": ",".join(c.assignment_strategies),
                "session.timeout.ms": c.session_timeout_ms,
                "heartbeat.interval.ms": c.heartbeat_interval_ms,
            })
        conf["max.poll.interval.ms"] = c.max_poll_interval_ms
        if c.group_instance_id:
            conf["group.instance.id"] = c.group_instance_id
        if c.rack_id:
            conf["client.rack"] = c.rack_id
        return conf

    # -- callbacks (run inside consume()/close()) ---------------------------
    def _refresh_member_id(self) -> None:
        """Keep ``member_id`` and ``generation`` of the history context current."""
        if self.consumer is None:
            return
        mid: str | None = None
        generation: int | None = None
        try:
            parsed = parse_group_metadata(self.consumer.consumer_group_metadata())
        except (KafkaException, RuntimeError, AttributeError, TypeError):
            parsed = None
        if parsed is not None:
            generation, mid = parsed
        if not mid:
            try:
                mid = self.consumer.memberid()
            except (KafkaException, RuntimeError, AttributeError):
                mid = None
        if mid:
            self.history.context["member_id"] = mid
        self.history.context["generation"] = generation if generation is not None and generation >= 0 else None

    def on_error(self, err: KafkaError) -> None:
        fatal = is_fatal(err)
        self.history.record("error", error=f"{err.name()}: {err.str()}", fatal=fatal, code=err.code())
        if fatal:
            self.fatal = f"{err.name()}: {err.str()}"

    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._refresh_member_id()
        tps = sorted((p.topic, p.partition) for p in partitions)
        self.history.record("assigned", partitions=[list(tp) for tp in tps])
        self.owned.update(tps)
        if self.protocol == "eager":
            consumer.assign(partitions)
        else:
            consumer.incremental_assign(partitions)

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._refresh_member_id()
        tps = sorted((p.topic, p.partition) for p in partitions)
        self.commit([tp for tp in tps if tp in self.positions])
        self._release(consumer, partitions, tps, "revoked")

    def on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        tps = sorted((p.topic, p.partition) for p in partitions)
        self._release(consumer, partitions, tps, "lost")

    def _release(self, consumer: Consumer, partitions: list[TopicPartition], tps: list[tuple[str, int]],
                 event: str) -> None:
        self.history.record(event, partitions=[list(tp) for tp in tps])
        for tp in tps:
            self.owned.discard(tp)
            self.positions.pop(tp, None)
            self.committed_at.pop(tp, None)
        try:
            if self.protocol == "eager":
                consumer.unassign()
            else:
                consumer.incremental_unassign(partitions)
        except KafkaException as exc:
            self.history.record("error", error=f"{event}: unassign failed: {exc}", fatal=False)

    # -- commits -----------------------------------------------------------
    def commit(self, tps: list[tuple[str, int]]) -> None:
        """Synchronously commit the next offsets of ``tps``; one ``committed`` event."""
        assert self.consumer is not None
        offsets = [[t, p, self.positions[(t, p)]] for t, p in sorted(tps)
                   if (t, p) in self.positions and self.committed_at.get((t, p)) != self.positions[(t, p)]]
        if not offsets:
            return
        error: str | None = None
        try:
            result = self.consumer.commit(offsets=[TopicPartition(t, p, o) for t, p, o in offsets],
                                          asynchronous=False)
            bad = [f"{r.topic}-{r.partition}: {r.error}" for r in (result or []) if r.error is not None]
            error = "; ".join(bad) or None
        except KafkaException as exc:
            error = str(exc.args[0] if exc.args else exc)
        if error is None:
            self.committed_at.update({(t, p): o for t, p, o in offsets})
        self.history.record("committed", offsets=offsets, error=error)

    # -- main loop ---------------------------------------------------------
    def subscribe(self, topics: list[str]) -> None:
        """Subscribe (or change the subscription in place) with this harness's rebalance callbacks."""
        assert self.consumer is not None
        self.consumer.subscribe(topics, on_assign=self.on_assign, on_revoke=self.on_revoke, on_lost=self.on_lost)

    def process(self, messages: list[Any], poll_ts: float) -> None:
        batches: "OrderedDict[tuple[str, int], list[Any]]" = OrderedDict()
        for msg in messages:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                self.history.record("error", error=f"{err.name()}: {err.str()}", fatal=is_fatal(err),
                                    topic=msg.topic(), partition=msg.partition())
                if is_fatal(err):
                    self.fatal = f"{err.name()}: {err.str()}"
                continue
            batches.setdefault((msg.topic(), msg.partition()), []).append(msg)
        delay = self.cfg.processing_delay_ms / 1000.0
        for (topic, partition), batch in batches.items():
            if delay:
                time.sleep(delay * len(batch))
            first, last = batch[0].offset(), batch[-1].offset()
            self.history.record("consumed", topic=topic, partition=partition, first_offset=first,
                                last_offset=last, count=len(batch), poll_ts=poll_ts)
            self.positions[(topic, partition)] = last + 1
        if self.cfg.commit_mode == "sync-batch" and batches:
            self.commit(list(batches))

    def run(self) -> int:
        self.history.record("started", librdkafka_version=confluent_kafka.libversion()[0],
                            confluent_kafka_version=getattr(confluent_kafka, "__version__", None) or confluent_kafka.version()[0],
                            strategies=self.cfg.assignment_strategies)
        try:
            self.consumer = Consumer(self.client_config())
        except (KafkaException, ValueError, TypeError) as exc:
            msg = str(exc.args[0] if exc.args else exc)
            if len(set(s == "cooperative-sticky" for s in self.cfg.assignment_strategies)) > 1:
                msg += (f" (librdkafka rejects mixing eager and cooperative assignors in one "
                        f"partition.assignment.strategy: {self.cfg.assignment_strategies})")
            self.history.record("error", error=f"consumer configuration rejected: {msg}", fatal=True)
            return 2
        self.subscribe(self.cfg.topics)
        control = ControlReader(self.cfg.control_path)
        while not self.stopping and self.fatal is None:
            serve(control, self.history, lambda: self.stopping, self.subscribe)
            if self.stopping:
                break
            poll_ts = now_ms()
            messages = self.consumer.consume(num_messages=BATCH_MAX, timeout=POLL_TIMEOUT_S)
            self.process(messages, poll_ts)
        if self.fatal is not None:
            self.history.record("error", error=f"client unusable: {self.fatal}", fatal=True)
            return 1
        self.commit(sorted(self.owned))  # on_revoke during close() then has nothing left to commit
        self.consumer.close()  # revokes through on_revoke, leaves the group unless static
        self.history.record("stopped", reason="sigterm")
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv, Harness))
