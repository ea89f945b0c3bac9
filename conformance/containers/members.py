"""Members as containers: each incarnation of a member is one container of its member image.

:func:`launch_member_container` is the container path's :func:`conformance.members.launch.launch_member`:
it writes the harness config into the run directory exactly as the processes path does and
returns the same :class:`~conformance.members.launch.MemberProcess` (readiness from the history's
``started`` event, restarts, exit notes), whose incarnations a :class:`ContainerSpawner` starts as
containers instead of processes. Guarantees:

- An incarnation is a container of ``conformance-member-<kind>:<version>`` running
  ``/opt/member/run CONFIG_JSON`` with ``--init`` (the harness gets SIGTERM as a process does),
  named ``<run prefix>-<member>-<n>`` for the member and its incarnation, labelled with the run's
  labels, on the run's network at the member's fixed address (so a reconnect after a network cut
  keeps it). The run directory is bind-mounted at its own path, so the config's history path and
  every file the harness writes are where the pipeline reads them.
- A :class:`ManagedContainer` behaves as :class:`~conformance.cluster.supervisor.ManagedProcess`
  does: ``terminate`` is ``docker stop`` (SIGTERM, SIGKILL after the timeout; a paused container
  is unpaused first), ``kill`` is ``docker kill -s KILL`` (a frozen container's processes are
  SIGKILLed first, each, so none runs again when docker's kill thaws it), ``pause``/``resume`` are
  ``docker pause``/``unpause``; each returns once it is in force (a pause once the kernel reports
  the container's cgroup frozen, where it is readable here). ``returncode`` follows
  :mod:`subprocess`: a container that ``--init`` reports ended by signal N (exit code 128+N) has
  code -N, so an exit note reads "was killed by signal SIGKILL" on both paths.
- The container's output is appended to ``logs/<member>.log`` as it is written.
- :meth:`ContainerSpawner.remove_all` removes every container it started (the cluster calls it
  when the run ends, however it ends; a container whose start was interrupted is removed by
  :meth:`conformance.containers.network.RunNetwork.start_container` or, known by its labels only,
  by the cluster's label sweep).

Testcontainers creates and starts each incarnation (:meth:`~conformance.containers.network.RunNetwork.start_container`);
everything after the start (state, stop, kill, pause, logs, removal) is the docker SDK's.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from conformance.containers.network import FIRST_MEMBER, RunNetwork
from conformance.errors import SuiteError
from conformance.members.harness_config import HarnessConfig
from conformance.members.launch import MemberProcess, _check_config
from conformance.members.spec import MemberSpec
from conformance.rundir import RunDir

#: The label naming the member a container is an incarnation of.
LABEL_MEMBER = "io.conformance.member"
#: Container states in which the member's process still exists.
_LIVE_STATES = ("created", "running", "paused", "restarting")


def _follow_logs(container: Any, path: Path) -> None:
    """Append ``container``'s output to ``path`` until it exits (a daemon thread's body)."""
    try:
        with open(path, "ab") as out:
            for chunk in container.logs(stream=True, follow=True):
                out.write(chunk)
                out.flush()
    except Exception:  # the container was removed: its log ends here
        pass


class ManagedContainer:
    """One incarnation of a member as a container (the interface of ``ManagedProcess``)."""

    def __init__(self, name: str, container: Any, log_path: Path) -> None:
        self.name = name
        self.container = container
        self.log_path = log_path
        self.started_at = time.time()
        self._asked_to_stop = False
        self._code: int | None = None
        container.reload()
        self.pid = int(container.attrs["State"].get("Pid") or 0) or id(self)
        threading.Thread(target=_follow_logs, args=(container, log_path), name=f"logs-{name}", daemon=True).start()

    def _state(self) -> dict[str, Any]:
        import docker.errors
        try:
            self.container.reload()
        except docker.errors.NotFound:
            return {"Status": "removed", "ExitCode": self._code if self._code is not None else -9}
        return self.container.attrs["State"]

    @property
    def returncode(self) -> int | None:
        if self._code is not None:
            return self._code
        state = self._state()
        if state["Status"] in _LIVE_STATES:
            return None
        code = int(state.get("ExitCode", 0))
        self._code = -(code - 128) if code > 128 else code
        return self._code

    def alive(self) -> bool:
        return self.returncode is None

    @property
    def exited_unasked(self) -> bool:
        return not self._asked_to_stop and not self.alive()

    def wait(self, timeout: float | None = None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            code = self.returncode
            if code is not None:
                return code
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def terminate(self, timeout: float = 15.0) -> int:
        """``docker stop``: SIGTERM, SIGKILL after ``timeout`` (unpaused first, as SIGCONT comes first)."""
        import docker.errors
        self._asked_to_stop = True
        try:
            if self._state()["Status"] == "paused":
                self.container.unpause()
            self.container.stop(timeout=int(max(1, timeout)))
        except docker.errors.APIError:
            pass  # it exited meanwhile
        code = self.wait(timeout + 10)
        return code if code is not None else self.kill()

    def kill(self) -> int:
        """``docker kill -s KILL``, then the exit code. A frozen container's processes get SIGKILL
        first, each, while frozen (where its cgroup is readable here): docker's kill sends SIGKILL to
        the container's init (``--init``) and thaws the container, and the harness, thawed with it,
        would run (and write its history) until init's death reached it, seen 65-237 ms; with the
        signal already pending, no process runs a user instruction after the thaw."""
        import docker.errors
        self._asked_to_stop = True
        if self.frozen():
            self._kill_frozen_processes()
        try:
            self.container.kill(signal="SIGKILL")
        except docker.errors.APIError:
            pass  # not running any more
        code = self.wait(30)
        if code is None:
            raise SuiteError(f"container {self.container.name} did not exit after docker kill")
        return code

    def pause(self) -> None:
        """``docker pause`` (the cgroup freezer), in force when it returns: the kernel's freezer state
        of the container's cgroup reads frozen (:meth:`frozen`), else :class:`SuiteError` after 10 s.
        A pause the runtime gave up on ("unable to freeze": a cgroup v1 freezer can stay FREEZING
        while the container forks, seen under load) is asked again until then."""
        import docker.errors
        if not self.alive():
            return
        deadline = time.monotonic() + 10.0
        error: Exception | None = None
        while not self.frozen():
            if time.monotonic() >= deadline:
                raise SuiteError(f"container {self.container.name} is not frozen 10 s after docker pause "
                                 f"(state {self._state().get('Status')!r}, cgroup {self._freezer_file()}, "
                                 f"last error: {error})")
            try:
                if self._state().get("Status") == "running":
                    self.container.pause()
            except docker.errors.APIError as exc:
                error = exc
                if not self.alive():
                    return   # it exited meanwhile: nothing left to freeze
            time.sleep(0.005)

    def _freezer_file(self) -> Path | None:
        """The container's freezer state file on this host, where the engine is local and keeps its
        cgroups at the cgroupfs or systemd driver's paths (v1: ``freezer.state``, v2: ``cgroup.events``;
        beside it, ``cgroup.procs`` lists the container's processes by host pid)."""
        cid = self.container.id
        for path in (Path("/sys/fs/cgroup/freezer/docker", cid, "freezer.state"),
                     Path("/sys/fs/cgroup/freezer/system.slice", f"docker-{cid}.scope", "freezer.state"),
                     Path("/sys/fs/cgroup/docker", cid, "cgroup.events"),
                     Path("/sys/fs/cgroup/system.slice", f"docker-{cid}.scope", "cgroup.events")):
            if path.exists():
                return path
        return None

    def _kill_frozen_processes(self) -> None:
        """SIGKILL to every process of the (frozen) container, by host pid; nothing where its cgroup
        is not readable here (a remote engine: docker's kill alone, then)."""
        import os
        import signal
        path = self._freezer_file()
        if path is None:
            return
        try:
            pids = [int(p) for p in (path.parent / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def frozen(self) -> bool:
        """Whether every process of the container is frozen: the kernel's word where the cgroup is
        readable here (``FROZEN``, or ``frozen 1``), else the engine's (``State.Paused``)."""
        path = self._freezer_file()
        if path is not None:
            try:
                text = path.read_text()
            except OSError:
                text = ""
            if text:
                return text.strip() == "FROZEN" if path.name == "freezer.state" else "frozen 1" in text.splitlines()
        return bool(self._state().get("Paused"))

    def resume(self) -> None:
        """``docker unpause``; nothing when the container is not paused."""
        if self._state()["Status"] == "paused":
            self.container.unpause()

    def __repr__(self) -> str:
        return f"<ManagedContainer {self.name} {self.container.name}>"


class ContainerSpawner:
    """Starts members' incarnations as containers (the ``spawn`` of a Supervisor) on a run's network.

    ``slot_of(member)`` is the member's slot (its address is the network's member address of that
    slot); ``image_of(spec)`` its image; ``prefix`` names the run's containers and ``labels`` label
    them; ``mount`` (the run directory) is bind-mounted at its own path."""

    def __init__(self, network: RunNetwork, prefix: str, labels: Mapping[str, str], mount: Path,
                 logs_dir: Path, slot_of: Callable[[str], int], image_of: Callable[[MemberSpec], str]) -> None:
        self.network = network
        self.prefix = prefix
        self.labels = dict(labels)
        self.mount = mount
        self.logs_dir = logs_dir
        self.slot_of = slot_of
        self.image_of = image_of
        self.specs: dict[str, tuple[MemberSpec, Path]] = {}
        self._current: dict[str, ManagedContainer] = {}
        self._containers: list[Any] = []
        self._incarnations: dict[str, int] = {}
        self._lock = threading.Lock()

    def host_of(self, member: str) -> int:
        """``member``'s host number on the run's network."""
        return FIRST_MEMBER + self.slot_of(member)

    def current(self, member: str) -> "ManagedContainer | None":
        """``member``'s latest incarnation."""
        with self._lock:
            return self._current.get(member)

    def spawn(self, name: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
              log_name: str | None = None, cwd: Any = None) -> ManagedContainer:
        """Start the next incarnation of member ``name`` (``argv``/``env`` are the processes path's and
        are not used: the member image's ``/opt/member/run`` holds the same command)."""
        spec, config_path = self.specs[name]
        with self._lock:
            self._incarnations[name] = self._incarnations.get(name, 0) + 1
            cname = f"{self.prefix}-{name}-{self._incarnations[name]}"
        self._remove_exited(name)
        container = self.network.start_container(
            self.image_of(spec), [str(config_path)], name=cname, host=self.host_of(name), hostname=name,
            labels={**self.labels, LABEL_MEMBER: name}, binds={str(self.mount): str(self.mount)})
        with self._lock:
            self._containers.append(container)
        handle = ManagedContainer(name, container, self.logs_dir / f"{log_name or name}.log")
        with self._lock:
            self._current[name] = handle
        return handle

    def _remove_exited(self, member: str) -> None:
        """Remove ``member``'s exited containers (a restart's new incarnation replaces them)."""
        import docker.errors
        with self._lock:
            old = [c for c in self._containers if c.labels.get(LABEL_MEMBER) == member]
        for c in old:
            try:
                c.reload()
                if c.status in _LIVE_STATES:
                    continue
                c.remove(force=True)
            except docker.errors.NotFound:
                pass
            with self._lock:
                self._containers.remove(c)

    def remove_all(self) -> None:
        """Remove every container this spawner started (forcibly: the run is over)."""
        import docker.errors
        with self._lock:
            doomed, self._containers = list(self._containers), []
        for c in doomed:
            try:
                c.remove(force=True)
            except docker.errors.APIError:
                pass  # already gone


def launch_member_container(spec: MemberSpec, cfg: HarnessConfig, run_dir: RunDir,
                            spawner: ContainerSpawner) -> MemberProcess:
    """Write ``cfg`` into the run directory and start the member's first container (not waiting for it)."""
    _check_config(spec, cfg)
    if spec.faults and "faults" not in cfg.extra:
        cfg.extra["faults"] = list(spec.faults)
    cfg.validate()
    path = cfg.write(run_dir.harness_config(cfg.member))
    spawner.specs[cfg.member] = (spec, path)
    return MemberProcess(cfg.member, [], {}, path, Path(cfg.history_path), spawner, spec)  # type: ignore[arg-type]
