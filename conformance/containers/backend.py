"""The container backend: the primitives of the table of faults (:class:`conformance.nemesis.faults.Backend`)
on a run's containers (:class:`conformance.containers.cluster.DockerCluster`).

A member's handle is its :class:`conformance.members.launch.MemberProcess`, whose incarnation is a
:class:`conformance.containers.members.ManagedContainer`. A kill is ``docker kill -s KILL`` (of the container frozen first by
``docker pause``, its processes SIGKILLed while frozen, so that it writes nothing after the log's
``kill`` line), a
graceful stop ``docker stop`` (SIGTERM, SIGKILL after the grace period), a pause ``docker pause``
and a resume ``docker unpause``; a path cut disables the member's proxy in the toxiproxy container
and toxics go on that proxy, as on the processes path; the broker restarts as its container
(``docker restart``, or ``docker kill -s KILL`` and ``docker start``). Beside toxiproxy's cut,
this backend has a container-level cut: ``disconnect_member`` takes the member's container off
the run's network (``docker network disconnect``) and ``connect_member`` puts it back at its
fixed address. Each method returns once the primitive is in force.
"""

from __future__ import annotations

from typing import Any

from conformance.cluster.backend import ProcessesBackend
from conformance.containers.cluster import DockerCluster


class DockerBackend(ProcessesBackend):
    """The fault primitives of a run on containers (``cluster`` is its running :class:`DockerCluster`).
    Member handles, proxies, toxics and partitions work as on the processes path (the handle's
    incarnation is a container); what differs is below."""

    name = "docker"
    cluster: DockerCluster

    def hold_member(self, member: str, handle: Any) -> None:
        """``docker pause`` before a kill is logged, returning once the kernel reports the container's
        cgroup frozen: ``docker kill`` is an API call that takes its time (seen: 170 ms under load), in
        which the member would still write to its history after the log's ``kill`` line. The kill
        that follows SIGKILLs the frozen processes themselves before ``docker kill`` thaws them
        (:meth:`conformance.containers.members.ManagedContainer.kill`), so, as with SIGKILL on the
        processes path, nothing of the member follows the line, and the line's time is when the
        member stopped (tests/test_docker_backend.py: a killed member writes nothing after it)."""
        handle.pause()

    def restart_broker(self, kill: bool) -> None:
        assert self.cluster.broker is not None
        self.cluster.broker.restart(kill=kill)

    def disconnect_member(self, member: str, handle: Any) -> None:
        self.cluster.network.disconnect(self.cluster.member_container(member))

    def connect_member(self, member: str, handle: Any) -> None:
        assert self.cluster.spawner is not None
        self.cluster.network.connect(self.cluster.member_container(member), self.cluster.spawner.host_of(member))
