"""One real Kafka broker in KRaft combined mode (broker + controller, node id 1).

The broker runs from the Maven Central jars :func:`conformance.cluster.install.ensure_broker`
installed, as a process of the run's :class:`Supervisor`.

Listeners (all PLAINTEXT, all bound on 127.0.0.1, ports picked free):

- ``CONTROLLER``: the KRaft quorum (static ``controller.quorum.voters``).
- ``DIRECT``: advertised as itself; for admin, the producer and readiness probes.
- ``SLOT0`` .. ``SLOTn``: one per member slot, each ADVERTISED at the address
  the caller gives (the member's wire-tap port), so a member that follows the
  metadata it is given reconnects through its own tap and proxy.

Guarantees:

- :meth:`Broker.start` returns only once the broker is ready: metadata answers
  on the DIRECT listener AND a produce to the probe topic is acknowledged. If
  the process exits or the bound passes, it raises SuiteError naming the log.
- :meth:`Broker.restart` keeps the same ports, configuration and data (a
  clean stop or a SIGKILL) and waits until ready again.
- Data in ``<run>/broker/data``, configuration in ``<run>/broker/``, output
  in ``<run>/logs/broker.log`` and ``<run>/logs/controller.log``.
"""

from __future__ import annotations

import base64
import logging
import re
import socket
import time
import uuid
from pathlib import Path

from conformance import config
from conformance.cluster.install import BrokerInstall, broker_install, ensure_broker
from conformance.cluster.ports import free_port
from conformance.cluster.supervisor import ManagedProcess, Supervisor
from conformance.errors import SuiteError

PROBE_TOPIC = "__conformance_probe"


