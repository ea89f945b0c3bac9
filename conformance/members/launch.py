"""Starting members: from a spec and a harness config to a supervised process.

``launch_member(spec, cfg, run_dir, supervisor)`` writes ``cfg`` to
``run_dir.harness_config(cfg.member)``, asks the kind's module for the command
(``command``: the harness contract, docs/contracts.md) and spawns it through the :class:`Supervisor` (own
process group, output appended to ``logs/<member>.log``). ``launch_producer``
does the same for the producer harness.

Guarantees of :class:`MemberProcess`:

- :meth:`~MemberProcess.wait_ready` returns once THIS incarnation has written
  its ``started`` event (lines written before the spawn are not looked at),
  and otherwise raises :class:`SuiteError` naming the member, whether it
  exited (with its code) or timed out, its log path and the log's last lines.
- :meth:`~MemberProcess.restart` starts a new incarnation with the same
  argv and config; its history is appended to the same file.
- Python harnesses get ``PYTHONPATH=<repo root>`` so that they can import
  :mod:`conformance.history` from any virtual environment.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from conformance import config
from conformance.cluster.supervisor import ManagedProcess, Supervisor
from conformance.errors import SuiteError, UsageError
from conformance.members.harness_config import HarnessConfig
from conformance.members.install import load_kind
from conformance.members.spec import MemberSpec
from conformance.rundir import RunDir

LOG_TAIL_LINES = 20


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file ("(no log)" if there is none)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def _python_env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(extra)
    existing = env.get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(config.REPO_ROOT), existing) if p)
    return env


class MemberProcess:
    """One member (or the producer): its current incarnation and how to start another."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], config_path: Path,
                 history_path: Path, supervisor: Supervisor, spec: MemberSpec | None = None) -> None:
        self.name = name
        self.spec = spec
        self.argv = argv
        self.env = env
        self.config_path = config_path
        self.history_path = history_path
        self._sup = supervisor
        self.proc: ManagedProcess
        self._history_offset = 0
        self.incarnation = 0
        self._spawn()

    def _spawn(self) -> None:
        try:
            self._history_offset = self.history_path.stat().st_size
        except FileNotFoundError:
            self._history_offset = 0
        self.proc = self._sup.spawn(self.name, self.argv, env=self.env, log_name=self.name)
        self.incarnation += 1

    # -- state
    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def log_path(self) -> Path:
        return self.proc.log_path

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def alive(self) -> bool:
        return self.proc.alive()

    @property
    def exited_unasked(self) -> bool:
        """True once this incarnation has exited without being terminated or killed (a crash)."""
        return self.proc.exited_unasked

    # -- lifecycle
    def event(self, name: str, **match: Any) -> dict | None:
        """This incarnation's first ``name`` event whose fields equal ``match``, if it has been written."""
        try:
            with open(self.history_path, "rb") as f:
                f.seek(self._history_offset)
                data = f.read()
        except FileNotFoundError:
            return None
        for line in data.decode("utf-8", errors="replace").splitlines():
            if f'"{name}"' not in line:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line being written; the next poll sees it whole
            if (isinstance(event, dict) and event.get("event") == name and event.get("member") == self.name
                    and all(event.get(k) == v for k, v in match.items())):
                return event
        return None

    def wait_event(self, name: str, timeout: float, **match: Any) -> dict | None:
        """Wait at most ``timeout`` seconds for :meth:`event`; None when it did not come in time or the
        member exited without writing it (an event written just before a fast exit is returned)."""
        deadline = time.monotonic() + timeout
        while True:
            event = self.event(name, **match)
            if event is not None:
                return event
            if not self.proc.alive():
                return self.event(name, **match)  # written just before a fast exit
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def wait_ready(self, timeout: float = config.MEMBER_READY_TIMEOUT_S) -> dict:
        """Wait for this incarnation's ``started`` event; SuiteError if it exits or times out."""
        event = self.wait_event("started", timeout)
        if event is not None:
            return event
        if not self.proc.alive():
            raise SuiteError(f"member {self.name} exited with code {self.proc.returncode} before it started "
                             f"(log {self.log_path}); last lines:\n{log_tail(self.log_path)}")
        raise SuiteError(f"member {self.name} did not start within {timeout:.0f}s (pid {self.pid}, "
                         f"no 'started' event in {self.history_path}; log {self.log_path}); "
                         f"last lines:\n{log_tail(self.log_path)}")

    def terminate(self, timeout: float = 30.0) -> int:
        """Graceful stop (SIGTERM; SIGKILL after ``timeout``): the exit code."""
        return self.proc.terminate(timeout=timeout)

    def kill(self) -> int:
        """Crash (SIGKILL): the exit code."""
        return self.proc.kill()

    def pause(self) -> None:
        self.proc.pause()

    def resume(self) -> None:
        self.proc.resume()

    def restart(self, kill: bool = False) -> None:
        """Stop this incarnation (gracefully, or by SIGKILL) if alive and start the next one."""
        if self.alive():
            self.kill() if kill else self.terminate()
        self._spawn()

    def __repr__(self) -> str:
        return f"<MemberProcess {self.name} incarnation={self.incarnation} {self.proc!r}>"


def _check_config(spec: MemberSpec, cfg: HarnessConfig) -> None:
    if cfg.client != spec.kind or cfg.client_version != spec.version:
        raise UsageError(f"member {cfg.member}: config says {cfg.client}@{cfg.client_version} "
                         f"but the spec is {spec.label}")


def launch_member(spec: MemberSpec, cfg: HarnessConfig, run_dir: RunDir, supervisor: Supervisor) -> MemberProcess:
    """Write ``cfg`` into the run directory and start the member's harness (not waiting for it)."""
    _check_config(spec, cfg)
    if spec.faults and "faults" not in cfg.extra:
        cfg.extra["faults"] = list(spec.faults)
    cfg.validate()
    kind = load_kind(spec.kind)
    path = cfg.write(run_dir.harness_config(cfg.member))
    argv, env = kind.command(spec.version, path)
    return MemberProcess(cfg.member, list(argv), _python_env(env), path, Path(cfg.history_path), supervisor, spec)


def launch_producer(cfg: HarnessConfig, run_dir: RunDir, supervisor: Supervisor) -> MemberProcess:
    """Start the producer harness (``python -m conformance.members.producer``) with ``cfg``."""
    from conformance.members import producer

    path = cfg.write(run_dir.harness_config(cfg.member))
    return MemberProcess(cfg.member, producer.command(path), _python_env({}), path, Path(cfg.history_path),
                         supervisor)
