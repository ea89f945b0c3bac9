"""The reference cooperative consumer: one classic-protocol group member (KIP-429).

Threads and who owns what
-------------------------

- The **main thread** owns every state change and every history event about
  ownership: it starts rejoins, applies assignments (revoke what was lost,
  add what was gained), fetches and processes records, commits, and closes.
- A **join worker** (one at a time) runs JoinGroup (with the MEMBER_ID_REQUIRED
  handshake), the leader's assignment and SyncGroup on its own connection and
  hands a :class:`JoinResult` back; in cooperative mode the main thread keeps
  consuming its partitions meanwhile.
- The **heartbeat thread** heartbeats and only raises flags (rejoin needed /
  fenced) for the main thread. It follows Java's AbstractCoordinator
  (HeartbeatThread enabled on the JoinGroup response, disabled while
  ``state.hasNotJoinedGroup()``): it heartbeats while the member is stable
  (including after a REBALANCE_IN_PROGRESS until the rejoin starts) and while a
  SyncGroup is pending (COMPLETING_REBALANCE: from the JoinGroup response,
  with the new generation, ignoring REBALANCE_IN_PROGRESS), but never while a
  JoinGroup is in flight (PREPARING_REBALANCE). A lock held from the state
  check until the Heartbeat is on the socket makes that exact: once a JoinGroup
  is started, no Heartbeat is sent until its response (except one whose
  connection had to be re-established first: connecting is not done under the
  lock). Heartbeats have their own coordinator connection, so a slow commit
  never delays them and they never delay a rejoin.

Protocol (Java's rule): the member is cooperative when every configured
strategy supports cooperative rebalancing (only ``cooperative-sticky`` does),
eager otherwise -- so ``[cooperative-sticky, range]`` is the first bounce of
the eager-to-cooperative upgrade: it revokes everything before every join even
when the group picks cooperative-sticky. The leader always runs the assignor the
group chose (JoinGroup's protocol name).

Constraints any change must keep
--------------------------------

1. OwnedPartitions in a JoinGroup equal what the history says the member owns
   at that moment (unless the stale-owned-partitions fault says otherwise).
2. ``revoked`` is recorded after the commit of those partitions and before the
   rejoin that follows; ``assigned`` after the positions of new partitions are known.
3. ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID: everything owned
   is ``lost`` (no commit), the generation (and for the latter two the member
   id) is reset, and the member rejoins. REBALANCE_IN_PROGRESS: rejoin keeping
   owned partitions.
4. A cooperative member that revoked anything rejoins at once (follow-up).
5. ``consumed`` only for partitions the history says are owned (skip-revoke
   keeps consuming partitions it never recorded as revoked: still true;
   stall-retained fetches only some of them: still true).
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from dataclasses import dataclass, field

from kafka.protocol.consumer import HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest

from conformance import config
from conformance.history import HistoryWriter
from conformance.members import kinds
from conformance.members.harness_config import HarnessConfig
from conformance.protocol import DecodeError, Subscription, decode_assignment, encode_subscription
from conformance.protocol.userdata import encode_sticky_userdata
from conformance.reference.assignor import TP, AssignorError, MemberClaim, assign, is_cooperative
from conformance.reference.claims import (
    BadSubscription,
    claim_from_metadata,
    from_topic_partitions,
    plan_bytes,
    to_topic_partitions,
)
from conformance.reference.codes import (
    COORDINATOR_MOVED,
    FATAL_GROUP_ERRORS,
    FENCED_INSTANCE_ID,
    FENCING,
    ILLEGAL_GENERATION,
    MEMBER_ID_REQUIRED,
    NONE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    error_name,
)
from conformance.reference.connection import Connection, ConnectionLost, split_address
from conformance.reference.consuming import FatalClientError, PartitionConsumer
from conformance.reference.faults import Faults

CLIENT_VERSION = kinds.default_version("reference")

@dataclass
class JoinResult:
    """What a join round produced: an assignment, or the error that ended it."""

    member_id: str
    generation: int = -1
    protocol: str | None = None
    leader: str | None = None
    partitions: list[TP] = field(default_factory=list)
    error: int = NONE
    stage: str = ""
    exception: str | None = None


class ReferenceMember(PartitionConsumer):
    """One reference consumer process (see the module docstring)."""

    def __init__(self, cfg: HarnessConfig, history: HistoryWriter) -> None:
        self.cfg = cfg
        self.history = history
        extra = cfg.extra or {}
        self.faults = Faults.parse(extra.get("faults"))
        configured = int(extra.get("subscription_version", 3))
        if not 0 <= configured <= 3:
            raise FatalClientError(f"extra.subscription_version must be 0-3, got {configured}")
        self.sub_version = self.faults.subscription_version(configured)
        self.cooperative = all(is_cooperative(s) for s in cfg.assignment_strategies)
        self.protocol_label = "cooperative" if self.cooperative else "eager"
        self.topics = sorted(set(cfg.topics))
        self.static = cfg.group_instance_id is not None

        host, port = split_address(cfg.bootstrap_servers.split(",")[0])
        timeout = config.REFERENCE_REQUEST_TIMEOUT_MS / 1000.0
        self.bootstrap = Connection(host, port, cfg.client_id, timeout)
        self.coord: Connection | None = None       # commit, offset fetch, leave
        self.join_conn: Connection | None = None   # join worker only
        self.hb_conn: Connection | None = None     # heartbeat thread only
        self.data = Connection(host, port, cfg.client_id, timeout)  # metadata, list offsets, fetch

        self.member_id = ""
        self.join_member_id = ""  # the member id the join worker last used or was given (for close)
        self.generation = -1
        self.group_protocol: str | None = None
        self.is_leader = False
        self.owned: set[TP] = set()          # what the group gave us (declared in JoinGroup)
        self.fetching: set[TP] = set()       # what the history says we own (== owned unless skip-revoke)
        self.previous_owned: set[TP] = set() # owned one generation earlier (stale-owned-partitions)
        self.stalled: set[TP] = set()        # owned but never fetched again (stall-retained)
        self.revoked_kept: set[TP] = set()   # revoked in the history, still consumed (consume-revoked)
        self.fence_due: tuple[float, tuple[int, str]] | None = None  # consume-fenced: when to act on which answer
        self.eager_previous: set[TP] = set() # last eager assignment (sticky userData)
        self.positions: dict[TP, int] = {}
        self.committed: dict[TP, int] = {}

        self.stop_event = threading.Event()
        self._flag_lock = threading.Lock()
        # Heartbeat state: _hb_lock is held from the heartbeat thread's state check until its
        # request is sent, and by whoever changes the state below (see the module docstring).
        self._hb_lock = threading.Lock()
        self._completing: tuple[int, str] | None = None  # (generation, member id) while SyncGroup is pending
        self._hb_due = 0.0  # monotonic time of the next heartbeat: one interval after the last one sent
        self.rejoin_reason: str | None = "initial join"
        self.fenced_reason: tuple[int, str] | None = None
        self.join_future: concurrent.futures.Future[JoinResult] | None = None
        self.executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="join")
        self.assigned_counts: dict[str, int] = {}
        self.next_metadata_check = 0.0
        self.next_auto_commit = time.monotonic() + config.REFERENCE_AUTO_COMMIT_INTERVAL_MS / 1000.0
        self.next_position_retry = 0.0   # when fetch_once may look up missing positions again
        self._update_context()

    # ------------------------------------------------------------------ helpers

    def _update_context(self) -> None:
        self.history.context.update({"member_id": self.member_id or None,
                                     "generation": self.generation if self.generation >= 0 else None,
                                     "protocol": self.protocol_label})

    def request_rejoin(self, reason: str) -> None:
        with self._flag_lock:
            if self.rejoin_reason is None:
                self.rejoin_reason = reason

    def commit_identity(self) -> tuple[int, str] | None:
        return None if self.generation < 0 else (self.generation, self.member_id)

    def commit_refused(self, codes: set[int], generation: int) -> None:
        if codes & FENCING:
            self._fenced(min(codes & FENCING), "OffsetCommit", generation)
        elif REBALANCE_IN_PROGRESS in codes:
            self.request_rejoin("REBALANCE_IN_PROGRESS on OffsetCommit")

    def _fenced(self, code: int, where: str, generation: int) -> None:
        with self._flag_lock:
            if generation == self.generation and self.fenced_reason is None:
                self.fenced_reason = (code, f"{error_name(code)} on {where}")

    @property
    def stable(self) -> bool:
        return self.generation >= 0 and self.join_future is None and not self.stop_event.is_set()

    # ------------------------------------------------------------ coordinator

    def find_coordinator(self) -> None:
        """FindCoordinator until it answers; builds the coordinator connections."""
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
            timeout = config.REFERENCE_REQUEST_TIMEOUT_MS / 1000.0
            if self.coord is None or self.coord.address != f"{resp.host}:{resp.port}":
                for conn in (self.coord, self.join_conn, self.hb_conn):
                    if conn is not None:
                        conn.close()
                self.coord = Connection(resp.host, resp.port, self.cfg.client_id, timeout)
                self.join_conn = Connection(resp.host, resp.port, self.cfg.client_id, timeout)
                self.hb_conn = Connection(resp.host, resp.port, self.cfg.client_id, timeout)
            return

    # ------------------------------------------------------------ subscription

    def _user_data(self, strategy: str) -> bytes | None:
        if any(f.startswith("userdata-") for f in self.faults.names):
            return self.faults.user_data(self.generation)
        if strategy == "cooperative-sticky":
            return self.faults.user_data(self.generation)
        if strategy == "sticky":
            return encode_sticky_userdata(to_topic_partitions(self.eager_previous), self.generation)
        return None

    def subscription(self, strategy: str) -> Subscription:
        """This member's subscription for ``strategy``, as it goes on the wire."""
        declared = self.faults.declared_owned(self.owned, self.previous_owned) if self.cooperative else set()
        return Subscription(version=self.sub_version, topics=tuple(self.topics),
                            user_data=self._user_data(strategy),
                            owned_partitions=to_topic_partitions(declared),
                            generation_id=self.generation, rack_id=self.cfg.rack_id,
                            trailing=self.faults.trailing())

    # ------------------------------------------------------------ join worker

    def _join_round(self, protocols: list[tuple[str, bytes]], member_id: str, reason: str) -> JoinResult:
        """JoinGroup (+ handshake), leader assignment, SyncGroup. Runs in the join worker."""
        conn = self.join_conn
        assert conn is not None
        rebalance_timeout = self.cfg.max_poll_interval_ms
        timeout_s = rebalance_timeout / 1000.0 + 10.0
        for _ in range(3):
            req = JoinGroupRequest(
                group_id=self.cfg.group_id, session_timeout_ms=self.cfg.session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout, member_id=member_id,
                group_instance_id=self.cfg.group_instance_id, protocol_type="consumer",
                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols],
                reason=reason)
            try:
                resp = conn.request(req, timeout_s)
            except ConnectionLost as exc:
                return JoinResult(member_id=member_id, stage="JoinGroup", exception=str(exc))
            if resp.error_code == MEMBER_ID_REQUIRED:
                member_id = self.join_member_id = resp.member_id
                continue
            if resp.error_code != NONE:
                return JoinResult(member_id=member_id, error=resp.error_code, stage="JoinGroup")
            break
        else:
            return JoinResult(member_id=member_id, error=MEMBER_ID_REQUIRED, stage="JoinGroup")
        member_id, generation = resp.member_id, resp.generation_id
        self.join_member_id = member_id
        with self._hb_lock:  # COMPLETING_REBALANCE: heartbeat with the new generation until SyncGroup answers
            self._completing = (generation, member_id)
            self._hb_due = time.monotonic() + self.cfg.heartbeat_interval_ms / 1000.0  # Java's resetTimeouts()
        try:
            return self._complete_round(conn, resp, timeout_s)
        finally:
            with self._hb_lock:
                self._completing = None

    def _complete_round(self, conn: Connection, resp, timeout_s: float) -> JoinResult:
        """After a successful JoinGroup: the leader's assignment, then SyncGroup. Runs in the join worker."""
        member_id, generation, protocol = resp.member_id, resp.generation_id, resp.protocol_name
        result = JoinResult(member_id=member_id, generation=generation, protocol=protocol, leader=resp.leader)
        assignments: list = []
        if resp.leader == member_id:
            try:
                encoded = self._lead(resp.members, protocol, conn)
            except ConnectionLost as exc:
                result.stage, result.exception = "leader metadata", str(exc)
                return result
            assignments = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=b)
                           for m, b in sorted(encoded.items())]
        if self.faults.sync_delay_s:
            self.stop_event.wait(self.faults.sync_delay_s)
        if self.stop_event.is_set():  # closing: no SyncGroup; close() sends LeaveGroup with this member id
            result.stage, result.exception = "SyncGroup", "not sent: the member is closing"
            return result
        sync = SyncGroupRequest(group_id=self.cfg.group_id, generation_id=generation, member_id=member_id,
                                group_instance_id=self.cfg.group_instance_id, protocol_type="consumer",
                                protocol_name=protocol, assignments=assignments)
        try:
            sresp = conn.request(sync, timeout_s)
        except ConnectionLost as exc:
            result.stage, result.exception = "SyncGroup", str(exc)
            return result
        if sresp.error_code != NONE:
            result.error, result.stage = sresp.error_code, "SyncGroup"
            return result
        try:
            result.partitions = from_topic_partitions(decode_assignment(bytes(sresp.assignment)).assigned_partitions)
        except DecodeError as exc:
            result.stage, result.exception = "SyncGroup", f"assignment does not decode: {exc} ({bytes(sresp.assignment)[:64].hex()})"
        return result

    def partition_counts(self, topics: set[str], conn: Connection) -> dict[str, int]:
        req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in sorted(topics)],
                              allow_auto_topic_creation=False)
        resp = conn.request(req)
        return {t.name: len(t.partitions) for t in resp.topics if t.error_code == NONE}

    def _lead(self, members: list, protocol: str, conn: Connection) -> dict[str, bytes]:
        """As leader: decode every subscription, run the group's assignor, encode the result."""
        claims: dict[str, MemberClaim] = {}
        for m in members:
            try:
                _, claims[m.member_id] = claim_from_metadata(m.member_id, bytes(m.metadata), protocol,
                                                             m.group_instance_id)
            except BadSubscription as exc:
                self.error(f"as leader of generation: {exc}; that member gets nothing")
                claims[m.member_id] = MemberClaim(member_id=m.member_id, topics=frozenset())
        topics = set().union(*(c.topics for c in claims.values())) if claims else set()
        counts = self.partition_counts(topics, conn)
        try:
            plan = assign(protocol, claims, counts)
        except AssignorError as exc:
            self.error(f"as leader: assignor {protocol!r} failed: {exc}")
            plan = assign("range", claims, counts)
        assignment = {m: list(tps) for m, tps in plan.assignment.items()}
        if self.faults.leader_reassigns_owned:
            for tp, m in plan.withheld.items():
                assignment[m].append(tp)
        elif plan.withheld:
            self.log(f"as leader: withheld {sorted(plan.withheld.items())} until their owners revoke them")
        self.assigned_counts = {t: counts[t] for t in self.topics if t in counts}
        self.log(f"as leader ({protocol}): {[(m, len(t)) for m, t in sorted(assignment.items())]}")
        return plan_bytes(assignment)

    # ------------------------------------------------------------ main thread

    def start_join(self, reason: str) -> None:
        if not self.cooperative and self.fetching:
            # Eager: commit and revoke everything before joining.
            self.commit(sorted(self.fetching), "eager revoke before join")
            self.history.record("revoked", partitions=[list(tp) for tp in sorted(self.fetching)])
            for tp in self.fetching:   # a partition it gets back resumes from the group's commit, not from here
                self.positions.pop(tp, None)
            self.eager_previous = set(self.owned)
            self.owned, self.fetching, self.stalled = set(), set(), set()
        protocols = [(s, encode_subscription(self.subscription(s))) for s in self.cfg.assignment_strategies]
        self.log(f"joining (member_id={self.member_id!r}, generation={self.generation}, "
                 f"owned={sorted(self.owned)}): {reason}")
        with self._hb_lock:  # PREPARING_REBALANCE from here: no Heartbeat passes the check any more
            self.join_member_id = self.member_id
            self.join_future = self.executor.submit(self._join_round, protocols, self.member_id, reason)

    def lose_everything(self, code: int, reason: str) -> None:
        """Constraint 3: partitions lost, state reset."""
        if self.fetching:
            self.history.record("lost", partitions=[list(tp) for tp in sorted(self.fetching)], reason=reason)
        for tp in self.fetching:
            self.positions.pop(tp, None)
        self.owned, self.fetching, self.previous_owned, self.stalled = set(), set(), set(), set()
        self.generation = -1
        if code in (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID):
            self.member_id = self.join_member_id = ""
        self.is_leader = False
        self._update_context()
        self.request_rejoin(f"rejoin after {reason}")

    def finish_join(self, result: JoinResult) -> None:
        self.join_future = None
        if result.exception is not None:
            self.error(f"{result.stage}: {result.exception}")
            if result.stage in ("JoinGroup", "SyncGroup"):
                self.find_coordinator()
            self._sleep(config.REFERENCE_RETRY_BACKOFF_MS / 1000.0)
            self.request_rejoin(f"retry after {result.stage} failure")
            return
        if result.error != NONE:
            what = f"{error_name(result.error)} on {result.stage}"
            if result.error in FATAL_GROUP_ERRORS:
                raise FatalClientError(what)
            if result.error in FENCING:
                self.error(what)
                self.member_id = result.member_id if result.error == ILLEGAL_GENERATION else ""
                self.lose_everything(result.error, what)
                return
            if result.error in COORDINATOR_MOVED:
                self.log(what)
                self.find_coordinator()
            elif result.error != REBALANCE_IN_PROGRESS:
                self.error(what)
            self.member_id = result.member_id
            self._sleep(config.REFERENCE_RETRY_BACKOFF_MS / 1000.0)
            self.request_rejoin(f"rejoin after {what}")
            return
        self.apply_assignment(result)

    def apply_assignment(self, result: JoinResult) -> None:
        new = set(result.partitions)
        self.member_id, self.generation, self.group_protocol = result.member_id, result.generation, result.protocol
        self.is_leader = result.leader == result.member_id
        self._update_context()
        if self.cooperative:
            revoked = self.owned - new
            added = new - self.owned
            retained = self.owned & new
            self.previous_owned = set(self.owned)
            if self.faults.stall_retained and retained - self.stalled:
                # Keeps owning (and declaring) them and heartbeating; fetch_once skips them from now on.
                self.log(f"stall-retained: stops fetching {sorted(retained - self.stalled)}, which it keeps")
                self.stalled |= retained
            if revoked:
                if self.faults.skip_revoke:
                    self.log(f"skip-revoke: keeps consuming {sorted(revoked)} it was told to give up")
                else:
                    self.commit(sorted(revoked), "revoke")
                    self.history.record("revoked", partitions=[list(tp) for tp in sorted(revoked)])
                    self.fetching -= revoked
                    self.stalled -= revoked
                    if self.faults.consume_revoked:
                        self.log(f"consume-revoked: keeps consuming {sorted(revoked)} after revoking them")
                        self.revoked_kept |= revoked
                    else:
                        for tp in revoked:
                            self.positions.pop(tp, None)
                self.owned -= revoked
                if self.faults.no_follow_up_rejoin:
                    self.log("no-follow-up-rejoin: not rejoining after revoking")
                else:
                    self.request_rejoin(f"follow-up after revoking {len(revoked)} partitions")
        else:
            added = new
            self.previous_owned = set(self.owned)
        self.revoked_kept -= added   # given back: owned again
        self.init_positions(sorted(added - set(self.positions)))
        self.owned |= added
        self.fetching |= added
        self.history.record("assigned", partitions=[list(tp) for tp in sorted(added)])
        self.log(f"generation {self.generation} ({self.group_protocol}{', leader' if self.is_leader else ''}): "
                 f"owns {sorted(self.owned)}")

    def change_subscription(self, topics: list[str]) -> None:
        """Subscribe to ``topics`` in place, as Java's consumer does: the next JoinGroup carries them; a
        cooperative member first revokes (commit, ``revoked``) what it owns of topics it drops (an eager
        one revokes everything when it joins)."""
        self.topics = sorted(set(topics))
        gone = {tp for tp in self.owned if tp[0] not in self.topics}
        if self.cooperative and gone:
            self.commit(sorted(gone & self.fetching), "subscription change")
            self.history.record("revoked", partitions=[list(tp) for tp in sorted(gone)])
            for tp in gone:
                self.positions.pop(tp, None)
            self.owned -= gone
            self.fetching -= gone
            self.stalled -= gone
        self.request_rejoin(f"subscription changed to {self.topics}")

    def _interrupted(self) -> bool:
        return (self.stop_event.is_set() or self.fenced_reason is not None
                or (self.join_future is not None and self.join_future.done()))

    def check_metadata(self) -> None:
        """Leader only: new partitions of a subscribed topic trigger a rejoin (Java's metadata snapshot)."""
        now = time.monotonic()
        if not self.is_leader or now < self.next_metadata_check:
            return
        self.next_metadata_check = now + config.REFERENCE_METADATA_REFRESH_MS / 1000.0
        try:
            counts = self.partition_counts(set(self.topics), self.data)
        except ConnectionLost as exc:
            self.error(f"Metadata: {exc}")
            return
        if self.assigned_counts and counts != self.assigned_counts:
            self.request_rejoin(f"metadata changed: {self.assigned_counts} -> {counts}")
            self.assigned_counts = counts

    # ------------------------------------------------------------ heartbeat

    def _heartbeat_target(self) -> tuple[int, str, bool] | None:
        """``(generation, member id, completing)`` to heartbeat with now, or None (Java's thread disabled)."""
        if self.hb_conn is None or self.stop_event.is_set():
            return None
        if self._completing is not None:
            return (*self._completing, True)
        if self.stable:
            return (self.generation, self.member_id, False)
        return None

    def heartbeat_once(self) -> None:
        """One heartbeat if the state calls for one (see the module docstring); reacts to its answer."""
        lock = self._hb_lock
        lock.acquire()
        held = [True]

        def release() -> None:
            if held[0]:
                held[0] = False
                lock.release()

        try:
            target = self._heartbeat_target()
            if target is None:
                return
            generation, member_id, completing = target
            conn = self.hb_conn
            assert conn is not None
            if not conn.connected:
                # Connecting may take up to the request timeout: not under the lock, so a rejoin
                # is never held up by it (a heartbeat right after a reconnect may then overlap
                # a JoinGroup that started meanwhile).
                release()
            req = HeartbeatRequest(group_id=self.cfg.group_id, generation_id=generation, member_id=member_id,
                                   group_instance_id=self.cfg.group_instance_id)
            try:
                resp = conn.request(req, self.cfg.session_timeout_ms / 1000.0, on_sent=release)
            except ConnectionLost as exc:
                self.error(f"Heartbeat: {exc}")
                return
        finally:
            release()
        code = resp.error_code
        if code == NONE:
            return
        if completing:
            # Java ignores REBALANCE_IN_PROGRESS outside STABLE; a fencing error also fails the
            # pending SyncGroup, whose answer the join worker acts on.
            if code != REBALANCE_IN_PROGRESS:
                self.log(f"Heartbeat while SyncGroup is pending (generation {generation}): {error_name(code)}")
        elif code == REBALANCE_IN_PROGRESS:
            self.request_rejoin("REBALANCE_IN_PROGRESS on Heartbeat")
        elif code in FENCING:
            self._fenced(code, "Heartbeat", generation)
        elif code in COORDINATOR_MOVED:
            self.log(f"Heartbeat: {error_name(code)}")
        else:
            self.error(f"Heartbeat: {error_name(code)}")

    def heartbeat_loop(self) -> None:
        """Heartbeat one interval after the last one sent, or after the JoinGroup answer (Java's timer)."""
        interval = self.cfg.heartbeat_interval_ms / 1000.0
        self._hb_due = time.monotonic() + interval
        while not self.stop_event.wait(min(0.05, max(0.0, self._hb_due - time.monotonic()))):
            if time.monotonic() >= self._hb_due:
                self._hb_due = time.monotonic() + interval
                self.heartbeat_once()

    # ------------------------------------------------------------ lifecycle

    def run(self) -> int:
        """Run until SIGTERM (stop_event); returns the exit code."""
        self.history.record("started", strategies=list(self.cfg.assignment_strategies),
                            faults=sorted(self.faults.names), subscription_version=self.sub_version)
        heartbeat = threading.Thread(target=self.heartbeat_loop, name="heartbeat", daemon=True)

        def start() -> None:
            self.find_coordinator()
            heartbeat.start()

        try:
            return self.run_until_stopped(start)
        finally:
            self.executor.shutdown(wait=False, cancel_futures=True)

    def _delay_fence(self, fenced: tuple[int, str] | None) -> tuple[int, str] | None:
        """consume-fenced: the first fencing answer is acted on only :data:`CONSUME_FENCED_MS` later
        (meanwhile the member fetches and hands records of what it owned to its application); the
        answers that come in between are the same fence."""
        if self.fence_due is None:
            if fenced is not None:
                self.log(f"consume-fenced: goes on consuming {sorted(self.fetching)} after {fenced[1]}")
                self.fence_due = (time.monotonic() + self.faults.fence_delay_s, fenced)
            return None
        due, first = self.fence_due
        if time.monotonic() < due:
            return None
        self.fence_due = None
        return first

    def step(self) -> None:
        with self._flag_lock:
            fenced, self.fenced_reason = self.fenced_reason, None
        if self.faults.fence_delay_s and self.join_future is None:
            fenced = self._delay_fence(fenced)
        if fenced is not None and self.join_future is None:
            self.error(fenced[1])
            self.lose_everything(fenced[0], fenced[1])
        if self.join_future is None:
            with self._flag_lock:
                reason, self.rejoin_reason = self.rejoin_reason, None
            if reason is not None:
                self.start_join(reason)
        if self.join_future is not None and self.join_future.done():
            self.finish_join(self.join_future.result())
            return
        self.check_metadata()
        if self.join_future is None or self.cooperative:
            self.fetch_once()
        else:
            self._sleep(0.05)
        if self.cfg.commit_mode == "auto" and time.monotonic() >= self.next_auto_commit:
            self.next_auto_commit = time.monotonic() + config.REFERENCE_AUTO_COMMIT_INTERVAL_MS / 1000.0
            self.commit(sorted(self.fetching), "auto")

    def close(self, reason: str) -> None:
        """Graceful close: abort a pending join, commit, record revoked, LeaveGroup (dynamic members only)."""
        if self.join_future is not None and not self.join_future.done():
            if self.join_conn is not None:
                self.join_conn.close()
            try:
                self.join_future.result(timeout=5)
            except Exception:  # the join is being abandoned on purpose
                pass
            self.join_future = None
        if self.fetching:
            self.commit(sorted(self.fetching), "close")
            self.history.record("revoked", partitions=[list(tp) for tp in sorted(self.fetching)], reason="close")
            self.owned, self.fetching, self.stalled = set(), set(), set()
        # A join cut short still leaves the member in the group under the id the broker gave it
        # (as Java, which keeps that id from the MEMBER_ID_REQUIRED answer on): leave with it.
        member_id = self.member_id or self.join_member_id
        if not self.static and member_id and self.coord is not None:
            req = LeaveGroupRequest(group_id=self.cfg.group_id, member_id=member_id, members=[
                LeaveGroupRequest.MemberIdentity(member_id=member_id, group_instance_id=None,
                                                 reason="the consumer is being closed")])
            try:
                resp = self.coord.request(req, 5.0)
                if resp.error_code != NONE:
                    self.error(f"LeaveGroup: {error_name(resp.error_code)}")
            except ConnectionLost as exc:
                self.error(f"LeaveGroup: {exc}")
        self.history.record("stopped", reason=reason)
