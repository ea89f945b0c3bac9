"""The reference KIP-848 member: one consumer-protocol group member (ConsumerGroupHeartbeat).

Chosen by ``group_protocol: "consumer"`` in the harness config (member spec
``reference+consumer[/FAULT]``). The broker computes the assignment; the member
subscribes, heartbeats, reconciles what the broker tells it to own, and
consumes through the data path it shares with the classic member
(:class:`~conformance.reference.consuming.PartitionConsumer`).

One thread does everything: heartbeats are sent from the main loop, whose
processing stops as soon as a heartbeat is due (``_interrupted``), so a slow
batch never delays one by more than a record.

The protocol as this member speaks it
-------------------------------------

- **Join**: member epoch 0, a member id it generates once per process (a random
  UUID in Kafka's base64 form, as Java 4.x does; on a v0-only broker it sends an
  empty id and keeps the one the broker returns), the subscribed topic names,
  the server assignor from ``extra.server_assignor`` (null = the broker's
  default, ``uniform``; ``range`` allowed), rebalance timeout =
  ``max_poll_interval_ms``, instance id = ``group_instance_id``, rack id, and an
  empty owned list.
- **Heartbeats**: one every ``heartbeat_interval_ms`` the broker returned,
  counted from its last response. A *full* request (every field) on a join and
  after a heartbeat failed; otherwise a *light* one: group, member id, epoch,
  instance id, and the owned partitions only when they changed since they were
  last sent. An acknowledgement (owned partitions changed by a reconciliation)
  is sent at once, as Java's heartbeat manager does.
- **Reconciliation**: a response's assignment is everything the member may own
  now (usable at once). Partitions no longer in it are revoked first (commit,
  then ``revoked``); partitions new in it get positions, then ``assigned``; the
  next heartbeat acknowledges by carrying the owned set. Partitions of a topic
  id not yet in metadata wait until metadata names them.
- **Errors**: FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: everything owned is
  ``lost`` (no commit), the member rejoins at epoch 0 with the same member id.
  UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR,
  INVALID_REQUEST, GROUP_MAX_SIZE_REACHED, UNSUPPORTED_VERSION,
  GROUP_AUTHORIZATION_FAILED and unknown codes are fatal (Java 4.x's
  heartbeat manager treats them so). Coordinator moved or loading: find the
  coordinator, back off, send a full heartbeat.
- **Commits**: OffsetCommit v9 (the broker requires v9+ of consumer-protocol
  members) with the member id and the current member epoch as generation.
  STALE_MEMBER_EPOCH on a commit is recorded, nothing more (the next heartbeat
  brings the new epoch). Committed offsets are read with OffsetFetch v7, without
  member id and epoch, which the broker accepts from anyone (Java sends v9 with
  both; the difference is only whether a stale member may read).
- **Timing**: the session timeout and heartbeat interval are the broker's
  (``group.consumer.*``, the interval from each answer); the config's
  ``heartbeat_interval_ms`` is not used once the broker has answered, and its
  ``session_timeout_ms`` only bounds a heartbeat's wait for its answer.
- **Leave** (SIGTERM): commit, ``revoked`` for everything owned, a heartbeat
  with epoch -1 (-2 for a static member), ``stopped``.

History: protocol ``consumer``; ``generation`` is the member epoch (absent while
joining); ``assigned`` / ``revoked`` / ``lost`` also carry ``member_epoch``.

Constraints any change must keep
--------------------------------

1. The owned partitions a heartbeat carries equal what the history says the
   member owns when it is sent (unless ack-unrevoked / ignore-fenced says
   otherwise: then the history shows MORE owned, never less).
2. ``revoked`` is recorded after the commit of those partitions and before the
   heartbeat that acknowledges them; ``assigned`` after the positions of the new
   partitions are known, and only for partitions in a response's assignment.
3. A fence loses everything owned (``lost``, no commit) before the epoch-0 join.
4. The epoch sent is the last epoch the broker returned (0 when joining), except
   the one stale commit and heartbeat of the stale-epoch fault (epoch - 1).
5. ``consumed`` only for partitions the history says are owned.
"""

from __future__ import annotations

import base64
import dataclasses
import threading
import time
import uuid

