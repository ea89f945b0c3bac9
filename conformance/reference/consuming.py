"""Fetching, processing and committing owned partitions: what both reference members share.

:class:`PartitionConsumer` is the data path of the classic member
(:mod:`conformance.reference.member`) and the KIP-848 member
(:mod:`conformance.reference.consumer_member`); each member owns its group
protocol and says, through two hooks, who commits (:meth:`commit_identity`)
and what a refused commit means (:meth:`commit_refused`).

A subclass sets these attributes: ``cfg`` (HarnessConfig), ``history``
(HistoryWriter), ``coord`` (coordinator Connection or None), ``data`` (the
Connection for list offsets and fetch), ``positions`` / ``committed``
(TP -> next offset), ``fetching`` (what the history says is owned),
``stalled`` (owned but not fetched), ``revoked_kept`` (revoked in the history
but still fetched: the ``consume-revoked`` fault; empty otherwise),
``stop_event``, ``next_position_retry``;
and defines ``_interrupted()`` (stop processing the current fetch).

Guarantees (the members' constraints rely on them):

- ``consumed`` is recorded only for a partition in ``fetching`` (or, under the
  ``consume-revoked`` fault, ``revoked_kept``) with a known position, one event
  per processed batch, after its records were processed, with ``poll_ts``: when
  the fetch that returned the batch was sent;
- ``committed`` is recorded for every OffsetCommit sent, with the offsets asked
  for and the error (null on success); only offsets that moved are sent;
- a partition with no committed offset starts at ``auto_offset_reset``; a
  failed position lookup is retried after the back-off, never dropped.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Callable

from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest, OffsetCommitRequest, OffsetFetchRequest
from kafka.record import MemoryRecords

from conformance import config
from conformance.history import now_ms
from conformance.members.control import ControlReader, serve
from conformance.reference.assignor import TP
from conformance.reference.codes import NONE, OFFSET_OUT_OF_RANGE, error_name
from conformance.reference.connection import Connection, ConnectionLost

if TYPE_CHECKING:
    from conformance.history import HistoryWriter
    from conformance.members.harness_config import HarnessConfig


class FatalClientError(Exception):
    """The member cannot go on; the message says what happened."""


class PartitionConsumer:
    """The data path shared by the reference members (see the module docstring)."""

    #: Partitions whose revoke the history records but which the member still fetches and hands to
    #: its application (the ``consume-revoked`` fault; a subclass replaces it with its own set).
    revoked_kept: set[TP] = frozenset()  # type: ignore[assignment]

    # The member's state this data path reads and writes; the member's __init__ sets each.
    cfg: HarnessConfig
    history: HistoryWriter
    stop_event: threading.Event
    coord: Connection | None      # the group coordinator, once found
    data: Connection              # metadata, list offsets, fetch
    fetching: set[TP]
    stalled: set[TP]
    positions: dict[TP, int]      # TP -> next offset
    committed: dict[TP, int]
    next_position_retry: float    # when fetch_once may look up missing positions again

    def log(self, message: str) -> None:
        print(f"[{self.cfg.member} {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    def error(self, message: str, fatal: bool = False) -> None:
        self.log(("FATAL " if fatal else "error ") + message)
        self.history.record("error", error=message, fatal=fatal)

    def _sleep(self, seconds: float) -> None:
        self.stop_event.wait(seconds)

    def run_until_stopped(self, start: Callable[[], None]) -> int:
        """The member's life: ``start()``, then :meth:`step` until SIGTERM sets ``stop_event``, then
        ``close("sigterm")``: exit code 0. A :class:`FatalClientError` or any other exception is
        recorded as a fatal ``error`` and ``stopped`` (reason ``fatal: ...``): exit code 1.
        ``stop_event`` is set on the way out, whatever happened."""
        try:
            start()
            control = ControlReader(self.cfg.control_path)
            while not self.stop_event.is_set():
                serve(control, self.history, self.stop_event.is_set, self.change_subscription, self.stall)
                if self.stop_event.is_set():
                    break
                self.step()
            self.close("sigterm")
            return 0
        except FatalClientError as exc:
            self.error(str(exc), fatal=True)
            self.history.record("stopped", reason=f"fatal: {exc}")
            return 1
        except Exception as exc:  # recorded, then the process exits non-zero
            self.error(f"unexpected {type(exc).__name__}: {exc}", fatal=True)
            self.history.record("stopped", reason=f"fatal: {type(exc).__name__}")
            return 1
        finally:
            self.stop_event.set()

    # ------------------------------------------------------------ hooks

    def commit_identity(self) -> tuple[int, str] | None:
        """``(generation or member epoch, member id)`` to commit with, or None (not in the group: no commit)."""
        raise NotImplementedError

    def commit_refused(self, codes: set[int], generation: int) -> None:
        """React to partition errors of a commit sent with ``generation``."""
        raise NotImplementedError

    def _interrupted(self) -> bool:
        raise NotImplementedError

    def step(self) -> None:
        """One turn of the member's loop (:meth:`run_until_stopped`)."""
        raise NotImplementedError

    def close(self, reason: str) -> None:
        """Leave the group and record ``stopped`` with ``reason``."""
        raise NotImplementedError

    def change_subscription(self, topics: list[str]) -> None:
        """Subscribe to ``topics`` in place (the control file's ``subscribe``)."""
        raise NotImplementedError

    def stall(self, seconds: float) -> None:
        """The application stops stepping for ``seconds`` (the control file's ``stall``; a stop ends it):
        the main thread waits; a member whose group duties run on another thread keeps them."""
        self.stop_event.wait(seconds)

    # ------------------------------------------------------------ positions, fetch, commit

    def init_positions(self, tps: list[TP]) -> None:
        """Committed offsets for ``tps``, else the auto_offset_reset position."""
        if not tps:
            return
        assert self.coord is not None
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        req = OffsetFetchRequest(group_id=self.cfg.group_id, require_stable=True, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in sorted(by_topic.items())])
        missing = list(tps)
        try:
            resp = self.coord.request(req)
            if resp.error_code != NONE:
                self.error(f"OffsetFetch: {error_name(resp.error_code)}")
            else:
                missing = []
                for topic in resp.topics:
                    for part in topic.partitions:
                        tp = (topic.name, part.partition_index)
                        if part.error_code == NONE and part.committed_offset >= 0:
                            self.positions[tp] = part.committed_offset
                            self.committed[tp] = part.committed_offset
                        else:
                            if part.error_code != NONE:
                                self.error(f"OffsetFetch {tp[0]}-{tp[1]}: {error_name(part.error_code)}")
                            missing.append(tp)
        except ConnectionLost as exc:
            self.error(f"OffsetFetch: {exc}")
        self.reset_positions(missing)

    def reset_positions(self, tps: list[TP]) -> None:
        if not tps:
            return
        ts = -2 if self.cfg.auto_offset_reset == "earliest" else -1
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        LT = ListOffsetsRequest.ListOffsetsTopic
        req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
            LT(name=t, partitions=[LT.ListOffsetsPartition(partition_index=p, timestamp=ts) for p in ps])
            for t, ps in sorted(by_topic.items())])
        try:
            resp = self.data.request(req)
        except ConnectionLost as exc:
            self.error(f"ListOffsets: {exc}")
            return
        for topic in resp.topics:
            for part in topic.partitions:
                if part.error_code == NONE:
                    self.positions[(topic.name, part.partition_index)] = part.offset
                else:
                    self.error(f"ListOffsets {topic.name}-{part.partition_index}: {error_name(part.error_code)}")

    def commit(self, tps: list[TP], why: str) -> bool:
        """Commit the positions of ``tps`` that moved since the last commit; record the outcome."""
        offsets = {tp: self.positions[tp] for tp in tps if tp in self.positions
                   and self.positions[tp] != self.committed.get(tp)}
        identity = self.commit_identity()
        if not offsets or identity is None or self.coord is None:
            return True
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for (t, p), o in sorted(offsets.items()):
            by_topic.setdefault(t, []).append((p, o))
        T = OffsetCommitRequest.OffsetCommitRequestTopic
        generation, member_id = identity
        req = OffsetCommitRequest(group_id=self.cfg.group_id, generation_id_or_member_epoch=generation,
                                  member_id=member_id, group_instance_id=self.cfg.group_instance_id, topics=[
            T(name=t, partitions=[T.OffsetCommitRequestPartition(partition_index=p, committed_offset=o,
                                                                  committed_metadata="") for p, o in ps])
            for t, ps in sorted(by_topic.items())])
        listed = [[t, p, o] for (t, p), o in sorted(offsets.items())]
        try:
            resp = self.coord.request(req)
        except ConnectionLost as exc:
            self.history.record("committed", offsets=listed, error=str(exc), reason=why)
            return False
        errors = []
        for topic in resp.topics:
            for part in topic.partitions:
                tp = (topic.name, part.partition_index)
                if part.error_code == NONE:
                    self.committed[tp] = offsets[tp]
                else:
                    errors.append((tp, part.error_code))
        err = "; ".join(f"{t}-{p}: {error_name(c)}" for (t, p), c in errors) or None
        self.history.record("committed", offsets=listed, error=err, reason=why)
        if errors:
            self.commit_refused({c for _, c in errors}, generation)
        return not errors

    def fetch_once(self) -> None:
        unplaced = sorted(tp for tp in self.fetching if tp not in self.positions)
        if unplaced and self.coord is not None and time.monotonic() >= self.next_position_retry:
            # A position lookup failed (e.g. NOT_LEADER_OR_FOLLOWER just after a topic is created):
            # ask again after a back-off rather than own the partition without ever fetching it.
            self.next_position_retry = time.monotonic() + config.REFERENCE_RETRY_BACKOFF_MS / 1000.0
            self.init_positions(unplaced)
        tps = sorted(tp for tp in self.fetching | self.revoked_kept if tp in self.positions and tp not in self.stalled)
        if not tps:
            self._sleep(0.05)
            return
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        FT = FetchRequest.FetchTopic
        req = FetchRequest(replica_id=-1, max_wait_ms=config.REFERENCE_FETCH_MAX_WAIT_MS, min_bytes=1,
                           max_bytes=4 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                           topics=[FT(topic=t, partitions=[FT.FetchPartition(
                               partition=p, current_leader_epoch=-1, fetch_offset=self.positions[(t, p)],
                               log_start_offset=-1, partition_max_bytes=256 << 10) for p in ps])
                               for t, ps in sorted(by_topic.items())],
                           forgotten_topics_data=[], rack_id=self.cfg.rack_id or "")
        poll_ts = now_ms()
        try:
            resp = self.data.request(req)
        except ConnectionLost as exc:
            self.error(f"Fetch: {exc}")
            self._sleep(config.REFERENCE_RETRY_BACKOFF_MS / 1000.0)
            return
        for topic in resp.responses:
            for part in topic.partitions:
                tp = (topic.topic, part.partition_index)
                if part.error_code == OFFSET_OUT_OF_RANGE:
                    self.error(f"Fetch {tp[0]}-{tp[1]}: {error_name(part.error_code)} at {self.positions.get(tp)}; resetting")
                    self.reset_positions([tp])
                elif part.error_code != NONE:
                    self.error(f"Fetch {tp[0]}-{tp[1]}: {error_name(part.error_code)}")
                elif part.records:
                    self.process(tp, bytes(part.records), poll_ts)
                if self._interrupted():
                    return

    def process(self, tp: TP, raw: bytes, poll_ts: float) -> None:
        """Process the records of one partition from its position; one ``consumed`` event per batch
        (``poll_ts``: when the fetch that returned them was sent)."""
        if (tp not in self.fetching and tp not in self.revoked_kept) or tp not in self.positions:
            return
        position = self.positions[tp]
        first = last = None
        count = 0
        delay = self.cfg.processing_delay_ms / 1000.0
        records = MemoryRecords(raw)
        while not self._interrupted():
            batch = records.next_batch()
            if batch is None:
                break
            if getattr(batch, "is_control_batch", False):
                position = max(position, batch.next_offset if hasattr(batch, "next_offset") else position)
                continue
            for record in batch:
                if record.offset < position:
                    continue
                if delay:
                    time.sleep(delay)
                first = record.offset if first is None else first
                last = record.offset
                count += 1
                position = record.offset + 1
                if self._interrupted():
                    break
        if count:
            self.positions[tp] = position
            self.history.record("consumed", topic=tp[0], partition=tp[1], first_offset=first,
                                last_offset=last, count=count, poll_ts=poll_ts)
            if self.cfg.commit_mode == "sync-batch" and tp in self.fetching:
                self.commit([tp], "batch")
