"""The cluster of one run as containers: a broker and toxiproxy on the run's network, and the
suite's wire tap on the host, on every member's path.

Path of a member (the same path as on the processes path, :mod:`conformance.cluster.cluster`)::

    member container (.10+i) -> wire tap on the host, listening at the network's gateway (.1)
                             -> toxiproxy container (.3), proxy "slotN"
                             -> broker container (.2), listener SLOTN, ADVERTISED at the tap's address

Why the tap stays on the host: it is the suite's own Python tap (:mod:`conformance.cluster.tap`),
writing ``wire.jsonl`` straight into the run directory with the slot-to-member map the runner
keeps; bound to the gateway, a private address of the run's network, it is reachable from every
member container and from nothing outside the host. Running it in the tools image would add a
container, a mount and a second owner of the slot map for the same bytes on the wire.

Guarantees (those of :class:`conformance.cluster.cluster.Cluster`, plus):

- ``with DockerCluster(...)`` returns only when the broker answers metadata and acknowledges a
  probe produce on its DIRECT listener (a real readiness probe: a container's port accepts TCP
  before Kafka listens), toxiproxy's API answers and every slot has a proxy and a tap listener.
- Everything of the run is labelled :func:`conformance.containers.engine.run_labels` (the run
  label is the run directory's absolute path) and named ``conformance-<hash of that path>-<part>``
  (``...-broker``, ``...-toxiproxy``, ``...-m0-reference-1`` for a member's first incarnation). Leaving the block,
  normally, by an exception or by Ctrl-C (the Supervisor turns SIGINT into ``KeyboardInterrupt``,
  which unwinds the block), saves the broker's and toxiproxy's output to ``logs/`` and removes
  every container and the network; an interpreter exit that skips the block removes them too.
  The last step before the network goes is a sweep by the run's labels
  (:func:`conformance.containers.engine.remove_run_containers`), so a container the engine made
  while Ctrl-C interrupted its creation, held by no handle, goes too.
- Testcontainers creates and starts the broker, toxiproxy and every member
  (:meth:`conformance.containers.network.RunNetwork.start_container`); the docker SDK owns the
  network and every container once started (restart, kill, logs, removal). Readiness is the
  suite's own probe, run after the start (no testcontainers wait strategy).
- The broker's ``group.consumer.migration.policy`` is ``migration_policy`` (the scenario's ``broker
  migration-policy=``), and its ``broker.rack`` is ``broker_rack`` when set (``broker rack=``), given with the
  listeners in ``$KAFKA_PROPERTIES`` over the image's default.
- A broker restart keeps the container (its address and data): ``docker restart`` (clean: SIGTERM
  first) or ``docker kill -s KILL`` then ``docker start``, each waited on until ready again.
"""

from __future__ import annotations

import atexit
import hashlib
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance import config
from conformance.cluster.cluster import Cluster
from conformance.cluster.ports import free_port
from conformance.cluster.supervisor import Supervisor
from conformance.cluster.tap import WireTap
from conformance.cluster.toxiproxy import Proxy, ToxiproxyClient
from conformance.containers.engine import LABEL_RUN, remove_run_containers
from conformance.containers.members import ContainerSpawner, launch_member_container
from conformance.containers.network import BROKER, TOXIPROXY, RunNetwork
from conformance.errors import SuiteError, UsageError
from conformance.members.harness_config import HarnessConfig
from conformance.members.launch import MemberProcess
from conformance.members.spec import MemberSpec
from conformance.rundir import RunDir

if TYPE_CHECKING:
    import docker

#: Ports inside the containers.
DIRECT_PORT, SLOT_BASE_PORT, TOXIPROXY_API_PORT, PROXY_BASE_PORT = 9092, 9100, 8474, 20000


def _save_logs(container: Any, path: Path) -> None:
    try:
        with open(path, "ab") as out:
            out.write(container.logs())
    except Exception:  # a container already gone has nothing more to say
        pass