from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest

from conformance import config
from conformance.errors import UsageError
from conformance.history import HistoryWriter
from conformance.members import kinds
from conformance.members.harness_config import HarnessConfig
from conformance.protocol import consumer_group_heartbeat as cgh
from conformance.reference.assignor import TP
from conformance.reference.codes import (
    COORDINATOR_MOVED,
    FENCED_MEMBER_EPOCH,
    NONE,
    STALE_MEMBER_EPOCH,
    UNKNOWN_MEMBER_ID,
    error_name,
)
from conformance.reference.connection import Connection, ConnectionLost, split_address
from conformance.reference.consuming import FatalClientError, PartitionConsumer
from conformance.reference.faults import ConsumerFaults

CLIENT_VERSION = kinds.default_version("reference")

#: Server assignors a member may ask for (null: the broker's default, ``uniform``).
SERVER_ASSIGNORS: tuple[str, ...] = ("uniform", "range")

#: Heartbeat errors after which the member rejoins at epoch 0, having lost what it owned.
FENCED = {FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID}

#: Versions a consumer-protocol member must use: OffsetCommit v9 (v10 names topics by id),
#: Metadata v12 (topic ids; v13 only adds a top-level error code).
CAPS: dict[int, int] = {3: 12, 8: 9}


def new_member_id() -> str:
    """A random UUID written as Kafka writes one: URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")


class ConsumerProtocolMember(PartitionConsumer):
    """One reference KIP-848 member process (see the module docstring)."""

    def __init__(self, cfg: HarnessConfig, history: HistoryWriter) -> None:
        if cfg.group_protocol != "consumer":
            raise UsageError(f"member {cfg.member}: the KIP-848 member needs group_protocol 'consumer', "
                             f"got {cfg.group_protocol!r}")
        self.cfg = cfg
        self.history = history
        extra = cfg.extra or {}
        self.faults = ConsumerFaults.parse(extra.get("faults"))
        self.server_assignor: str | None = extra.get("server_assignor")
        if self.server_assignor is not None and self.server_assignor not in SERVER_ASSIGNORS:
            raise UsageError(f"member {cfg.member}: extra.server_assignor {self.server_assignor!r} is not one of "
                             f"{', '.join(SERVER_ASSIGNORS)} (or null for the broker's default)")
        self.topics = sorted(set(cfg.topics))
        self.static = cfg.group_instance_id is not None

        host, port = split_address(cfg.bootstrap_servers.split(",")[0])
        self.timeout_s = config.REFERENCE_REQUEST_TIMEOUT_MS / 1000.0
        self.bootstrap = Connection(host, port, cfg.client_id, self.timeout_s)
        self.coord: Connection | None = None
        self.data = Connection(host, port, cfg.client_id, self.timeout_s, caps=CAPS)

        self.member_id = new_member_id()
        self.epoch = cgh.JOIN_EPOCH          # the last epoch the broker returned; 0 while joining
        self.owned: set[TP] = set()          # what the heartbeats declare owned
        self.fetching: set[TP] = set()       # what the history says is owned (== owned unless a fault)
        self.stalled: set[TP] = set()        # never used by this member (the data path reads it)
        self.positions: dict[TP, int] = {}
        self.committed: dict[TP, int] = {}
        self.target: frozenset[tuple[bytes, int]] | None = None  # the last assignment, by topic id
        self.topic_names: dict[bytes, str] = {}
        self.sent_owned: frozenset[TP] | None = None  # owned as last sent; None: send a full request
        self.interval_s = cfg.heartbeat_interval_ms / 1000.0
        self.hb_due = 0.0                    # monotonic time of the next heartbeat (0: at once)
        self.next_metadata = 0.0
        self.next_auto_commit = time.monotonic() + config.REFERENCE_AUTO_COMMIT_INTERVAL_MS / 1000.0
        self.next_position_retry = 0.0
        self.stale_commit_due = self.stale_heartbeat_due = False  # stale-epoch: armed once per incarnation
        self.stale_armed = self.faults.stale_epoch
        self.stop_event = threading.Event()
        self._update_context()

    # ------------------------------------------------------------------ helpers

    def _update_context(self) -> None:
        self.history.context.update({"member_id": self.member_id,
                                     "generation": self.epoch if self.epoch > 0 else None,
                                     "protocol": "consumer"})

    def _interrupted(self) -> bool:
        return self.stop_event.is_set() or time.monotonic() >= self.hb_due

    def commit_identity(self) -> tuple[int, str] | None:
        if self.epoch <= 0:
            return None
        if self.stale_commit_due:
            self.stale_commit_due = False
            self.log(f"stale-epoch: commits with epoch {self.epoch - 1} (current {self.epoch})")
            return (self.epoch - 1, self.member_id)
        return (self.epoch, self.member_id)

    def commit_refused(self, codes: set[int], generation: int) -> None:
        if STALE_MEMBER_EPOCH in codes or codes & FENCED:
            self.log(f"commit with epoch {generation} refused ({sorted(codes)}); the heartbeat decides")

    def _record_tps(self, event: str, tps: set[TP], **fields) -> None:
        self.history.record(event, partitions=[list(tp) for tp in sorted(tps)], member_epoch=self.epoch, **fields)

    # ------------------------------------------------------------------ coordinator and metadata

    def find_coordinator(self) -> None:
        """FindCoordinator until it answers; (re)builds the coordinator connection."""
        while not self.stop_event.is_set():
            try:
                resp = self.bootstrap.request(FindCoordinatorRequest(key=self.cfg.group_id, key_type=0))
            except ConnectionLost as exc:
                self.error(f"FindCoordinator: {exc}")
                self._sleep(config.REFERENCE_RETRY_BACKOFF_MS / 1000.0)
                continue
            if resp.error_code != NONE:
                self.log(f"FindCoordinator: {error_name(resp.error_code)}; retrying")
                self._sleep(config.REFERENCE_RETRY_BACKOFF_MS / 1000.0)
                continue
            if self.coord is None or self.coord.address != f"{resp.host}:{resp.port}":
                if self.coord is not None:
                    self.coord.close()
                self.coord = Connection(resp.host, resp.port, self.cfg.client_id, self.timeout_s, caps=CAPS)
            return

    def refresh_topic_ids(self) -> None:
        """Metadata (v10+) of the subscribed topics: topic id -> name."""
        self.next_metadata = time.monotonic() + config.REFERENCE_METADATA_REFRESH_MS / 1000.0
        req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in self.topics],
                              allow_auto_topic_creation=False)
        try:
            resp = self.data.request(req)
        except ConnectionLost as exc:
            self.error(f"Metadata: {exc}")
            return
        for t in resp.topics:
            topic_id = getattr(t, "topic_id", None)
            if t.error_code == NONE and isinstance(topic_id, uuid.UUID):
                self.topic_names[topic_id.bytes] = t.name

    def _topic_id(self, topic: str) -> bytes:
        for topic_id, name in self.topic_names.items():
            if name == topic:
                return topic_id
        raise FatalClientError(f"owns a partition of {topic!r}, whose topic id it never learned")

    # ------------------------------------------------------------------ heartbeat

    def _request(self, epoch: int, full: bool) -> cgh.HeartbeatRequest:
        owned = frozenset(self.owned)
        send_owned = full or epoch == cgh.JOIN_EPOCH or owned != self.sent_owned
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(owned):
            by_topic.setdefault(t, []).append(p)
        tps = tuple(cgh.TopicIdPartitions(self._topic_id(t), tuple(ps)) for t, ps in sorted(by_topic.items()))
        if epoch == cgh.JOIN_EPOCH:
            tps = ()  # the broker requires an empty list on a join
        return cgh.HeartbeatRequest(
            group_id=self.cfg.group_id, member_id=self.member_id, member_epoch=epoch,
            instance_id=self.cfg.group_instance_id,
            rack_id=self.cfg.rack_id if full else None,
            rebalance_timeout_ms=self.cfg.max_poll_interval_ms if full else -1,
            subscribed_topic_names=tuple(self.topics) if full else None,
            server_assignor=self.server_assignor if full else None,
            topic_partitions=tps if send_owned else None)

    def _send(self, req: cgh.HeartbeatRequest) -> cgh.HeartbeatResponse | None:
        """One heartbeat; None when the connection failed (recorded, coordinator looked up again)."""
        assert self.coord is not None

        def encode(version: int) -> bytes:
            if version == 0 and req.member_epoch == cgh.JOIN_EPOCH:  # v0: the broker names the member
                return cgh.encode_request(dataclasses.replace(req, member_id=""), version)
            return cgh.encode_request(req, version)

        try:
            resp, _ = self.coord.request_body(cgh.API_KEY, "ConsumerGroupHeartbeat", (cgh.VERSIONS[0], cgh.VERSIONS[-1]),
                                              encode, cgh.decode_response, self.cfg.session_timeout_ms / 1000.0)
        except ConnectionLost as exc:
            self.error(f"ConsumerGroupHeartbeat: {exc}")
            self.sent_owned = None
            self._sleep(config.REFERENCE_RETRY_BACKOFF_MS / 1000.0)
            self.find_coordinator()
            return None
        return resp

    def next_request(self) -> cgh.HeartbeatRequest:
        """The heartbeat to send now: full on a join or after a failure, else light (see the module docstring)."""
        full = self.epoch == cgh.JOIN_EPOCH or self.sent_owned is None
        epoch = self.epoch
        if self.stale_heartbeat_due and not full and frozenset(self.owned) == self.sent_owned:
            # A light heartbeat (no owned list) with an epoch below its own: the broker fences that.
            self.stale_heartbeat_due = False
            epoch = self.epoch - 1
            self.log(f"stale-epoch: heartbeats with epoch {epoch} (current {self.epoch})")
        return self._request(epoch, full)

    def heartbeat(self) -> None:
        """Send the heartbeat that is due, act on its answer (see the module docstring)."""
        owned = frozenset(self.owned)
        req = self.next_request()
        resp = self._send(req)
        self.hb_due = time.monotonic() + self.interval_s
        if resp is None:
            self.hb_due = 0.0
            return
        if resp.error_code == NONE:
            if req.topic_partitions is not None:
                self.sent_owned = owned
            self.on_success(resp)
        elif resp.error_code in FENCED:
            self.on_fenced(f"{error_name(resp.error_code)} on ConsumerGroupHeartbeat (epoch {req.member_epoch}): "
                           f"{resp.error_message}")
        elif resp.error_code in COORDINATOR_MOVED:
            self.log(f"ConsumerGroupHeartbeat: {error_name(resp.error_code)}")
            self.sent_owned = None
            self._sleep(config.REFERENCE_RETRY_BACKOFF_MS / 1000.0)
            self.find_coordinator()
            self.hb_due = 0.0
        else:
            raise FatalClientError(f"{error_name(resp.error_code)} on ConsumerGroupHeartbeat: {resp.error_message}")

    def on_success(self, resp: cgh.HeartbeatResponse) -> None:
        if resp.member_id:
            self.member_id = resp.member_id
        if resp.heartbeat_interval_ms > 0:
            self.interval_s = resp.heartbeat_interval_ms / 1000.0
            self.hb_due = time.monotonic() + self.interval_s
        if resp.member_epoch != self.epoch:
            self.epoch = resp.member_epoch
            if self.stale_armed and self.epoch > 1:
                self.stale_armed = False
                self.stale_commit_due = self.stale_heartbeat_due = True
            self._update_context()
        if resp.assignment is not None:
            self.target = frozenset((t.topic_id, p) for t in resp.assignment for p in t.partitions)
        if self.target is not None:
            self.reconcile()

    def on_fenced(self, reason: str) -> None:
        """Constraint 3: lose everything owned, rejoin at epoch 0 at once (ignore-fenced: keep consuming)."""
        self.error(reason)
        if self.faults.ignore_fenced:
            self.log(f"ignore-fenced: keeps consuming {sorted(self.fetching)} without recording lost")
        elif self.fetching:
            self._record_tps("lost", self.fetching, reason=reason)
            for tp in self.fetching:
                self.positions.pop(tp, None)
            self.fetching = set()
        self.owned = set()
        self.target = None
        self.epoch = cgh.JOIN_EPOCH
        self.sent_owned = None
        self._update_context()
        self.hb_due = 0.0

    def reconcile(self) -> None:
        """Revoke what left the target, then take what it added; an acknowledgement goes out at once.
        Called only once an assignment has set the target."""
        assigned = self.target
        assert assigned is not None, "reconcile before any assignment"
        if any(topic_id not in self.topic_names for topic_id, _ in assigned) and \
                time.monotonic() >= self.next_metadata:
            self.refresh_topic_ids()
        target = {(self.topic_names[t], p) for t, p in assigned if t in self.topic_names}
        revoked = self.owned - target
        added = target - self.owned
        if revoked:
            if self.faults.ack_unrevoked:
                self.log(f"ack-unrevoked: acknowledges giving up {sorted(revoked)} but keeps consuming them")
            else:
                self.commit(sorted(revoked & self.fetching), "revoke")
                self._record_tps("revoked", revoked & self.fetching)
                self.fetching -= revoked
                for tp in revoked:
                    self.positions.pop(tp, None)
            self.owned -= revoked
        if added:
            new = added - self.fetching  # a fault may have kept consuming some of them all along
            self.init_positions(sorted(tp for tp in new if tp not in self.positions))
            self.owned |= added
            self.fetching |= added
            if new:
                self._record_tps("assigned", new)
        if revoked or added:
            self.log(f"epoch {self.epoch}: owns {sorted(self.owned)}")
            self.hb_due = 0.0  # acknowledge at once

    # ------------------------------------------------------------------ lifecycle

    def run(self) -> int:
        """Run until SIGTERM (stop_event); returns the exit code."""
        self.history.record("started", server_assignor=self.server_assignor, faults=sorted(self.faults.names),
                            group_protocol="consumer")

        def start() -> None:
            self.find_coordinator()
            self.refresh_topic_ids()

        return self.run_until_stopped(start)

    def step(self) -> None:
        if time.monotonic() >= self.hb_due:
            self.heartbeat()
        if self.epoch <= 0 and not self.fetching:
            self._sleep(0.05)
        else:
            self.fetch_once()
        if self.cfg.commit_mode == "auto" and time.monotonic() >= self.next_auto_commit:
            self.next_auto_commit = time.monotonic() + config.REFERENCE_AUTO_COMMIT_INTERVAL_MS / 1000.0
            self.commit(sorted(self.fetching), "auto")

    def change_subscription(self, topics: list[str]) -> None:
        """Subscribe to ``topics`` in place: a full heartbeat carries them now; the broker revokes what
        the member owns of topics it drops, as for any reassignment."""
        self.topics = sorted(set(topics))
        self.sent_owned = None
        self.hb_due = 0.0

    def stall(self, seconds: float) -> None:
        """The application stops fetching and committing for ``seconds``; heartbeats go on (a KIP-848
        client heartbeats from its own thread), so assignment changes are still answered."""
        deadline = time.monotonic() + seconds
        while not self.stop_event.is_set() and time.monotonic() < deadline:
            if time.monotonic() >= self.hb_due:
                self.heartbeat()
            self._sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def close(self, reason: str) -> None:
        """Graceful close: commit, ``revoked`` for everything owned, leave (epoch -1, static -2), ``stopped``."""
        if self.fetching:
            self.commit(sorted(self.fetching), "close")
            self._record_tps("revoked", self.fetching, reason="close")
            self.owned, self.fetching = set(), set()
        if self.coord is not None and self.epoch > 0:
            leave = cgh.STATIC_LEAVE_EPOCH if self.static else cgh.LEAVE_EPOCH
            req = cgh.HeartbeatRequest(group_id=self.cfg.group_id, member_id=self.member_id, member_epoch=leave,
                                       instance_id=self.cfg.group_instance_id)
            try:
                resp, _ = self.coord.request_body(cgh.API_KEY, "ConsumerGroupHeartbeat",
                                                  (cgh.VERSIONS[0], cgh.VERSIONS[-1]),
                                                  lambda v: cgh.encode_request(req, v), cgh.decode_response, 5.0)
                if resp.error_code != NONE:
                    self.error(f"leaving (epoch {leave}): {error_name(resp.error_code)}")
            except ConnectionLost as exc:
                self.error(f"leaving (epoch {leave}): {exc}")
        self.history.record("stopped", reason=reason)

