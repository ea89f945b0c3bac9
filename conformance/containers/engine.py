"""A Docker engine for the container path, and the removal of what dead runs left behind.

Guarantees:

- :func:`engine` never installs or starts anything: it returns a client of the first engine
  that answers a ping (``DOCKER_HOST`` when set, else the default socket), or ``None``.
- :func:`ensure_engine` is idempotent: when an engine answers it returns its client at once.
  Otherwise, as root only, it installs Debian's ``docker.io`` with apt-get (when ``dockerd`` is
  not on ``PATH``) and starts ``dockerd`` itself (PID 1 here is not systemd), detached into its
  own session so it serves later runs, logging to ``<cache>/docker/dockerd.log``; it waits
  until the engine answers. Two set-ups at once do not start two daemons (a file lock).
  Without root and without an engine it raises :class:`SuiteError` saying so.
- :func:`testcontainers_env` is the environment testcontainers needs here (Ryuk cannot be
  pulled where no registry answers; inside a container, ``/.dockerenv``, talk to the
  engine's published ports on 127.0.0.1); :func:`ensure_engine` sets it in ``os.environ``.
  :func:`configure_testcontainers` is where the suite applies it before testcontainers creates a
  container (the user sets nothing): testcontainers reads part of it when it is first imported, so
  it also sets testcontainers' configuration itself. Ryuk stays disabled whatever the
  environment says: the labels below, and :func:`remove_leftovers`, are the only cleanup.

Labels (every container, network, volume and image the suite makes carries ``LABEL_SUITE``):

==========================  ==================================================================
``io.conformance.suite``    ``1``: made by this suite (images, containers, networks, volumes)
``io.conformance.run``      the run id owning a container, network or volume
``io.conformance.pid``      the pid of the process that owns the run
``io.conformance.boot``     the host's boot id when the run started
==========================  ==================================================================

A run is *dead* when its boot id is not the current one or its pid no longer exists.
:func:`remove_leftovers` removes the containers (forcibly), then the networks and volumes, of
dead runs; resources labelled ``io.conformance.suite`` but without a pid (a stack a user
brought up with docker-compose) are left alone unless ``include_unowned=True``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance import config
from conformance.errors import SuiteError

if TYPE_CHECKING:  # the docker SDK is imported lazily: the processes path does not need it
    import docker

LABEL_SUITE = "io.conformance.suite"
LABEL_RUN = "io.conformance.run"
LABEL_PID = "io.conformance.pid"
LABEL_BOOT = "io.conformance.boot"

#: Where the engine's own files go (dockerd's log, the start lock).
DOCKER_CACHE: Path = config.CACHE_DIR / "docker"
DOCKERD_LOG: Path = DOCKER_CACHE / "dockerd.log"
#: How long a freshly started dockerd may take to answer.
ENGINE_START_TIMEOUT_S: float = 90.0


def boot_id() -> str:
    """This host's boot id (changes at every boot), or "" where the kernel does not say."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def run_labels(run_id: str) -> dict[str, str]:
    """The labels of every container, network and volume of run ``run_id`` owned by this process."""
    return {LABEL_SUITE: "1", LABEL_RUN: run_id, LABEL_PID: str(os.getpid()), LABEL_BOOT: boot_id()}


def testcontainers_env() -> dict[str, str]:
    """Environment testcontainers needs on this host (see the module's guarantees)."""
    env = {"TESTCONTAINERS_RYUK_DISABLED": "true"}
    if Path("/.dockerenv").exists():
        env.update({"TESTCONTAINERS_CONNECTION_MODE": "docker_host", "TC_HOST": "127.0.0.1"})
    return env


def configure_testcontainers() -> None:
    """Apply :func:`testcontainers_env` to ``os.environ`` and to testcontainers' configuration (read
    at its import, which may have come first); Ryuk disabled even when the environment asked for
    it. Idempotent; call before each ``DockerContainer`` is made."""
    env = testcontainers_env()
    os.environ.update(env)
    from testcontainers.core.config import ConnectionMode
    from testcontainers.core.config import testcontainers_config as tc_config

    tc_config.ryuk_disabled = True
    if "TESTCONTAINERS_CONNECTION_MODE" in env:
        tc_config.connection_mode_override = ConnectionMode(env["TESTCONTAINERS_CONNECTION_MODE"])
    if "TC_HOST" in env:
        tc_config.tc_host_override = env["TC_HOST"]


def engine() -> "docker.DockerClient | None":
    """A client of an engine that answers a ping now, or None (never installs or starts one)."""
    try:
        import docker
    except ImportError:
        return None
    try:
        client = docker.from_env(timeout=30)
        client.ping()
        return client
    except Exception:  # any failure to reach an engine means "no engine"
        return None