class DockerBroker:
    """The run's broker container (the part of :class:`conformance.cluster.broker.Broker` the suite uses)."""

    def __init__(self, version: str, image: str, network: RunNetwork, name: str, labels: dict[str, str],
                 properties: dict[str, str], logs_dir: Path) -> None:
        self.version = version
        self.image = image
        self.network = network
        self.name = name
        self.labels = labels
        self.properties = properties
        self.logs_dir = logs_dir
        self.container: Any = None

    @property
    def direct_bootstrap(self) -> str:
        return f"{self.network.address(BROKER)}:{DIRECT_PORT}"

    def start(self) -> None:
        env = {"KAFKA_PROPERTIES": "\n".join(f"{k}={v}" for k, v in self.properties.items()),
               "KAFKA_HEAP": config.BROKER_HEAP}
        self.container = self.network.start_container(self.image, None, name=self.name, host=BROKER,
                                                      hostname="broker", labels=self.labels, environment=env)
        # The container formats its storage (a JVM of its own) before the broker starts; the processes
        # path formats before its readiness timer starts, so this first wait allows for both.
        self.wait_ready(2 * config.BROKER_READY_TIMEOUT_S)

    def _alive(self) -> bool:
        self.container.reload()
        return self.container.status in ("created", "running", "restarting")

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until metadata answers on DIRECT and a probe produce is acknowledged."""
        from kafka.errors import KafkaError

        from conformance.cluster.broker import probe_ready

        timeout = config.BROKER_READY_TIMEOUT_S if timeout is None else timeout
        deadline = time.monotonic() + timeout
        last_error = "the DIRECT listener never answered"
        while time.monotonic() < deadline:
            if not self._alive():
                raise SuiteError(f"broker container {self.name} exited with {self.container.attrs['State']['ExitCode']} "
                                 f"before it was ready: {self.container.logs()[-1500:].decode('utf-8', 'replace')}")
            try:
                probe_ready(self.direct_bootstrap, deadline)
                return
            except (KafkaError, OSError, ValueError, AssertionError) as exc:
                last_error = f"{type(exc).__name__}: {exc}"
                time.sleep(0.25)
        raise SuiteError(f"broker container {self.name} not ready within {timeout:.0f}s ({last_error})")

    def restart(self, kill: bool = False, timeout: float | None = None) -> None:
        """``docker restart`` (clean), or ``docker kill -s KILL`` and ``docker start``; then ready again."""
        if kill:
            self.container.kill(signal="SIGKILL")
            self.container.wait(timeout=60)
            self.container.start()
        else:
            self.container.restart(timeout=30)
        self.wait_ready(timeout)

    def stop(self) -> None:
        """Save the broker's output to ``logs/broker.log`` and remove its container."""
        if self.container is None:
            return
        _save_logs(self.container, self.logs_dir / "broker.log")
        try:
            self.container.remove(force=True)
        except Exception:  # already gone
            pass
        self.container = None


