"""The Docker network of one run, with a fixed subnet and a fixed address for every part.

Guarantees:

- :meth:`RunNetwork.create` makes one bridge network per run, labelled with the run's labels,
  on a /24 subnet of ``172.30.0.0/16`` that no other network of the engine uses (the first free
  one from a start derived from the run id). Its addresses are fixed: the gateway (the host's
  address on the network, where the runner's wire tap listens) is ``.1``, the broker ``.2``,
  toxiproxy ``.3`` and member slot *i* ``.(10 + i)``. A container disconnected from the network
  and connected again gets its address back, so a member's network cut does not move it.
- :meth:`RunNetwork.start_container` is the one place a run's containers are created and started
  (broker, toxiproxy, every member incarnation): on the network at one of those addresses, named
  and labelled as given, with ``--init``, bind mounts read-write. It returns the started container
  as a docker SDK ``Container``. When it raises (the engine refused to start it, or Ctrl-C came
  meanwhile) a container it created is removed before the exception goes on; one the engine made
  while the creating call itself was interrupted is known by its labels only, and
  :func:`conformance.containers.engine.remove_run_containers` (the cluster's stop) removes it.
- :meth:`RunNetwork.remove` removes the network (its containers must be gone first).

Who owns what: testcontainers (``DockerContainer``, configured by
:func:`conformance.containers.engine.configure_testcontainers`, Ryuk disabled) creates and starts
every container of a run. The docker SDK owns the rest: this network (subnet and fixed
addresses), disconnect and reconnect, and every container once started (stop, kill, pause, logs,
restart, removal: :mod:`conformance.containers.members`, :mod:`conformance.containers.cluster`),
as testcontainers has no pause, network cut or signal of its own. Testcontainers adds its own
``org.testcontainers*`` labels beside the suite's; the suite's cleanup goes by the suite's labels.
"""

from __future__ import annotations

import hashlib
import ipaddress
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from conformance.errors import SuiteError

if TYPE_CHECKING:
    import docker

#: The range the runs' subnets are taken from (a /24 each).
POOL = ipaddress.IPv4Network("172.30.0.0/16")
GATEWAY, BROKER, TOXIPROXY, FIRST_MEMBER = 1, 2, 3, 10


class RunNetwork:
    """One run's network (see the module docstring)."""

    def __init__(self, client: "docker.DockerClient", name: str, labels: Mapping[str, str]) -> None:
        self.client = client
        self.name = name
        self.labels = dict(labels)
        self.subnet: ipaddress.IPv4Network | None = None
        self.network: Any = None

    def _used(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        used = []
        for net in self.client.networks.list():
            for cfg in ((net.attrs.get("IPAM") or {}).get("Config") or []):
                try:
                    used.append(ipaddress.ip_network(cfg.get("Subnet", ""), strict=False))
                except ValueError:
                    continue
        return used

    def create(self) -> "RunNetwork":
        import docker.errors
        import docker.types

        subnets = list(POOL.subnets(new_prefix=24))
        start = int(hashlib.sha256(self.name.encode()).hexdigest(), 16) % len(subnets)
        last = ""
        for i in range(len(subnets)):
            subnet = subnets[(start + i) % len(subnets)]
            if any(subnet.overlaps(u) for u in self._used()):
                continue
            ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(
                subnet=str(subnet), gateway=str(subnet[GATEWAY]))])
            try:
                self.network = self.client.networks.create(self.name, driver="bridge", ipam=ipam,
                                                           labels=self.labels, check_duplicate=True)
            except docker.errors.APIError as exc:  # taken meanwhile by another run: try the next
                last = str(exc)
                continue
            self.subnet = subnet
            return self
        raise SuiteError(f"no free /24 subnet in {POOL} for network {self.name} ({last or 'all in use'})")

    def address(self, host: int) -> str:
        """The address ``.host`` of the run's subnet."""
        assert self.subnet is not None, "create() first"
        return str(self.subnet[host])

    @property
    def gateway(self) -> str:
        return self.address(GATEWAY)

    def member_address(self, slot: int) -> str:
        return self.address(FIRST_MEMBER + slot)

    def start_container(self, image: str, command: Sequence[str] | None, *, name: str, host: int,
                        labels: Mapping[str, str], hostname: str | None = None,
                        environment: Mapping[str, str] | None = None,
                        binds: Mapping[str, str] | None = None) -> Any:
        """A created and started container at ``.host`` of the network (see the module docstring)."""
        import docker.errors
        import docker.types

        from conformance.containers.engine import configure_testcontainers

        configure_testcontainers()
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.exceptions import ContainerStartException

        endpoint = docker.types.EndpointConfig(self.client.api.api_version, ipv4_address=self.address(host))
        made = DockerContainer(image, command=list(command) if command is not None else None,  # type: ignore[arg-type]
                               env=dict(environment or {}), name=name)
        for src, dst in (binds or {}).items():
            made.with_volume_mapping(src, dst, "rw")
        made.with_kwargs(hostname=hostname or name, labels=dict(labels), init=True, network=self.name,
                         networking_config={self.name: endpoint})
        try:
            made.start()
        except BaseException:
            try:  # created, maybe not started: nobody else knows it yet
                made.get_wrapped_container().remove(force=True, v=True)
            except (ContainerStartException, docker.errors.APIError):
                pass  # never created, or already gone
            raise
        return made.get_wrapped_container()

    def disconnect(self, container: Any) -> None:
        """Take ``container`` off the network (its connections break, as a pulled cable's would)."""
        self.network.disconnect(container, force=True)

    def connect(self, container: Any, host: int) -> None:
        """Put ``container`` back on the network at its address ``.host``."""
        self.network.connect(container, ipv4_address=self.address(host))

    def remove(self) -> None:
        import docker.errors
        if self.network is None:
            return
        try:
            self.network.remove()
        except docker.errors.NotFound:
            pass
        self.network = None