def ensure_engine() -> "docker.DockerClient":
    """An answering engine's client; installs and starts one as root when none answers."""
    os.environ.update(testcontainers_env())
    client = engine()
    if client is not None:
        return client
    if os.geteuid() != 0:
        raise SuiteError("no Docker engine answers, and installing or starting one needs root; "
                         "start Docker (or set DOCKER_HOST), or run set-up as root")
    DOCKER_CACHE.mkdir(parents=True, exist_ok=True)
    with open(DOCKER_CACHE / ".engine.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        client = engine()  # another set-up may have started it while we waited
        if client is not None:
            return client
        started = time.monotonic()
        if shutil.which("dockerd") is None:
            _apt_install(["docker.io"])
            print(f"engine: installed Debian's docker.io in {time.monotonic() - started:.1f}s")
        return _start_dockerd()


def compose_command() -> list[str] | None:
    """The argv prefix of an installed Compose: ``docker compose`` (v2) or ``docker-compose`` (v1)."""
    for argv in (["docker", "compose"], ["docker-compose"]):
        if shutil.which(argv[0]) is None:
            continue
        try:
            ok = subprocess.run([*argv, "version"], capture_output=True, timeout=60).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return argv
    return None


def ensure_compose() -> list[str]:
    """An installed Compose's argv prefix; as root, installs Debian's ``docker-compose`` (v1, 1.29.2;
    Compose v2 is not packaged in Debian) when there is none. Idempotent."""
    found = compose_command()
    if found is not None:
        return found
    if os.geteuid() != 0:
        raise SuiteError("neither `docker compose` nor `docker-compose` is installed, and installing "
                         "Debian's docker-compose needs root")
    started = time.monotonic()
    _apt_install(["docker-compose"])
    found = compose_command()
    if found is None:
        raise SuiteError("docker-compose does not run after installing Debian's docker-compose")
    print(f"engine: installed Debian's docker-compose in {time.monotonic() - started:.1f}s")
    return found


def engine_for_tests() -> "tuple[docker.DockerClient | None, str]":
    """``(client, "")`` when an engine answers or can be had (as root it is installed and started:
    a failure then raises, it is never a skip); ``(None, reason)`` only when none can be had."""
    client = engine()
    if client is not None:
        os.environ.update(testcontainers_env())
        return client, ""
    try:
        import docker  # noqa: F401
    except ImportError:
        return None, "the docker SDK is not installed in this environment (make bootstrap installs it)"
    if os.geteuid() != 0:
        return None, "no Docker engine answers and installing or starting one needs root"
    return ensure_engine(), ""


def _apt_install(packages: list[str]) -> None:
    """``apt-get install`` Debian packages (root); SuiteError with apt's last lines on failure."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for argv in (["apt-get", "update", "-qq"],
                 ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]):
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1200)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise SuiteError(f"`{' '.join(argv)}` failed (exit {proc.returncode}):\n{tail}")


def _start_dockerd() -> "docker.DockerClient":
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise SuiteError("dockerd is not on PATH after installing docker.io")
    started = time.monotonic()
    with open(DOCKERD_LOG, "ab") as log:
        # Its own session: it serves every later run and is no child of this one (it is the
        # machine's engine, as a service manager would have started it).
        proc = subprocess.Popen([dockerd], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True)
    while time.monotonic() - started < ENGINE_START_TIMEOUT_S:
        client = engine()
        if client is not None:
            print(f"engine: dockerd (pid {proc.pid}) answers after {time.monotonic() - started:.1f}s; "
                  f"log {DOCKERD_LOG}")
            return client
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    tail = "\n".join(DOCKERD_LOG.read_text(errors="replace").splitlines()[-15:])
    raise SuiteError(f"dockerd did not answer within {ENGINE_START_TIMEOUT_S:.0f}s "
                     f"(exit {proc.poll()}); end of {DOCKERD_LOG}:\n{tail}")


def _owner_dead(labels: dict[str, str]) -> bool | None:
    """True when the run owning a resource is dead, False when alive, None when it has no owner."""
    pid = labels.get(LABEL_PID)
    if not pid or not pid.isdigit():
        return None
    if labels.get(LABEL_BOOT, "") != boot_id():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def remove_leftovers(client: "docker.DockerClient | None" = None, *, include_unowned: bool = False) -> dict[str, list[str]]:
    """Remove the labelled containers, then networks, then volumes of dead runs (see the module);
    returns the names removed per kind. Does nothing (returns empty lists) without an engine."""
    removed: dict[str, list[str]] = {"containers": [], "networks": [], "volumes": []}
    client = client or engine()
    if client is None:
        return removed
    flt = {"label": LABEL_SUITE}

    def doomed(labels: dict[str, str] | None) -> bool:
        dead = _owner_dead(labels or {})
        return dead if dead is not None else include_unowned

    for c in client.containers.list(all=True, filters=flt):
        if doomed(c.labels):
            _quietly(partial(c.remove, force=True, v=True))
            removed["containers"].append(c.name)
    for n in client.networks.list(filters=flt):
        if doomed(n.attrs.get("Labels")):
            _quietly(n.remove)
            removed["networks"].append(n.name)
    for v in client.volumes.list(filters=flt):
        if doomed(v.attrs.get("Labels")):
            _quietly(partial(v.remove, force=True))
            removed["volumes"].append(v.name)
    return removed


def remove_run_containers(client: "docker.DockerClient", run_id: str) -> list[str]:
    """Remove (forcibly) every container labelled as run ``run_id`` of this process, whoever in the
    suite holds it or not: a container the engine made while Ctrl-C unwound its creation is known
    by its labels only. Returns the names removed."""
    flt = {"label": [f"{LABEL_SUITE}=1", f"{LABEL_RUN}={run_id}", f"{LABEL_PID}={os.getpid()}"]}
    removed = []
    for c in client.containers.list(all=True, filters=flt):
        _quietly(partial(c.remove, force=True, v=True))
        removed.append(c.name)
    return removed


def labelled(client: "docker.DockerClient") -> dict[str, list[str]]:
    """Names of every container, network and volume carrying ``LABEL_SUITE`` now."""
    flt = {"label": LABEL_SUITE}
    return {"containers": [c.name for c in client.containers.list(all=True, filters=flt)],
            "networks": [n.name for n in client.networks.list(filters=flt)],
            "volumes": [v.name for v in client.volumes.list(filters=flt)]}


def _quietly(action: Any) -> None:
    """Run ``action``; a resource already gone (removed meanwhile) is not an error."""
    import docker.errors
    try:
        action()
    except docker.errors.NotFound:
        pass