class DockerCluster(Cluster):
    """A :class:`~conformance.cluster.cluster.Cluster` whose broker, toxiproxy and members are
    containers (see the module docstring). ``images`` is :func:`conformance.containers.images.ensure_images`'s answer."""

    backend = "docker"

    def __init__(self, run_dir: RunDir, broker_version: str, supervisor: Supervisor, slots: int,
                 images: dict[str, str], client: "docker.DockerClient | None" = None,
                 migration_policy: str = "bidirectional", broker_rack: str | None = None) -> None:
        from conformance.cluster.broker import MIGRATION_POLICIES
        from conformance.containers.engine import ensure_engine, run_labels

        if slots < 1:
            raise UsageError(f"a cluster needs at least one member slot, not {slots}")
        if migration_policy not in MIGRATION_POLICIES:
            raise ValueError(f"migration policy {migration_policy!r} is not one of {', '.join(MIGRATION_POLICIES)}")
        self.migration_policy = migration_policy
        self.broker_rack = broker_rack
        self.run_dir = run_dir
        self.slots = slots
        self.supervisor = supervisor
        self._own_supervisor = False
        self._members: dict[str, int] = {}
        self._owners: dict[int, str] = {}
        self._lock = threading.Lock()
        self._proxies: list[Proxy] = []
        self._started = False
        self.images = images
        self.client = client or ensure_engine()
        # The run label is the run directory's path (unique, where a cell id is not); names carry its hash.
        self.labels = run_labels(str(run_dir.path.absolute()))
        self.prefix = "conformance-" + hashlib.sha256(str(run_dir.path.absolute()).encode()).hexdigest()[:12]
        self.network = RunNetwork(self.client, self.prefix, self.labels)
        self.tap = WireTap(run_dir.wire, self._owners.get)
        self.tap_ports: list[int] = []
        self.toxiproxy_container: Any = None
        self.toxiproxy_client: ToxiproxyClient | None = None
        self.broker: DockerBroker | None = None  # type: ignore[assignment]
        self.spawner: ContainerSpawner | None = None
        self.broker_version = broker_version

    # -- lifecycle ----------------------------------------------------------

    def image(self, key: str) -> str:
        if key not in self.images:
            raise SuiteError(f"no image for {key}; images: {', '.join(sorted(self.images))}")
        return self.images[key]

    def start(self) -> "DockerCluster":
        started = time.monotonic()
        atexit.register(self.stop)
        try:
            self.network.create()
            gateway = self.network.gateway
            self.tap.start()
            for slot in range(self.slots):
                self.tap_ports.append(self._bind_tap_at(slot, gateway))
            self.broker = DockerBroker(self.broker_version, self.image(f"broker:{self.broker_version}"), self.network,
                                       f"{self.prefix}-broker", self.labels, self._broker_properties(gateway),
                                       self.run_dir.logs)
            self.broker.start()
            self._start_toxiproxy()
            for slot in range(self.slots):
                self._proxies.append(self._create_proxy_at(slot))
            self.spawner = ContainerSpawner(self.network, self.prefix, self.labels, self.run_dir.path,
                                            self.run_dir.logs, self.slot_of, self._member_image)
        except BaseException:
            self.stop()
            raise
        self._started = True
        self.setup_seconds = time.monotonic() - started
        return self

    def _broker_properties(self, gateway: str) -> dict[str, str]:
        slots = [f"SLOT{i}" for i in range(self.slots)]
        return {
            "listeners": ",".join(["CONTROLLER://127.0.0.1:9093", f"DIRECT://0.0.0.0:{DIRECT_PORT}",
                                   *(f"{n}://0.0.0.0:{SLOT_BASE_PORT + i}" for i, n in enumerate(slots))]),
            "advertised.listeners": ",".join([f"DIRECT://{self.network.address(BROKER)}:{DIRECT_PORT}",
                                              *(f"{n}://{gateway}:{self.tap_ports[i]}" for i, n in enumerate(slots))]),
            "listener.security.protocol.map": ",".join(f"{n}:PLAINTEXT" for n in ["CONTROLLER", "DIRECT", *slots]),
            # The image's default is bidirectional (broker_properties); a scenario may choose another.
            "group.consumer.migration.policy": self.migration_policy,
            # The scenario's ``broker rack=`` (KIP-881: partitions get a rack for rack-aware assignors).
            **({"broker.rack": self.broker_rack} if self.broker_rack else {}),
        }

    def _bind_tap_at(self, slot: int, gateway: str) -> int:
        last: OSError | None = None
        for _ in range(5):
            port = free_port()
            try:
                self.tap.listen(slot, port, PROXY_BASE_PORT + slot, host=gateway,
                                upstream_host=self.network.address(TOXIPROXY))
                return port
            except OSError as exc:
                last = exc
        raise SuiteError(f"wire tap: no bindable port at {gateway} for slot {slot} after 5 tries ({last})")

    def _start_toxiproxy(self, timeout: float = 60.0) -> None:
        self.toxiproxy_container = self.network.start_container(
            self.image("toxiproxy"), ["-seed", "1"], name=f"{self.prefix}-toxiproxy", host=TOXIPROXY,
            hostname="toxiproxy", labels=self.labels)
        client = ToxiproxyClient(TOXIPROXY_API_PORT, host=self.network.address(TOXIPROXY))
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            try:
                client.version()
                self.toxiproxy_client = client
                return
            except OSError as exc:
                last = str(exc)
                time.sleep(0.1)
        raise SuiteError(f"toxiproxy container did not answer within {timeout:.0f}s ({last})")

    def _create_proxy_at(self, slot: int) -> Proxy:
        assert self.toxiproxy_client is not None
        name = f"slot{slot}"
        listen = f"0.0.0.0:{PROXY_BASE_PORT + slot}"
        upstream = f"{self.network.address(BROKER)}:{SLOT_BASE_PORT + slot}"
        self.toxiproxy_client.create_proxy(name, listen, upstream)
        proxy = Proxy(self.toxiproxy_client, name, listen, upstream)
        proxy.member = self._owners.get(slot)
        return proxy

    def stop(self) -> None:
        """Stop the tap; save the broker's and toxiproxy's output; remove every container of the run
        and its network (idempotent)."""
        try:
            self.tap.stop()
        finally:
            try:
                if self.spawner is not None:
                    self.spawner.remove_all()
                if self.toxiproxy_container is not None:
                    _save_logs(self.toxiproxy_container, self.run_dir.logs / "toxiproxy.log")
                    try:
                        self.toxiproxy_container.remove(force=True)
                    except Exception:  # already gone
                        pass
                    self.toxiproxy_container = None
                if self.broker is not None:
                    self.broker.stop()
            finally:
                try:
                    remove_run_containers(self.client, self.labels[LABEL_RUN])
                finally:
                    self.network.remove()
                atexit.unregister(self.stop)
        self._started = False

    # -- member paths ---------------------------------------------------------

    def bootstrap_for(self, member: str) -> str:
        """``GATEWAY:PORT`` of ``member``'s wire tap (its whole path to the broker), as a member
        container reaches it."""
        self._require_started()
        return f"{self.network.gateway}:{self.tap_ports[self.slot_of(member)]}"

    @property
    def direct_bootstrap(self) -> str:
        self._require_started()
        assert self.broker is not None
        return self.broker.direct_bootstrap

    def _member_image(self, spec: MemberSpec) -> str:
        return self.image(f"member:{spec.kind}@{spec.version}")

    def launch_member(self, spec: MemberSpec, cfg: HarnessConfig, run_dir: RunDir) -> MemberProcess:
        """Start ``spec``'s member as a container (:func:`conformance.containers.members.launch_member_container`)."""
        self._require_started()
        assert self.spawner is not None
        return launch_member_container(spec, cfg, run_dir, self.spawner)

    def member_container(self, member: str) -> Any:
        """``member``'s latest container."""
        assert self.spawner is not None
        handle = self.spawner.current(member)
        if handle is None:
            raise SuiteError(f"member {member} has no container")
        return handle.container