def probe_ready(bootstrap: str, deadline: float) -> None:
    """One readiness probe of a broker at ``bootstrap``: metadata answers (the probe topic is
    created if missing) and a produce to it is acknowledged before ``deadline`` (monotonic). Raises
    kafka-python's KafkaError (or OSError, ValueError, AssertionError) while the broker is not ready:
    a listening port alone is no proof, a broker accepts TCP before it serves."""
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000, client_id="conformance-probe")
    try:
        if PROBE_TOPIC not in admin.list_topics():
            try:
                admin.create_topics([NewTopic(PROBE_TOPIC, 1, 1)])
            except TopicAlreadyExistsError:
                pass
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, retries=5, request_timeout_ms=5000,
                             max_block_ms=5000, client_id="conformance-probe")
    try:
        producer.send(PROBE_TOPIC, b"ready").get(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        producer.close(timeout=2)

_log = logging.getLogger(__name__)


def _minor(version: str) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", version)
    if not m:
        raise SuiteError(f"cannot read a major.minor from broker version {version!r}")
    return int(m.group(1)), int(m.group(2))


#: ``group.consumer.migration.policy`` values (KIP-848 online migration between the protocols).
MIGRATION_POLICIES: tuple[str, ...] = ("bidirectional", "upgrade", "downgrade", "disabled")


def broker_properties(version: str, *, data_dir: Path, controller_port: int, direct_port: int,
                      slot_ports: list[int], advertised_ports: list[int],
                      migration_policy: str = "bidirectional", rack: str | None = None) -> dict[str, str]:
    """The server.properties of a fast, deterministic single-node KRaft broker.

    Consumer-protocol (KIP-848) groups get the classic members' timing: session
    :data:`~conformance.config.SESSION_TIMEOUT_MS` and heartbeat interval
    :data:`~conformance.config.HEARTBEAT_INTERVAL_MS` (the broker's defaults, 45 s and 5 s, would
    put a killed consumer member outside every bound the checks use), a new target assignment at
    once (``group.consumer.assignment.interval.ms`` 0; 4.3 batches for 1 s by default, older
    brokers ignore the key), and ``migration_policy`` for online conversion between the protocols
    (set explicitly: 3.x brokers default to ``disabled``); ``rack``, when set, is ``broker.rack`` (every
    partition's one replica is then on that rack, what KIP-881's rack-aware assignors read)."""
    if migration_policy not in MIGRATION_POLICIES:
        raise ValueError(f"migration policy {migration_policy!r} is not one of {', '.join(MIGRATION_POLICIES)}")
    if len(slot_ports) != len(advertised_ports):
        raise ValueError(f"{len(slot_ports)} slot ports but {len(advertised_ports)} advertised ports")
    host = config.HOST
    slots = [f"SLOT{i}" for i in range(len(slot_ports))]
    listeners = [f"CONTROLLER://{host}:{controller_port}", f"DIRECT://{host}:{direct_port}"]
    listeners += [f"{name}://{host}:{port}" for name, port in zip(slots, slot_ports)]
    advertised = [f"DIRECT://{host}:{direct_port}"]
    advertised += [f"{name}://{host}:{port}" for name, port in zip(slots, advertised_ports)]
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{host}:{controller_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "DIRECT",
        "listeners": ",".join(listeners),
        "advertised.listeners": ",".join(advertised),
        "listener.security.protocol.map": ",".join(f"{n}:PLAINTEXT" for n in ["CONTROLLER", "DIRECT", *slots]),
        "log.dirs": str(data_dir),
        "num.partitions": "1",
        "default.replication.factor": "1",
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": str(config.OFFSETS_TOPIC_PARTITIONS),
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": str(config.OFFSETS_TOPIC_PARTITIONS),
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "1000",
        "group.consumer.min.session.timeout.ms": "1000",
        "group.consumer.min.heartbeat.interval.ms": "500",
        "group.consumer.session.timeout.ms": str(config.SESSION_TIMEOUT_MS),
        "group.consumer.heartbeat.interval.ms": str(config.HEARTBEAT_INTERVAL_MS),
        "group.consumer.assignment.interval.ms": "0",
        "group.consumer.migration.policy": migration_policy,
        # A killed broker's old registration expires quickly, so a restart is fast.
        "broker.session.timeout.ms": "2000",
        "broker.heartbeat.interval.ms": "500",
        "num.network.threads": "2",
        "num.io.threads": "4",
        **({"broker.rack": rack} if rack else {}),
        "num.recovery.threads.per.data.dir": "1",
        "log.cleaner.threads": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
    }
    major, minor = _minor(version)
    if major == 3:
        # KIP-848 members need the new protocol switched on before 4.0.
        props["group.coordinator.rebalance.protocols"] = "classic,consumer"
        if minor < 8:
            props["group.coordinator.new.enable"] = "true"
    return props


def _write_properties(path: Path, props: dict[str, str]) -> None:
    lines = ["# Written by conformance.cluster.broker; one broker, KRaft combined mode."]
    lines += [f"{k}={v}" for k, v in props.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def new_cluster_id() -> str:
    """A random Kafka cluster id (a UUID, base64 URL-safe, no padding) that does not start with '-',
    as Kafka's own ``Uuid.randomUuid`` guarantees: the storage tool would read such an id given after
    ``-t`` as an option (one id in 64 did, failing the broker's format)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection((config.HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


class Broker:
    """A single KRaft broker of one run; see the module docstring for its guarantees.

    ``migration_policy`` (one of :data:`MIGRATION_POLICIES`) is the broker's
    ``group.consumer.migration.policy``, kept across restarts (a scenario's ``broker
    migration-policy=``); ``rack`` its ``broker.rack`` (``broker rack=``), None for none."""

    def __init__(self, version: str, run_path: Path, supervisor: Supervisor, advertised_ports: list[int],
                 migration_policy: str = "bidirectional", rack: str | None = None) -> None:
        if migration_policy not in MIGRATION_POLICIES:
            raise ValueError(f"migration policy {migration_policy!r} is not one of {', '.join(MIGRATION_POLICIES)}")
        self.version = version
        self.migration_policy = migration_policy
        self.rack = rack
        self.supervisor = supervisor
        self.install: BrokerInstall = broker_install(version) or BrokerInstall.load(ensure_broker(version))
        self.dir = Path(run_path) / "broker"
        self.data_dir = self.dir / "data"
        self.logs_dir = supervisor.logs_dir
        self.config_path = self.dir / "server.properties"
        self.advertised_ports = list(advertised_ports)
        self.controller_port = 0
        self.direct_port = 0
        self.slot_ports: list[int] = []
        self.cluster_id = new_cluster_id()
        self.process: ManagedProcess | None = None
        self._formatted = False

    # -- addresses ---------------------------------------------------------

    @property
    def direct_bootstrap(self) -> str:
        return f"{config.HOST}:{self.direct_port}"

    def slot_address(self, slot: int) -> str:
        """The address the broker listens on for member slot ``slot`` (the proxy's upstream)."""
        return f"{config.HOST}:{self.slot_ports[slot]}"

    # -- lifecycle ---------------------------------------------------------

    def _java_argv(self, main: str, *args: str) -> list[str]:
        return ["java", f"-Xmx{config.BROKER_HEAP}", "-Xms128m", "-XX:+UseSerialGC", "-Xss1m",
                "-Djava.awt.headless=true", f"-Dkafka.logs.dir={self.logs_dir}",
                *self.install.log_jvm_flags(), "-cp", f"{self.install.lib}/*", main, *args]

    def _configure(self) -> None:
        self.controller_port = free_port()
        self.direct_port = free_port()
        self.slot_ports = [free_port() for _ in self.advertised_ports]
        props = broker_properties(self.version, data_dir=self.data_dir, controller_port=self.controller_port,
                                  direct_port=self.direct_port, slot_ports=self.slot_ports,
                                  advertised_ports=self.advertised_ports, migration_policy=self.migration_policy,
                                  rack=self.rack)
        self.dir.mkdir(parents=True, exist_ok=True)
        _write_properties(self.config_path, props)

    def _format(self) -> None:
        proc = self.supervisor.spawn("broker-format", self._java_argv(
            "kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(self.config_path),
            "--ignore-formatted"), log_name="broker-format")
        code = proc.wait(120)
        if code is None:
            proc.kill()
            raise SuiteError(f"broker {self.version}: storage format did not finish in 120 s "
                             f"(see {proc.log_path})")
        if code != 0:
            raise SuiteError(f"broker {self.version}: storage format exited {code}: {self._tail(proc.log_path)}")
        self._formatted = True

    def start(self, timeout: float | None = None) -> None:
        """Configure (first time), format (first time), start, and wait until ready.

        A start that fails because a port was taken between picking and
        binding is retried with new ports (first start only; a restart keeps
        its ports).
        """
        if self.process is not None and self.process.alive():
            raise SuiteError(f"broker {self.version} is already running (pid {self.process.pid})")
        first = not self._formatted
        for attempt in range(3):
            if first:
                self._configure()
                self._format()
            self._spawn()
            try:
                self.wait_ready(timeout)
                return
            except SuiteError as exc:
                bind_failure = self.process is not None and "Address already in use" in self._tail(
                    self.process.log_path, 4000)
                self.stop()
                if first and bind_failure and attempt < 2:
                    _log.warning("broker %s: port taken, retrying with new ports: %s", self.version, exc)
                    continue
                raise

    def _spawn(self) -> None:
        self._log_offset = self.logs_dir.joinpath("broker.log").stat().st_size \
            if self.logs_dir.joinpath("broker.log").exists() else 0
        self.process = self.supervisor.spawn("broker", self._java_argv("kafka.Kafka", str(self.config_path)),
                                             log_name="broker")

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until metadata answers on DIRECT and a probe produce is acknowledged."""
        from kafka.errors import KafkaError

        timeout = config.BROKER_READY_TIMEOUT_S if timeout is None else timeout
        deadline = time.monotonic() + timeout
        last_error = "the DIRECT listener never accepted a connection"
        proc = self.process
        assert proc is not None
        while time.monotonic() < deadline:
            if not proc.alive():
                raise SuiteError(f"broker {self.version} exited with {proc.returncode} before it was ready: "
                                 f"{self._tail(proc.log_path)}")
            if not _port_open(self.direct_port):
                time.sleep(0.1)
                continue
            try:
                probe_ready(self.direct_bootstrap, deadline)
                return
            except (KafkaError, OSError, ValueError, AssertionError) as exc:
                last_error = f"{type(exc).__name__}: {exc}"
                time.sleep(0.25)
        raise SuiteError(f"broker {self.version} not ready within {timeout:.0f}s ({last_error}); "
                         f"see {proc.log_path}")

    def stop(self, kill: bool = False) -> None:
        """Stop the broker: clean shutdown (SIGTERM, SIGKILL fallback) or SIGKILL."""
        if self.process is None or not self.process.alive():
            return
        if kill:
            self.process.kill()
        else:
            self.process.terminate(timeout=30)

    def restart(self, kill: bool = False, timeout: float | None = None) -> None:
        """Stop (clean, or kill -9 with ``kill=True``) and start again on the same ports and data."""
        self.stop(kill=kill)
        self.start(timeout)

    @staticmethod
    def _tail(path: Path, chars: int = 1500) -> str:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return f"(no log at {path})"
        errors = [ln for ln in text.splitlines() if " ERROR " in ln or "Exception" in ln]
        tail = "\n".join(errors[-5:]) if errors else text[-chars:]
        return f"{tail[-chars:]} (log: {path})"
