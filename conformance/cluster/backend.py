"""The processes backend: the primitives of the table of faults (:class:`conformance.nemesis.faults.Backend`)
on the embedded cluster of one run and its supervised member processes.

A member's handle is its :class:`conformance.members.launch.MemberProcess`. A kill is SIGKILL to
the member's process group, a graceful stop SIGTERM (SIGKILL after the grace period), a pause
SIGSTOP and a resume SIGCONT (:mod:`conformance.cluster.supervisor`); a path cut disables the
member's toxiproxy proxy, toxics go on that proxy, and the broker restarts as a local process.
A container network cut does not exist here (:data:`conformance.nemesis.faults.FAULTS` says which backends
have each fault, and a scenario that needs another backend's fault is refused before it starts).
Each method returns once the primitive is in force (the supervisor waits for an exit; toxiproxy
answers its API call after applying it).
"""

from __future__ import annotations

from typing import Any

from conformance.cluster.cluster import Cluster
from conformance.cluster.toxiproxy import Toxic
from conformance.errors import SuiteError


class ProcessesBackend:
    """The fault primitives of a run on local processes (``cluster`` is its running :class:`Cluster`)."""

    name = "processes"

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def terminate_member(self, member: str, handle: Any) -> None:
        handle.terminate()

    def hold_member(self, member: str, handle: Any) -> None:
        """Nothing: SIGKILL acts the moment it is sent, so nothing follows the kill's log line."""

    def kill_member(self, member: str, handle: Any) -> None:
        handle.kill()

    def pause_member(self, member: str, handle: Any) -> None:
        handle.pause()

    def resume_member(self, member: str, handle: Any) -> None:
        handle.resume()

    def disable_path(self, member: str) -> None:
        self.cluster.proxy(member).disable()

    def enable_path(self, member: str) -> None:
        self.cluster.proxy(member).enable()

    def add_toxic(self, member: str, toxic: Toxic) -> str:
        return self.cluster.proxy(member).add_toxic(toxic)

    def remove_toxic(self, member: str, toxic_name: str) -> None:
        self.cluster.proxy(member).remove_toxic(toxic_name)

    def restart_broker(self, kill: bool) -> None:
        self.cluster.broker.restart(kill=kill)

    def add_partitions(self, topic: str, total: int) -> None:
        self.cluster.add_partitions(topic, total)

    def disconnect_member(self, member: str, handle: Any) -> None:
        raise SuiteError("a container network cut needs the docker backend (refused before the run starts)")

    def connect_member(self, member: str, handle: Any) -> None:
        raise SuiteError("a container network cut needs the docker backend (refused before the run starts)")
