"""The embedded cluster of one run: a real broker, toxiproxy and the wire tap.

Path of a member::

    member -> wire tap (slot's tap port = bootstrap_for(member))
           -> toxiproxy proxy "slotN"
           -> broker listener SLOTN, ADVERTISED at the tap port

so every connection a member opens, including reconnects after following the
metadata it was given, goes through its own tap and proxy.

Guarantees:

- ``with Cluster(...)`` returns only when the broker is ready (metadata and a
  probe produce), toxiproxy answers, every slot has a proxy and a tap
  listener. Leaving the block (normally, by exception or on SIGINT through the
  Supervisor) stops the tap, toxiproxy and the broker; no port stays open.
- A member keeps its slot for the life of the cluster (restarts included);
  more members than slots is a UsageError naming the members holding slots.
- The DIRECT listener has neither tap nor proxy (admin, producer, probes).
- The broker runs with ``migration_policy`` as its ``group.consumer.migration.policy``
  (KIP-848 online migration; :data:`conformance.cluster.broker.MIGRATION_POLICIES`), and
  ``broker_rack``, when set, as its ``broker.rack`` (KIP-881 rack-aware assignment).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from conformance import config
from conformance.cluster.broker import Broker
from conformance.cluster.ports import free_port
from conformance.cluster.supervisor import Supervisor
from conformance.cluster.tap import WireTap
from conformance.cluster.toxiproxy import Proxy, ToxiproxyClient, ToxiproxyServer
from conformance.errors import SuiteError, UsageError
from conformance.rundir import RunDir


class Cluster:
    """One broker (KRaft), one toxiproxy server and one wire tap, with ``slots`` member paths."""

    def __init__(self, run_dir: RunDir, broker_version: str = config.DEFAULT_BROKER,
                 supervisor: Supervisor | None = None, slots: int = config.CLUSTER_SLOTS,
                 seed: int = 1, migration_policy: str = "bidirectional", broker_rack: str | None = None) -> None:
        if slots < 1:
            raise UsageError(f"a cluster needs at least one member slot, not {slots}")
        self.run_dir = run_dir
        self.slots = slots
        self.seed = seed
        self.supervisor = supervisor or Supervisor(run_dir.logs)
        self._own_supervisor = supervisor is None
        self._members: dict[str, int] = {}
        self._owners: dict[int, str] = {}
        self._lock = threading.Lock()
        self.tap = WireTap(run_dir.wire, self._owners.get)
        self.tap_ports: list[int] = []
        self.toxiproxy = ToxiproxyServer(self.supervisor, seed=seed)
        self.toxiproxy_client: ToxiproxyClient | None = None
        self._proxies: list[Proxy] = []
        self.migration_policy = migration_policy
        self.broker_rack = broker_rack
        self.broker: Broker = Broker(broker_version, run_dir.path, self.supervisor, [],
                                     migration_policy=migration_policy, rack=broker_rack)
        self._started = False

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> "Cluster":
        started = time.monotonic()
        try:
            self.tap.start()
            proxy_ports = [free_port() for _ in range(self.slots)]
            for slot in range(self.slots):
                self.tap_ports.append(self._bind_tap(slot, proxy_ports[slot]))
            self.broker.advertised_ports = list(self.tap_ports)
            self.broker.start()
            self.toxiproxy_client = self.toxiproxy.start()
            for slot in range(self.slots):
                self._proxies.append(self._create_proxy(slot, proxy_ports[slot]))
        except BaseException:
            self.stop()
            raise
        self._started = True
        self.setup_seconds = time.monotonic() - started
        return self

    def _bind_tap(self, slot: int, upstream_port: int) -> int:
        last: OSError | None = None
        for _ in range(5):
            port = free_port()
            try:
                self.tap.listen(slot, port, upstream_port)
                return port
            except OSError as exc:
                last = exc
        raise SuiteError(f"wire tap: no bindable port for slot {slot} after 5 tries ({last})")

    def _create_proxy(self, slot: int, listen_port: int) -> Proxy:
        assert self.toxiproxy_client is not None
        name = f"slot{slot}"
        listen = f"{config.HOST}:{listen_port}"
        upstream = self.broker.slot_address(slot)
        self.toxiproxy_client.create_proxy(name, listen, upstream)
        proxy = Proxy(self.toxiproxy_client, name, listen, upstream)
        proxy.member = self._owners.get(slot)
        return proxy

    def stop(self) -> None:
        """Stop the tap, toxiproxy and the broker (idempotent)."""
        try:
            self.tap.stop()
        finally:
            try:
                self.toxiproxy.stop()
            finally:
                self.broker.stop()
                if self._own_supervisor:
                    self.supervisor.stop_all()
        self._started = False

    def __enter__(self) -> "Cluster":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- member paths ---------------------------------------------------------

    def slot_of(self, member: str) -> int:
        """The slot of ``member``, assigning the next free one on first use."""
        with self._lock:
            if member in self._members:
                return self._members[member]
            if len(self._members) >= self.slots:
                raise UsageError(f"cluster has {self.slots} member slots, all taken "
                                 f"({', '.join(sorted(self._members))}); cannot add {member!r}: "
                                 "create the Cluster with more slots")
            slot = len(self._members)
            self._members[member] = slot
            self._owners[slot] = member
            if slot < len(self._proxies):
                self._proxies[slot].member = member
            return slot

    def bootstrap_for(self, member: str) -> str:
        """``127.0.0.1:PORT`` of ``member``'s wire tap (its whole path to the broker)."""
        self._require_started()
        return f"{config.HOST}:{self.tap_ports[self.slot_of(member)]}"

    @property
    def direct_bootstrap(self) -> str:
        """The broker's DIRECT listener (no tap, no proxy)."""
        self._require_started()
        return self.broker.direct_bootstrap

    def proxy(self, member: str) -> Proxy:
        """The toxiproxy proxy on ``member``'s path."""
        self._require_started()
        return self._proxies[self.slot_of(member)]

    def proxies(self) -> list[Proxy]:
        """The proxies of the slots that have a member, in slot order."""
        self._require_started()
        return [self._proxies[s] for s in sorted(self._owners)]

    def members(self) -> dict[str, int]:
        with self._lock:
            return dict(self._members)

    def _require_started(self) -> None:
        if not self._started:
            raise SuiteError("the cluster is not running (use it inside `with Cluster(...) as cluster:`)")

    # -- topics ---------------------------------------------------------------

    def _admin(self) -> Any:
        from kafka.admin import KafkaAdminClient
        return KafkaAdminClient(bootstrap_servers=self.direct_bootstrap, request_timeout_ms=15000,
                                client_id="conformance-admin")

    def create_topic(self, name: str, partitions: int) -> None:
        """Create ``name`` with ``partitions`` partitions (replication 1) and wait until all have a leader."""
        from kafka.admin import NewTopic
        from kafka.errors import KafkaError
        if partitions < 1:
            raise UsageError(f"topic {name!r}: partitions must be >= 1, not {partitions}")
        admin = self._admin()
        try:
            admin.create_topics([NewTopic(name, partitions, 1)])
        except KafkaError as exc:
            raise SuiteError(f"cannot create topic {name!r} with {partitions} partitions: {exc}") from exc
        finally:
            admin.close()
        self._wait_partitions(name, partitions)

    def topic_id(self, name: str) -> str | None:
        """The topic id of ``name`` (KIP-516) as 32 hex digits, as the wire tap writes ids (OffsetCommit
        v10+, ConsumerGroupHeartbeat); None when the broker reports none (the all-zero id: before 2.8)."""
        admin = self._admin()
        try:
            described = admin.describe_topics([name])
        finally:
            admin.close()
        tid = described[0].get("topic_id") if described else None
        text = str(tid or "").replace("-", "").lower()   # a uuid.UUID or its text
        return text if text.strip("0") else None

    def add_partitions(self, name: str, total: int) -> None:
        """Grow ``name`` to ``total`` partitions and wait until all have a leader."""
        from kafka.admin import NewPartitions
        from kafka.errors import KafkaError
        admin = self._admin()
        try:
            admin.create_partitions({name: NewPartitions(total)})
        except KafkaError as exc:
            raise SuiteError(f"cannot grow topic {name!r} to {total} partitions: {exc}") from exc
        finally:
            admin.close()
        self._wait_partitions(name, total)

    def _wait_partitions(self, name: str, partitions: int, timeout: float = 30.0) -> None:
        admin = self._admin()
        deadline = time.monotonic() + timeout
        seen: Any = None
        try:
            while time.monotonic() < deadline:
                described = admin.describe_topics([name])
                parts = described[0].get("partitions", []) if described else []
                seen = sorted((p.get("partition_index", p.get("partition")), p.get("leader_id", p.get("leader")))
                              for p in parts)
                if len(seen) == partitions and all(leader is not None and leader >= 0 for _, leader in seen):
                    return
                time.sleep(0.1)
        finally:
            admin.close()
        raise SuiteError(f"topic {name!r}: expected {partitions} partitions with leaders within {timeout}s, "
                         f"saw (partition, leader) {seen}")
